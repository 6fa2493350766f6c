"""Which words of a prediction and its ground truth match, for side-by-side highlighting.

The words are :func:`evalsuite.metrics.words.word_tokens` of each whitespace-separated token,
so a highlighted word is exactly a word that ``word_metrics`` counts. The k-th occurrence of a
word in the ground truth matches the k-th occurrence in the prediction when both exist, so the
number of matched pairs is ``word_metrics``'s ``exact_matches`` (a multiset intersection).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from evalsuite.metrics._validation import require_str
from evalsuite.metrics.words import word_tokens

SEPARATOR: int | None = None
UNMATCHED = -1

_TOKENS = re.compile(r"\S+|\s+")


@dataclass(frozen=True)
class Segment:
    """A piece of the original text. ``match`` is ``SEPARATOR`` (None) for text that is not a
    compared word (spaces, dropped punctuation), ``UNMATCHED`` (-1) for a word without a partner
    in the other text, else an id shared with its partner."""

    text: str
    match: int | None


def align_words(
    pred: str, gt: str, *, case_sensitive: bool = False, ignore_punctuation: bool = True
) -> tuple[list[Segment], list[Segment]]:
    """(prediction segments, ground-truth segments), in the order of the arguments; each list
    joins back to its text."""
    require_str(pred, "pred")
    require_str(gt, "gt")
    options = {"case_sensitive": case_sensitive, "ignore_punctuation": ignore_punctuation}
    gt_pieces = _word_pieces(gt, options)
    pred_pieces = _word_pieces(pred, options)
    pred_counts = Counter(word for _, word in pred_pieces if word is not None)

    ids: dict[tuple[str, int], int] = {}
    seen: Counter[str] = Counter()
    gt_segments = []
    for text, word in gt_pieces:
        match = SEPARATOR
        if word is not None:
            occurrence = seen[word]
            seen[word] += 1
            match = UNMATCHED
            if occurrence < pred_counts[word]:
                match = ids.setdefault((word, occurrence), len(ids))
        gt_segments.append(Segment(text, match))

    seen.clear()
    pred_segments = []
    for text, word in pred_pieces:
        match = SEPARATOR
        if word is not None:
            match = ids.get((word, seen[word]), UNMATCHED)
            seen[word] += 1
        pred_segments.append(Segment(text, match))
    return pred_segments, gt_segments


def _word_pieces(text: str, options: dict[str, bool]) -> list[tuple[str, str | None]]:
    """The text cut into (piece, compared word or None) in order, covering every character."""
    pieces: list[tuple[str, str | None]] = []
    for token in _TOKENS.findall(text):
        words = [] if token.isspace() else word_tokens(token, **options)
        pieces.extend(_locate(token, words, case_sensitive=options["case_sensitive"]))
    return pieces


def _locate(
    token: str, words: list[str], *, case_sensitive: bool
) -> list[tuple[str, str | None]]:
    """Cut ``token`` around each of its ``words`` (found in order, compared as normalised)."""
    if not words:
        return [(token, None)]
    form = token if case_sensitive else token.lower()
    if len(form) != len(token):  # lowercasing changed the length: keep the token whole
        return [(token, words[0])] + [("", word) for word in words[1:]]
    pieces: list[tuple[str, str | None]] = []
    position = 0
    for word in words:
        start = form.find(word, position)
        if start < 0:
            return [(token, words[0])] + [("", word) for word in words[1:]]
        if start > position:
            pieces.append((token[position:start], None))
        pieces.append((token[start : start + len(word)], word))
        position = start + len(word)
    if position < len(token):
        pieces.append((token[position:], None))
    return pieces
