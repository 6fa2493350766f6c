"""Reading-order scores: word sets, word sequences and n-grams, as Biblicus's OCR benchmark.

Reference: AnthusAI/Biblicus ``src/biblicus/evaluation/ocr_benchmark.py`` (``normalize_words``,
``calculate_word_metrics``, ``calculate_character_accuracy``, ``calculate_word_order_metrics``,
``calculate_ngram_overlap``), matched to the last digit by default.
"""

from __future__ import annotations

import re
import unicodedata

from rapidfuzz.distance import LCSseq, Levenshtein

from evalsuite.metrics._validation import require_str
from evalsuite.metrics.text import _as_symbol_ids, edit_distance

_NOT_ASCII_ALNUM = re.compile(r"[^a-z0-9]")
# Unicode general categories kept by the plain normalisation: letters, marks, numbers.
_WORD_CATEGORIES = frozenset("LMN")


def _strip_to_alnum(word: str, ascii_only: bool) -> str:
    if ascii_only:
        return _NOT_ASCII_ALNUM.sub("", word)
    return "".join(ch for ch in word if unicodedata.category(ch)[0] in _WORD_CATEGORIES)


def order_words(text: str, *, min_word_length: int = 3, ascii_only: bool = True) -> list[str]:
    """The words ``order_metrics`` compares, in text order.

    Lowercase (``str.lower``), split on whitespace, strip each word to ``[a-z0-9]`` (with
    ``ascii_only=False``: to the characters of Unicode categories L*, M* and N*, so accented and
    non-Latin letters stay), then keep words of at least ``min_word_length`` characters.
    The defaults are Biblicus's ``normalize_words``; ``min_word_length=1, ascii_only=False`` is
    the plain normalisation (nothing dropped but punctuation, symbols and empty words).
    """
    require_str(text, "text")
    if isinstance(min_word_length, bool) or not isinstance(min_word_length, int):
        raise TypeError(f"min_word_length must be int, got {type(min_word_length).__name__}")
    if min_word_length < 1:
        raise ValueError(f"min_word_length must be >= 1, got {min_word_length}")
    stripped = (_strip_to_alnum(word, ascii_only) for word in text.lower().split())
    return [word for word in stripped if len(word) >= min_word_length]


def _ngram_overlap(gt_words: list[str], pred_words: list[str], n: int) -> float:
    """|set(gt n-grams) ∩ set(pred n-grams)| / count of gt n-grams; 0.0 if a side has < n words."""
    if len(gt_words) < n or len(pred_words) < n:
        return 0.0
    gt_ngrams = [tuple(gt_words[i : i + n]) for i in range(len(gt_words) - n + 1)]
    pred_ngrams = {tuple(pred_words[i : i + n]) for i in range(len(pred_words) - n + 1)}
    return len(set(gt_ngrams) & pred_ngrams) / len(gt_ngrams)


def _set_scores(gt_words: list[str], pred_words: list[str]) -> dict[str, float]:
    gt_set, pred_set = set(gt_words), set(pred_words)
    common = len(gt_set & pred_set)
    precision = common / len(pred_set) if pred_set else 0.0
    recall = common / len(gt_set) if gt_set else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _char_accuracy(gt: str, pred: str) -> float:
    longest = max(len(gt), len(pred))
    if longest == 0:
        return 1.0
    return max(0.0, 1.0 - Levenshtein.distance(gt, pred) / longest)


def _sequence_scores(gt_words: list[str], pred_words: list[str]) -> dict[str, float]:
    if not gt_words and not pred_words:
        return {"wer": 0.0, "sequence_accuracy": 1.0, "lcs_ratio": 1.0,
                "normalized_edit_distance": 0.0}
    if not gt_words or not pred_words:
        return {"wer": 1.0, "sequence_accuracy": 0.0, "lcs_ratio": 0.0,
                "normalized_edit_distance": 1.0}
    distance = edit_distance(gt_words, pred_words)
    in_place = sum(1 for g, p in zip(gt_words, pred_words, strict=False) if g == p)
    lcs = LCSseq.similarity(*_as_symbol_ids(gt_words, pred_words, ("gt", "pred")))
    return {
        "wer": distance / len(gt_words),
        "sequence_accuracy": in_place / len(gt_words),
        "lcs_ratio": lcs / len(gt_words),
        "normalized_edit_distance": distance / max(len(gt_words), len(pred_words)),
    }


def order_metrics(
    pred: str, gt: str, *, min_word_length: int = 3, ascii_only: bool = True
) -> dict[str, float]:
    """Biblicus's OCR benchmark scores for one page; G, P = ``order_words`` of gt and pred.

    - ``precision``, ``recall``, ``f1`` over the word SETS: |G∩P|/|P|, |G∩P|/|G|, harmonic mean
      (0.0 for an empty denominator);
    - ``char_accuracy`` = max(0, 1 - Levenshtein(gt, pred) / max(len)) on the RAW strings,
      1.0 when both are empty;
    - ``wer`` = word edit distance / |G|, ``normalized_edit_distance`` = word edit distance /
      max(|G|, |P|), ``sequence_accuracy`` = #{i : P[i] = G[i]} / |G|, ``lcs_ratio`` =
      longest common subsequence / |G|; with G and P both empty 0, 1, 1, 0 and with exactly one
      empty 1, 0, 0, 1 (wer, sequence_accuracy, lcs_ratio, normalized_edit_distance);
    - ``bigram_overlap``, ``trigram_overlap`` = |set(G n-grams) ∩ set(P n-grams)| / number of G
      n-grams (repeats counted, so repeated n-grams keep even identical texts below 1), 0.0
      when either side has fewer than n words.

    ``min_word_length`` and ``ascii_only`` choose the word normalisation (see ``order_words``);
    the defaults are Biblicus's.
    """
    require_str(pred, "pred")
    require_str(gt, "gt")
    options = {"min_word_length": min_word_length, "ascii_only": ascii_only}
    gt_words = order_words(gt, **options)
    pred_words = order_words(pred, **options)
    return {
        **_set_scores(gt_words, pred_words),
        "char_accuracy": _char_accuracy(gt, pred),
        **_sequence_scores(gt_words, pred_words),
        "bigram_overlap": _ngram_overlap(gt_words, pred_words, 2),
        "trigram_overlap": _ngram_overlap(gt_words, pred_words, 3),
    }
