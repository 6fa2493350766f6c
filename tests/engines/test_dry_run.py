"""``evalsuite eval --dry-run`` describes the named engine: DeepSeek-OCR's arithmetic with the
engine's own tile cap, or DeepSeek-OCR-2's; modes the engine lacks are refused."""

from __future__ import annotations

import argparse

import pytest
from PIL import Image

from evalsuite.commands import eval_page
from evalsuite.engines.deepseek_ocr import DeepseekOcrEngine
from evalsuite.engines.deepseek_ocr2 import ocr2_image_tokens
from evalsuite.single_image import InputError, dry_run_report
from evalsuite.tokens import MAX_CROPS, vision_tokens


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="evalsuite eval")
    eval_page.add_arguments(parser)
    return parser.parse_args([*argv, "--dry-run"])


@pytest.fixture
def square(tmp_path):
    """1500 x 1500: gundam cuts 3 x 3 tiles with infer()'s cap of 9, 2 x 2 with vLLM's 6."""
    path = tmp_path / "square.png"
    Image.new("RGB", (1500, 1500), "white").save(path)
    return path


def test_deepseek_ocr_counts_tiles_as_its_infer_does(square) -> None:
    report = dry_run_report(parse("--image", str(square), "--mode", "gundam"))
    assert report["engine"] == {"name": "deepseek-ocr", "max_crops": DeepseekOcrEngine.max_crops}
    expected = vision_tokens(1500, 1500, "gundam", max_crops=DeepseekOcrEngine.max_crops)
    assert report["tile_grid"] == [3, 3] and report["vision_tokens"]["tiles"] == 9
    assert report["vision_tokens"] == {
        "nominal": expected.nominal,
        "valid": expected.valid,
        "raw": expected.raw,
        "tiles": expected.tiles,
    }
    assert vision_tokens(1500, 1500, "gundam", max_crops=MAX_CROPS).tiles == 4  # not vLLM's


def test_deepseek_ocr_modes_without_crops_have_no_cap(square) -> None:
    report = dry_run_report(parse("--image", str(square), "--mode", "small"))
    assert report["engine"]["max_crops"] is None and report["tile_grid"] is None
    assert report["vision_tokens"] == {"nominal": 100, "valid": 100, "raw": 111, "tiles": 0}


@pytest.mark.parametrize("engine", ["deepseek-ocr-2", "tiny-deepseek-ocr-2"])
def test_deepseek_ocr2_engines_use_its_arithmetic(engine, square) -> None:
    report = dry_run_report(parse("--image", str(square), "--engine", engine, "--mode", "default"))
    assert report["engine"] == {"name": engine, "max_crops": 6}
    assert report["mode"] == {
        "name": "default",
        "base_size": 1024,
        "image_size": 768,
        "crop_mode": True,
    }
    assert report["tile_grid"] == [2, 2]
    assert report["vision_tokens"] == {"valid": 256 + 144 * 4 + 1, "tiles": 4}
    assert report["vision_tokens"]["valid"] == ocr2_image_tokens(1500, 1500, "default")


def test_deepseek_ocr2_global_view_and_ground_truth(square, tmp_path) -> None:
    truth = tmp_path / "truth.txt"
    truth.write_text("Invoice 42\nTotal: 17.50 EUR\n", encoding="utf-8")
    args = parse(
        "--image", str(square), "--engine", "deepseek-ocr-2", "--mode", "global",
        "--ground-truth", str(truth),
    )  # fmt: skip
    report = dry_run_report(args)
    assert report["engine"]["max_crops"] is None and report["tile_grid"] is None
    assert report["vision_tokens"] == {"valid": 257, "tiles": 0}
    ground_truth = report["ground_truth"]
    assert ground_truth["compression_ratio"] == ground_truth["tokens"] / 257


def test_the_table_names_the_engine_and_its_cap(square, capsys) -> None:
    assert eval_page.run(parse("--image", str(square), "--mode", "gundam")) == 0
    rows = dict(line.split("  ", 1) for line in capsys.readouterr().out.splitlines())
    assert rows["mode"].strip() == (
        "gundam on deepseek-ocr (base 1024, image 640, crop mode, 640-px tiles, at most 9)"
    )
    assert rows["tiles"].strip() == "9 (grid 3 x 3)"


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["--engine", "deepseek-ocr-2"], ["no mode 'small'", "default, global"]),
        (["--engine", "tiny-deepseek-ocr-2", "--mode", "gundam"], ["no mode 'gundam'"]),
        (["--mode", "default"], ["unknown mode 'default'", "tiny, small, base, large, gundam"]),
        (["--engine", "tesseract"], ["deepseek-ocr, deepseek-ocr-2, tiny-deepseek-ocr-2"]),
    ],
)
def test_modes_and_engines_it_cannot_describe_are_refused(square, argv, fragments) -> None:
    with pytest.raises(InputError) as caught:
        dry_run_report(parse("--image", str(square), *argv))
    for fragment in fragments:
        assert fragment in str(caught.value)
