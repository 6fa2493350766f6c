"""Pure metric functions, by family. Every public name is re-exported here."""

from evalsuite.metrics.boxes import (
    box_coverage,
    box_iou,
    detection_precision_recall,
    mean_coverage,
)
from evalsuite.metrics.order import order_metrics
from evalsuite.metrics.qa import first_word_match, parse_choice, word_overlap
from evalsuite.metrics.tables import teds
from evalsuite.metrics.text import (
    edit_distance,
    edit_precision,
    fox_metrics,
    normalized_edit_distance,
    overlap_score,
    overlap_score_exact,
)
from evalsuite.metrics.words import word_metrics

__all__ = [
    "box_coverage",
    "box_iou",
    "detection_precision_recall",
    "edit_distance",
    "edit_precision",
    "first_word_match",
    "fox_metrics",
    "mean_coverage",
    "normalized_edit_distance",
    "order_metrics",
    "overlap_score",
    "overlap_score_exact",
    "parse_choice",
    "teds",
    "word_metrics",
    "word_overlap",
]
