"""Scores for question answering (QuALITY multiple choice) and text continuation (FineWiki).

The DeepSeek-OCR evaluation asks free-text questions; these functions turn free text into a
choice, and compare a continuation with the true next words, with the exact rules below.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from evalsuite.metrics._validation import require_str

_LABEL = r"(?:[A-Za-z]|\d+)"
# Tier 1: the whole answer is one label, possibly wrapped in punctuation: "B", "(b)", "**2.**".
_WHOLE_LABEL = re.compile(rf"^[\W_]*({_LABEL})[\W_]*$")
# Tier 2: a label after a cue word: "Answer: 2", "The answer is C.", "correct option is (b)".
# A bare lowercase letter only counts when nothing but punctuation/end follows ("answer is a
# bit" is not a choice).
_CUE = re.compile(
    r"\b(?i:answer|option|choice)\b(?:\s+(?i:is))?\s*[:=-]?\s*"
    rf"(?:[(\[]\s*({_LABEL})\s*[)\]]|([A-Z]|\d+)(?![\w'])|([a-z])(?=\s*(?:$|[.,;:!?)\]])))"
)
# Tier 3: label-like mentions anywhere: "(b)", "[2]", a standalone capital "B", "2." / "2)"
# opening a line.
_BRACKETED = re.compile(rf"[(\[]\s*({_LABEL})\s*[)\]]")
_CAPITAL = re.compile(r"(?<![\w'])([A-Z])(?![\w'])")
_NUMBERED_LINE = re.compile(r"^\s*(\d+)[.)](?!\d)", re.MULTILINE)


def _label_index(label: str, n_options: int) -> int | None:
    """0-based option of a label ("B" or "b" -> 1, "2" -> 1); None when out of range."""
    index = int(label) - 1 if label.isdigit() else ord(label.upper()) - ord("A")
    return index if 0 <= index < n_options else None


def _single_choice(labels: list[str], n_options: int) -> tuple[bool, int | None]:
    """(found, choice): found when some label is in range; choice None when they disagree."""
    choices = {index for label in labels if (index := _label_index(label, n_options)) is not None}
    if not choices:
        return False, None
    return True, choices.pop() if len(choices) == 1 else None


def parse_choice(answer_text: str, n_options: int) -> int | None:
    """The 0-based option chosen in free text, or None when absent or ambiguous.

    Labels are letters A.. (case-insensitive) and numbers 1..n_options; out-of-range labels
    are ignored. Tiers, the first that finds an in-range label decides:

    1. the whole answer is one label, wrapped in punctuation at most: "B", "(b)", "2.";
    2. labels after a cue word (answer, option, choice; optional "is" and ":"/"="/"-"):
       "Answer: 2", "The answer is C.", "option (b)";
    3. bracketed labels "(b)" "[2]", standalone capital letters, numbers opening a line "2.".

    Within the deciding tier, two different options make the answer ambiguous (None).
    """
    require_str(answer_text, "answer_text")
    if isinstance(n_options, bool) or not isinstance(n_options, int):
        raise TypeError(f"n_options must be int, got {type(n_options).__name__}")
    if n_options < 1:
        raise ValueError(f"n_options must be >= 1, got {n_options}")
    whole = _WHOLE_LABEL.match(answer_text)
    if whole:
        return _label_index(whole.group(1), n_options)
    cued = [next(g for g in match.groups() if g) for match in _CUE.finditer(answer_text)]
    found, choice = _single_choice(cued, n_options)
    if found:
        return choice
    mentions = [
        match.group(1)
        for pattern in (_BRACKETED, _CAPITAL, _NUMBERED_LINE)
        for match in pattern.finditer(answer_text)
    ]
    return _single_choice(mentions, n_options)[1]


def qa_words(text: str) -> list[str]:
    """Lowercased words, Unicode punctuation (categories P*) removed: "Don't, Bob!" -> dont, bob."""
    require_str(text, "text")
    kept = "".join(ch for ch in text.lower() if not unicodedata.category(ch).startswith("P"))
    return kept.split()


def _checked_words(pred: str, target: str) -> tuple[list[str], list[str]]:
    return qa_words(require_str(pred, "pred")), qa_words(require_str(target, "target"))


def word_overlap(pred: str, target: str) -> float:
    """Share of the target's words found in the prediction, counting repeats, in [0, 1].

    With W = ``qa_words``: Σ_w min(count_pred(w), count_target(w)) / |W(target)|. When the
    target has no words: 1.0 if the prediction has none either, else 0.0.
    """
    pred_words, target_words = _checked_words(pred, target)
    if not target_words:
        return 0.0 if pred_words else 1.0
    matches = sum((Counter(pred_words) & Counter(target_words)).values())
    return matches / len(target_words)


def first_word_match(pred: str, target: str) -> bool:
    """Whether pred and target start with the same ``qa_words`` word; False if either has none."""
    pred_words, target_words = _checked_words(pred, target)
    return bool(pred_words and target_words) and pred_words[0] == target_words[0]
