"""Degenerate-output detection: DeepSeek-OCR's known repetition loops.

An output is degenerate when some n-gram of ``min_words`` or more words occurs more than
``max_repeats`` times. Every occurrence of a longer n-gram contains an occurrence of its
``min_words``-word prefix, so counting ``min_words``-grams alone decides it exactly.
"""

from __future__ import annotations

from collections import Counter

from evalsuite.metrics._validation import require_str

DEFAULT_MIN_WORDS = 3
DEFAULT_MAX_REPEATS = 30


def max_ngram_repeats(text: str, n: int = DEFAULT_MIN_WORDS) -> int:
    """Occurrences of the most frequent whitespace-word n-gram of ``text`` (0 if fewer words)."""
    require_str(text, "text")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    words = text.split()
    if len(words) < n:
        return 0
    counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    return max(counts.values())


def is_degenerate(
    text: str, *, min_words: int = DEFAULT_MIN_WORDS, max_repeats: int = DEFAULT_MAX_REPEATS
) -> bool:
    """True when an n-gram of ``min_words``+ words repeats more than ``max_repeats`` times."""
    return max_ngram_repeats(text, min_words) > max_repeats
