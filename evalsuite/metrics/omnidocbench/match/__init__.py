"""Matching predicted elements to ground-truth elements, as OmniDocBench v1.0 (opendatalab/
OmniDocBench at 895837f) and v1.5 (0f22218) do, row for row, quirks included: the rows and the
lines they are built from (:mod:`.rows`), the simple match (:mod:`.simple`), the quick match
(:mod:`.quick`, whose steps v1.6's :mod:`.mgam` reuses) and v1.5's hybrid match of text and
display formulas (:mod:`.hybrid`). Every name other modules import is importable from here."""

from __future__ import annotations

from evalsuite.metrics.omnidocbench.match.hybrid import (
    match_hybrid,
    match_quick_or_simple,
    table_leftover_cells,
)
from evalsuite.metrics.omnidocbench.match.quick import (
    MASK_COST,
    QUICK_MATCH_TIMEOUT_S,
    final_entries,
    group_by_prediction,
    match_quick,
    merge_duplicates,
    merge_split_predictions,
    quick_groups,
    window_match,
)
from evalsuite.metrics.omnidocbench.match.rows import (
    IGNORED_CATEGORIES,
    Deadline,
    GtItem,
    LineType,
    MatchedRow,
    MatchError,
    MatchTimeout,
    cost_matrix,
    distance_ratio,
)
from evalsuite.metrics.omnidocbench.match.simple import match_simple

__all__ = [
    "IGNORED_CATEGORIES",
    "MASK_COST",
    "QUICK_MATCH_TIMEOUT_S",
    "Deadline",
    "GtItem",
    "LineType",
    "MatchError",
    "MatchTimeout",
    "MatchedRow",
    "cost_matrix",
    "distance_ratio",
    "final_entries",
    "group_by_prediction",
    "match_hybrid",
    "match_quick",
    "match_quick_or_simple",
    "match_simple",
    "merge_duplicates",
    "merge_split_predictions",
    "quick_groups",
    "table_leftover_cells",
    "window_match",
]
