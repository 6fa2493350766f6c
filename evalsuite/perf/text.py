"""Speed case: ``edit_distance`` on two 5,000-character pages vs a pure-Python DP baseline."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

from evalsuite.metrics.text import edit_distance
from evalsuite.perf import PerfCase

PAGE_CHARS = 5_000
_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there been one all we their has would when if so no "
    "section agency public record request shall may department information act under"
)
_VOCABULARY = _WORDS.split()


def synthetic_page(seed: int, n_chars: int = PAGE_CHARS) -> str:
    """Deterministic English-like text of exactly ``n_chars`` characters, with line breaks."""
    rng = random.Random(seed)
    words: list[str] = []
    length = 0
    while length < n_chars:
        word = rng.choice(_VOCABULARY)
        words.append(word + ("\n" if rng.random() < 0.08 else " "))
        length += len(words[-1])
    return "".join(words)[:n_chars]


def ocr_noisy(page: str, seed: int, rate: float = 0.05) -> str:
    """``page`` with about ``rate`` of its characters substituted, dropped or doubled."""
    rng = random.Random(seed)
    noisy: list[str] = []
    for ch in page:
        roll = rng.random()
        if roll < rate / 3:
            noisy.append(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789.,"))
        elif roll < 2 * rate / 3:
            continue
        elif roll < rate:
            noisy.append(ch + ch)
        else:
            noisy.append(ch)
    return "".join(noisy)[: len(page)].ljust(len(page), ".")


def baseline_edit_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """BASELINE: the textbook O(len(a)·len(b)) Levenshtein dynamic programme, two rows, over
    characters or tokens."""
    previous = list(range(len(b) + 1))
    for i, item_a in enumerate(a, 1):
        current = [i]
        for j, item_b in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (item_a != item_b))
            )
        previous = current
    return previous[-1]


_GT_PAGE = synthetic_page(seed=1)
_PRED_PAGE = ocr_noisy(_GT_PAGE, seed=2)

CASES = [
    PerfCase(
        name="edit_distance, two 5,000-char pages",
        baseline=lambda: baseline_edit_distance(_PRED_PAGE, _GT_PAGE),
        fast=lambda: edit_distance(_PRED_PAGE, _GT_PAGE),
        required_ratio=200,
    ),
]
