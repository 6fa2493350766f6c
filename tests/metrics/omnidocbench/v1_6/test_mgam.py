"""OmniDocBench v1.6's quick match (:mod:`evalsuite.metrics.omnidocbench.v1_6.mgam`).

Exactness: the official ``match_gt2pred_quick`` at 9dc1dec on 400 random pages and every call
the official page step made on the 54 constructed pages
(``fixtures/omnidocbench/v16_cases.json.gz``, from ``gen_v16_cases.py``). Laws: the run search
and the window test against brute force (with and without v1.6's run cap), one row per
ground-truth line.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from evalsuite.metrics.omnidocbench.common.match import (
    Deadline,
    merge_split_predictions,
    window_match,
)
from evalsuite.metrics.omnidocbench.v1_6.mgam import MgamLine, MgamRow, match_lines
from evalsuite.metrics.omnidocbench.versions import V16
from tests.support.paths import TEST_FIXTURES

FIXTURE = TEST_FIXTURES / "omnidocbench/v16_cases.json.gz"
DATA = json.loads(gzip.decompress(FIXTURE.read_bytes()))
CASES = DATA["cases"]
PAGE_CALLS = [
    (f"{page['id']}-{k}", call)
    for page in DATA["pages"]
    for k, call in enumerate(page["quick_match_calls"])
]


def _lines(case: dict[str, Any]) -> tuple[list[MgamLine], list[MgamLine]]:
    """The case's kept lines; a prediction's ``inline`` read from the item at its *filtered*
    index in the matcher's item list (the official indexing quirk)."""
    gt = [
        MgamLine(norm, category)
        for norm, category in zip(case["norm_gt"], case["gt_category"], strict=True)
    ]
    items = case["matcher_pred_items"]
    pred = [
        MgamLine(norm, inline=items[j].get("fine_category_type") == "equation_inline")
        for j, norm in enumerate(case["norm_pred"])
    ]
    return gt, pred


def _official_rows(case: dict[str, Any]) -> list[MgamRow]:
    return [
        MgamRow(
            tuple(i for i in row["gt_idx"] if i != ""),
            tuple(j for j in row["pred_idx"] if j != ""),
            row["edit"],
        )
        for row in case["rows"]
    ]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_rows_equal_official(case: dict[str, Any]) -> None:
    assert match_lines(*_lines(case)) == _official_rows(case)


@pytest.mark.parametrize("call", [call for _, call in PAGE_CALLS], ids=[i for i, _ in PAGE_CALLS])
def test_page_calls_equal_official(call: dict[str, Any]) -> None:
    """Each quick match the official v1.6 page step made on the 54 constructed pages of
    ``cases.json.gz`` (text with formulas; formulas alone for the formula candidates)."""
    assert match_lines(*_lines(call)) == _official_rows(call)


def test_cases_reach_every_branch() -> None:
    """The fixture holds runs of several predictions, several lines in one prediction,
    ground-truth-less rows, lines left unpaired and ignored lines."""
    rows = [row for case in CASES for row in case["rows"]]
    assert any(len(row["pred_idx"]) > 1 and row["gt_idx"] != [""] for row in rows)
    assert any(len(row["gt_idx"]) > 1 for row in rows)
    assert any(row["gt_idx"] == [""] for row in rows)
    assert any(row["pred_idx"] == [""] for row in rows)
    assert any(row["gt_category_type"] == "page_number" for row in rows)


# --- laws ----------------------------------------------------------------------------------------

_TEXT = st.text(alphabet="ab", min_size=1, max_size=7)


def _best_window(text: str, part: str) -> float | None:
    """Brute force: the least ``Levenshtein(window, part) / len(part)`` over the windows of
    ``text`` as long as ``part`` (None when there is none)."""
    size = len(part)
    if not 0 < size <= len(text):
        return None
    return min(
        Levenshtein.distance(text[k : k + size], part) / size
        for k in range(len(text) - size + 1)
    )


@given(_TEXT, _TEXT, st.sampled_from([0.4, 0.6]))
def test_window_match_is_the_least_window_distance(text: str, part: str, threshold: float) -> None:
    best = _best_window(text, part)
    deadline = Deadline(None)
    assert window_match(text, part, deadline, threshold) == (best is not None and best < threshold)
    assert window_match(text, part, deadline, threshold, inclusive=True) == (
        best is not None and best <= threshold
    )


def _ratio(a: str, b: str) -> float:
    return Levenshtein.distance(a, b) / max(len(a), len(b))


def _grown_run(gt: str, pred: list[str], start: int, masked: set[int]) -> int:
    """Brute force of one run's growth, from v1.6's rule: add the next free prediction while
    joining it does not raise the cost, every earlier part lies in ``gt`` (window distance
    <= 0.6) and the new one too (< 0.6); stop after a join longer than ``gt``."""
    length = 1
    while start + length < len(pred) and start + length not in masked:
        parts = pred[start : start + length + 1]
        joined, before = " ".join(parts), " ".join(parts[:-1])
        windows = [_best_window(gt, part) for part in parts]
        if _ratio(gt, joined) > _ratio(gt, before):
            break
        if any(w is None or w > 0.6 for w in windows[:-1]) or windows[-1] is None:
            break
        if not windows[-1] < 0.6:
            break
        length += 1
        if len(joined) > len(gt):
            break
    return length


@settings(max_examples=200, deadline=None)
@given(_TEXT, st.lists(_TEXT, min_size=1, max_size=5))
def test_run_search_of_one_line_is_the_best_grown_run(gt: str, pred: list[str]) -> None:
    """With one ground-truth line, the search's one column of several predictions (or its
    absence) is the least-cost run (first on ties) over every free start."""
    masked = {j for j, text in enumerate(pred) if _ratio(gt, text) < 0.25}
    free = [j for j in range(len(pred)) if j not in masked]
    columns, _ = merge_split_predictions([gt], pred, Deadline(None))
    if masked or not free:
        assert columns == list(range(len(pred)))
        return
    runs = [(start, _grown_run(gt, pred, start, masked)) for start in free]
    start, length = min(runs, key=lambda run: _ratio(gt, " ".join(pred[run[0] : run[0] + run[1]])))
    stop = start + length
    expected = [*range(start), list(range(start, stop)), *range(stop, len(pred))]
    assert columns == expected


@settings(max_examples=200, deadline=None)
@given(_TEXT, st.lists(_TEXT, min_size=1, max_size=6), st.integers(1, 3))
def test_run_search_with_cap_is_the_best_capped_run(gt: str, pred: list[str], cap: int) -> None:
    """With ``max_run``, the one column is the least-cost run grown at most ``cap`` long."""
    masked = {j for j, text in enumerate(pred) if _ratio(gt, text) < 0.25}
    free = [j for j in range(len(pred)) if j not in masked]
    columns, _ = merge_split_predictions([gt], pred, Deadline(None), cap)
    if masked or not free:
        assert columns == list(range(len(pred)))
        return
    runs = [(start, min(cap, _grown_run(gt, pred, start, masked))) for start in free]
    start, length = min(runs, key=lambda run: _ratio(gt, " ".join(pred[run[0] : run[0] + run[1]])))
    stop = start + length
    assert columns == [*range(start), list(range(start, stop)), *range(stop, len(pred))]


_CATEGORY = st.sampled_from(["text_block", "title", "equation_isolated", "header", "page_number"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_TEXT, _CATEGORY), max_size=5),
    st.lists(st.tuples(_TEXT, st.booleans()), max_size=6),
)
def test_each_line_in_exactly_one_row(
    gt: list[tuple[str, str]], pred: list[tuple[str, bool]]
) -> None:
    """Every ground-truth line is in exactly one row (v1.6 no longer repeats unpaired lines),
    every row has a side, every prediction index is in range, every edit is in [0, 1]."""
    rows = match_lines(
        [MgamLine(text, category) for text, category in gt],
        [MgamLine(text, inline=inline) for text, inline in pred],
    )
    assert sorted(i for row in rows for i in row.gt_idx) == list(range(len(gt)))
    assert all(row.gt_idx or row.pred_idx for row in rows)
    assert all(0 <= j < len(pred) for row in rows for j in row.pred_idx)
    assert all(0 <= row.edit <= 1 for row in rows)


def test_runs_stop_at_v16_cap() -> None:
    """Without the cap one run would join 200 of the 330 short predictions."""
    gt = "ab " * 200
    pred = ["ab"] * 330
    uncapped, _ = merge_split_predictions([gt], pred, Deadline(None))
    assert [len(c) for c in uncapped if isinstance(c, list)] == [200]
    capped, _ = merge_split_predictions([gt], pred, Deadline(None), V16.max_run)
    assert [len(c) for c in capped if isinstance(c, list)] == [160]
    rows = match_lines([MgamLine(gt), MgamLine("b")], [MgamLine(text) for text in pred])
    assert rows[0] == MgamRow((0,), tuple(range(160)), rows[0].edit)
