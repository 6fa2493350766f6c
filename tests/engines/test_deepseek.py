"""The DeepSeek engines: the tiny engine end to end on rendered pages, its image-token arithmetic,
batching and determinism; the real engines' weight lookup, errors and (with fakes) their calls."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from evalsuite.engines import InferenceRequest, available_engines, create_engine
from evalsuite.engines.deepseek_ocr import DeepseekOcrEngine
from evalsuite.engines.deepseek_ocr2 import (
    OCR2_MODES,
    ocr2_image_tokens,
    ocr2_tile_grid,
    ocr2_view,
)
from evalsuite.engines.tiny_deepseek_ocr2 import (
    EMITTED_ADDED_TOKENS,
    suppressed_token_ids,
    tiny_model_and_processor,
)
from evalsuite.engines.weights import WeightsSource, locate_weights
from evalsuite.errors import EngineUnavailableError
from evalsuite.prompts import FREE_OCR
from evalsuite.render import RenderConfig, render_text
from evalsuite.tokenizer import deepseek_ocr_fast_tokenizer
from evalsuite.tokens import vision_tokens
from tests.support.paths import REPOSITORY as REPO_ROOT

PAGE_TEXT = "INVOICE #INV-2024-0892\nDate: November 15, 2024\nTotal: $1,229.20\n"


@pytest.fixture(scope="module")
def tiny():
    return create_engine("tiny-deepseek-ocr-2")


@pytest.fixture(scope="module")
def page() -> Image.Image:
    return render_text(PAGE_TEXT, RenderConfig()).pages[0].image


def request(
    image, mode: str = "default", prompt: str = FREE_OCR, sample_id: str = "s"
) -> InferenceRequest:
    return InferenceRequest(image=image, prompt=prompt, mode=mode, sample_id=sample_id)


def blank(width: int, height: int) -> Image.Image:
    return Image.new("RGB", (width, height), "white")


def test_registry_resolves_all_three() -> None:
    names = available_engines()
    assert {"deepseek-ocr", "deepseek-ocr-2", "tiny-deepseek-ocr-2"} <= set(names)


def test_tiny_engine_end_to_end_on_rendered_page(tiny, page) -> None:
    result = tiny.infer(request(page, "global"))
    assert result.error is None
    assert isinstance(result.text, str) and result.text
    assert result.vision_tokens == ocr2_image_tokens(*page.size, "global") == 16 * 16 + 1
    assert 1 <= result.output_tokens <= 16  # max_new_tokens of the tiny engine
    assert result.latency_s > 0
    settings = result.settings
    assert settings["decoding"] == "greedy" and settings["do_sample"] is False
    assert settings["max_new_tokens"] == 16 and settings["no_repeat_ngram_size"] == 35
    assert settings["processor"]["crop_to_patches"] is False and settings["batch_size"] == 1


def test_tiny_engine_tokenises_prompts_as_deepseek_ocr(page) -> None:
    # DeepSeek-OCR's ids, pinned in tests/test_tokenizer.py: BOS 0, <image> 128815, then
    # "\n" "Free" " OCR" "." of its byte-level BPE.
    _, processor = tiny_model_and_processor()
    view = ocr2_view("global")
    inputs = processor(
        images=[page], text=[FREE_OCR], return_tensors="pt", **view.processor_kwargs()
    )
    ids = inputs["input_ids"][0].tolist()
    assert FREE_OCR == "<image>\nFree OCR."
    image_tokens = [128815] * ocr2_image_tokens(*page.size, "global")
    assert ids == [0, *image_tokens, 201, 21431, 126041, 16]
    assert processor.image_token_id == 128815


def test_tiny_model_has_the_real_vocabulary_and_never_emits_input_only_tokens() -> None:
    import torch

    model, processor = tiny_model_and_processor()
    tokenizer = processor.tokenizer
    assert model.config.text_config.vocab_size == len(tokenizer) == 128827
    suppressed = suppressed_token_ids(tokenizer)
    added = tokenizer.get_added_vocab()
    assert len(suppressed) == len(added) - len(EMITTED_ADDED_TOKENS) == 821
    assert {added[t] for t in ("<image>", "<|grounding|>", "<｜▁pad▁｜>")} <= set(suppressed)
    assert tokenizer.eos_token_id not in suppressed and added["<|det|>"] not in suppressed
    # Suppressed rows of the output layer are zero (logit 0), and every direction of the hidden
    # state gives some other token a positive logit, so greedy decoding never picks them.
    weight = model.lm_head.weight.detach()
    assert not weight[suppressed].any()
    directions = torch.randn(512, weight.shape[1], generator=torch.Generator().manual_seed(1))
    assert bool((directions @ weight.T).amax(dim=1).gt(0).all())
    assert model.generation_config.suppress_tokens is None  # no 821-id list in every result


def ocr2_processor():
    """The real DeepseekOcr2Processor (PIL image processor, defaults) on a minimal tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import DeepseekOcr2Processor, PreTrainedTokenizerFast
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import (
        DeepseekOcr2ImageProcessorPil,
    )

    backend = Tokenizer(models.WordLevel({"<unk>": 0, "<image>": 1}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.add_special_tokens(["<image>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    return DeepseekOcr2Processor(
        image_processor=DeepseekOcr2ImageProcessorPil(), tokenizer=tokenizer
    )


def inserted_image_tokens(processor, size: tuple[int, int], mode: str) -> int:
    inputs = processor(
        images=[blank(*size)],
        text=[FREE_OCR],
        return_tensors="pt",
        **ocr2_view(mode).processor_kwargs(),
    )
    return int((inputs["input_ids"] == processor.image_token_id).sum())


# Pages at the edges of DeepSeek-OCR-2's tiling: no tiles up to 768 px, aspect-ratio ties
# (1250 x 1000 ties 2x2 with 3x2, the area too small for 3x2; 2000 x 1600 large enough).
EDGE_SIZES = [
    (500, 300),
    (768, 768),
    (769, 500),
    (800, 1000),
    (1250, 1000),
    (2000, 1600),
    (1700, 900),
    (300, 3000),
]
_SIZES = random.Random(20240615)
RANDOM_SIZES = [(_SIZES.randint(64, 3000), _SIZES.randint(64, 3000)) for _ in range(24)]


@pytest.mark.parametrize("mode", OCR2_MODES)
def test_image_tokens_equal_the_processors_count(mode) -> None:
    processor = ocr2_processor()
    for size in EDGE_SIZES + RANDOM_SIZES:
        assert inserted_image_tokens(processor, size, mode) == ocr2_image_tokens(*size, mode), size


def test_compared_sizes_cover_untiled_pages_and_many_grids() -> None:
    grids = {ocr2_tile_grid(*size, "default") for size in EDGE_SIZES + RANDOM_SIZES}
    assert None in grids and len(grids) >= 8  # the comparison above spans many tilings


def test_image_token_arithmetic_hand_worked() -> None:
    assert ocr2_image_tokens(500, 300, "default") == 256 + 1
    assert ocr2_image_tokens(1250, 1000, "default") == 256 + 144 * 4 + 1
    assert ocr2_image_tokens(2000, 1600, "default") == 256 + 144 * 6 + 1
    assert ocr2_tile_grid(2000, 1600, "default") == (3, 2)
    assert ocr2_image_tokens(3000, 3000, "global") == 256 + 1
    assert ocr2_tile_grid(3000, 3000, "global") is None
    for mode in ("huge", "small", "gundam"):  # DeepSeek-OCR's modes are not DeepSeek-OCR-2's
        with pytest.raises(ValueError, match=r"no mode .*; choose one of: default, global"):
            ocr2_image_tokens(100, 100, mode)
    with pytest.raises(ValueError, match="width"):
        ocr2_image_tokens(0, 100, "default")


def test_tiny_engine_refuses_other_modes_with_the_list(tiny, page) -> None:
    results = tiny.infer_batch([request(page, "small"), request(None, "gundam", prompt="Hi")])
    for result in results:
        assert result.text == ""
        assert "no mode" in result.error and "default, global" in result.error


def test_batched_equals_one_by_one(tiny, page) -> None:
    requests = [
        request(page, "global", sample_id="a"),
        request(blank(900, 600), "global", prompt="<image>\nParse the figure.", sample_id="b"),
        request(page, "default", sample_id="c"),
        request(blank(700, 500), "default", sample_id="d"),
        request(page.resize((512, 512)), "global", prompt="Free OCR.", sample_id="e"),
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
    assert batched[0].settings["batch_size"] == 3  # the three global-mode requests shared a batch
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
modes = ("global", "default")
results = [engine.infer(InferenceRequest(page, "<image>\\nFree OCR.", m, m)) for m in modes]
print(json.dumps([[r.text, r.vision_tokens, r.output_tokens] for r in results]))
"""


def test_tiny_engine_is_deterministic_across_processes(tiny, page) -> None:
    here = [tiny.infer(request(page, mode)) for mode in ("global", "default")]
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


@pytest.fixture(scope="module")
def real_tokenizer():
    """DeepSeek-OCR's tokenizer, built once for the tests below (about a second each time)."""
    return deepseek_ocr_fast_tokenizer()


@pytest.mark.parametrize("mode", ["tiny", "small", "base", "large", "gundam"])
def test_deepseek_ocr_calls_infer_as_the_reference_does(mode, capsys, real_tokenizer) -> None:
    model = FakeRemoteModel()
    engine = DeepseekOcrEngine.from_loaded(model, real_tokenizer, device="cuda")
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
    assert result.output_tokens == 3  # "Hello" "," " world" in DeepSeek-OCR's vocabulary
    assert result.settings["no_repeat_ngram_size"] == 35
    assert result.settings["max_new_tokens"] == 8192 and result.settings["temperature"] == 0.0
    assert capsys.readouterr().out == ""  # infer()'s prints stay out of stdout


def test_deepseek_ocr_passes_paths_through_and_needs_an_image(tmp_path, real_tokenizer) -> None:
    model = FakeRemoteModel()
    engine = DeepseekOcrEngine.from_loaded(model, real_tokenizer)
    path = tmp_path / "page.png"
    blank(800, 600).save(path)
    assert engine.infer(request(path, "small")).error is None
    assert model.calls[0]["image_file"] == str(path)
    failed = engine.infer(request(None, "small"))
    assert failed.text == "" and "needs a page image" in failed.error
