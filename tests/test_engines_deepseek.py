"""The DeepSeek engines: the tiny engine end to end on rendered pages, its image-token arithmetic,
batching and determinism; the real engines' weight lookup, errors and (with fakes) their calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from evalsuite.engines import InferenceRequest, available_engines, create_engine
from evalsuite.engines.deepseek_ocr import DeepseekOcrEngine
from evalsuite.engines.deepseek_ocr2 import ocr2_image_tokens, ocr2_view
from evalsuite.engines.tiny_deepseek_ocr2 import build_tiny_tokenizer, tiny_model_and_processor
from evalsuite.engines.weights import WeightsSource, locate_weights
from evalsuite.errors import EngineUnavailableError
from evalsuite.prompts import FREE_OCR
from evalsuite.render import RenderConfig, render_text
from evalsuite.tokens import vision_tokens

PAGE_TEXT = "INVOICE #INV-2024-0892\nDate: November 15, 2024\nTotal: $1,229.20\n"
REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tiny():
    return create_engine("tiny-deepseek-ocr-2")


@pytest.fixture(scope="module")
def page() -> Image.Image:
    return render_text(PAGE_TEXT, RenderConfig()).pages[0].image


def request(
    image, mode: str = "base", prompt: str = FREE_OCR, sample_id: str = "s"
) -> InferenceRequest:
    return InferenceRequest(image=image, prompt=prompt, mode=mode, sample_id=sample_id)


def blank(width: int, height: int) -> Image.Image:
    return Image.new("RGB", (width, height), "white")


def test_registry_resolves_all_three() -> None:
    names = available_engines()
    assert {"deepseek-ocr", "deepseek-ocr-2", "tiny-deepseek-ocr-2"} <= set(names)


def test_tiny_engine_end_to_end_on_rendered_page(tiny, page) -> None:
    result = tiny.infer(request(page, "base"))
    assert result.error is None
    assert isinstance(result.text, str) and result.text
    assert result.vision_tokens == ocr2_image_tokens(*page.size, "base") == 16 * 16 + 1
    assert 1 <= result.output_tokens <= 16  # max_new_tokens of the tiny engine
    assert result.latency_s > 0
    settings = result.settings
    assert settings["decoding"] == "greedy" and settings["do_sample"] is False
    assert settings["max_new_tokens"] == 16 and settings["no_repeat_ngram_size"] == 35
    assert settings["processor"]["crop_to_patches"] is False and settings["batch_size"] == 1


@pytest.mark.parametrize(
    ("size", "mode"),
    [
        ((500, 300), "gundam"),  # longer side <= 768: global view only
        ((768, 768), "gundam"),
        ((769, 500), "gundam"),  # one pixel over: tiles
        ((800, 1000), "gundam"),
        ((1250, 1000), "gundam"),  # aspect 1.25 ties 2x2 with 3x2; area too small for 3x2
        ((2000, 1600), "gundam"),  # same tie, area large enough: 3x2
        ((1700, 900), "gundam"),
        ((300, 3000), "gundam"),
        ((1700, 900), "base"),
        ((1700, 900), "large"),
        ((300, 3000), "tiny"),
        ((640, 480), "small"),
    ],
)
def test_image_tokens_match_processor_arithmetic(size, mode) -> None:
    _, processor = tiny_model_and_processor()
    view = ocr2_view(mode)
    inputs = processor(
        images=[blank(*size)], text=[FREE_OCR], return_tensors="pt", **view.processor_kwargs()
    )
    inserted = int((inputs["input_ids"] == processor.image_token_id).sum())
    assert inserted == ocr2_image_tokens(*size, mode)


def test_image_token_arithmetic_hand_worked() -> None:
    assert ocr2_image_tokens(500, 300, "gundam") == 256 + 1
    assert ocr2_image_tokens(1250, 1000, "gundam") == 256 + 144 * 4 + 1
    assert ocr2_image_tokens(2000, 1600, "gundam") == 256 + 144 * 6 + 1
    assert ocr2_image_tokens(3000, 3000, "tiny") == 144 + 1
    with pytest.raises(ValueError, match="tiny, small, base, large, gundam"):
        ocr2_image_tokens(100, 100, "huge")
    with pytest.raises(ValueError, match="width"):
        ocr2_image_tokens(0, 100, "base")


def test_batched_equals_one_by_one(tiny, page) -> None:
    requests = [
        request(page, "base", sample_id="a"),
        request(blank(900, 600), "base", prompt="<image>\nParse the figure.", sample_id="b"),
        request(page, "tiny", sample_id="c"),
        request(blank(700, 500), "gundam", sample_id="d"),
        request(page.resize((512, 512)), "base", prompt="Free OCR.", sample_id="e"),
    ]
    one_by_one = [tiny.infer(r) for r in requests]
    batched = tiny.infer_batch(requests)
    assert [r.error for r in batched] == [None] * len(requests)
    for single, batch in zip(one_by_one, batched, strict=True):
        assert (batch.text, batch.vision_tokens, batch.output_tokens) == (
            single.text,
            single.vision_tokens,
            single.output_tokens,
        )
    assert batched[0].settings["batch_size"] == 3  # the three base-mode requests shared a batch
    assert len({r.text for r in batched}) > 1  # outputs differ, so the comparison means something


def test_batch_failure_is_isolated_to_its_sample(tiny, page, tmp_path) -> None:
    missing = tmp_path / "missing.png"
    results = tiny.infer_batch([request(page, sample_id="ok"), request(missing, sample_id="bad")])
    assert results[0].error is None and results[0].text
    assert results[1].error is not None and "missing.png" in results[1].error
    assert results[1].text == ""


def test_text_only_request_has_no_vision_tokens(tiny) -> None:
    result = tiny.infer(request(None, prompt="Question: what is 2 + 2?\nAnswer:"))
    assert result.error is None and result.vision_tokens is None
    assert "processor" not in result.settings


DETERMINISM_SCRIPT = """
import json, sys
from evalsuite.engines import InferenceRequest, create_engine
from evalsuite.render import RenderConfig, render_text
page = render_text(sys.argv[1], RenderConfig()).pages[0].image
engine = create_engine("tiny-deepseek-ocr-2")
modes = ("base", "gundam")
results = [engine.infer(InferenceRequest(page, "<image>\\nFree OCR.", m, m)) for m in modes]
print(json.dumps([[r.text, r.vision_tokens, r.output_tokens] for r in results]))
"""


def test_tiny_engine_is_deterministic_across_processes(tiny, page) -> None:
    here = [tiny.infer(request(page, mode)) for mode in ("base", "gundam")]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", DETERMINISM_SCRIPT, PAGE_TEXT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    there = json.loads(run.stdout.strip().splitlines()[-1])
    assert there == [[r.text, r.vision_tokens, r.output_tokens] for r in here]


def test_tiny_engine_rejects_model_path() -> None:
    with pytest.raises(ValueError, match="no model_path"):
        create_engine("tiny-deepseek-ocr-2", model_path="/some/dir")


def test_native_engine_loads_a_saved_checkpoint_on_cpu(tiny, page, tmp_path) -> None:
    # Save the tiny model in Hugging Face format: deepseek-ocr-2's own loading path must read it
    # back and produce the same text as the tiny engine.
    model, processor = tiny_model_and_processor()
    model.save_pretrained(tmp_path)
    processor.save_pretrained(tmp_path)
    native = create_engine(
        "deepseek-ocr-2", model_path=str(tmp_path), device="cpu", max_new_tokens=16
    )
    expected, got = tiny.infer(request(page)), native.infer(request(page))
    assert got.error is None
    assert (got.text, got.vision_tokens) == (expected.text, expected.vision_tokens)
    assert got.settings["checkpoint"] == str(tmp_path) and got.settings["dtype"] == "float32"


# --- the real engines without weights ------------------------------------------------------


@pytest.fixture
def no_weights(monkeypatch, tmp_path) -> Path:
    """An environment with no weight path set and an empty, offline Hugging Face cache."""
    for name in (
        "EVALSUITE_DEEPSEEK_OCR_PATH",
        "EVALSUITE_DEEPSEEK_OCR2_PATH",
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hf" / "hub"


def cuda_visible() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.parametrize(
    ("engine", "repo_id", "env_var"),
    [
        ("deepseek-ocr", "deepseek-ai/DeepSeek-OCR", "EVALSUITE_DEEPSEEK_OCR_PATH"),
        ("deepseek-ocr-2", "deepseek-community/DeepSeek-OCR-2", "EVALSUITE_DEEPSEEK_OCR2_PATH"),
    ],
)
def test_real_engine_without_weights_says_what_to_set(no_weights, engine, repo_id, env_var) -> None:
    with pytest.raises(EngineUnavailableError) as caught:
        create_engine(engine)
    message = str(caught.value)
    for needed in ("--model-path", env_var, f"hf download {repo_id}", str(no_weights)):
        assert needed in message
    assert ("CUDA" in message) is not cuda_visible()


def test_cpu_run_of_deepseek_ocr2_reports_only_the_weights(no_weights) -> None:
    with pytest.raises(EngineUnavailableError) as caught:
        create_engine("deepseek-ocr-2", device="cpu")
    assert "EVALSUITE_DEEPSEEK_OCR2_PATH" in str(caught.value)
    assert "CUDA" not in str(caught.value)


def test_deepseek_ocr_refuses_cpu() -> None:
    with pytest.raises(EngineUnavailableError, match="CUDA only"):
        create_engine("deepseek-ocr", device="cpu")


def test_unusable_paths_are_named(no_weights, monkeypatch, tmp_path) -> None:
    with pytest.raises(EngineUnavailableError, match=r"--model-path.*not a directory"):
        create_engine("deepseek-ocr-2", model_path=str(tmp_path / "nowhere"), device="cpu")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("EVALSUITE_DEEPSEEK_OCR2_PATH", str(empty))
    with pytest.raises(
        EngineUnavailableError, match=r"EVALSUITE_DEEPSEEK_OCR2_PATH.*no config\.json"
    ):
        create_engine("deepseek-ocr-2", device="cpu")


def fake_checkpoint(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    return folder


def test_weight_lookup_order(no_weights, monkeypatch, tmp_path) -> None:
    source = WeightsSource("x", "acme/Model", "EVALSUITE_X_PATH")
    # the Hugging Face cache layout: refs/main names the snapshot folder
    repo = no_weights / "models--acme--Model"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    cached = fake_checkpoint(repo / "snapshots" / "0123abcd")
    assert locate_weights(source, None) == cached
    from_env = fake_checkpoint(tmp_path / "env")
    monkeypatch.setenv("EVALSUITE_X_PATH", str(from_env))
    assert locate_weights(source, None) == from_env
    explicit = fake_checkpoint(tmp_path / "explicit")
    assert locate_weights(source, explicit) == explicit


# --- deepseek-ocr's calls into the remote code, with a stand-in model -----------------------


class FakeRemoteModel:
    """Stands in for DeepSeek-OCR's remote-code model: records infer() calls, prints like it."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def infer(self, tokenizer, **kwargs):
        with Image.open(kwargs["image_file"]) as image:
            kwargs["seen_size"] = image.size
        self.calls.append(kwargs)
        print("=====================\nBASE:  torch.Size([1, 256, 1280])")
        return "Hello, world"


@pytest.mark.parametrize("mode", ["tiny", "small", "base", "large", "gundam"])
def test_deepseek_ocr_calls_infer_as_the_reference_does(mode, capsys) -> None:
    model = FakeRemoteModel()
    engine = DeepseekOcrEngine.from_loaded(model, build_tiny_tokenizer(), device="cuda")
    result = engine.infer(request(blank(1500, 1000), mode, prompt="Free OCR."))
    assert result.error is None and result.text == "Hello, world"
    call = model.calls[0]
    expected_sizes = {
        "tiny": (512, 512, False),
        "small": (640, 640, False),
        "base": (1024, 1024, False),
        "large": (1280, 1280, False),
        "gundam": (1024, 640, True),
    }[mode]
    assert (call["base_size"], call["image_size"], call["crop_mode"]) == expected_sizes
    assert call["eval_mode"] is True and call["prompt"] == "<image>\nFree OCR."
    assert call["seen_size"] == (1500, 1000)  # the PIL page went to infer() as a file
    assert result.vision_tokens == vision_tokens(1500, 1000, mode, max_crops=9)
    assert result.output_tokens == len("Hello, world")  # the character-level tokenizer
    assert result.settings["no_repeat_ngram_size"] == 35
    assert result.settings["max_new_tokens"] == 8192 and result.settings["temperature"] == 0.0
    assert capsys.readouterr().out == ""  # infer()'s prints stay out of stdout


def test_deepseek_ocr_passes_paths_through_and_needs_an_image(tmp_path) -> None:
    model = FakeRemoteModel()
    engine = DeepseekOcrEngine.from_loaded(model, build_tiny_tokenizer())
    path = tmp_path / "page.png"
    blank(800, 600).save(path)
    assert engine.infer(request(path, "small")).error is None
    assert model.calls[0]["image_file"] == str(path)
    failed = engine.infer(request(None, "small"))
    assert failed.text == "" and "needs a page image" in failed.error
