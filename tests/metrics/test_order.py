"""Reading-order scores of Biblicus's OCR benchmark (evalsuite.metrics.order)."""

from __future__ import annotations

import itertools
import re

import editdistance
import jiwer
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics.order import order_metrics, order_words
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data

PROPERTY = settings(max_examples=120, deadline=None)
FIXTURES = TEST_FIXTURES / "text_metrics"

# Words of every normalisation case: short, punctuated, capitalised, non-ASCII, digits.
pages = st.lists(
    st.sampled_from(
        ["the", "The", "cat,", "sat", "on", "a", "mat.", "Mat", "café", "naïve", "C3PO", "--", "x1"]
    ),
    max_size=12,
).map(" ".join)
distinct_words = st.lists(
    st.text(alphabet="abcdefgh", min_size=3, max_size=5), min_size=2, max_size=6, unique=True
)


def biblicus_oracle(pred: str, gt: str) -> dict:
    """Biblicus's calculate_* functions restated: editdistance for distances, DP for LCS."""

    def words(text):
        cleaned = (re.sub(r"[^a-z0-9]", "", word) for word in text.lower().split())
        return [word for word in cleaned if len(word) > 2]

    def lcs(a, b):
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, j in itertools.product(range(1, len(a) + 1), range(1, len(b) + 1)):
            if a[i - 1] == b[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
        return table[-1][-1]

    def ngrams(g, p, n):
        if len(g) < n or len(p) < n:
            return 0.0
        g_grams = [tuple(g[i : i + n]) for i in range(len(g) - n + 1)]
        p_grams = [tuple(p[i : i + n]) for i in range(len(p) - n + 1)]
        return len(set(g_grams) & set(p_grams)) / len(g_grams)

    g, p = words(gt), words(pred)
    tp = len(set(g) & set(p))
    fp, fn = len(set(p) - set(g)), len(set(g) - set(p))
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    longest = max(len(gt), len(pred))
    result = {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0,
        "char_accuracy": max(0.0, 1.0 - editdistance.eval(gt, pred) / longest) if longest else 1.0,
        "bigram_overlap": ngrams(g, p, 2),
        "trigram_overlap": ngrams(g, p, 3),
    }
    if not g and not p:
        order = (0.0, 1.0, 1.0, 0.0)
    elif not g or not p:
        order = (1.0, 0.0, 0.0, 1.0)
    else:
        distance = editdistance.eval(g, p)
        in_place = sum(1 for i, word in enumerate(g) if i < len(p) and p[i] == word)
        order = (
            distance / len(g),
            in_place / len(g),
            lcs(g, p) / len(g),
            distance / max(len(g), len(p)),
        )
    keys = ("wer", "sequence_accuracy", "lcs_ratio", "normalized_edit_distance")
    result.update(zip(keys, order, strict=True))
    return result


# Biblicus's docs/guides/metrics-reference.md examples. Two of its claims do not follow from its
# own definitions and are corrected here: WER of "hello form world biblicus" is 2 edits / 4 = 0.5
# (not 0.25), and its sequence accuracy is 2/4 (not 1/4): "biblicus" is in place as well.
@pytest.mark.parametrize(
    ("pred", "gt", "expected"),
    [
        pytest.param(
            "hello world form", "hello world from biblicus",
            {"precision": 2 / 3, "recall": 0.5, "f1": pytest.approx(0.571, abs=1e-3)},
            id="f1",
        ),
        pytest.param(
            "hello world form biblicus", "hello world from biblicus", {"precision": 0.75},
            id="precision",
        ),
        pytest.param(
            "hello world biblicus", "hello world from biblicus system", {"recall": 0.6},
            id="recall",
        ),
        pytest.param(
            "hello form world biblicus", "hello world from biblicus",
            {"wer": 0.5, "sequence_accuracy": 0.5, "normalized_edit_distance": 0.5},
            id="wer-corrected",
        ),
        pytest.param(
            "the brown quick fox", "the quick brown fox jumps", {"lcs_ratio": 0.6}, id="lcs"
        ),
        pytest.param(
            "hello world biblicus from", "hello world from biblicus", {"bigram_overlap": 1 / 3},
            id="bigram",
        ),
        pytest.param(
            "the brown quick fox", "the quick brown fox", {"trigram_overlap": 0.0}, id="trigram"
        ),
        pytest.param(
            "hello world", "Hello, World!",
            {"precision": 1.0, "recall": 1.0, "wer": 0.0, "char_accuracy": 1 - 4 / 13},
            id="normalisation",
        ),
        pytest.param("the slow fox", "the quick fox", {"wer": 1 / 3}, id="wer-substitution"),
        pytest.param(
            "a c b", "a b c",
            {"wer": 0.0, "sequence_accuracy": 1.0, "lcs_ratio": 1.0, "bigram_overlap": 0.0},
            id="short-words-dropped",
        ),
    ],
)
def test_worked_examples(pred, gt, expected):
    result = order_metrics(pred, gt)
    assert {key: result[key] for key in expected} == expected


def test_short_words_kept_by_plain_normalisation():
    result = order_metrics("a c b", "a b c", min_word_length=1, ascii_only=False)
    assert result["bigram_overlap"] == 0.0  # (a, b), (b, c) vs (a, c), (c, b)
    assert result["sequence_accuracy"] == 1 / 3
    assert result["wer"] == 2 / 3


def test_order_words_default_and_plain():
    text = "Ünïcode CAFÉ is ok, C-3PO 日本語!"
    assert order_words(text) == ["ncode", "caf", "c3po"]
    assert order_words(text, min_word_length=1, ascii_only=False) == [
        "ünïcode", "café", "is", "ok", "c3po", "日本語",
    ]
    assert order_words("ab abc", min_word_length=2) == ["ab", "abc"]
    # Combining marks stay with their letters under the plain normalisation.
    assert order_words("नमस्ते", min_word_length=1, ascii_only=False) == ["नमस्ते"]


@pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-1, ValueError), ("3", TypeError)])
def test_min_word_length_is_checked(bad, error):
    with pytest.raises(error, match=r"^min_word_length "):
        order_metrics("a", "b", min_word_length=bad)


@PROPERTY
@given(pages, pages)
def test_equals_biblicus_restated(pred, gt):
    assert order_metrics(pred, gt) == biblicus_oracle(pred, gt)


@PROPERTY
@given(pages, pages)
def test_wer_equals_jiwer_on_normalised_words(pred, gt):
    gt_words, pred_words = order_words(gt), order_words(pred)
    if gt_words and pred_words:
        expected = jiwer.wer(" ".join(gt_words), " ".join(pred_words))
        assert order_metrics(pred, gt)["wer"] == pytest.approx(expected, rel=1e-12)


@PROPERTY
@given(pages, pages, st.integers(1, 4), st.booleans())
def test_ranges_and_f1_between_p_and_r(pred, gt, min_word_length, ascii_only):
    result = order_metrics(pred, gt, min_word_length=min_word_length, ascii_only=ascii_only)
    for key, value in result.items():
        if key == "wer":
            assert value >= 0.0
        else:
            assert 0.0 <= value <= 1.0, key
    p, r = result["precision"], result["recall"]
    assert min(p, r) - 1e-12 <= result["f1"] <= max(p, r) + 1e-12


@PROPERTY
@given(pages, st.booleans())
def test_identity(text, plain):
    options = {"min_word_length": 1, "ascii_only": False} if plain else {}
    result = order_metrics(text, text, **options)
    words = order_words(text, **options)
    assert result["char_accuracy"] == 1.0
    assert result["wer"] == result["normalized_edit_distance"] == 0.0
    assert result["sequence_accuracy"] == result["lcs_ratio"] == 1.0
    if words:
        assert result["precision"] == result["recall"] == result["f1"] == 1.0
    # Biblicus divides distinct shared n-grams by all gt n-grams: repeats keep identity below 1.
    for n, key in ((2, "bigram_overlap"), (3, "trigram_overlap")):
        grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
        assert result[key] == (len(set(grams)) / len(grams) if grams else 0.0)


def test_repeated_ngrams_keep_identity_below_one():
    assert order_metrics("the the the", "the the the")["bigram_overlap"] == 0.5


@PROPERTY
@given(pages, pages)
def test_word_scores_ignore_case_char_accuracy_does_not_need_to(pred, gt):
    original = order_metrics(pred, gt)
    recased = order_metrics(pred.upper(), gt.swapcase())
    for key in original.keys() - {"char_accuracy"}:
        assert recased[key] == original[key], key


@PROPERTY
@given(distinct_words, st.randoms())
def test_set_scores_ignore_shuffles_sequence_scores_see_them(words, rng):
    permutation = list(range(len(words)))
    rng.shuffle(permutation)
    shuffled = [words[i] for i in permutation]
    result = order_metrics(" ".join(shuffled), " ".join(words))
    assert result["precision"] == result["recall"] == result["f1"] == 1.0
    # With distinct words, each sequence score is perfect exactly for the identity permutation.
    is_identity = permutation == sorted(permutation)
    assert (result["sequence_accuracy"] == 1.0) == is_identity
    assert (result["lcs_ratio"] == 1.0) == is_identity
    assert (result["wer"] == 0.0) == is_identity
    assert (result["bigram_overlap"] == 1.0) == is_identity


def test_sequence_scores_see_a_swap():
    result = order_metrics("brown quick", "quick brown")
    assert result["f1"] == 1.0
    assert (result["wer"], result["sequence_accuracy"], result["lcs_ratio"]) == (1.0, 0.0, 0.5)


@pytest.mark.parametrize("bad", [None, b"text", ["text"]])
def test_rejects_bad_input_naming_the_argument(bad):
    with pytest.raises(TypeError, match=r"^pred "):
        order_metrics(bad, "text")
    with pytest.raises(TypeError, match=r"^gt "):
        order_metrics("text", bad)
    with pytest.raises(TypeError, match=r"^text "):
        order_words(bad)


def test_fixture_page_equals_biblicus_restated():
    gt = (FIXTURES / "page_gt.txt").read_text(encoding="utf-8")
    pred = (FIXTURES / "page_pred.txt").read_text(encoding="utf-8")
    result = order_metrics(pred, gt)
    assert result == biblicus_oracle(pred, gt)
    assert 0.9 < result["lcs_ratio"] < 1.0


def test_real_fox_page_equals_biblicus_restated():
    gt = shared_data("fox", "en_1_gt.txt").read_text(encoding="utf-8")
    lines = gt.splitlines()
    pred = "\n".join(lines[len(lines) // 2 :] + lines[: len(lines) // 2])  # columns swapped
    assert order_metrics(pred, gt) == biblicus_oracle(pred, gt)
