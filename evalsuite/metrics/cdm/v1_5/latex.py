"""OmniDocBench v1.5 CDM: the normalised LaTeX's token rules and per-token colouring.

Input is the KaTeX normaliser's space-separated token string (:mod:`.katex`). The algorithm is
v1.6's (``colouring.normalize_tokens`` and ``colouring.colour_tokens``); v1.5 differs only in its
rule set :data:`RULES`: fewer skipped, phantom and accent tokens; ``\\not`` merged with the
token after it (twice, by two patterns); ellipses and eight function names spelled out by plain
``str.replace`` of `` \\dots `` (space-delimited, so of two adjacent ones only the first is
replaced); no ``\\string`` or ``\\rule`` merge. A malformed string raises ``IndexError`` or
``ValueError`` (unbalanced braces), as the official code does; the caller turns that into a zero
score.
"""

from __future__ import annotations

from evalsuite.metrics.cdm.common import colouring
from evalsuite.metrics.cdm.common.colouring import (
    BIG_DELIMITER_MERGES,
    V16_RULES,
    TokenRules,
    squeeze_then_space,
)

# Words the official code spells out letter by letter, in its order (" \tan " before " \tanh ").
SPELLED = ("log", "exp", "sin", "cos", "tan", "tanh", "cosh", "sinh")
DOTS = ("\\ldots", "\\cdots", "\\dots", "\\dotsb")


def _spell_out(text: str) -> str:
    for dots in DOTS:
        text = text.replace(f" {dots} ", " . . . ")
    for word in SPELLED:
        text = text.replace(f" \\{word} ", " \\mathrm { " + " ".join(word) + " } ")
    return text


RULES = TokenRules(
    skip=V16_RULES.skip - {"\\edef", "\\gdef", "\\today", "\\the"},
    phantom=V16_RULES.phantom - {"\\thesubequation", "\\global", "\\theboldgroup"},
    accents=V16_RULES.accents - {"\\Ddot", "\\dddot", "\\ddddot"},
    early_merges=(r"\\not [<>+=\-]",),
    spell_out=_spell_out,
    spaced_merges=BIG_DELIMITER_MERGES,
    late_merges=((r"\\not [\\=\<\>][^ ]+ ", squeeze_then_space),),
)


def normalize(text: str) -> str:
    """The v1.5 rewriting of a KaTeX-normalised token string (leading/trailing space kept)."""
    return colouring.normalize_tokens(text, RULES)


def colour_tokens(normalized: str) -> tuple[str, list[str]]:
    """(LaTeX with ``<color_K>`` placeholders, visible tokens in colour order)."""
    return colouring.colour_tokens(normalized, RULES)
