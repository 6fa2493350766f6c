"""Short-answer matching as the render-configuration study (galah92/deepseek-ocr-eval) judges it.

``expected_answer_found(predicted, expected)``: both lowercased and stripped; an empty
prediction is wrong. Correct when the two are equal; or equal after deleting every character
that is neither a word character nor whitespace ("punctuation-free"); or the punctuation-free
expected answer occurs in the punctuation-free prediction between word boundaries; or a
one-word expected answer is one of the prediction's words; or the expected words, joined by
single spaces, occur in the prediction's words joined likewise.
"""

from __future__ import annotations

import re

from evalsuite.metrics._validation import require_str

_NOT_WORD_OR_SPACE = re.compile(r"[^\w\s]")


def expected_answer_found(predicted: str, expected: str) -> bool:
    """Whether ``predicted`` states ``expected`` (see the module docstring for the exact rule)."""
    prediction = require_str(predicted, "predicted").lower().strip()
    answer = require_str(expected, "expected").lower().strip()
    if not prediction:
        return False
    if prediction == answer:
        return True
    prediction_bare = _NOT_WORD_OR_SPACE.sub("", prediction)
    answer_bare = _NOT_WORD_OR_SPACE.sub("", answer)
    if prediction_bare == answer_bare:
        return True
    if re.search(r"\b" + re.escape(answer_bare) + r"\b", prediction_bare):
        return True
    answer_words = answer_bare.split()
    prediction_words = prediction_bare.split()
    if len(answer_words) == 1:
        return answer_words[0] in prediction_words
    return len(answer_words) > 1 and " ".join(answer_words) in " ".join(prediction_words)
