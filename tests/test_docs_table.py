"""README's benchmark table is the registry's (evalsuite.devtools.docs)."""

from __future__ import annotations

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
