"""Word alignment for the drill-down: exactly the words word_metrics counts as matched."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics import word_metrics
from evalsuite.reports.wordalign import SEPARATOR, UNMATCHED, align_words

WORDS = st.sampled_from(
    ["the", "The", "cat", "cat,", "INV-2024", "2024", "a.b", "naïve", "İx", "!"]
)
TEXTS = st.lists(st.tuples(WORDS, st.sampled_from([" ", "\n", "  "])), max_size=25).map(
    lambda pairs: "".join(word + space for word, space in pairs)
)


def test_a_small_example_by_hand() -> None:
    pred, gt = align_words("the cat sat", "The cat, the mat")
    assert [(s.text, s.match) for s in gt] == [
        ("The", 0), (" ", SEPARATOR), ("cat", 1), (",", SEPARATOR), (" ", SEPARATOR),
        ("the", UNMATCHED), (" ", SEPARATOR), ("mat", UNMATCHED),
    ]
    assert [(s.text, s.match) for s in pred] == [
        ("the", 0), (" ", SEPARATOR), ("cat", 1), (" ", SEPARATOR), ("sat", UNMATCHED),
    ]


@settings(max_examples=150, deadline=None)
@given(pred=TEXTS, gt=TEXTS, case_sensitive=st.booleans(), ignore_punctuation=st.booleans())
def test_alignment_laws(pred: str, gt: str, case_sensitive: bool, ignore_punctuation: bool) -> None:
    options = {"case_sensitive": case_sensitive, "ignore_punctuation": ignore_punctuation}
    pred_segments, gt_segments = align_words(pred, gt, **options)
    # Segments cover the texts exactly.
    assert "".join(s.text for s in gt_segments) == gt
    assert "".join(s.text for s in pred_segments) == pred
    # Every id pairs one ground-truth word with one predicted word...
    gt_ids = Counter(s.match for s in gt_segments if s.match not in (SEPARATOR, UNMATCHED))
    pred_ids = Counter(s.match for s in pred_segments if s.match not in (SEPARATOR, UNMATCHED))
    assert gt_ids == pred_ids and set(gt_ids.values()) <= {1}
    # ...and there are as many pairs as word_metrics counts exact matches.
    assert len(gt_ids) == word_metrics(pred, gt, **options)["exact_matches"]
    # Compared words: as many as word_metrics sees on each side.
    metrics = word_metrics(pred, gt, **options)
    assert sum(s.match is not SEPARATOR for s in gt_segments) == metrics["total_gt_words"]
    assert sum(s.match is not SEPARATOR for s in pred_segments) == metrics["total_pred_words"]


def test_inputs_are_checked_by_name() -> None:
    with pytest.raises(TypeError, match="pred"):
        align_words(None, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="gt"):
        align_words("x", b"x")  # type: ignore[arg-type]
