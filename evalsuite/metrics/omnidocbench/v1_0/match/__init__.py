"""v1.0's own matches (opendatalab/OmniDocBench at 895837f) and v1.5's (0f22218), row for row,
quirks included: the simple match (:mod:`.simple`) and v1.5's hybrid match of text and display
formulas with the choice between quick and simple match under v1.0's time limit
(:mod:`.hybrid`); both build on :mod:`...common.match`. Every name other modules import is
importable from here."""

from __future__ import annotations

from evalsuite.metrics.omnidocbench.v1_0.match.hybrid import (
    match_hybrid,
    match_quick_or_simple,
    table_leftover_cells,
)
from evalsuite.metrics.omnidocbench.v1_0.match.simple import match_simple

__all__ = ["match_hybrid", "match_quick_or_simple", "match_simple", "table_leftover_cells"]
