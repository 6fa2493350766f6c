"""``evalsuite data fetch`` for every benchmark, against local fixture repositories in each
source's published layout and schema (the Hugging Face and GitHub calls are replaced), and each
benchmark's own loader reading what the fetch wrote; ``data list``; the paper's Fox goldens."""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import datasets
import pytest
from PIL import Image

from evalsuite.benchmarks import all_benchmarks, get_benchmark, load_declarations
from evalsuite.commands import data as data_command
from evalsuite.datasets import FETCH_MANIFEST, data_identity
from evalsuite.datasets import fetch as fetch_module
from evalsuite.errors import DatasetNotFoundError
from tests.support.paths import REPOSITORY, TEST_FIXTURES

load_declarations()
GOLDEN_DIR = REPOSITORY / "golden"
FINEWIKI_COLUMNS = {
    "text": datasets.Value("string"),
    "id": datasets.Value("string"),
    "wikiname": datasets.Value("string"),
    "page_id": datasets.Value("int64"),
    "title": datasets.Value("string"),
    "url": datasets.Value("string"),
    "date_modified": datasets.Value("string"),
    "in_language": datasets.Value("string"),
    "wikidata_id": datasets.Value("string"),
    "bytes_html": datasets.Value("int64"),
    "wikitext": datasets.Value("string"),
    "version": datasets.Value("int64"),
    "infoboxes": datasets.Value("string"),
    "has_math": datasets.Value("bool"),
}
"""HuggingFaceFW/finewiki's published columns."""


def page_image(width: int = 120, height: int = 80) -> Image.Image:
    return Image.new("RGB", (width, height), "white")


class FakeHub:
    """Hugging Face and GitHub repositories as folders: ``hub/<owner>/<name>/...`` for Hugging
    Face datasets (row-wise ones as ``<config>/data.parquet``), ``github/<owner>/<name>/<rev>/``
    for GitHub. Records the revisions asked for."""

    def __init__(self, root: Path) -> None:
        self.hub = root / "hub"
        self.github = root / "github"
        self.revisions: list[tuple[str, str]] = []
        self.read_parquet = datasets.load_dataset  # the real one, before it is replaced

    def snapshot_download(self, repo_id, *, repo_type, revision, allow_patterns, local_dir):
        assert repo_type == "dataset"
        self.revisions.append((repo_id, revision))
        repo = self.hub / repo_id
        for path in repo.rglob("*"):
            relative = path.relative_to(repo).as_posix()
            if path.is_file() and any(fnmatch.fnmatch(relative, p) for p in allow_patterns):
                target = Path(local_dir) / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
        return local_dir

    def load_dataset(self, repo_id, config=None, *, split, revision, streaming):
        assert streaming, "fetch must stream, never download a whole dataset"
        self.revisions.append((repo_id, revision))
        folder = self.hub / repo_id / (config or "default")
        if not folder.is_dir():
            raise ValueError(f"{repo_id} has no subset {config!r}")
        return self.read_parquet(
            "parquet", data_files=str(folder / "*.parquet"), split=split, streaming=True
        )

    def download_url(self, url: str, target: Path) -> None:
        owner, name, raw, revision, *path = urlparse(url).path.strip("/").split("/")
        assert raw == "raw"
        self.revisions.append((f"{owner}/{name}", revision))
        shutil.copy(self.github / owner / name / revision / "/".join(path), target)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    import huggingface_hub

    fake = FakeHub(tmp_path / "remote")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake.snapshot_download)
    monkeypatch.setattr(datasets, "load_dataset", fake.load_dataset)
    monkeypatch.setattr(fetch_module, "download_url", fake.download_url)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return fake


def spec_of(benchmark: str, source: str):
    return get_benchmark(benchmark).source(source).fetch


def hub_repo(hub: FakeHub, benchmark: str, source: str) -> Path:
    return hub.hub / spec_of(benchmark, source).repo_id


def github_repo(hub: FakeHub, benchmark: str, source: str) -> Path:
    spec = spec_of(benchmark, source)
    return hub.github / spec.repo_id / spec.revision


def publish_fox(hub: FakeHub) -> list[dict]:
    """ucaslcl/Fox_benchmark_data: focus_benchmark_test.zip with {en,cn}_page_ocr.json and
    {en,cn}_pdf_png/."""
    records = [
        {
            "image": f"en_{n}.png",
            "len": 700 + n,
            "conversations": [
                {"from": "human", "value": "<image>\nPlease give the OCR result."},
                {"from": "gpt", "value": f"Page {n} text of the Fox set."},
            ],
        }
        for n in (1, 2)
    ]
    repo = hub_repo(hub, "fox", "fox")
    repo.mkdir(parents=True)
    with zipfile.ZipFile(repo / "focus_benchmark_test.zip", "w") as archive:
        archive.writestr("focus_benchmark_test/en_page_ocr.json", json.dumps(records))
        archive.writestr("focus_benchmark_test/cn_page_ocr.json", "[]")
        for record in records:
            archive.writestr(f"focus_benchmark_test/en_pdf_png/{record['image']}", b"png")
    (repo / "README.md").write_text("Fox benchmark data")
    return records


def publish_render_study(hub: FakeHub) -> None:
    """galah92/deepseek-ocr-eval: experiment/data/<name>.txt and experiment/questions.json."""
    repo = github_repo(hub, "render_configs", "render_docs")
    (repo / "experiment" / "data").mkdir(parents=True)
    names = ("employee_record", "invoice", "meeting_minutes", "product_spec")
    for name in names:
        (repo / "experiment" / "data" / f"{name}.txt").write_text(f"{name} document text")
    questions = {name: {"questions": [{"q": f"What is {name}?", "a": name}]} for name in names}
    (repo / "experiment" / "questions.json").write_text(json.dumps(questions))


def quality_record(article_id: str, question_ids: tuple[str, ...]) -> dict:
    """One line of QuALITY.v1.0.1.htmlstripped.* (a question set), as published."""
    return {
        "article_id": article_id,
        "set_unique_id": f"{article_id}_set",
        "batch_num": "22",
        "writer_id": "1021",
        "source": "Gutenberg",
        "title": f"Article {article_id}",
        "year": 1963,
        "author": "A. Writer",
        "topic": "Fiction",
        "article": f"The text of article {article_id}.",
        "questions": [
            {
                "question": f"Question {q}?",
                "question_unique_id": q,
                "options": ["one", "two", "three", "four"],
                "writer_label": 2,
                "gold_label": 2,
                "validation": [
                    {
                        "untimed_annotator_id": "0001",
                        "untimed_answer": 2,
                        "untimed_eval1_answerability": 1,
                        "untimed_eval2_context": 2,
                        "untimed_best_distractor": 3,
                    }
                ],
                "speed_validation": [{"speed_annotator_id": "0002", "speed_answer": 2}],
                "difficult": 0,
            }
            for q in question_ids
        ],
        "url": "http://www.gutenberg.org/ebooks/0",
        "license": "This eBook is for the use of anyone anywhere",
    }


def publish_quality(hub: FakeHub) -> None:
    (path,) = spec_of("quality", "quality").paths
    target = github_repo(hub, "quality", "quality") / path
    target.parent.mkdir(parents=True)
    lines = [
        quality_record("20001", ("20001_q1", "20001_q2")),
        quality_record("20002", ("20002_q1",)),
        quality_record("20001", ("20001_q3",)),
    ]
    target.write_text("".join(json.dumps(line) + "\n" for line in lines))


def publish_rows(hub: FakeHub, benchmark: str, config: str, features: dict, columns: dict) -> None:
    """A row-wise Hugging Face dataset (``benchmark``'s fetchable source) with these features."""
    folder = hub_repo(hub, benchmark, benchmark) / config
    folder.mkdir(parents=True)
    table = datasets.Dataset.from_dict(columns, features=datasets.Features(features))
    table.to_parquet(str(folder / "data.parquet"))


def publish_finewiki(hub: FakeHub, language: str, rows: int) -> None:
    """HuggingFaceFW/finewiki's per-language subset with its published columns."""
    publish_rows(hub, "finewiki", language, FINEWIKI_COLUMNS, {
        "text": [f"# Article {i}\n\n" + "word " * 600 for i in range(rows)],
        "id": [f"{language}wiki/{i}" for i in range(rows)],
        "wikiname": [f"{language}wiki"] * rows,
        "page_id": list(range(rows)),
        "title": [f"Article {i}" for i in range(rows)],
        "url": [f"https://{language}.wikipedia.org/wiki/A{i}" for i in range(rows)],
        "date_modified": ["2025-08-01T00:00:00Z"] * rows,
        "in_language": [language] * rows,
        "wikidata_id": [f"Q{i}" for i in range(rows)],
        "bytes_html": [1000] * rows,
        "wikitext": ["'''Article'''"] * rows,
        "version": [1] * rows,
        "infoboxes": ["[]"] * rows,
        "has_math": [False] * rows,
    })


def publish_surya_detection(hub: FakeHub) -> None:
    """vikp/doclaynet_bench: image, bboxes (0-1000 floats), labels, words, split."""
    publish_rows(hub, "surya_detection", "default", {
        "image": datasets.Image(),
        "bboxes": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
        "labels": datasets.Sequence(datasets.Value("int64")),
        "words": datasets.Sequence(datasets.Value("string")),
        "split": datasets.Value("string"),
    }, {
        "image": [page_image(200, 100), page_image(100, 100)],
        "bboxes": [[[100.0, 100.0, 500.0, 200.0]], [[0.0, 0.0, 1000.0, 1000.0]]],
        "labels": [[1], [1]],
        "words": [["hello"], ["world"]],
        "split": ["test", "test"],
    })


def publish_surya_recognition(hub: FakeHub) -> None:
    """vikp/rec_bench: image, bboxes (pixel ints), text (one per box), language."""
    publish_rows(hub, "surya_recognition", "default", {
        "image": datasets.Image(),
        "bboxes": datasets.Sequence(datasets.Sequence(datasets.Value("int64"))),
        "text": datasets.Sequence(datasets.Value("string")),
        "language": datasets.Value("string"),
    }, {
        "image": [page_image()],
        "bboxes": [[[1, 2, 60, 20], [1, 30, 60, 50]]],
        "text": [["first line", "second line"]],
        "language": ["en"],
    })


def publish_finix(hub: FakeHub) -> None:
    """inclusionAI/FinixDocBench: track*/mds/<page>.md, track*/images/<page>.png, jsons/."""
    repo = hub_repo(hub, "finix", "finix")
    for track in ("track1_finixdigital_242_insurance_terms", "track2_finixphoto_300"):
        for sub in ("mds", "images", "jsons"):
            (repo / track / sub).mkdir(parents=True)
        for page in ("p001", "p002"):
            (repo / track / "mds" / f"{page}.md").write_text(f"# {track} {page}\n\nText.")
            page_image().save(repo / track / "images" / f"{page}.png")
            (repo / track / "jsons" / f"{page}.json").write_text('{"layout": []}')


def publish_olmocr_bench(hub: FakeHub) -> None:
    """allenai/olmOCR-bench: bench_data/<category>.jsonl, bench_data/pdfs/<subdir>/*.pdf, and
    files beside bench_data that the fetch must leave out."""
    repo = hub_repo(hub, "olmocr_bench", "olmocr_bench")
    fixture = TEST_FIXTURES / "olmocr_bench" / "fixture"
    shutil.copytree(fixture, repo / "bench_data")
    (repo / "README.md").write_text("dataset card")
    (repo / "bench_data" / "notes.txt").write_text("not a test file")


def data_cli(*argv: str) -> int:
    """``evalsuite data ARGV``, wired as :mod:`evalsuite.cli` wires it (without importing the
    other subcommands)."""
    parser = argparse.ArgumentParser(prog="evalsuite data")
    data_command.add_arguments(parser)
    return data_command.run(parser.parse_args(argv))


def fetch_cli(name: str, data_dir: Path, *extra: str) -> int:
    return data_cli("fetch", name, "--data-dir", str(data_dir), *extra)


def located(benchmark: str, source: str, data_dir: Path) -> Path:
    location = get_benchmark(benchmark).source(source).locate(data_dir)
    assert location is not None, f"{benchmark}/{source} is not where its loader looks"
    return location


def assert_pinned_identity(benchmark: str, source: str, data_dir: Path) -> None:
    """The fetched folder's identity (golden keys, run records) is the declared revision."""
    data_source = get_benchmark(benchmark).source(source)
    location = located(benchmark, source, data_dir)
    manifest = json.loads((location / FETCH_MANIFEST).read_text())
    assert manifest["revision"] == data_source.fetch.revision
    assert data_source.identity(location) == f"{source}@{data_source.fetch.revision}"


def test_fox_fetch_writes_what_the_fox_loader_reads(hub, tmp_path, capsys):
    records = publish_fox(hub)
    publish_render_study(hub)
    data = tmp_path / "data"
    (data / "fox").mkdir(parents=True)
    (data / "fox" / "en_1_gt.txt").write_text("placed by the user")
    assert fetch_cli("fox", data) == 0
    benchmark = get_benchmark("fox")
    items = benchmark.source("fox").loader(located("fox", "fox", data))
    assert [item.page_id for item in items] == ["en_1", "en_2"]
    assert [item.text for item in items] == [r["conversations"][1]["value"] for r in records]
    assert all(Path(item.image).is_file() for item in items)
    assert not list((data / "fox").rglob("*.zip")), "the archive is unpacked, not kept"
    assert (data / "fox" / "en_1_gt.txt").read_text() == "placed by the user"
    study = benchmark.source("study").loader(located("fox", "study", data))
    assert len(study) == 4
    assert_pinned_identity("fox", "fox", data)
    out = capsys.readouterr().out
    assert "fox/fox: 4 files" in out and "focus_benchmark_test/en_page_ocr.json 2 rows" in out
    assert "revision d6c6f5202d61" in out


def test_render_configs_fetch(hub, tmp_path, capsys):
    publish_render_study(hub)
    assert fetch_cli("render_configs", tmp_path) == 0
    study = get_benchmark("render_configs").source("render_docs").loader(
        located("render_configs", "render_docs", tmp_path)
    )
    assert sorted(study.documents) == ["employee_record", "invoice", "meeting_minutes",
                                       "product_spec"]
    assert (study.questions[0].document, study.questions[0].answer) == ("employee_record",
                                                                        "employee_record")
    assert_pinned_identity("render_configs", "render_docs", tmp_path)
    assert "render_configs/render_docs: 5 files" in capsys.readouterr().out


def test_quality_fetch(hub, tmp_path, capsys):
    publish_quality(hub)
    assert fetch_cli("quality", tmp_path) == 0
    articles = get_benchmark("quality").source("quality").loader(
        located("quality", "quality", tmp_path)
    )
    assert [(a.article_id, len(a.questions)) for a in articles] == [("20001", 3), ("20002", 1)]
    assert articles[0].questions[0].gold_index == 1
    assert_pinned_identity("quality", "quality", tmp_path)
    assert "QuALITY.v1.0.1.htmlstripped.dev 3 rows" in capsys.readouterr().out


def test_finewiki_fetch_streams_a_language_and_a_row_count(hub, tmp_path, capsys):
    publish_finewiki(hub, "en", rows=5)
    publish_finewiki(hub, "de", rows=4)
    assert fetch_cli("finewiki", tmp_path, "--max-rows", "3") == 0
    source = get_benchmark("finewiki").source("finewiki")
    articles = source.loader(located("finewiki", "finewiki", tmp_path))
    assert [a.article_id for a in articles] == ["enwiki/0", "enwiki/1", "enwiki/2"]
    assert articles[0].title == "Article 0" and articles[0].text.startswith("# Article 0")
    assert_pinned_identity("finewiki", "finewiki", tmp_path)
    assert "train.parquet 3 rows" in capsys.readouterr().out
    assert fetch_cli("finewiki", tmp_path, "--language", "de") == 0
    articles = source.loader(located("finewiki", "finewiki", tmp_path))
    assert [a.article_id for a in articles] == [f"dewiki/{i}" for i in range(4)]
    assert json.loads((tmp_path / "finewiki" / FETCH_MANIFEST).read_text())["max_rows"] == 300


def test_surya_detection_fetch(hub, tmp_path):
    publish_surya_detection(hub)
    assert fetch_cli("surya_detection", tmp_path) == 0
    items = get_benchmark("surya_detection").source("surya_detection").loader(
        located("surya_detection", "surya_detection", tmp_path)
    )
    assert len(items) == 2
    assert items[0].boxes == [(20.0, 10.0, 100.0, 20.0)]  # 0-1000 scaled to 200x100 pixels
    assert_pinned_identity("surya_detection", "surya_detection", tmp_path)


def test_surya_recognition_fetch_is_marked_unpinned(hub, tmp_path, capsys):
    publish_surya_recognition(hub)
    assert fetch_cli("surya_recognition", tmp_path) == 0
    items = get_benchmark("surya_recognition").source("surya_recognition").loader(
        located("surya_recognition", "surya_recognition", tmp_path)
    )
    assert [(list(page.texts), page.language) for page in items] == [
        (["first line", "second line"], "en")
    ]
    assert items[0].boxes == [(1.0, 2.0, 60.0, 20.0), (1.0, 30.0, 60.0, 50.0)]
    assert "revision main (unpinned)" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "surya_recognition" / FETCH_MANIFEST).read_text())
    assert manifest["pinned"] is False


def test_finix_fetch_takes_one_track_in_its_published_layout(hub, tmp_path):
    publish_finix(hub)
    assert fetch_cli("finix", tmp_path) == 0
    pages = get_benchmark("finix").source("finix").loader(located("finix", "finix", tmp_path))
    assert [p.name for p in pages] == ["p001", "p002"]
    assert all(p.image_path is not None and p.image_path.parent.name == "images" for p in pages)
    assert pages[0].markdown.startswith("# track1_finixdigital")
    assert not (tmp_path / "finix" / "jsons").exists()


def test_olmocr_bench_fetch_takes_the_published_bench_data(hub, tmp_path):
    publish_olmocr_bench(hub)
    assert fetch_cli("olmocr_bench", tmp_path) == 0
    folder = tmp_path / "olmocr_bench"
    assert not (folder / "README.md").exists() and not (folder / "notes.txt").exists()
    bench = get_benchmark("olmocr_bench").source("olmocr_bench").loader(
        located("olmocr_bench", "olmocr_bench", tmp_path)
    )
    assert bench.pdfs == ["arxiv_math/energy.pdf", "headers_footers/annual_report.pdf",
                          "multi_column/field_notes.pdf", "table_tests/price_list.pdf"]
    assert len(bench.tests) == 9 + 4  # the files' tests and one automatic baseline per PDF
    assert_pinned_identity("olmocr_bench", "olmocr_bench", tmp_path)


def test_omnidocbench_fetch_takes_ground_truth_and_images_at_the_asked_revision(hub, tmp_path):
    repo = hub_repo(hub, "omnidocbench", "omnidocbench")
    shutil.copytree(TEST_FIXTURES / "omnidocbench" / "fixture", repo)
    (repo / "README.md").write_text("dataset card")
    commit = "0123456789abcdef0123456789abcdef01234567"
    assert fetch_cli("omnidocbench", tmp_path, "--revision", commit) == 0
    assert hub.revisions == [("opendatalab/OmniDocBench", commit)]
    folder = located("omnidocbench", "omnidocbench", tmp_path)
    assert not (folder / "README.md").exists()
    assert json.loads((folder / FETCH_MANIFEST).read_text())["revision"] == commit
    source = get_benchmark("omnidocbench").source("omnidocbench")
    bench = source.loader(folder)
    assert len(bench.pages) == 4 and all(bench.image_path(p).is_file() for p in bench.pages)
    # four pages are no published release: the data is told by its digest, not the revision
    assert source.identity(folder).startswith("omnidocbench@sha256:")


def test_omnidocbench_data_is_identified_by_its_release(tmp_path):
    fixture = TEST_FIXTURES / "omnidocbench" / "fixture"
    page = json.loads((fixture / "OmniDocBench.json").read_text())[0]
    pages = [{**page, "page_info": {**page["page_info"], "image_path": f"p{n}.jpg"}}
             for n in range(981)]
    (tmp_path / "OmniDocBench.json").write_text(json.dumps(pages))
    source = get_benchmark("omnidocbench").source("omnidocbench")
    assert source.identity(tmp_path) == "omnidocbench@v1.0"


def test_every_fetchable_benchmark_is_covered():
    fetchable = {b.name for b in all_benchmarks() if any(s.fetch for s in b.sources)}
    tested = {"fox", "render_configs", "quality", "finewiki", "surya_detection",
              "surya_recognition", "finix", "olmocr_bench", "omnidocbench"}
    assert fetchable == tested


def test_a_failed_fetch_keeps_what_was_there(hub, tmp_path, capsys):
    publish_render_study(hub)
    data = tmp_path / "data"
    assert fetch_cli("render_configs", data) == 0
    before = {p: p.read_bytes() for p in (data / "render_docs").iterdir()}
    (github_repo(hub, "render_configs", "render_docs") / "experiment" / "questions.json").unlink()
    assert fetch_cli("render_configs", data) == 1  # fails after four of the five files
    assert "fetching render_docs from https://github.com/galah92" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in (data / "render_docs").iterdir()} == before
    assert [p.name for p in data.iterdir()] == ["render_docs"], "no staging folder left"


def test_fetch_refuses_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetNotFoundError, match="HF_HUB_OFFLINE=1: cannot download ucaslcl"):
        fetch_module.fetch(spec_of("fox", "fox"), tmp_path / "fox")
    assert not (tmp_path / "fox").exists()


def test_language_only_for_per_language_data(tmp_path, capsys):
    assert fetch_cli("quality", tmp_path, "--language", "de") == 2
    assert "no language subsets" in capsys.readouterr().err


def test_data_list_shows_origin_revision_and_use(hub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one line per source
    publish_surya_recognition(hub)
    publish_quality(hub)
    assert fetch_cli("surya_recognition", tmp_path) == 0
    assert fetch_cli("quality", tmp_path) == 0
    (tmp_path / "finewiki_like").mkdir()
    (tmp_path / "finewiki_like" / "a.parquet").write_bytes(b"x")
    capsys.readouterr()
    assert data_cli("list", "--data-dir", str(tmp_path)) == 0
    lines = {tuple(line.split()[:2]): line for line in capsys.readouterr().out.splitlines()}
    quality = lines[("quality", "quality")]
    assert " yes " in quality and " real " in quality and "f84977c40dbf" in quality
    assert "https://github.com/nyu-mll/quality/tree/f84977c4" in quality
    assert "main (unpinned)" in lines[("surya_recognition", "surya_recognition")]
    assert "placed by hand" in lines[("finewiki", "finewiki_like")]
    assert "evalsuite data fetch" in lines[("finewiki", "finewiki")]
    assert "project fixtures" in lines[("fox", "fixtures")]


def test_paper_goldens_gate_only_the_fetched_fox_set(hub, tmp_path):
    """The paper's per-bin Fox values are keyed to the Fox set as fetched (its pinned revision),
    so the rendered en_1 page and the other Fox sources never meet them."""
    golden = json.loads((GOLDEN_DIR / "fox.json").read_text())
    paper = [e for e in golden["entries"] if e["source"] == "paper"]
    assert len(paper) == 14 and sum(e["n"] for e in paper if e["parameter"] == "mode=small") == 100
    publish_fox(hub)
    publish_render_study(hub)
    (tmp_path / "fox").mkdir()
    (tmp_path / "fox" / "en_1_gt.txt").write_text("Freedom of Information Act")
    assert fetch_cli("fox", tmp_path) == 0
    fox = get_benchmark("fox")
    identities = {
        source.name: source.identity(location)
        for source, location in fox.available_sources(tmp_path)
    }
    assert {e["data"] for e in paper} == {identities["fox"]}
    assert all(identities[name] != identities["fox"] for name in identities if name != "fox")
    assert identities["fox_en_1"] == f"fox_en_1@{data_identity(tmp_path / 'fox' / 'en_1_gt.txt')}"


def test_data_list_fits_the_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert data_cli("list", "--data-dir", str(tmp_path)) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in out) <= 120
    fox = out.index(next(line for line in out if line.split()[:2] == ["fox", "fox"]))
    assert out[fox + 1].startswith("    from https://huggingface.co/datasets/ucaslcl/")
