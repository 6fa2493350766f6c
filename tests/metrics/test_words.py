"""Word precision/recall and CER/CRR of the OCR Metrics Evaluator (evalsuite.metrics.words)."""

from __future__ import annotations

import string

import editdistance
import jiwer
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics.words import word_metrics, word_tokens
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data

PROPERTY = settings(max_examples=120, deadline=None)
FIXTURES = TEST_FIXTURES / "text_metrics"

texts = st.text(alphabet="abAB1 -.,'!\néß", max_size=30)
ascii_texts = st.text(alphabet="abcABC 12-.,\n", max_size=30)


def oracle_tokens(text: str, case_sensitive: bool, ignore_punctuation: bool) -> list[str]:
    """Character scan: whitespace (and ASCII punctuation when ignored) ends a word."""
    tokens, current = [], ""
    for ch in text:
        if ch.isspace() or (ignore_punctuation and ch in string.punctuation):
            if current:
                tokens.append(current)
            current = ""
        else:
            current += ch
    if current:
        tokens.append(current)
    return tokens if case_sensitive else [token.lower() for token in tokens]


def oracle_metrics(pred: str, gt: str, case_sensitive=False, ignore_punctuation=True) -> dict:
    """The issue's definitions, computed another way: greedy removal, editdistance library."""
    pred_words = oracle_tokens(pred, case_sensitive, ignore_punctuation)
    gt_words = oracle_tokens(gt, case_sensitive, ignore_punctuation)
    unmatched = list(pred_words)
    exact = 0
    for word in gt_words:
        if word in unmatched:
            unmatched.remove(word)
            exact += 1
    p = exact / len(pred_words) if pred_words else 0.0
    r = exact / len(gt_words) if gt_words else 0.0
    gt_chars, pred_chars = "".join(gt_words), "".join(pred_words)
    errors = editdistance.eval(gt_chars, pred_chars)
    return {
        "precision": p,
        "recall": r,
        "f1": 2 * (p * r) / (p + r) if p + r else 0.0,
        "cer": errors / len(gt_chars) if gt_chars else 0.0,
        "crr": 1 - errors / len(gt_chars) if gt_chars else 0.0,
        "exact_matches": exact,
        "total_gt_words": len(gt_words),
        "total_pred_words": len(pred_words),
        "char_errors": errors,
        "total_gt_chars": len(gt_chars),
    }


# The OCR Metrics Evaluator README's worked examples. Its main example claims CRR 68.75% with
# a Levenshtein distance of 5; "thequickbrownfox" -> "thequikbrown" takes 4 edits (drop "c",
# drop "fox"), so CER is 4/16 and CRR 75%.
@pytest.mark.parametrize(
    ("pred", "gt", "expected"),
    [
        pytest.param(
            "The quik brown",
            "The quick brown fox",
            {
                "precision": 2 / 3,
                "recall": 0.5,
                "f1": pytest.approx(0.5714, abs=1e-4),
                "exact_matches": 2,
                "total_gt_words": 4,
                "total_pred_words": 3,
                "char_errors": 4,
                "total_gt_chars": 16,
                "cer": 0.25,
                "crr": 0.75,
            },
            id="readme-quick-brown-fox-crr-corrected",
        ),
        pytest.param(
            "hello world test", "hello world", {"precision": 2 / 3, "recall": 1.0},
            id="readme-precision",
        ),
        pytest.param(
            "hello world", "hello world test", {"precision": 1.0, "recall": 2 / 3},
            id="readme-recall",
        ),
        pytest.param(
            "Invoice INV-2024-001", "invoice inv 2024 001",
            {"exact_matches": 4, "precision": 1.0, "crr": 1.0},
            id="punctuation-splits-tokens",
        ),
        pytest.param(
            "ab ab ab", "ab cd ab", {"exact_matches": 2, "precision": 2 / 3, "recall": 2 / 3},
            id="multiset-counts",
        ),
        pytest.param(
            "xyzxyz", "ab", {"char_errors": 6, "cer": 3.0, "crr": -2.0}, id="negative-crr"
        ),
        pytest.param(
            "anything", "", {"cer": 0.0, "crr": 0.0, "recall": 0.0, "precision": 0.0},
            id="empty-gt",
        ),
        pytest.param("", "", {"precision": 0.0, "recall": 0.0, "f1": 0.0}, id="both-empty"),
    ],
)
def test_worked_examples(pred, gt, expected):
    result = word_metrics(pred, gt)
    assert {key: result[key] for key in expected} == expected


def test_word_tokens_split_on_punctuation_runs():
    assert word_tokens("INV-2024-001: total…") == ["inv", "2024", "001", "total…"]
    assert word_tokens("a--b", ignore_punctuation=False) == ["a--b"]
    assert word_tokens("Hello", case_sensitive=True) == ["Hello"]


def test_options_change_matching():
    assert word_metrics("Hello", "hello", case_sensitive=True)["exact_matches"] == 0
    assert word_metrics("Hello", "hello")["exact_matches"] == 1
    assert word_metrics("hello,", "hello", ignore_punctuation=False)["exact_matches"] == 0
    assert word_metrics("hello,", "hello")["exact_matches"] == 1


@PROPERTY
@given(texts, texts, st.booleans(), st.booleans())
def test_equals_independent_oracle(pred, gt, case_sensitive, ignore_punctuation):
    options = {"case_sensitive": case_sensitive, "ignore_punctuation": ignore_punctuation}
    assert word_metrics(pred, gt, **options) == oracle_metrics(pred, gt, **options)


@PROPERTY
@given(texts, texts)
def test_cer_equals_jiwer_on_joined_words(pred, gt):
    gt_chars, pred_chars = "".join(word_tokens(gt)), "".join(word_tokens(pred))
    if gt_chars:
        assert word_metrics(pred, gt)["cer"] == pytest.approx(jiwer.cer(gt_chars, pred_chars))


@PROPERTY
@given(texts, texts)
def test_ranges_and_f1_between_p_and_r(pred, gt):
    result = word_metrics(pred, gt)
    p, r, f1 = result["precision"], result["recall"], result["f1"]
    for value in (p, r, f1):
        assert 0.0 <= value <= 1.0
    assert min(p, r) - 1e-12 <= f1 <= max(p, r) + 1e-12
    assert result["cer"] >= 0.0
    assert result["exact_matches"] <= min(result["total_gt_words"], result["total_pred_words"])
    if result["total_gt_chars"]:
        assert result["crr"] == 1.0 - result["cer"]


@PROPERTY
@given(texts)
def test_identity(text):
    result = word_metrics(text, text)
    assert result["char_errors"] == 0 and result["cer"] == 0.0
    if result["total_gt_words"]:
        assert result["precision"] == result["recall"] == result["f1"] == result["crr"] == 1.0


@PROPERTY
@given(ascii_texts, ascii_texts, st.randoms())
def test_case_changes_do_not_matter_when_case_insensitive(pred, gt, rng):
    recased = "".join(ch.upper() if rng.random() < 0.5 else ch.lower() for ch in pred)
    assert word_metrics(recased, gt.swapcase()) == word_metrics(pred, gt)


@PROPERTY
@given(st.lists(st.sampled_from(["ab", "cd", "abc", "x", "Ab"]), max_size=8), texts, st.randoms())
def test_word_scores_ignore_order_but_cer_does_not(words, gt, rng):
    shuffled = words[:]
    rng.shuffle(shuffled)
    original = word_metrics(" ".join(words), gt)
    permuted = word_metrics(" ".join(shuffled), gt)
    for key in ("precision", "recall", "f1", "exact_matches", "total_pred_words"):
        assert original[key] == permuted[key]
    # CER compares concatenations: zero exactly when the concatenated words agree.
    reference = word_metrics(" ".join(shuffled), " ".join(words))
    assert (reference["char_errors"] == 0) == (
        "".join(shuffled).lower() == "".join(words).lower()
    )


def test_cer_sees_word_order():
    assert word_metrics("fox brown", "brown fox")["cer"] > 0
    assert word_metrics("fox brown", "brown fox")["f1"] == 1.0


@pytest.mark.parametrize("bad", [None, b"text", ["text"], 5])
def test_rejects_bad_input_naming_the_argument(bad):
    with pytest.raises(TypeError, match=r"^pred "):
        word_metrics(bad, "text")
    with pytest.raises(TypeError, match=r"^gt "):
        word_metrics("text", bad)
    with pytest.raises(TypeError, match=r"^text "):
        word_tokens(bad)


def test_fixture_page_equals_oracle():
    gt = (FIXTURES / "page_gt.txt").read_text(encoding="utf-8")
    pred = (FIXTURES / "page_pred.txt").read_text(encoding="utf-8")
    result = word_metrics(pred, gt)
    assert result == oracle_metrics(pred, gt)
    # held/heId, schedule/schedu1e, account/acount; "£13,980;" and "£13.980;" both give
    # "£13", "980", and changed or dropped punctuation does not count.
    assert result["total_gt_words"] - result["exact_matches"] == 3


def test_ocrmetrics_examples_equal_oracle():
    root = shared_data("ocrmetrics_examples")
    checked = 0
    for folder in sorted(path for path in root.iterdir() if path.is_dir()):
        gt = (folder / "gt.txt").read_text(encoding="utf-8")
        for output in sorted(folder.glob("*_out.txt")):
            pred = output.read_text(encoding="utf-8")
            assert word_metrics(pred, gt) == oracle_metrics(pred, gt), output.name
            checked += 1
    assert checked == 12
