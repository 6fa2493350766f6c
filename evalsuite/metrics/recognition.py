"""Text normalisation applied before scoring recognised lines, after Surya's recognition
benchmark: HTML tags removed, LaTeX commands removed (their braced arguments kept), bullet
characters standardised to "•", Unicode NFKC, lowercase, and "," replaced by "."."""

from __future__ import annotations

import re
import unicodedata

from evalsuite.metrics._validation import require_str

_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+\*?|\$+")
_BULLETS = re.compile(r"[\u2022\u2023\u25E6\u2043\u2219\u25AA\u25CF\u00B7\u30FB]")


def normalize_recognition_text(text: str) -> str:
    """The normalised form of a recognised or reference line (see the module docstring)."""
    require_str(text, "text")
    text = _HTML_TAG.sub("", text)
    text = _LATEX_COMMAND.sub("", text)
    text = _BULLETS.sub("•", text)
    text = unicodedata.normalize("NFKC", text)
    return text.lower().replace(",", ".").strip()
