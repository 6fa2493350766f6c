"""``evalsuite eval`` run as a user runs it: in a subprocess, on rendered pages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from PIL import Image

from evalsuite.metrics import edit_distance, edit_precision
from evalsuite.render import PRESETS, render_text
from evalsuite.single_image import InputError, parse_key
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data
from tests.support.subprocess_runs import run_evalsuite

FIXTURES = TEST_FIXTURES / "engines"
PAGE_TEXT = (FIXTURES / "page.txt").read_text(encoding="utf-8")
ERROR_PREFIX = "evalsuite eval: error: "


def evalsuite_eval(*args, env_extra=None):
    """``evalsuite eval ARGS`` with this environment plus ``env_extra``, to its end."""
    return run_evalsuite("eval", *args, env={**os.environ, **(env_extra or {})})


def as_json(completed):
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def assert_one_line_error(completed, *fragments):
    assert completed.returncode == 2, (completed.stdout, completed.stderr)
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith(ERROR_PREFIX) and "Traceback" not in completed.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The fixture text rendered at 20 pt mono (1024 x 1024), with its ground truth."""
    folder = tmp_path_factory.mktemp("page")
    image = render_text(PAGE_TEXT, PRESETS["font_mono"]).pages[0].save(folder / "memo.png")
    truth = folder / "memo.txt"
    truth.write_text(PAGE_TEXT, encoding="utf-8")
    return image, truth


# --- dry run --------------------------------------------------------------------------------------


def test_dry_run_json_small(page):
    image, truth = page
    report = as_json(
        evalsuite_eval("--image", image, "--ground-truth", truth, "--dry-run", "--json")
    )
    assert report["image"] == {"path": str(image), "width": 1024, "height": 1024}
    assert report["mode"] == {
        "name": "small",
        "base_size": 640,
        "image_size": 640,
        "crop_mode": False,
    }
    # small: 640 px, q = ceil((640 // 16) / 4) = 10 per side: 10 * 11 + 1 = 111 raw ids.
    assert report["vision_tokens"] == {"nominal": 100, "valid": 100, "raw": 111, "tiles": 0}
    assert report["tile_grid"] is None
    assert report["ground_truth"]["chars"] == len(PAGE_TEXT)
    tokens = report["ground_truth"]["tokens"]
    assert report["ground_truth"]["compression_ratio"] == tokens / 100


def test_dry_run_base_mode_counts_the_padded_share(tmp_path):
    image = tmp_path / "wide.png"
    Image.new("RGB", (1000, 800), "white").save(image)
    report = as_json(evalsuite_eval("--image", image, "--mode", "base", "--dry-run", "--json"))
    # r = 1 - (1000 - 800) / 1000 = 0.8: int(256 * 0.8) = 204 valid; raw 16 * 17 + 1 = 273.
    assert report["vision_tokens"] == {"nominal": 256, "valid": 204, "raw": 273, "tiles": 0}


def test_dry_run_gundam_tiles(page):
    image, _ = page
    report = as_json(evalsuite_eval("--image", image, "--mode", "gundam", "--dry-run", "--json"))
    # 1024 x 1024 > 640: the square 2 x 2 grid; 256 + 4 * 100 nominal;
    # raw 16 * 17 + 1 = 273 global plus (10 * 2 + 1) * (10 * 2) = 420 for the tiles.
    assert report["tile_grid"] == [2, 2]
    assert report["vision_tokens"] == {"nominal": 656, "valid": 656, "raw": 693, "tiles": 4}


def test_dry_run_table_is_aligned(page):
    image, truth = page
    completed = evalsuite_eval("--image", image, "--ground-truth", truth, "--dry-run")
    assert completed.returncode == 0, completed.stderr
    rows = completed.stdout.strip().splitlines()
    labels = ["image", "mode", "tiles", "vision tokens", "ground truth", "gt compression"]
    assert [row.split("  ")[0] for row in rows] == labels
    value_columns = {
        len(row) - len(row[len(label) :].lstrip()) for row, label in zip(rows, labels, strict=True)
    }
    assert len(value_columns) == 1
    assert "nominal 100 · valid 100 · raw 111" in completed.stdout


# --- engines --------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="the tesseract binary is not on PATH")
def test_tesseract_scores_the_page(page):
    image, truth = page
    report = as_json(
        evalsuite_eval("--image", image, "--ground-truth", truth, "--engine", "tesseract", "--json")
    )
    assert report["engine"] == "tesseract" and report["error"] is None
    assert report["mode"] == "native" and report["key"]["mode"] == "native"
    assert report["vision_tokens"] is None and report["compression_ratio"] is None
    assert report["output_tokens_method"].startswith("tokenizer:deepseek-ocr")
    metrics = report["metrics"]
    assert metrics["edit_precision"] >= 0.9
    assert metrics["edit_distance"] == edit_distance(report["output"], PAGE_TEXT)
    assert metrics["edit_precision"] == edit_precision(report["output"], PAGE_TEXT)
    assert 0.0 <= metrics["word_f1"] <= 1.0


@pytest.mark.e2e
def test_tiny_model_then_replay_of_its_recording(page, tmp_path):
    """Slow (~33 s here): five ``evalsuite eval`` child processes, the tiny model's live run
    with --record (building the random model) and four replays of its recording, one matching
    and three refused; each refusal is another mismatch a user can make (image, prompt, mode)."""
    image, truth = page
    recording = tmp_path / "tiny.jsonl"
    live = as_json(
        evalsuite_eval(
            "--image",
            image,
            "--ground-truth",
            truth,
            "--engine",
            "tiny-deepseek-ocr-2",
            "--record",
            recording,
            "--json",
        )
    )
    assert live["error"] is None and live["recorded_to"] == str(recording)
    assert live["mode"] == "default"  # the tiny engine's own default: DeepSeek-OCR-2's modes
    # 1024 x 1024 > 768 px: the 1024-px global view (256 + 1) and 2 x 2 tiles of 144 tokens.
    assert live["vision_tokens"] == {"valid": 256 + 144 * 4 + 1}
    assert live["compression_ratio"] == live["output_tokens"] / (256 + 144 * 4 + 1)
    assert set(live["metrics"]) >= {"edit_distance", "normalized_edit_distance", "edit_precision"}
    line = json.loads(recording.read_text(encoding="utf-8"))
    assert line["sample_id"] == "memo" and line["mode"] == "default"
    assert line["image_sha256"] == live["key"]["image_sha256"]

    def replay(*args):
        return evalsuite_eval(
            "--engine", "replay", "--recordings", recording, "--ground-truth", truth, *args
        )

    replayed = as_json(replay("--image", image, "--mode", "default", "--json"))
    for field in ("output", "vision_tokens", "output_tokens", "compression_ratio", "metrics"):
        assert replayed[field] == live[field], field
    assert replayed["latency_s"] == live["latency_s"]

    # The recording serves its own page, mode and prompt only; anything else is bad input.
    other_page = render_text("Another memo", PRESETS["font_mono"]).pages[0]
    other = other_page.save(tmp_path / "memo.png")  # same name, so the same sample id and key
    assert_one_line_error(
        replay("--image", other, "--mode", "default"), "was made from another image"
    )
    assert_one_line_error(
        replay("--image", image, "--mode", "default", "--prompt", "<image>\nOCR."),
        "was made with another prompt",
    )
    assert_one_line_error(
        replay("--image", image, "--mode", "global"), "no recording for key", "mode='global'"
    )


def test_replay_of_the_recorded_study(tmp_path):
    data = shared_data("deepseek_ocr_recordings", "recordings.jsonl").parents[1]
    truth_text = (data / "render_docs" / "invoice.txt").read_text(encoding="utf-8")
    image = render_text(truth_text, PRESETS["size_medium"]).pages[0].save(tmp_path / "invoice.png")
    report = as_json(
        evalsuite_eval(
            "--image",
            image,
            "--ground-truth",
            data / "render_docs" / "invoice.txt",
            "--engine",
            "replay",
            "--mode",
            "tiny",
            "--json",
            env_extra={"EVALSUITE_RECORDINGS": ""},
        )
    )
    # The recorded line: 64 vision tokens, 192 output tokens, 7.885 s.
    assert report["output"].startswith("INVOICE #INV-2024-0892\nDate: November 15, 2024")
    assert report["vision_tokens"] == {"valid": 64}
    assert report["output_tokens"] == 192 and report["output_tokens_method"] == "engine tokenizer"
    assert report["compression_ratio"] == 3.0 and report["latency_s"] == 7.885
    assert report["metrics"]["edit_precision"] > 0.9


def test_replay_key_names_the_recorded_page(page, tmp_path):
    image, _ = page
    recording = tmp_path / "r.jsonl"
    line = {"experiment": "compression", "document": "invoice", "mode": "base", "prompt": None}
    recording.write_text(json.dumps({**line, "output": "recorded text"}) + "\n", encoding="utf-8")
    missing = evalsuite_eval(
        "--image", image, "--engine", "replay", "--recordings", recording, "--mode", "base"
    )
    assert_one_line_error(missing, "no recording for key", "document='memo'", str(recording))
    found = evalsuite_eval(
        "--image",
        image,
        "--engine",
        "replay",
        "--recordings",
        recording,
        "--mode",
        "base",
        "--replay-key",
        "document=invoice",
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.rstrip().endswith("--- output ---\nrecorded text")


# --- bad input ------------------------------------------------------------------------------------


@pytest.fixture
def bad_inputs(page, tmp_path):
    image, truth = page
    text_as_png = tmp_path / "notes.png"
    text_as_png.write_text("this is not an image", encoding="utf-8")
    truncated = tmp_path / "cut.png"
    truncated.write_bytes(image.read_bytes()[: image.stat().st_size // 2])
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\xe9".encode("latin-1"))
    return {
        "image": image,
        "truth": truth,
        "text_as_png": text_as_png,
        "truncated": truncated,
        "latin1": latin1,
    }


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--image", "{tmp}/absent.png", "--dry-run"], ["absent.png: no such file"]),
        (["--image", "{text_as_png}", "--dry-run"], ["notes.png: not an image Pillow can read"]),
        (["--image", "{truncated}", "--engine", "tesseract"], ["cut.png: truncated or corrupt"]),
        (["--image", "{image}", "--ground-truth", "{latin1}", "--dry-run"], ["not UTF-8"]),
        (["--image", "{image}", "--mode", "huge", "--dry-run"], ["unknown mode 'huge'", "gundam"]),
        (
            ["--image", "{image}", "--engine", "nonesuch"],
            ["unknown engine 'nonesuch'", "tesseract"],
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(bad_inputs, tmp_path, args, fragments):
    paths = {name: str(path) for name, path in bad_inputs.items()}
    completed = evalsuite_eval(*(arg.format(tmp=tmp_path, **paths) for arg in args))
    assert_one_line_error(completed, *fragments)


def test_unavailable_engine_is_exit_2(page):
    image, _ = page
    completed = evalsuite_eval(
        "--image", image, "--engine", "deepseek-ocr", "--model-path", "/nonexistent/checkpoint"
    )
    assert_one_line_error(completed, "/nonexistent/checkpoint")


# --- in-process pieces ----------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["output", "mode", "sample_id", "image_sha256"])
def test_record_refuses_a_reserved_key_field(page, tmp_path, capsys, field):
    from evalsuite.cli import main

    image, _ = page
    recording = tmp_path / "r.jsonl"
    status = main(
        ["eval", "--image", str(image), "--engine", "tiny-deepseek-ocr-2",
         "--record", str(recording), "--replay-key", f"{field}=x"]
    )  # fmt: skip
    assert status == 2 and not recording.exists()
    assert capsys.readouterr().err.startswith(
        f"{ERROR_PREFIX}--record: request.key field {field!r} is reserved"
    )


def test_record_with_an_empty_key_is_found_by_sample_image_and_prompt(page, tmp_path, capsys):
    from evalsuite.cli import main

    image, _ = page
    recording = tmp_path / "r.jsonl"
    no_key = ["--image", str(image), "--replay-key", "experiment=null,document=", "--json"]
    assert (
        main(["eval", *no_key, "--engine", "tiny-deepseek-ocr-2", "--record", str(recording)]) == 0
    )
    live = json.loads(capsys.readouterr().out)
    assert {name: live["key"][name] for name in ("experiment", "document")} == {
        "experiment": None,
        "document": None,
    }
    replay = ["eval", "--engine", "replay", "--recordings", str(recording), "--mode", "default"]
    assert main([*replay, *no_key]) == 0
    assert json.loads(capsys.readouterr().out)["output"] == live["output"]
    # The default key (experiment=compression, document=memo) is another key.
    assert main([*replay, "--image", str(image)]) == 2
    assert capsys.readouterr().err.startswith(f"{ERROR_PREFIX}no recording for key")


def test_engine_modes_and_defaults():
    from evalsuite.single_image import default_mode, engine_mode

    assert default_mode("deepseek-ocr") == "small"
    assert default_mode("deepseek-ocr-2") == default_mode("tiny-deepseek-ocr-2") == "default"
    assert default_mode("tesseract") == "native"
    assert engine_mode("tiny-deepseek-ocr-2", "global") == "global"
    with pytest.raises(InputError, match=r"unknown mode 'small' for engine 'tiny-deepseek-ocr-2'"):
        engine_mode("tiny-deepseek-ocr-2", "small")
    with pytest.raises(InputError, match=r"choose one of: native"):
        engine_mode("tesseract", "gundam")
    with pytest.raises(InputError, match="unknown engine 'nonesuch'"):
        default_mode("nonesuch")


def test_parse_key():
    assert parse_key("") == {}
    assert parse_key("document=invoice, question_id=3,render_config=null,condition=") == {
        "document": "invoice",
        "question_id": 3,
        "render_config": None,
        "condition": None,
    }
    assert parse_key("note=a b") == {"note": "a b"}
    for bad in ("document", "=x", "1a=2", "a-b=1"):
        with pytest.raises(InputError, match="FIELD=VALUE"):
            parse_key(bad)


def test_module_import_does_not_load_torch():
    code = "import sys, evalsuite.commands.eval_page; print('torch' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert completed.stdout.strip() == "False"
