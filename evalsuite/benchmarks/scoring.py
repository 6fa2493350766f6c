"""Per-sample scorers shared by several benchmarks, composed from :mod:`evalsuite.metrics`."""

from __future__ import annotations

from evalsuite.engines.base import InferenceResult
from evalsuite.engines.grounding import strip_grounding
from evalsuite.metrics.text import edit_precision, normalized_edit_distance
from evalsuite.metrics.words import word_metrics
from evalsuite.runner import MetricSpec
from evalsuite.tokens import compression_ratio

TEXT, VISION = "text", "vision"
CONDITIONS = (TEXT, VISION)
"""The context studies' two conditions: context in the prompt, or context in the image."""

CONTEXT_METRICS = (
    MetricSpec("context_tokens", direction=None, gate=False),
    MetricSpec("compression", direction=None, gate=False),
)
"""What the context studies report besides their headline: the tokens the context took (text
tokens, or valid vision tokens) and, for the vision condition, text tokens per vision token."""


def ocr_scores(
    prediction: str,
    ground_truth: str,
    *,
    valid_vision_tokens: int | None = None,
    output_tokens: int | None = None,
    ground_truth_tokens: int | None = None,
) -> dict[str, float | int | None]:
    """Page-OCR scores: edit precision and distance (grounding markup removed), word F1 and
    CRR (:func:`~evalsuite.metrics.words.word_metrics`), and with vision tokens the compression
    ratios ground-truth/valid and output/valid tokens."""
    text = strip_grounding(prediction)
    words = word_metrics(text, ground_truth)
    scores: dict[str, float | int | None] = {
        "edit_precision": edit_precision(text, ground_truth),
        "normalized_edit_distance": normalized_edit_distance(text, ground_truth),
        "word_f1": words["f1"],
        "crr": words["crr"],
    }
    if valid_vision_tokens:
        scores["valid_vision_tokens"] = valid_vision_tokens
        if ground_truth_tokens is not None:
            scores["gt_compression"] = compression_ratio(ground_truth_tokens, valid_vision_tokens)
        if output_tokens is not None:
            scores["output_compression"] = compression_ratio(output_tokens, valid_vision_tokens)
    return scores


def context_scores(condition: str, text_tokens: int, result: InferenceResult) -> dict[str, float]:
    """The context's size under ``condition``: ``text`` → ``context_tokens`` = ``text_tokens``
    (the context as sent in the prompt); ``vision`` → ``context_tokens`` = the result's valid
    vision tokens and ``compression`` = ``text_tokens`` / vision tokens (``text_tokens`` being
    the whole context the page shows). Nothing for a vision result without a token count."""
    if condition == TEXT:
        return {"context_tokens": text_tokens}
    if condition != VISION:
        raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}")
    vision = result.valid_vision_tokens
    if not vision:
        return {}
    return {"context_tokens": vision, "compression": compression_ratio(text_tokens, vision)}
