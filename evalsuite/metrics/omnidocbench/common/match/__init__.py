"""The matching machinery OmniDocBench's code bases share, as v1.0 (opendatalab/OmniDocBench at
895837f) has it, row for row, quirks included: the rows and the lines they are built from
(:mod:`.rows`) and the quick match (:mod:`.quick`), whose steps v1.5's hybrid match
(:mod:`...v1_0.match`) and v1.6's quick match (:mod:`...v1_6.mgam`) reuse. Every name other
modules import is importable from here."""

from __future__ import annotations

from evalsuite.metrics.omnidocbench.common.match.quick import (
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
from evalsuite.metrics.omnidocbench.common.match.rows import (
    Deadline,
    GtItem,
    LineType,
    MatchedRow,
    MatchError,
    MatchTimeout,
    cost_matrix,
    distance_ratio,
)

__all__ = [
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
    "match_quick",
    "merge_duplicates",
    "merge_split_predictions",
    "quick_groups",
    "window_match",
]
