"""README's benchmark table is the registry's, its and docs/'s links resolve, and it stays a map
(evalsuite.devtools.docs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.benchmarks import all_benchmarks, load_declarations
from evalsuite.devtools import docs
from evalsuite.models import available_models, model_profile


def test_readme_table_is_in_sync_with_the_registry(capsys):
    assert docs.main(["--check"]) == 0, capsys.readouterr().out


def test_table_lists_every_registered_benchmark_once_in_dashboard_order():
    load_declarations()
    benchmarks = all_benchmarks()
    rows = docs.benchmark_table(benchmarks).splitlines()[2:]
    markers = [row.split("|")[1].strip().strip("`") for row in rows]
    expected = [b.name for b in sorted(benchmarks, key=lambda b: (b.order, b.name))]
    assert markers == expected and len(set(markers)) == len(markers)


def test_a_stale_readme_is_reported_and_then_rewritten(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{docs.BEGIN}\n| old |\n{docs.END}\nrest\n"
                      f"{docs.MODELS_BEGIN}\n{docs.MODELS_END}\n", encoding="utf-8")
    assert docs.main(["--check", "--readme", str(readme)]) == 1
    assert "| old |" in readme.read_text(encoding="utf-8")
    assert docs.main(["--readme", str(readme)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert "| old |" not in text and "| `fox` |" in text and "| `dots.ocr` |" in text
    assert text.startswith("intro\n") and text.endswith(f"{docs.MODELS_END}\n")
    assert docs.main(["--check", "--readme", str(readme)]) == 0


def test_a_readme_without_the_block_is_an_error():
    with pytest.raises(ValueError, match="benchmarks"):
        docs.with_table("no markers here", "| table |")


def test_model_table_lists_every_profile_once_with_what_is_left_out():
    profiles = [model_profile(name) for name in available_models()]
    rows = docs.model_table(profiles).splitlines()[2:]
    names = [row.split("|")[1].strip().strip("`") for row in rows]
    assert names == [p.name for p in profiles] and len(set(names)) == len(names) >= 4
    assert all(row.count("|") == 7 and "|  |" not in row for row in rows)
    cells = {name: [c.strip() for c in row.split("|")[2:-1]] for name, row in zip(names, rows,
                                                                               strict=True)}
    assert cells["olmOCR-2"][0] == str(model_profile("olmOCR-2").version)
    assert cells["olmOCR-2"][3] == "longest side 1288 px (PDFium)"
    assert cells["Qwen2.5-VL"][3] == "the benchmark's"


README_LIMIT = 15_000  # bytes, as `wc -c README.md` counts them


def _fresh_readme(root: Path, body: str) -> Path:
    """A README under ``root`` holding ``body`` and up-to-date generated tables."""
    load_declarations()
    text = f"{body}\n{docs.BEGIN}\n{docs.END}\n{docs.MODELS_BEGIN}\n{docs.MODELS_END}\n"
    text = docs.with_table(text, docs.benchmark_table(all_benchmarks()))
    profiles = [model_profile(name) for name in available_models()]
    text = docs.with_table(text, docs.model_table(profiles), docs.MODELS_BEGIN, docs.MODELS_END)
    readme = root / "README.md"
    readme.write_text(text, encoding="utf-8")
    return readme


def _page(root: Path, name: str, text: str) -> Path:
    path = root / "docs" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_broken_link_in_the_readme_fails_the_check_naming_file_line_and_link(tmp_path, capsys):
    readme = _fresh_readme(tmp_path, "# t\n\nintro\n\nsee [the page](docs/missing.md) for more\n")
    assert docs.main(["--check", "--readme", str(readme)]) == 1
    out = capsys.readouterr().out
    assert "README.md:5: broken link docs/missing.md (no file docs/missing.md)" in out
    before = readme.read_text(encoding="utf-8")
    assert docs.main(["--readme", str(readme)]) == 1  # the tables are fresh; the link still fails
    assert readme.read_text(encoding="utf-8") == before


def test_a_broken_link_or_anchor_in_a_docs_page_fails_the_check(tmp_path, capsys):
    readme = _fresh_readme(tmp_path, "# t\n\n[guide](docs/guide.md#real-heading)\n")
    _page(tmp_path, "guide.md", "# Guide\n\n## Real heading\n\n[back](../README.md)\n"
          "[up](../nope/file.py) and [self](#no-such-heading)\n"
          "[other](other.md#missing-part)\n")
    _page(tmp_path, "other.md", "# Other\n\n## Present part\n")
    assert docs.main(["--check", "--readme", str(readme)]) == 1
    out = capsys.readouterr().out
    assert "docs/guide.md:6: broken link ../nope/file.py (no file nope/file.py)" in out
    assert "docs/guide.md:6: broken link #no-such-heading (no heading #no-such-heading in " \
           "docs/guide.md)" in out
    assert "docs/guide.md:7: broken link other.md#missing-part (no heading #missing-part in " \
           "docs/other.md)" in out
    assert out.count(": broken link ") == 3 and "3 broken link(s) in 3 Markdown file(s)" in out


def test_good_links_pass_and_code_urls_and_escapes_outside_the_repository_are_told_apart(
        tmp_path, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mod.py").write_text("x = 1\n", encoding="utf-8")
    readme = _fresh_readme(tmp_path, "\n".join([
        "# t", "",
        "[page](docs/page.md), [heading](docs/page.md#an-engine-behind-a-server-v15),",
        "[wrapped link", "text](docs/page.md#evalsuite-serve-again), [code](src/mod.py),",
        "![shot](docs/shot.png \"a title\"), [folder](src/), [web](https://example.org/x.md),",
        "[mail](mailto:a@b.c), [here](#t), `[in code](docs/nope.md)`", "",
        "```md", "[fenced](docs/nope.md)", "```", "",
        "[ref]: docs/page.md#an-engine-behind-a-server-v15", ""]))
    _page(tmp_path, "page.md", "# Page\n\n## An engine behind a server (v1.5)\n\n"
          "## `evalsuite serve` again\n\n![shot](shot.png)\n")
    (tmp_path / "docs" / "shot.png").write_bytes(b"png")
    assert docs.main(["--check", "--readme", str(readme)]) == 0, capsys.readouterr().out
    assert "every relative link resolves" in capsys.readouterr().out
    _page(tmp_path, "escape.md", "[outside](../../elsewhere.md)\n")
    assert docs.main(["--check", "--readme", str(readme)]) == 1
    assert "docs/escape.md:1: broken link ../../elsewhere.md (outside the repository)" in \
        capsys.readouterr().out


def test_markdown_links_skip_code_and_report_the_line_the_link_starts_on():
    text = "a `[x](no.md)` b\n[y](one.md)\n```\n[z](two.md)\n```\n~~~\n[w](three.md)\n~~~\n" \
           "[two\nlines](four.md#h) ``[v](five.md)``\nsee [r]\n\n[r]: six.md\n[u]: unused.md\n"
    assert docs.markdown_links(text) == [(2, "one.md"), (9, "four.md#h"), (11, "six.md")]


@pytest.mark.parametrize(("heading", "slug"), [
    ("`evalsuite serve`: an engine behind a server", "evalsuite-serve-an-engine-behind-a-server"),
    ("Version 1.5", "version-15"),
    ("A/B: did my checkpoint get worse?", "ab-did-my-checkpoint-get-worse"),
    ("Worked example: page_03 by hand", "worked-example-page_03-by-hand"),
    ("Past one GPU: workers and shards", "past-one-gpu-workers-and-shards"),
])
def test_github_slug(heading, slug):
    assert docs.github_slug(heading) == slug


def test_repeated_headings_get_numbered_anchors_and_fenced_hashes_are_not_headings():
    text = "# A\n\n## Setup\n\n## Setup\n\n```sh\n# not a heading\n```\n<a name=\"x-y\"></a>\n"
    assert docs.heading_anchors(text) == {"a", "setup", "setup-1", "x-y"}


def test_the_repository_readme_and_docs_have_no_broken_link():
    root = docs.README.parent
    files = docs.documentation_files(root)
    assert files[0] == docs.README and len(files) > 10
    assert docs.broken_links(files, root) == []


def test_the_readme_is_a_map_of_at_most_15000_characters():
    size = len(docs.README.read_bytes())
    assert size <= README_LIMIT, (
        f"README.md is {size} bytes (limit {README_LIMIT}): move a section into docs/ and link it")
    text = docs.README.read_text(encoding="utf-8")
    assert "## Where each topic lives" in text and docs.BEGIN in text and docs.MODELS_BEGIN in text
