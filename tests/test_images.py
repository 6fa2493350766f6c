"""Page images: the pixel limit and the one-line errors for bad files, wherever an image is read
(open_image itself, the engines, the server, the Surya loader, `evalsuite eval`, the benchmarks)."""

from __future__ import annotations

import base64
import io
import json
import shutil
import struct
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageFile

from evalsuite.engines.base import InferenceRequest, InferenceResult, create_engine
from evalsuite.engines.deepseek_inputs import load_page_image
from evalsuite.engines.served import encode_page
from evalsuite.errors import ImageInputError
from evalsuite.images import (
    DEFAULT_MAX_IMAGE_PIXELS,
    max_image_pixels,
    open_image,
    parse_max_image_pixels,
    set_max_image_pixels,
)
from evalsuite.metrics import edit_precision
from evalsuite.runner import MetricSpec, Sample, run_benchmark
from evalsuite.serving.app import RequestError, decode_data_url
from tests.support.subprocess_runs import REPO, needs_tesseract, run_evalsuite, run_pytest

BIG_SIDE = 30_000
BIG_MESSAGE = "30000×30000 = 900 MP exceeds the limit of 100 MP; raise it with --max-image-pixels"


def png_header_file(width: int, height: int) -> bytes:
    """A 1-bit greyscale PNG that claims ``width`` x ``height`` but holds one row of pixels:
    a few hundred bytes whose header says how large the image is."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        checksum = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + checksum

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # depth 1, grey
    one_row = zlib.compress(b"\x00" * (1 + (width + 7) // 8))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", one_row)
        + chunk(b"IEND", b"")
    )


def page_bytes(image_format: str, size: tuple[int, int] = (300, 200)) -> bytes:
    page = Image.new("RGB", size, "white")
    ImageDraw.Draw(page).text((10, 10), "Invoice 42", fill="black")
    buffer = io.BytesIO()
    page.save(buffer, format=image_format)
    return buffer.getvalue()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """One file per kind of page image, good and bad."""
    png = page_bytes("PNG")
    contents = {
        "big.png": png_header_file(BIG_SIDE, BIG_SIDE),
        "page.png": png,
        "page.jpg": page_bytes("JPEG"),
        "cut.png": png[: len(png) // 2],
        "empty.png": b"",
        "notes.png": b"this is not an image\n",
        "scan.png": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
    }
    paths = {}
    for name, data in contents.items():
        paths[name] = tmp_path / name
        paths[name].write_bytes(data)
    return paths


# --- open_image ---------------------------------------------------------------------------------


def test_a_30000_square_png_is_refused_from_its_header_before_any_pixel_is_decoded(
    files, monkeypatch
):
    def no_decoding(self):
        raise AssertionError("open_image decoded the pixels of an image above the limit")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    pil_limit = Image.MAX_IMAGE_PIXELS
    assert files["big.png"].stat().st_size < 1000
    with pytest.raises(ImageInputError) as refused:
        open_image(files["big.png"])
    assert str(refused.value) == f"{files['big.png']}: {BIG_MESSAGE}"
    assert pil_limit == Image.MAX_IMAGE_PIXELS  # Pillow's own setting is left as it was


def test_the_limit_is_ours_not_pillows(files):
    # 900 MP is far above Pillow's own decompression-bomb limit (2 x 89.5 MP), which would
    # refuse the header itself; a raised limit of ours lets it through.
    with open_image(files["big.png"], max_pixels=BIG_SIDE**2, load=False) as header:
        assert header.size == (BIG_SIDE, BIG_SIDE)
    with pytest.raises(ImageInputError, match="exceeds the limit of 900 MP"):
        open_image(files["big.png"], max_pixels=BIG_SIDE**2 - 1, load=False)


def test_the_limit_is_inclusive_and_named_in_megapixels(files):
    with open_image(files["page.png"], max_pixels=300 * 200) as page:
        assert page.size == (300, 200)
    with pytest.raises(ImageInputError) as refused:
        open_image(files["page.png"], max_pixels=50_000)
    assert str(refused.value) == (
        f"{files['page.png']}: 300×200 = 0.06 MP exceeds the limit of 0.05 MP; "
        "raise it with --max-image-pixels"
    )
    with pytest.raises(ImageInputError, match="exceeds the limit"):
        open_image(files["page.png"], max_pixels=300 * 200 - 1)


@settings(max_examples=60, deadline=None)
@given(
    width=st.integers(1, 100_000),
    height=st.integers(1, 100_000),
    limit=st.integers(1, 10**10),
)
def test_a_header_passes_exactly_when_width_times_height_is_within_the_limit(
    width, height, limit
):
    data = png_header_file(width, height)
    if width * height <= limit:
        with open_image(data, max_pixels=limit, load=False) as header:
            assert header.size == (width, height)
    else:
        with pytest.raises(ImageInputError, match=f"{width}×{height} = .* exceeds the limit"):
            open_image(data, max_pixels=limit, load=False)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("empty.png", "the file is empty (0 bytes), not an image"),
        ("notes.png", "not an image Pillow can read (it looks like text: 'this is not an image')"),
        ("scan.png", "not an image Pillow can read (it is a PDF document)"),
        ("cut.png", "truncated or corrupt image (image file is truncated)"),
        ("absent.png", "no such file"),
    ],
)
def test_a_bad_file_is_one_line_naming_it_and_the_problem(files, tmp_path, name, problem):
    path = tmp_path / name
    with pytest.raises(ImageInputError) as refused:
        open_image(path)
    assert str(refused.value) == f"{path}: {problem}"
    assert isinstance(refused.value, ValueError)


def test_a_directory_and_bytes_are_named_too(tmp_path):
    with pytest.raises(ImageInputError) as refused:
        open_image(tmp_path)
    assert str(refused.value) == f"{tmp_path}: a directory, not an image file"
    with pytest.raises(ImageInputError) as refused:
        open_image(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8)
    assert str(refused.value) == (
        "image: not an image Pillow can read (it starts like a PNG file, but its header is broken)"
    )
    with pytest.raises(ImageInputError) as refused:
        open_image(b"", what="upload")
    assert str(refused.value) == "upload: the file is empty (0 bytes), not an image"


def test_a_jpeg_page_is_decoded_in_full(files):
    with open_image(files["page.jpg"]) as page:
        assert (page.format, page.mode, page.size) == ("JPEG", "RGB", (300, 200))
        corner = page.getpixel((299, 199))
    assert min(corner) > 240  # the white background, decoded


def test_a_truncated_jpeg_fails_at_decoding(files, tmp_path):
    data = files["page.jpg"].read_bytes()
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageInputError) as refused:
        open_image(cut)
    assert str(refused.value).startswith(f"{cut}: truncated or corrupt image (image file is ")


@pytest.mark.parametrize(
    ("text", "pixels"),
    [("120000000", 120_000_000), ("120_000_000", 120_000_000), ("1.2e8", 120_000_000), ("1", 1)],
)
def test_limits_parse_as_whole_pixel_counts(text, pixels):
    assert parse_max_image_pixels(text) == pixels


@pytest.mark.parametrize("text", ["0", "-5", "2.5", "many", "", "nan", "inf"])
def test_bad_limits_are_refused_quoting_the_value(text):
    with pytest.raises(ValueError) as refused:
        parse_max_image_pixels(text)
    assert str(refused.value) == f"{text!r}: expected a whole number of pixels >= 1"


def test_the_process_limit_is_the_default_of_every_read(files):
    assert max_image_pixels() == DEFAULT_MAX_IMAGE_PIXELS
    previous = set_max_image_pixels(50_000)
    try:
        assert previous == DEFAULT_MAX_IMAGE_PIXELS
        with pytest.raises(ImageInputError, match=r"exceeds the limit of 0\.05 MP"):
            load_page_image(files["page.png"])
        url = "data:image/png;base64," + base64.b64encode(files["page.png"].read_bytes()).decode()
        with pytest.raises(RequestError, match=r"^image_url: 300×200 = 0\.06 MP exceeds"):
            decode_data_url(url)  # what `evalsuite serve --max-image-pixels 50000` refuses
    finally:
        set_max_image_pixels(previous)
    assert load_page_image(files["page.png"]).size == (300, 200)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="--max-image-pixels"):
            set_max_image_pixels(bad)
    assert max_image_pixels() == DEFAULT_MAX_IMAGE_PIXELS


# --- engines and the server ----------------------------------------------------------------------


@pytest.mark.parametrize("read", [load_page_image, encode_page], ids=["deepseek", "served"])
def test_engines_read_through_the_limit(files, read):
    with pytest.raises(ImageInputError) as refused:
        read(files["big.png"])
    assert str(refused.value) == f"{files['big.png']}: {BIG_MESSAGE}"


def test_the_server_refuses_an_uploaded_bomb_with_the_same_line(files):
    url = "data:image/png;base64," + base64.b64encode(files["big.png"].read_bytes()).decode()
    with pytest.raises(RequestError) as refused:
        decode_data_url(url)
    assert str(refused.value) == f"image_url: {BIG_MESSAGE}"


@needs_tesseract
def test_a_bad_image_in_a_benchmark_is_a_failed_sample_with_its_reason(files):
    engine = create_engine("tesseract")
    names = ["page.png", "big.png", "cut.png", "empty.png", "notes.png"]
    samples = [
        Sample(name, InferenceRequest(files[name], "", "native", name), reference="Invoice 42")
        for name in names
    ]
    record = run_benchmark(
        engine,
        samples,
        lambda sample, result: {"edit_precision": edit_precision(result.text, sample.reference)},
        [MetricSpec("edit_precision")],
        benchmark="images",
        engine_label="tesseract",
        data="tmp",
        parameter="mode=native",
    )
    by_id = {sample.sample_id: sample for sample in record.samples}
    assert by_id["page.png"].error is None
    expected = {
        "big.png": BIG_MESSAGE,
        "cut.png": "truncated or corrupt image (image file is truncated)",
        "empty.png": "the file is empty (0 bytes), not an image",
        "notes.png": "not an image Pillow can read (it looks like text: 'this is not an image')",
    }
    for name, problem in expected.items():
        assert by_id[name].error == f"ImageInputError: {files[name]}: {problem}"
        assert by_id[name].scores["edit_precision"] == 0.0  # scored worst, never as empty text
        assert by_id[name].scores["empty_output_rate"] is True
    assert record.metrics["edit_precision"].n == len(names)


def test_a_bad_surya_image_fails_its_own_sample_and_the_others_run(tmp_path):
    datasets = pytest.importorskip("datasets")
    good = page_bytes("PNG")
    table = datasets.Dataset.from_dict(
        {
            "image": [{"bytes": good, "path": None}, {"bytes": b"", "path": None}],
            "bboxes": [[[0, 0, 500, 500]], [[0, 0, 500, 500]]],
        }
    ).cast_column("image", datasets.Image(decode=False))
    parquet = tmp_path / "detection.parquet"
    table.to_parquet(str(parquet))
    from evalsuite.benchmarks import surya_detection
    from evalsuite.datasets.surya import load_detection

    good_page, bad_page = load_detection(parquet)
    assert good_page.image.size == (300, 200) and good_page.boxes == [(0.0, 0.0, 150.0, 100.0)]
    message = f"{parquet} row 1 image: the file is empty (0 bytes), not an image"
    assert bad_page.image is None and bad_page.error == message

    class BoxEngine:
        name, kind, asked = "boxes", "ocr", []

        def infer_batch(self, requests):
            self.asked.extend(request.sample_id for request in requests)
            return [InferenceResult("line", boxes=[(0.0, 0.0, 150.0, 100.0)]) for _ in requests]

    engine = BoxEngine()
    record = run_benchmark(
        engine, surya_detection.samples([good_page, bad_page], "native"), surya_detection.score,
        surya_detection.METRICS, benchmark="surya_detection", engine_label="boxes",
        data="tmp", parameter="mode=native",
    )
    assert engine.asked == ["0"]  # the unreadable page never reaches the engine
    by_id = {sample.sample_id: sample for sample in record.samples}
    assert by_id["0"].error is None and by_id["0"].scores["precision"] == 1.0
    assert by_id["1"].error == message and by_id["1"].scores["precision"] == 0.0


# --- front ends ----------------------------------------------------------------------------------


def test_eval_refuses_a_30000_square_png_in_one_line(files):
    done = run_evalsuite("eval", "--image", files["big.png"], "--dry-run")
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"evalsuite eval: error: {files['big.png']}: {BIG_MESSAGE}\n"
    assert done.stdout == ""


def test_eval_takes_a_raised_limit(files):
    page = files["page.png"]
    refused = run_evalsuite("eval", "--image", page, "--dry-run", "--max-image-pixels", 59_000)
    assert refused.returncode == 2
    assert "300×200 = 0.06 MP exceeds the limit of 0.059 MP" in refused.stderr
    done = run_evalsuite(
        "eval", "--image", files["page.png"], "--dry-run", "--max-image-pixels", 60_000, "--json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["image"] == {
        "path": str(files["page.png"]), "width": 300, "height": 200
    }


def test_eval_refuses_a_bad_limit(files):
    done = run_evalsuite(
        "eval", "--image", files["page.png"], "--dry-run", "--max-image-pixels", "0"
    )
    assert done.returncode == 2
    assert "argument --max-image-pixels: '0': expected a whole number of pixels >= 1" in (
        done.stderr
    )


def test_pytest_refuses_a_bad_limit_before_anything_runs(tmp_path):
    done = run_pytest(
        "benches", "-m", "fox", "--max-image-pixels", "-3", "--report-dir", str(tmp_path)
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    assert "--max-image-pixels '-3': expected a whole number of pixels >= 1" in done.stderr


@needs_tesseract
def test_pytest_benchmark_pages_above_the_limit_are_failed_samples(tmp_path):
    golden = tmp_path / "golden"
    shutil.copytree(REPO / "golden", golden)
    done = run_pytest(
        "benches/test_fox.py", "--engine", "tesseract", "--max-image-pixels", "1000",
        "--report-dir", str(tmp_path / "reports"), "--golden-dir", str(golden),
    )
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-3000:]
    page = REPO / "tests/fixtures/fox/focus_benchmark_test/en_pdf_png/fixture_1.png"
    reason = (
        f"ImageInputError: {page}: 1024×1024 = 1.049 MP exceeds the limit of 0.001 MP; "
        "raise it with --max-image-pixels"
    )
    assert f"fixture_1: failed: {reason}" in done.stdout
    (results,) = (tmp_path / "reports").glob("*/results.json")
    samples = [
        sample
        for record in json.loads(results.read_text(encoding="utf-8"))["records"]
        for sample in record["samples"]
    ]
    assert samples and all(sample["error"].endswith("raise it with --max-image-pixels")
                           for sample in samples)
    assert {sample["sample_id"]: sample["error"] for sample in samples}["fixture_1"] == reason


def test_a_server_the_run_starts_holds_images_to_the_runs_limit(tmp_path, files) -> None:
    """start_server passes the run's limit to the server's environment; `evalsuite serve`
    takes it as its default, so a page the run would refuse is refused there too."""
    import httpx

    from evalsuite.plugin.server import ServerPlan, start_server

    command = ("{python} -m evalsuite serve --engine evalsuite.perf.serving:fixed_latency_engine "
               "--engine-option latency_s=0 --port {port}").format(python=sys.executable,
                                                                   port="{port}")
    previous = set_max_image_pixels(50_000)
    try:
        server = start_server(ServerPlan(command, "model", 60.0), tmp_path / "server.log")
    finally:
        set_max_image_pixels(previous)
    try:
        url = "data:image/png;base64," + base64.b64encode(files["page.png"].read_bytes()).decode()
        body = {"model": "fixed-latency", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "OCR"},
        ]}]}
        answer = httpx.post(f"{server.api_base}/chat/completions", json=body, timeout=30)
    finally:
        server.stop()
    assert answer.status_code == 400, answer.text
    assert "300×200 = 0.06 MP exceeds the limit of 0.05 MP" in answer.text


def test_the_limit_variable_sets_the_commands_default(monkeypatch) -> None:
    import argparse

    from evalsuite.images import LIMIT_ENV, add_max_image_pixels_argument

    monkeypatch.setenv(LIMIT_ENV, "1_000")
    parser = argparse.ArgumentParser()
    add_max_image_pixels_argument(parser)
    assert parser.parse_args([]).max_image_pixels == 1000
    assert parser.parse_args(["--max-image-pixels", "5"]).max_image_pixels == 5
    monkeypatch.setenv(LIMIT_ENV, "lots")
    with pytest.raises(ValueError, match=r"\$EVALSUITE_MAX_IMAGE_PIXELS: 'lots': expected"):
        add_max_image_pixels_argument(argparse.ArgumentParser())


def test_the_lines_of_an_unreadable_recognition_page_fail_and_count_with_their_weight():
    from evalsuite.benchmarks import surya_recognition
    from evalsuite.datasets.surya import RecognitionPage

    image = Image.new("RGB", (200, 40), "white")
    good = RecognitionPage("0", image, [(0.0, 0.0, 200.0, 40.0)], ["hello"], "en")
    bad = RecognitionPage("1", None, [(0.0, 0.0, 200.0, 40.0)], ["unreadable line"], "en",
                          error="row 1 image: the file is empty (0 bytes), not an image")

    class EchoLine:
        name, kind = "echo", "ocr"

        def infer_batch(self, requests):
            return [InferenceResult("hello") for _ in requests]

    record = run_benchmark(
        EchoLine(), surya_recognition.samples([good, bad], "native"), surya_recognition.score,
        surya_recognition.METRICS, benchmark="surya_recognition", engine_label="echo",
        data="tmp", parameter="mode=native",
    )
    failed = next(s for s in record.samples if s.sample_id == "1/line000")
    assert failed.error == bad.error
    weights = [len("hello") ** 0.5, len("unreadable line") ** 0.5]
    assert record.metrics["line_score"].value == pytest.approx(weights[0] / sum(weights))
