"""Edit distances, Fox's page scores and Surya's line scores (evalsuite.metrics.text)."""

from __future__ import annotations

import math

import editdistance
import Levenshtein as python_levenshtein
import nltk
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from nltk.metrics.scores import f_measure as nltk_f_measure
from nltk.metrics.scores import precision as nltk_precision
from nltk.metrics.scores import recall as nltk_recall
from rapidfuzz import fuzz

from evalsuite.metrics.text import (
    edit_distance,
    edit_precision,
    fox_metrics,
    normalized_edit_distance,
    overlap_score,
    overlap_score_exact,
)
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data

PROPERTY = settings(max_examples=120, deadline=None)
FIXTURES = TEST_FIXTURES / "text_metrics"

# Small alphabets make collisions (shared characters, equal words) likely.
short_text = st.text(alphabet="abcAB é\n", max_size=12)
word_lists = st.lists(st.sampled_from(["the", "cat", "sat", "on", "mat", "ünï"]), max_size=8)
page_text = st.lists(
    st.sampled_from(["the", "cat", "sat", "on", "The", "mat.", "ünï", "x"]), max_size=12
).map(" ".join)


def dp_levenshtein(a, b) -> int:
    """Test oracle: the full-matrix Levenshtein recurrence."""
    rows, cols = len(a) + 1, len(b) + 1
    table = [[0] * cols for _ in range(rows)]
    for i in range(rows):
        table[i][0] = i
    for j in range(cols):
        table[0][j] = j
    for i in range(1, rows):
        for j in range(1, cols):
            table[i][j] = min(
                table[i - 1][j] + 1,
                table[i][j - 1] + 1,
                table[i - 1][j - 1] + (0 if a[i - 1] == b[j - 1] else 1),
            )
    return table[-1][-1]


# ---------------------------------------------------------------- edit distance


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("kitten", "sitting", 3),
        ("rain", "shine", 3),
        ("", "", 0),
        ("", "abc", 3),
        ("thequickbrownfox", "thequikbrown", 4),
        ("café", "cafe", 1),  # one code point
        (["hello", "world", "from", "biblicus"], ["hello", "form", "world", "biblicus"], 2),
        (("a", "b"), ("b", "a"), 2),
        ([1, 2, 3], [1, 3], 1),
    ],
)
def test_edit_distance_known_values(a, b, expected):
    assert edit_distance(a, b) == expected


@PROPERTY
@given(short_text, short_text)
def test_edit_distance_equals_dp_oracle_and_libraries(a, b):
    distance = edit_distance(a, b)
    assert distance == dp_levenshtein(a, b)
    assert distance == python_levenshtein.distance(a, b)
    assert distance == editdistance.eval(a, b)
    assert distance == nltk.edit_distance(a, b)


@PROPERTY
@given(word_lists, word_lists)
def test_edit_distance_over_word_lists_equals_oracle(a, b):
    assert edit_distance(a, b) == dp_levenshtein(a, b) == editdistance.eval(a, b)
    assert edit_distance(tuple(a), b) == edit_distance(a, b)


@PROPERTY
@given(short_text, short_text)
def test_edit_distance_symmetry_identity_and_bounds(a, b):
    distance = edit_distance(a, b)
    assert distance == edit_distance(b, a)
    assert edit_distance(a, a) == 0
    assert (distance == 0) == (a == b)
    assert abs(len(a) - len(b)) <= distance <= max(len(a), len(b))


@PROPERTY
@given(short_text, short_text, short_text)
def test_edit_distance_triangle_inequality(a, b, c):
    assert edit_distance(a, c) <= edit_distance(a, b) + edit_distance(b, c)


def test_edit_distance_compares_elements_by_equality_not_hash_identity():
    # 1 == 1.0 == True: equal elements, as a pure-Python DP would treat them.
    assert edit_distance([1, 2], [1.0, 2]) == 0
    assert edit_distance([(1, 2)], [(1, 2)]) == 0


# ---------------------------------------------------------------- normalised distance


@pytest.mark.parametrize(
    ("pred", "gt", "expected"),
    [
        ("", "", 0.0),
        ("abc", "", 1.0),
        ("kitten", "sitting", 3 / 7),
        ("thequikbrown", "thequickbrownfox", 4 / 16),
    ],
)
def test_normalized_edit_distance_known_values(pred, gt, expected):
    assert normalized_edit_distance(pred, gt) == expected
    assert edit_precision(pred, gt) == 1 - expected


@PROPERTY
@given(short_text, short_text)
def test_normalized_edit_distance_range_symmetry_identity(pred, gt):
    ned = normalized_edit_distance(pred, gt)
    assert 0.0 <= ned <= 1.0
    assert ned == normalized_edit_distance(gt, pred)
    assert normalized_edit_distance(pred, pred) == 0.0
    assert (ned == 0.0) == (pred == gt)
    assert 0.0 <= edit_precision(pred, gt) <= 1.0
    assert edit_precision(pred, gt) == 1 - ned
    if pred or gt:
        assert ned == dp_levenshtein(pred, gt) / max(len(pred), len(gt))


@PROPERTY
@given(short_text, short_text, short_text)
def test_edit_distance_is_a_metric_bounded_by_the_lengths(a, b, c):
    # triangle inequality and the length bounds, each checked against the DP oracle
    assert edit_distance(a, c) <= edit_distance(a, b) + edit_distance(b, c)
    assert abs(len(a) - len(b)) <= edit_distance(a, b) == dp_levenshtein(a, b) <= max(
        len(a), len(b)
    )


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("function", [edit_distance, normalized_edit_distance, edit_precision])
@pytest.mark.parametrize("bad", [None, b"bytes", bytearray(b"x"), 3, {"a"}])
def test_distances_reject_bad_input_naming_the_argument(function, bad):
    first, second = ("a", "b") if function is edit_distance else ("pred", "gt")
    with pytest.raises(TypeError, match=f"^{first} "):
        function(bad, "text")
    with pytest.raises(TypeError, match=f"^{second} "):
        function("text", bad)


def test_distances_reject_mixed_str_and_list():
    with pytest.raises(TypeError, match="a and b must both be str"):
        edit_distance("abc", ["a", "b", "c"])
    with pytest.raises(TypeError, match="pred and gt"):
        normalized_edit_distance(["a"], "a")


def test_edit_distance_rejects_unhashable_elements_naming_the_argument():
    with pytest.raises(TypeError, match=r"^b must hold hashable"):
        edit_distance(["a"], [["a"]])


# ---------------------------------------------------------------- Fox


def fox_script_oracle(pred: str, gt: str, distance=nltk.edit_distance) -> dict:
    """Fox's cal_per_metrics (English branch) with nltk, as in eval_tools/eval_ocr_test.py.

    nltk 3.10 refuses edit_distance inputs over 2,000 characters; long pages pass another
    ``distance``.
    """
    reference, hypothesis = set(gt.split()), set(pred.split())
    return {
        "edit_dist": distance(pred, gt) / max(len(pred), len(gt)),
        "precision": nltk_precision(reference, hypothesis),
        "recall": nltk_recall(reference, hypothesis),
        "f_measure": nltk_f_measure(reference, hypothesis),
    }


@PROPERTY
@given(page_text, page_text)
def test_fox_metrics_equal_fox_scorer_with_nltk(pred, gt):
    assume(pred or gt)  # Fox divides by zero on two empty strings
    assert fox_metrics(pred, gt) == fox_script_oracle(pred, gt)


@PROPERTY
@given(page_text, page_text)
def test_fox_swap_reproduces_the_script_argument_order(pred, gt):
    assume(pred or gt)
    # The script calls cal_per_metrics(label, answer): its "pred" is the ground truth.
    printed_by_script = fox_script_oracle(pred=gt, gt=pred)
    swapped = fox_metrics(pred, gt, swap_like_fox_script=True)
    assert swapped == printed_by_script
    plain = fox_metrics(pred, gt)
    assert (swapped["precision"], swapped["recall"]) == (plain["recall"], plain["precision"])
    assert swapped["edit_dist"] == plain["edit_dist"]
    assert swapped["f_measure"] == plain["f_measure"]


def test_fox_metrics_worked_example():
    result = fox_metrics("the cat sat", "the cat sat on the mat")
    assert result["precision"] == 1.0  # {the, cat, sat} all in the gt set
    assert result["recall"] == 3 / 5  # of the 5 distinct gt words {the, cat, sat, on, mat}
    assert result["f_measure"] == pytest.approx(0.75)
    assert result["edit_dist"] == 11 / 22  # " on the mat" inserted


@pytest.mark.parametrize(
    ("pred", "gt", "precision", "recall", "f_measure"),
    [
        ("", "a b", None, 0.0, None),
        ("a b", "", 0.0, None, None),
        ("x y", "a b", 0.0, 0.0, 0.0),
        ("", "", None, None, None),
    ],
)
def test_fox_metrics_empty_and_disjoint(pred, gt, precision, recall, f_measure):
    result = fox_metrics(pred, gt)
    assert (result["precision"], result["recall"], result["f_measure"]) == (
        precision,
        recall,
        f_measure,
    )


def test_fox_metrics_two_empty_strings_have_zero_distance():
    assert fox_metrics("", "")["edit_dist"] == 0.0


@PROPERTY
@given(page_text, page_text)
def test_fox_metrics_ranges_and_harmonic_mean_between_p_and_r(pred, gt):
    result = fox_metrics(pred, gt)
    p, r, f = result["precision"], result["recall"], result["f_measure"]
    assert 0.0 <= result["edit_dist"] <= 1.0
    for value in (p, r, f):
        assert value is None or 0.0 <= value <= 1.0
    if p is not None and r is not None:
        assert min(p, r) - 1e-12 <= f <= max(p, r) + 1e-12


@PROPERTY
@given(page_text)
def test_fox_metrics_identity(text):
    result = fox_metrics(text, text)
    assert result["edit_dist"] == 0.0
    if text.split():
        assert result["precision"] == result["recall"] == result["f_measure"] == 1.0


@PROPERTY
@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), min_size=1), st.randoms())
def test_fox_set_scores_ignore_word_order(words, rng):
    gt = "alpha beta beta epsilon"
    shuffled = words[:]
    rng.shuffle(shuffled)
    original, permuted = fox_metrics(" ".join(words), gt), fox_metrics(" ".join(shuffled), gt)
    for key in ("precision", "recall", "f_measure"):
        assert original[key] == permuted[key]


def test_fox_edit_dist_sees_word_order():
    assert fox_metrics("beta alpha", "alpha beta")["edit_dist"] > 0
    assert fox_metrics("beta alpha", "alpha beta")["f_measure"] == 1.0


@pytest.mark.parametrize("bad", [None, b"text", ["text"]])
def test_fox_metrics_rejects_bad_input(bad):
    with pytest.raises(TypeError, match=r"^pred "):
        fox_metrics(bad, "text")
    with pytest.raises(TypeError, match=r"^gt "):
        fox_metrics("text", bad)


def test_fox_metrics_on_fixture_page_equals_fox_scorer():
    gt = (FIXTURES / "page_gt.txt").read_text(encoding="utf-8")
    pred = (FIXTURES / "page_pred.txt").read_text(encoding="utf-8")
    assert fox_metrics(pred, gt) == fox_script_oracle(pred, gt)
    assert 0.0 < fox_metrics(pred, gt)["edit_dist"] < 0.2


def test_fox_metrics_on_real_fox_page():
    gt = shared_data("fox", "en_1_gt.txt").read_text(encoding="utf-8")
    words = gt.split()
    pred = " ".join(words[: len(words) * 3 // 4]).replace("the", "tne")
    assert fox_metrics(pred, gt) == fox_script_oracle(pred, gt, distance=editdistance.eval)


# ---------------------------------------------------------------- Surya lines


def surya_oracle(pred_lines, ref_lines):
    """Surya's overlap_score, restated: best ref per pred line, first on ties."""
    scores, weights, matches = [], [], {}
    for i, pred_line in enumerate(pred_lines):
        candidates = [
            (fuzz.ratio(pred_line, ref_line, score_cutoff=20) / 100, -j, j)
            for j, ref_line in enumerate(ref_lines)
        ]
        best = max(candidates, default=(0.0, 0, None))
        if best[0] > 0:
            score, weight, match = best[0], math.sqrt(len(ref_lines[best[2]])), best[2]
        else:
            score, weight, match = 0.0, 1.0, None
        scores.append(score * weight)
        weights.append(weight)
        matches[i] = match
    return scores, weights, matches


line_lists = st.lists(st.text(alphabet="abc d", max_size=8), max_size=5)


def test_overlap_score_worked_example():
    scores, weights, matches = overlap_score(
        ["hello world", "zzzz", "abc"], ["hello word", "abc", "hello world", "abc"]
    )
    assert matches == {0: 2, 1: None, 2: 1}  # exact match wins; first of two equal refs
    assert weights == [math.sqrt(11), 1.0, math.sqrt(3)]
    assert scores == [math.sqrt(11), 0.0, math.sqrt(3)]


def test_overlap_score_cutoff_and_partial_score():
    # ratio("abcd", "abxy") = 100 * (1 - 4/8) = 50; below 20 counts as no match.
    scores, weights, matches = overlap_score(["abcd"], ["abxy"])
    assert scores == [pytest.approx(0.5 * 2.0)] and weights == [2.0] and matches == {0: 0}
    assert overlap_score(["abcdefghij"], ["aklmnopqrs"]) == ([0.0], [1.0], {0: None})


@PROPERTY
@given(line_lists, line_lists)
def test_overlap_score_equals_restated_surya(pred_lines, ref_lines):
    assert overlap_score(pred_lines, ref_lines) == surya_oracle(pred_lines, ref_lines)


@PROPERTY
@given(line_lists, line_lists)
def test_overlap_score_ranges(pred_lines, ref_lines):
    scores, weights, matches = overlap_score(pred_lines, ref_lines)
    assert len(scores) == len(weights) == len(matches) == len(pred_lines)
    for i, (score, weight) in enumerate(zip(scores, weights, strict=True)):
        assert 0.0 <= score <= weight
        if matches[i] is None:
            assert (score, weight) == (0.0, 1.0)
        else:
            assert weight == math.sqrt(len(ref_lines[matches[i]]))


@PROPERTY
@given(st.lists(st.text(alphabet="abc d", min_size=1, max_size=8), max_size=5))
def test_overlap_score_identity(lines):
    scores, weights, _ = overlap_score(lines, lines)
    assert scores == weights  # every unweighted score is 1
    exact_scores, exact_weights = overlap_score_exact(lines, lines)
    assert exact_scores == exact_weights == [math.sqrt(len(line)) for line in lines]


@PROPERTY
@given(st.lists(st.tuples(st.text(alphabet="abc d", max_size=8), st.text("abc d", max_size=8))))
def test_overlap_score_exact_pairs_lines(pairs):
    pred_lines = [pred for pred, _ in pairs]
    ref_lines = [ref for _, ref in pairs]
    scores, weights = overlap_score_exact(pred_lines, ref_lines)
    expected_weights = [math.sqrt(len(ref)) for ref in ref_lines]
    assert weights == expected_weights
    assert scores == [
        fuzz.ratio(pred, ref, score_cutoff=20) / 100 * weight
        for (pred, ref), weight in zip(pairs, expected_weights, strict=True)
    ]


def test_overlap_score_exact_rejects_unequal_lengths():
    with pytest.raises(ValueError, match="pred_lines and ref_lines"):
        overlap_score_exact(["a", "b"], ["a"])


@pytest.mark.parametrize("function", [overlap_score, overlap_score_exact])
@pytest.mark.parametrize(
    ("bad", "suffix"), [(None, ""), (b"x", ""), ("line", ""), (["a", None], r"\[1\]")]
)
def test_line_scores_reject_bad_input(function, bad, suffix):
    with pytest.raises(TypeError, match=f"^pred_lines{suffix} "):
        function(bad, ["a", "b"])
    with pytest.raises(TypeError, match=f"^ref_lines{suffix} "):
        function(["a", "b"], bad)
