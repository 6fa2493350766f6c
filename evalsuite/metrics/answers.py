"""Short-answer matching as the render-configuration study (galah92/deepseek-ocr-eval) judged it.

Both rules lowercase and strip both strings; an empty prediction is wrong. "Bare" below means
with every character that is neither a word character nor whitespace deleted.

- ``rule="study"`` (default): the rule that produced the study's recorded results. Correct when
  the prediction equals the answer or contains it; or is contained in it and has 2+ characters;
  or the same three tests hold between their bare forms.
- ``rule="strict"``: the study's later, stricter rule. Correct when equal, or equal when bare;
  or the bare answer occurs in the bare prediction between word boundaries; or a one-word answer
  is one of the prediction's words; or the answer's words, joined by single spaces, occur in the
  prediction's words joined likewise.
"""

from __future__ import annotations

import re
from typing import Literal

from evalsuite.metrics._validation import require_str

_NOT_WORD_OR_SPACE = re.compile(r"[^\w\s]")
MIN_PARTIAL_LENGTH = 2


def _bare(text: str) -> str:
    return _NOT_WORD_OR_SPACE.sub("", text)


def _study_match(prediction: str, answer: str) -> bool:
    for pred, exp in ((prediction, answer), (_bare(prediction), _bare(answer))):
        if pred == exp or exp in pred or (pred in exp and len(pred) >= MIN_PARTIAL_LENGTH):
            return True
    return False


def _strict_match(prediction: str, answer: str) -> bool:
    if prediction == answer:
        return True
    prediction_bare, answer_bare = _bare(prediction), _bare(answer)
    if prediction_bare == answer_bare:
        return True
    if re.search(r"\b" + re.escape(answer_bare) + r"\b", prediction_bare):
        return True
    answer_words, prediction_words = answer_bare.split(), prediction_bare.split()
    if len(answer_words) == 1:
        return answer_words[0] in prediction_words
    return len(answer_words) > 1 and " ".join(answer_words) in " ".join(prediction_words)


def expected_answer_found(
    predicted: str, expected: str, *, rule: Literal["study", "strict"] = "study"
) -> bool:
    """Whether ``predicted`` states ``expected`` under ``rule`` (see the module docstring)."""
    prediction = require_str(predicted, "predicted").lower().strip()
    answer = require_str(expected, "expected").lower().strip()
    if rule not in ("study", "strict"):
        raise ValueError(f"rule must be 'study' or 'strict', got {rule!r}")
    if not prediction:
        return False
    match = _study_match if rule == "study" else _strict_match
    return match(prediction, answer)
