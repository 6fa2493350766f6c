"""Dataset loaders on the project's fixtures (and the real samples when EVALSUITE_DATA is set)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as parquet
import pytest

from evalsuite.datasets import fetch as fetch_module
from evalsuite.datasets import require_path
from evalsuite.datasets.finewiki import load_finewiki
from evalsuite.datasets.finix import load_finix_pages, load_pubtabnet_pages
from evalsuite.datasets.fox import load_fox_pages
from evalsuite.datasets.quality import load_quality, quality_files
from evalsuite.datasets.render_study import load_render_study
from evalsuite.datasets.surya import load_detection, load_recognition, scale_box
from evalsuite.errors import DatasetFormatError, DatasetNotFoundError
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import DATA, needs_data

FIXTURES = TEST_FIXTURES


def test_fox_fixture_layout():
    pages = load_fox_pages(FIXTURES / "fox")
    assert [p.page_id for p in pages] == ["fixture_1", "fixture_2", "fixture_3"]
    assert all(p.image_path.exists() and p.gt_tokens > 0 for p in pages)
    assert pages[0].text.startswith("Quarterly Maintenance Report")


def test_fox_bad_records(tmp_path):
    base = tmp_path / "focus_benchmark_test"
    base.mkdir()
    (base / "en_page_ocr.json").write_text(json.dumps([{"image": "a.png"}]))
    with pytest.raises(DatasetFormatError, match="record 0"):
        load_fox_pages(tmp_path)
    with pytest.raises(ValueError, match="language"):
        load_fox_pages(tmp_path, language="de")


def test_missing_data_names_path_and_fetch_command(tmp_path):
    with pytest.raises(DatasetNotFoundError) as info:
        require_path(tmp_path / "nope", "quality")
    assert str(tmp_path / "nope") in str(info.value)
    assert "evalsuite data list" in str(info.value) and "EVALSUITE_DATA" in str(info.value)


def test_quality_fixture_merges_articles():
    (path,) = quality_files(FIXTURES / "quality")
    articles = load_quality(path)
    assert len(articles) == 2
    assert all(len(a.questions) == 2 for a in articles)
    assert articles[0].questions[0].options[articles[0].questions[0].gold_index] == "1887"


def test_quality_lines_of_one_article_are_merged(tmp_path):
    line = json.loads(
        (FIXTURES / "quality" / "QuALITY.v1.0.1.htmlstripped.dev").read_text().splitlines()[0]
    )
    second = {**line, "questions": [{**line["questions"][0], "question_unique_id": "other"}]}
    path = tmp_path / "QuALITY.v1.0.1.htmlstripped.dev"
    path.write_text(json.dumps(line) + "\n" + json.dumps(second) + "\n" + json.dumps(line) + "\n")
    (article,) = load_quality(path)
    assert [q.question_id for q in article.questions] == ["fx0_q0", "fx0_q1", "other"]


def test_render_study_fixture():
    study = load_render_study(FIXTURES / "render_docs")
    assert set(study.documents) == {"parts_order", "visitor_badge"}
    assert len(study.questions) == 6


def test_finewiki_fixture():
    articles = load_finewiki(FIXTURES / "finewiki")
    assert len(articles) == 3 and all(len(a.text.split()) > 550 for a in articles)


def test_surya_fixtures():
    (page,) = load_detection(FIXTURES / "surya" / "detection")
    assert page.boxes and all(0 <= b[0] < b[2] <= page.image.width for b in page.boxes)
    (lines,) = load_recognition(FIXTURES / "surya" / "recognition")
    assert len(lines.boxes) == len(lines.texts) and lines.language == "en"
    assert scale_box([0, 0, 1000, 500], 200, 100) == (0.0, 0.0, 200.0, 50.0)


def test_finix_fixture_pages():
    pages = load_finix_pages(FIXTURES / "finix" / "gt")
    assert pages and all(p.markdown for p in pages)


@needs_data()
def test_real_samples_load():
    assert len(load_quality(quality_files(DATA / "quality")[0])[0].questions) == 5
    assert len(load_finewiki(DATA / "finewiki_like")) == 30
    assert len(load_render_study(DATA / "render_docs").questions) == 30
    tables = load_pubtabnet_pages(DATA / "pubtabnet")
    assert len(tables) == 20 and all(p.markdown.startswith("<table>") for p in tables)


def _renamed_fox(folder: Path) -> tuple[Path, Path]:
    base = folder / "focus_benchmark_test"
    base.mkdir()
    records = json.loads((FIXTURES / "fox" / "focus_benchmark_test" / "en_page_ocr.json")
                         .read_text())
    records[1]["conversation"] = records[1].pop("conversations")
    (base / "en_page_ocr.json").write_text(json.dumps(records))
    return folder, base / "en_page_ocr.json"


def _renamed_quality(folder: Path) -> tuple[Path, Path]:
    lines = (FIXTURES / "quality" / "QuALITY.v1.0.1.htmlstripped.dev").read_text().splitlines()
    record = json.loads(lines[0])
    record["questions"][1]["gold"] = record["questions"][1].pop("gold_label")
    path = folder / "QuALITY.v1.0.1.htmlstripped.dev"
    path.write_text(json.dumps(record) + "\n")
    return path, path


def _renamed_parquet(fixture: Path, old: str, new: str) -> Callable[[Path], tuple[Path, Path]]:
    def build(folder: Path) -> tuple[Path, Path]:
        table = parquet.read_table(fixture)
        names = [new if name == old else name for name in table.column_names]
        parquet.write_table(table.rename_columns(names), folder / "renamed.parquet")
        return folder, folder / "renamed.parquet"

    return build


def _renamed_render_study(folder: Path) -> tuple[Path, Path]:
    for path in (FIXTURES / "render_docs").iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    questions = json.loads((folder / "questions.json").read_text())
    entry = next(iter(questions.values()))["questions"][0]
    entry["question"] = entry.pop("q")
    (folder / "questions.json").write_text(json.dumps(questions))
    return folder, folder / "questions.json"


def _renamed_pubtabnet(folder: Path) -> tuple[Path, Path]:
    record = {"filename": "t.png", "split": "train", "imgid": 1, "annotation": {}}
    (folder / "PubTabNet_Examples.jsonl").write_text(json.dumps(record) + "\n")
    return folder, folder / "PubTabNet_Examples.jsonl"


@pytest.mark.parametrize(
    ("build", "load", "column", "schema"),
    [
        (_renamed_fox, load_fox_pages, "conversations", "Fox page OCR (ucaslcl/Fox)"),
        (_renamed_quality, load_quality, "gold_label", "QuALITY v1.0.1 question"),
        (
            _renamed_parquet(FIXTURES / "finewiki" / "sample.parquet", "text", "content"),
            load_finewiki,
            "text",
            "FineWiki (HuggingFaceFW/finewiki)",
        ),
        (
            _renamed_parquet(FIXTURES / "surya" / "recognition" / "data.parquet", "text", "texts"),
            load_recognition,
            "text",
            "Surya recognition benchmark (vikp/rec_bench)",
        ),
        (
            _renamed_parquet(FIXTURES / "surya" / "detection" / "data.parquet", "bboxes", "boxes"),
            load_detection,
            "bboxes",
            "Surya detection benchmark (vikp/doclaynet_bench)",
        ),
        (_renamed_render_study, load_render_study, "q", "render study question"),
        (_renamed_pubtabnet, load_pubtabnet_pages, "html", "PubTabNet (ibm-aur-nlp/PubTabNet)"),
    ],
    ids=["fox", "quality", "finewiki", "surya_recognition", "surya_detection", "render_study",
         "pubtabnet"],
)
def test_a_renamed_column_is_one_clear_error(tmp_path, build, load, column, schema):
    location, bad_file = build(tmp_path)
    with pytest.raises(DatasetFormatError) as info:
        load(location)
    message = str(info.value)
    assert not isinstance(info.value, KeyError)
    assert str(bad_file) in message, "names the file"
    assert f"missing column {column!r}" in message, "names the column"
    assert f"expected the {schema}" in message, "names the expected schema"


def test_fox_record_that_is_not_an_object(tmp_path):
    (tmp_path / "en_page_ocr.json").write_text('["en_1.png"]')
    with pytest.raises(DatasetFormatError, match="record 0: expected an object with columns "
                                                 "image, len, conversations"):
        load_fox_pages(tmp_path)


def test_finix_track_layout_pairs_pages_with_images(tmp_path):
    (tmp_path / "mds").mkdir()
    (tmp_path / "images").mkdir()
    (tmp_path / "mds" / "b.md").write_text("# B")
    (tmp_path / "mds" / "a.md").write_text("# A")
    (tmp_path / "images" / "a.jpg").write_bytes(b"jpg")
    pages = load_finix_pages(tmp_path)
    assert [(p.name, p.image_path) for p in pages] == [
        ("a", tmp_path / "images" / "a.jpg"),
        ("b", None),
    ]


def test_fetch_refuses_offline_and_names_the_repository(tmp_path, monkeypatch):
    spec = fetch_module.HubRows("org/some-dataset", revision="0" * 40)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetNotFoundError, match="HF_HUB_OFFLINE=1: cannot download org/some"):
        fetch_module.fetch(spec, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()
