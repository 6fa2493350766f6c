"""Per-sample scorers shared by several benchmarks, composed from :mod:`evalsuite.metrics`."""

from __future__ import annotations

from typing import Any

from evalsuite.engines.grounding import strip_grounding
from evalsuite.metrics.text import edit_precision, normalized_edit_distance
from evalsuite.metrics.words import word_metrics
from evalsuite.tokens import compression_ratio


def valid_vision_tokens(value: Any) -> int | None:
    """The valid vision-token count of an engine result (a VisionTokens, an int, or None)."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    return int(value.valid)


def ocr_scores(
    prediction: str,
    ground_truth: str,
    *,
    vision_tokens: Any = None,
    output_tokens: int | None = None,
    ground_truth_tokens: int | None = None,
) -> dict[str, float | int | None]:
    """Page-OCR scores: edit precision and distance (grounding markup removed), word F1, and
    with vision tokens the compression ratios ground-truth/valid and output/valid tokens."""
    text = strip_grounding(prediction)
    scores: dict[str, float | int | None] = {
        "edit_precision": edit_precision(text, ground_truth),
        "normalized_edit_distance": normalized_edit_distance(text, ground_truth),
        "word_f1": word_metrics(text, ground_truth)["f1"],
    }
    valid = valid_vision_tokens(vision_tokens)
    if valid:
        scores["valid_vision_tokens"] = valid
        if ground_truth_tokens is not None:
            scores["gt_compression"] = compression_ratio(ground_truth_tokens, valid)
        if output_tokens is not None:
            scores["output_compression"] = compression_ratio(output_tokens, valid)
    return scores
