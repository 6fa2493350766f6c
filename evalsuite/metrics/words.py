"""Word precision/recall and character error rate, as the OCR Metrics Evaluator computes them.

Reference: dhruvmalrana/ocrmetrics (the browser tool's exact-match word scores and document-level
CRR on concatenated words), with the definitions of this project's issue 2 where they differ.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from rapidfuzz.distance import Levenshtein

from evalsuite.metrics._validation import require_str

_ASCII_PUNCTUATION_RUN = re.compile(f"[{re.escape(string.punctuation)}]+")


def word_tokens(
    text: str, *, case_sensitive: bool = False, ignore_punctuation: bool = True
) -> list[str]:
    """The words ``word_metrics`` compares, in text order.

    Split on whitespace; with ``ignore_punctuation`` split each token again on runs of ASCII
    punctuation (``string.punctuation``) and drop empty parts; lowercase unless
    ``case_sensitive``. "Invoice INV-2024-001:" gives ["invoice", "inv", "2024", "001"].
    """
    require_str(text, "text")
    tokens = text.split()
    if ignore_punctuation:
        tokens = [part for token in tokens for part in _ASCII_PUNCTUATION_RUN.split(token) if part]
    if not case_sensitive:
        tokens = [token.lower() for token in tokens]
    return tokens


def word_metrics(
    pred: str, gt: str, *, case_sensitive: bool = False, ignore_punctuation: bool = True
) -> dict[str, Any]:
    """Order-free exact word matching plus document-level character error rate.

    With the words of ``word_tokens`` (same options for both texts):

    - ``exact_matches`` = Σ_w min(count_gt(w), count_pred(w)) (multiset intersection);
    - ``precision`` = exact_matches / total_pred_words, ``recall`` = exact_matches /
      total_gt_words (0.0 when the denominator is 0); ``f1`` = 2pr/(p + r), 0.0 when p + r = 0;
    - ``char_errors`` = Levenshtein(gt words joined with no separator, pred words likewise),
      ``total_gt_chars`` = length of the joined gt words;
    - ``cer`` = char_errors / total_gt_chars, ``crr`` = 1 - cer (negative when the errors
      outnumber the gt characters); both 0.0 when total_gt_chars is 0.
    """
    require_str(pred, "pred")
    require_str(gt, "gt")
    options = {"case_sensitive": case_sensitive, "ignore_punctuation": ignore_punctuation}
    pred_words = word_tokens(pred, **options)
    gt_words = word_tokens(gt, **options)

    exact = sum((Counter(gt_words) & Counter(pred_words)).values())
    precision = exact / len(pred_words) if pred_words else 0.0
    recall = exact / len(gt_words) if gt_words else 0.0
    f1 = 2 * (precision * recall) / (precision + recall) if precision + recall > 0 else 0.0

    gt_text, pred_text = "".join(gt_words), "".join(pred_words)
    char_errors = Levenshtein.distance(gt_text, pred_text)
    cer = char_errors / len(gt_text) if gt_text else 0.0
    crr = 1.0 - cer if gt_text else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "cer": cer,
        "crr": crr,
        "exact_matches": exact,
        "total_gt_words": len(gt_words),
        "total_pred_words": len(pred_words),
        "char_errors": char_errors,
        "total_gt_chars": len(gt_text),
    }
