"""The tesseract engine: text and line boxes of rendered pages, TSV grouping, availability."""

from __future__ import annotations

import shutil

import pytest

from evalsuite.engines import create_engine
from evalsuite.engines.base import InferenceRequest
from evalsuite.engines.tesseract import OcrLine, TesseractEngine, parse_tsv_lines
from evalsuite.errors import EngineUnavailableError
from evalsuite.metrics import box_iou, edit_precision
from evalsuite.render import PRESETS, RenderConfig, render_text
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data

FIXTURES = TEST_FIXTURES / "engines"
PAGE_TEXT = (FIXTURES / "page.txt").read_text(encoding="utf-8")

needs_binary = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="the tesseract binary is not on PATH: install the tesseract-ocr package "
    "(`make setup` does so as root where apt-get exists)",
)


def ocr(engine, image):
    return engine.infer(InferenceRequest(image=image, prompt="", mode="small", sample_id="page"))


@pytest.fixture(scope="module")
def engine():
    if shutil.which("tesseract") is None:
        pytest.skip("the tesseract binary is not on PATH: install the tesseract-ocr package")
    return TesseractEngine()


@pytest.fixture(scope="module")
def mono_page():
    config = PRESETS["font_mono"]
    assert (config.font, config.size) == ("mono", 20.0)
    document = render_text(PAGE_TEXT, config)
    assert len(document.pages) == 1
    return document.pages[0]


@pytest.fixture(scope="module")
def mono_result(engine, mono_page):
    return ocr(engine, mono_page.image)


@needs_binary
def test_rendered_20pt_mono_page_is_read_with_high_precision(mono_result):
    assert mono_result.error is None
    assert edit_precision(mono_result.text, PAGE_TEXT.strip()) >= 0.9
    assert mono_result.vision_tokens is None and mono_result.output_tokens is None
    assert mono_result.latency_s > 0


@needs_binary
def test_a_path_reads_like_the_pil_image(engine, mono_page, mono_result, tmp_path):
    result = ocr(engine, mono_page.save(tmp_path / "page.png"))
    assert (result.text, result.boxes) == (mono_result.text, mono_result.boxes)


@needs_binary
def test_line_boxes_match_the_renderer(mono_page, mono_result):
    drawn = [line for line in mono_page.lines if line.text.strip()]
    boxes = mono_result.boxes
    assert abs(len(boxes) - len(drawn)) <= 1
    matched = [line for line in drawn if max(box_iou(line.box, box) for box in boxes) >= 0.6]
    assert len(matched) >= 0.9 * len(drawn)


@needs_binary
def test_settings_are_recorded(engine, mono_result):
    assert mono_result.settings["lang"] == "eng"
    assert (mono_result.settings["psm"], mono_result.settings["oem"]) == (3, 3)
    assert mono_result.settings["version"][0].isdigit()
    assert mono_result.settings == engine.settings


@needs_binary
def test_psm_changes_the_command(mono_page):
    single_line = TesseractEngine(psm=7)  # one text line: the page collapses
    result = ocr(single_line, mono_page.image)
    assert result.settings["psm"] == 7
    assert len(result.boxes) <= 2


@needs_binary
@pytest.mark.parametrize("preset", ["font_serif", "color_dark"])
def test_other_presets_stay_readable(engine, preset):
    page = render_text(PAGE_TEXT, PRESETS[preset]).pages[0]
    assert edit_precision(ocr(engine, page.image).text, PAGE_TEXT.strip()) >= 0.85


@needs_binary
def test_study_documents(engine):
    for path in sorted(shared_data("render_docs").glob("*.txt")):  # the seed study's documents
        text = path.read_text(encoding="utf-8")
        page = render_text(text, RenderConfig()).pages[0]
        # 0.85: Tesseract's text puts blank lines between the blocks it finds, and drops rules
        # drawn with dashes (product_spec), which the ground truth counts as errors.
        assert edit_precision(ocr(engine, page.image).text, text.strip()) >= 0.85, path.name


@needs_binary
def test_failures_are_per_sample(engine, tmp_path):
    missing = ocr(engine, tmp_path / "absent.png")
    assert missing.failed and "absent.png" in missing.error
    no_image = ocr(engine, None)
    assert no_image.failed and "request.image" in no_image.error
    not_an_image = tmp_path / "page.png"
    not_an_image.write_text("not a png")
    assert ocr(engine, not_an_image).failed


@needs_binary
def test_missing_language_is_unavailable():
    with pytest.raises(EngineUnavailableError, match="tesseract-ocr-xxq"):
        TesseractEngine(lang="eng+xxq")


@needs_binary
def test_registered_as_tesseract():
    engine = create_engine("tesseract", psm=6)
    assert isinstance(engine, TesseractEngine) and engine.kind == "ocr" and engine.psm == 6


def test_missing_binary_says_how_to_install():
    with pytest.raises(EngineUnavailableError, match="apt-get install tesseract-ocr"):
        TesseractEngine(binary="no-such-tesseract-binary")


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"psm": 14}, ValueError, "psm"),
        ({"psm": "3"}, TypeError, "psm"),
        ({"oem": -1}, ValueError, "oem"),
        ({"lang": ""}, ValueError, "lang"),
        ({"timeout_s": 0}, ValueError, "timeout_s"),
    ],
)
def test_bad_options_are_named(options, error, name):
    with pytest.raises(error, match=name):
        TesseractEngine(binary="no-such-tesseract-binary", **options)


def test_tsv_words_are_grouped_into_lines():
    lines = parse_tsv_lines((FIXTURES / "words.tsv").read_text(encoding="utf-8"))
    assert lines == [
        # Hello (22..102 x 25..46) and world, (121..215 x 27..52); the blank word is ignored.
        OcrLine("Hello world,", (22, 25, 215, 52)),
        OcrLine("next", (22, 60, 72, 80)),
        OcrLine("Block two", (300, 198, 380, 222)),
    ]


def test_tsv_header_only_has_no_lines():
    assert parse_tsv_lines("level\tpage_num\tblock_num\n") == []


def test_tsv_rejects_short_rows_and_non_str():
    with pytest.raises(ValueError, match="row 2"):
        parse_tsv_lines("header\n5\t1\t1\n")
    with pytest.raises(TypeError, match="tsv"):
        parse_tsv_lines(None)
