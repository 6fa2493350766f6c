"""The peers' PDF-page rendering (``ModelProfile.pdf_rendering``) against their runners' own:
olmocr's poppler renderings (olmOCR-2, the API models, Nanonets-OCR2), chandra-ocr's and MinerU's
PDFium renderings and dots.ocr's MuPDF one, on cases those functions made
(tests/fixtures/models/gen_pdf_rendering.py, dots_ocr/gen_dots_ocr_render_sizes.py); and a
served engine sends a PDF page rendered so."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from pathlib import Path

import pypdfium2
import pytest
from PIL import Image

from evalsuite.datasets.pages import render_pdf_page
from evalsuite.engines.base import InferenceRequest, PdfPage
from evalsuite.engines.served import prepared_page
from evalsuite.models import model_profile
from evalsuite.models.dots_ocr import fitz_dpi
from tests.support.paths import TEST_FIXTURES

MODELS = TEST_FIXTURES / "models"
FIXTURE_PDFS = TEST_FIXTURES / "olmocr_bench" / "fixture" / "pdfs"
RUNNER_PROFILES = {
    "olmocr-1288": ("olmOCR-2",),
    "olmocr-2048": ("GPT-4o", "GPT-5", "Gemini-2.5-Flash"),
    "nanonets-1280": ("Nanonets-OCR2",),
    "chandra_ocr-0.1.8": ("Chandra",),
    "chandra_ocr-0.2.0": ("Chandra-2",),
    "mineru-2.5.4": ("MinerU2.5",),
}
LARGE_PIXELS = 12_000_000
POPPLER = ("olmocr-1288", "olmocr-2048", "nanonets-1280")


def _cases(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)["cases"]


def _blank_pdf(points: list[float], folder: Path) -> Path:
    path = folder / f"blank_{points[0]}x{points[1]}.pdf"
    if not path.exists():
        document = pypdfium2.PdfDocument.new()
        document.new_page(*points)
        document.save(path)
        document.close()
    return path


def _pdf(case: dict, folder: Path) -> Path:
    return FIXTURE_PDFS / case["pdf"] if case["pdf"] else _blank_pdf(case["page_points"], folder)


@pytest.mark.parametrize("runner", sorted(RUNNER_PROFILES))
def test_rendering_equals_the_runners(runner: str, tmp_path: Path) -> None:
    """PDFium runners (chandra-ocr, MinerU): the same pixels and the size sent; poppler's
    (olmocr): the size within a pixel of pdftoppm's (its rounding of the resolution differs)."""
    cases = [c for c in _cases(MODELS / "pdf_rendering.json.gz") if c["runner"] == runner]
    assert len(cases) >= 12
    first = runner.split("-")[0]
    exact = 0
    for case in cases:
        rendering = model_profile(RUNNER_PROFILES[runner][0]).pdf_rendering
        assert rendering is not None
        where = (runner, case["pdf"] or case["page_points"])
        if case["rendered"][0] * case["rendered"][1] > LARGE_PIXELS:  # sizes only: seconds each
            scale = rendering.dpi(*case["page_points"]) / 72
            assert [math.ceil(side * scale) for side in case["page_points"]] == case["rendered"]
            exact += 1
            continue
        page = render_pdf_page(_pdf(case, tmp_path), 0, rendering.dpi)
        if runner in POPPLER:  # poppler rounds its resolution otherwise: within a pixel
            assert all(abs(a - b) <= 1 for a, b in zip(page.size, case["rendered"], strict=True))
            exact += list(page.size) == case["rendered"]
        else:
            assert list(page.size) == case["rendered"], where
            assert hashlib.sha256(page.tobytes()).hexdigest() == case["pixels_sha256"], where
            if first == "chandra_ocr":
                assert rendering.prepare is not None
                assert list(rendering.prepare(page).size) == case["sent"], where
    if runner in POPPLER:
        assert exact >= len(cases) - 1, f"{exact} of {len(cases)} sizes equal poppler's"
    for name in RUNNER_PROFILES[runner][1:]:
        assert model_profile(name).pdf_rendering == model_profile(
            RUNNER_PROFILES[runner][0]).pdf_rendering


def test_poppler_targets_differ_per_model(tmp_path: Path) -> None:
    """A page comes at 1,288 px for olmOCR-2, 2,048 px for GPT-4o, 1,280 px short side for
    Nanonets: each as its runner, not one resolution for all."""
    pdf = FIXTURE_PDFS / "arxiv_math" / "energy.pdf"
    sizes = {name: render_pdf_page(pdf, 0, model_profile(name).pdf_rendering.dpi).size
             for name in ("olmOCR-2", "GPT-4o", "Nanonets-OCR2")}
    assert max(sizes["olmOCR-2"]) == 1288 and max(sizes["GPT-4o"]) == 2048
    assert min(sizes["Nanonets-OCR2"]) == 1280


def test_dots_ocr_pdf_pages_equal_load_images_from_pdf(tmp_path: Path) -> None:
    """dots.ocr's PDF pages: 200 dpi, 72 dpi where a side would exceed 4,500 px, the size MuPDF
    gave (``load_images_from_pdf``) on its cases; sent without the image rule's x200/96."""
    cases = [c for c in _cases(MODELS / "dots_ocr" / "dots_ocr_render_sizes.json.gz")
             if c["input"]["kind"] == "pdf" and c["input"]["dpi"] == 200]
    assert len(cases) >= 8
    assert any(fitz_dpi(*c["input"]["page_points"]) == 72 for c in cases)
    rendering = model_profile("dots.ocr").pdf_rendering
    assert rendering is not None and rendering.prepare is None
    for case in cases:
        page = render_pdf_page(_blank_pdf(case["input"]["page_points"], tmp_path), 0,
                               rendering.dpi)
        assert list(page.size) == case["output"]["rendered"], case["input"]


def test_a_served_peer_is_sent_its_own_rendering_of_a_pdf_page() -> None:
    """With ``pdf_page`` a profile with a PDF rule renders the page itself (olmOCR-2: 1,288 px),
    a profile without one (Qwen2.5-VL) prepares the benchmark's rendering as an image; without
    ``pdf_page`` the image rule applies."""
    pdf = FIXTURE_PDFS / "table_tests" / "price_list.pdf"
    benchmark_page = render_pdf_page(pdf, 0, longest_side=2048)
    with_pdf = InferenceRequest(benchmark_page, "p", "native", "s", pdf_page=PdfPage(pdf, 0))
    without = InferenceRequest(benchmark_page, "p", "native", "s")
    olmocr = model_profile("olmOCR-2")
    original, page = prepared_page(olmocr, with_pdf)
    expected = render_pdf_page(pdf, 0, longest_side=1288)
    assert original.size == page.size == expected.size
    assert page.tobytes() == expected.tobytes()  # rendered, not the 2,048 px page resized
    _, resized = prepared_page(olmocr, without)
    assert resized.size == page.size and resized.tobytes() != page.tobytes()
    original, _ = prepared_page(model_profile("Qwen2.5-VL"), with_pdf)
    assert original.size == benchmark_page.size
    chandra = model_profile("Chandra")
    original, page = prepared_page(chandra, with_pdf)
    assert min(original.size) == 1024 or original.size == render_pdf_page(pdf, 0, 192).size
    assert page.size == chandra.pdf_rendering.prepare(original).size
    assert isinstance(page, Image.Image)


def test_olmocr_bench_requests_name_their_pdf_page_and_the_cache_keys_on_it(
    tmp_path: Path,
) -> None:
    """Each olmOCR-bench request carries the PDF page its image was rendered from (0-based index)
    and the request cache tells two PDF pages apart even when their 2,048 px images are equal
    (a model rendering at a fixed dpi sees pages of other sizes)."""
    from evalsuite.benchmarks import olmocr_bench
    from evalsuite.datasets.olmocr_bench import load_olmocr_bench
    from evalsuite.request_cache import request_key

    bench = load_olmocr_bench(FIXTURE_PDFS.parent)
    samples = olmocr_bench.samples(bench, "native")
    for sample in samples:
        pdf, page = sample.details["page"].rsplit("#", 1)
        source = sample.request.pdf_page
        assert source == PdfPage(FIXTURE_PDFS / pdf, int(page) - 1)
        assert source.path.is_file()
    small, large = _blank_pdf([300, 400], tmp_path), _blank_pdf([600, 800], tmp_path)
    images = [render_pdf_page(path, 0, longest_side=2048) for path in (small, large)]
    assert images[0].tobytes() == images[1].tobytes()
    keys = {request_key("dots.ocr-v2", object(), InferenceRequest(
        image, "p", "native", "s", pdf_page=PdfPage(path, 0)))
        for image, path in zip(images, (small, large), strict=True)}
    assert len(keys) == 2


def test_a_pdf_page_the_model_cannot_render_fails_its_sample_naming_it(tmp_path: Path) -> None:
    """A page past the PDF's end: the sample's error names the profile's rule, file and page."""
    pdf = FIXTURE_PDFS / "table_tests" / "price_list.pdf"
    request = InferenceRequest(Image.new("RGB", (8, 8)), "p", "native", "s",
                               pdf_page=PdfPage(pdf, 5))
    with pytest.raises(ValueError, match=r"olmOCR-2's PDF rendering \(longest side 1288 px"
                       r" \(PDFium\)\) of .*price_list\.pdf page 6"):
        prepared_page(model_profile("olmOCR-2"), request)
