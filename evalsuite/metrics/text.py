"""Character and word edit distances, Fox's page scores and Surya's line-recognition scores.

Strings are compared by code points. References: DeepSeek-OCR / OmniDocBench normalised edit
distance, Fox ``eval_tools/eval_ocr_test.py`` (``cal_per_metrics``), Surya
``benchmark/utils/scoring.py`` (``overlap_score``, ``overlap_score_exact``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from evalsuite.metrics._validation import require_sequence, require_str, require_str_list

# Surya scores a line pair 0 below this fuzz.ratio (0-100 scale).
_SURYA_SCORE_CUTOFF = 20


def _as_symbol_ids(
    a: Sequence[Hashable], b: Sequence[Hashable], names: tuple[str, str]
) -> tuple[list[int], list[int]]:
    """Map the elements of two sequences to small ints, equal ids for equal elements.

    rapidfuzz compares non-string elements by hash; distinct ids rule out hash collisions.
    """
    ids: dict[Hashable, int] = {}
    mapped: list[list[int]] = []
    for seq, name in zip((a, b), names, strict=True):
        try:
            mapped.append([ids.setdefault(item, len(ids)) for item in seq])
        except TypeError as error:
            raise TypeError(f"{name} must hold hashable elements: {error}") from None
    return mapped[0], mapped[1]


def _checked_pair(a: Any, b: Any, names: tuple[str, str]) -> tuple[Sequence[Any], Sequence[Any]]:
    require_sequence(a, names[0])
    require_sequence(b, names[1])
    if isinstance(a, str) != isinstance(b, str):
        raise TypeError(
            f"{names[0]} and {names[1]} must both be str or both be lists/tuples, "
            f"got {type(a).__name__} and {type(b).__name__}"
        )
    return a, b


def _levenshtein(a: Sequence[Any], b: Sequence[Any], names: tuple[str, str]) -> int:
    if isinstance(a, str):
        return Levenshtein.distance(a, b)
    return Levenshtein.distance(*_as_symbol_ids(a, b, names))


def edit_distance(a: str | Sequence[Hashable], b: str | Sequence[Hashable]) -> int:
    """Levenshtein distance: fewest insertions, deletions and substitutions turning a into b.

    Over the code points of two ``str``, or over the elements of two lists/tuples (e.g. word
    lists, elements compared with ``==``). Symmetric; 0 iff ``a == b``; at most ``max(len)``.
    """
    a, b = _checked_pair(a, b, ("a", "b"))
    return _levenshtein(a, b, ("a", "b"))


def normalized_edit_distance(
    pred: str | Sequence[Hashable], gt: str | Sequence[Hashable]
) -> float:
    """``edit_distance(pred, gt) / max(len(pred), len(gt))`` in [0, 1]; 0.0 when both are empty.

    The page-level "edit distance" of DeepSeek-OCR, OmniDocBench and Fox.
    """
    pred, gt = _checked_pair(pred, gt, ("pred", "gt"))
    longest = max(len(pred), len(gt))
    if longest == 0:
        return 0.0
    return _levenshtein(pred, gt, ("pred", "gt")) / longest


def edit_precision(pred: str | Sequence[Hashable], gt: str | Sequence[Hashable]) -> float:
    """``1 - normalized_edit_distance(pred, gt)``: the "precision" of DeepSeek-OCR's Fox table."""
    return 1 - normalized_edit_distance(pred, gt)


def fox_metrics(pred: str, gt: str, *, swap_like_fox_script: bool = False) -> dict[str, Any]:
    """Fox's English page scores (``cal_per_metrics`` of ``eval_tools/eval_ocr_test.py``).

    With P = set(pred.split()) and G = set(gt.split()):

    - ``edit_dist`` = ``normalized_edit_distance(pred, gt)`` (Fox divides by zero on two empty
      strings; here that gives 0.0);
    - ``precision`` = |P ∩ G| / |P|, ``None`` when P is empty;
    - ``recall`` = |P ∩ G| / |G|, ``None`` when G is empty;
    - ``f_measure`` = 1 / (0.5/precision + 0.5/recall) as nltk computes it; ``None`` when either
      is ``None``, 0.0 when either is 0.

    Fox's own script calls ``cal_per_metrics(label, answer)`` against the signature
    ``(pred, gt)``, so the "precision" it prints is the recall defined here and vice versa.
    ``swap_like_fox_script=True`` swaps the two arguments the same way and so reproduces the
    script's printed numbers (``edit_dist`` and ``f_measure`` are unaffected). Fox segments
    Chinese text with jieba; that branch is not reproduced: text is always split on whitespace.
    """
    require_str(pred, "pred")
    require_str(gt, "gt")
    if swap_like_fox_script:
        pred, gt = gt, pred
    pred_words, gt_words = set(pred.split()), set(gt.split())
    common = len(pred_words & gt_words)
    precision = common / len(pred_words) if pred_words else None
    recall = common / len(gt_words) if gt_words else None
    if precision is None or recall is None:
        f_measure = None
    elif precision == 0 or recall == 0:
        f_measure = 0.0
    else:
        f_measure = 1.0 / (0.5 / precision + 0.5 / recall)
    return {
        "edit_dist": normalized_edit_distance(pred, gt),
        "precision": precision,
        "recall": recall,
        "f_measure": f_measure,
    }


def _surya_line_score(pred_line: str, ref_line: str) -> float:
    """rapidfuzz ``fuzz.ratio / 100``, 0.0 below Surya's cutoff of 20."""
    return fuzz.ratio(pred_line, ref_line, score_cutoff=_SURYA_SCORE_CUTOFF) / 100


def overlap_score(
    pred_lines: list[str], ref_lines: list[str]
) -> tuple[list[float], list[float], dict[int, int | None]]:
    """Surya's ``overlap_score``: each predicted line scored against its best reference line.

    For pred line i, score(i, j) = ``fuzz.ratio(pred_i, ref_j, score_cutoff=20) / 100``; the
    first j with the highest score above 0 is the match, weight_i = sqrt(len(ref_j)). Without
    any score above 0: score 0, weight 1, match None. Returns (score_i * weight_i for each i,
    weights, {i: match}); the caller aggregates Σ scores / Σ weights.
    """
    pred_lines = require_str_list(pred_lines, "pred_lines")
    ref_lines = require_str_list(ref_lines, "ref_lines")
    scores: list[float] = []
    weights: list[float] = []
    matches: dict[int, int | None] = {}
    for i, pred_line in enumerate(pred_lines):
        best_score, best_weight, best_match = 0.0, 1.0, None
        for j, ref_line in enumerate(ref_lines):
            score = _surya_line_score(pred_line, ref_line)
            if score > best_score:
                best_score, best_weight, best_match = score, math.sqrt(len(ref_line)), j
        scores.append(best_score * best_weight)
        weights.append(best_weight)
        matches[i] = best_match
    return scores, weights, matches


def overlap_score_exact(
    pred_lines: list[str], ref_lines: list[str]
) -> tuple[list[float], list[float]]:
    """Surya's ``overlap_score_exact``: pred line i scored against ref line i (aligned lists).

    score_i = ``fuzz.ratio(pred_i, ref_i, score_cutoff=20) / 100``, weight_i = sqrt(len(ref_i));
    returns (score_i * weight_i for each i, weights). Raises ValueError on unequal lengths.
    """
    pred_lines = require_str_list(pred_lines, "pred_lines")
    ref_lines = require_str_list(ref_lines, "ref_lines")
    if len(pred_lines) != len(ref_lines):
        raise ValueError(
            f"pred_lines and ref_lines must have equal lengths, "
            f"got {len(pred_lines)} and {len(ref_lines)}"
        )
    weights = [math.sqrt(len(ref_line)) for ref_line in ref_lines]
    scores = [
        _surya_line_score(pred_line, ref_line) * weight
        for pred_line, ref_line, weight in zip(pred_lines, ref_lines, weights, strict=True)
    ]
    return scores, weights
