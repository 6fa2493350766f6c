"""OmniDocBench v1.6's formula and text normalisation (``normalized_formula``,
``normalized_text`` and their helpers of ``src/core/preprocess/data_preprocess.py`` and
``text_postprocess.py``, opendatalab/OmniDocBench at 9dc1dec), quirks included.

The string a display formula is matched by: circled characters read plainly, delimiters and
equation tags removed, layout and font commands deleted, groups ``{…}`` that hold an operator or a
plain token unwrapped, lower case, no whitespace.
"""

from __future__ import annotations

import re

from evalsuite.metrics import pylatexenc_v210
from evalsuite.metrics.omnidocbench.common.normalize import inline_math_to_unicode, keep_word_chars

__all__ = [
    "inline_to_unicode",
    "normalize_formula",
    "normalize_text",
    "replace_circled",
    "strip_formula_delimiters",
    "strip_formula_tags",
]

_CIRCLED = (
    {chr(0x2460 + k): str(k + 1) for k in range(20)}  # ① … ⑳
    | {chr(0x24D0 + k): chr(ord("a") + k) for k in range(26)}  # ⓐ … ⓩ
    | {chr(0x24B6 + k): chr(ord("A") + k) for k in range(26)}  # Ⓐ … Ⓩ
)
_TEXTCIRCLED = re.compile(r"\\textcircled\s*\{\s*([^{}]+?)\s*\}")

_DELIMITERS = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))

_FIRST_DISPLAY_OR_INLINE = re.compile(r"\\\[(.+?)(?<!\\)\\\]|\\\((.+?)(?<!\\)\\\)")

# Deleted in this order, after the ``\phantom`` groups (v1.6's sequence of substitutions).
_DELETIONS = (
    re.compile(r"\\[!,;:]"),
    re.compile(r"(?<!\\)&"),
)
_REPLACEMENTS = (("\\mid", "|"), ("\\vert", "|"), (r"\{", ""), (r"\}", ""), ("~", ""))
_LAYOUT = (
    re.compile(r"\\hspace\{.*?\}"),
    re.compile(r"\\begin\{.*?\}"),
    re.compile(r"\\end\{.*?\}"),
    re.compile(r"\\arraycolsep.*?\}"),
    re.compile(r"\{[lcr| ]+\}"),
)
_DELETED_STRINGS = (
    "\\mathbf", "\\mathrm", "\\mathnormal", "\\mathit", "\\mathbb", "\\mathcal", "\\mathscr",
    "\\mathfrak", "\\mathsf", "\\mathtt", "\\textbf", "\\text", "\\boldmath", "\\boldsymbol",
    "\\operatorname", "\\bm", "\\symbfit", "\\mathbfcal", "\\symbf", "\\scriptscriptstyle",
    "\\notag", "\\setlength", "\\coloneqq", "\\space", "\\thickspace", "\\thinspace",
    "\\medspace", "\\nobreakspace", "\\negmedspace", "\\quad", "\\qquad", "\\enspace",
    "\\substackw", " ", "$$", "\\left", "\\right", "\\displaystyle",
)
"""Deleted one after the other, so later ones see what earlier ones left (``\\mathbfcal``
becomes ``cal`` once ``\\mathbf`` is gone; ``\\qquad`` is gone with ``\\quad``)."""

_PLAIN_GROUP = re.compile(r"\{([A-Za-z0-9.+\-]+)\}")
_NESTED_OPEN = re.compile(r"\{\{+")
_NESTED_CLOSE = re.compile(r"}}+")
_SHORT_GROUP = re.compile(r"\{([^{}]{1,160})\}")
_GROUP_OPERATORS = ("=", "+", "-", "\\\\", "^", "_", "[", "]", "(", ")")
_WHITESPACE = re.compile(r"\s+")


def replace_circled(text: str) -> str:
    """``replace_textcircle``: ``\\textcircled{x}`` becomes ``x`` (stripped), ①-⑳ their number,
    ⓐ-ⓩ and Ⓐ-Ⓩ their letter."""
    text = _TEXTCIRCLED.sub(lambda found: found.group(1).strip(), text)
    return "".join(_CIRCLED.get(char, char) for char in text)


def strip_formula_delimiters(text: str) -> str:
    """The formula without its enclosing ``$$…$$``, ``\\[…\\]``, ``\\(…\\)``, ``$…$`` pairs
    (stripped, repeatedly, the first matching pair in that order each time)."""
    text = text.strip().strip("\n")
    stripped = True
    while text and stripped:
        stripped = False
        for left, right in _DELIMITERS:
            if (text.startswith(left) and text.endswith(right)
                    and len(text) >= len(left) + len(right)):
                text = text[len(left) : len(text) - len(right)].strip()
                stripped = True
                break
    return text


def _group_end(text: str, opening: int) -> int | None:
    """Index just past the ``}`` closing the ``{`` at ``opening``, or None when unclosed."""
    depth = 0
    for index in range(opening, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return index + 1
    return None


def _delete_tags(text: str) -> str:
    """Every ``\\tag{…}`` / ``\\tag*{…}`` deleted with its balanced group (spaces allowed before
    ``*`` and ``{``); an unclosed one loses only ``\\tag``; ``\\tagx`` and a ``\\tag`` not
    followed by a group stay."""
    command = "\\tag"
    search_from = 0
    while (start := text.find(command, search_from)) >= 0:
        index = start + len(command)
        if index < len(text) and text[index].isalpha():
            search_from = index
            continue
        while index < len(text) and text[index].isspace():
            index += 1
        if index < len(text) and text[index] == "*":
            index += 1
            while index < len(text) and text[index].isspace():
                index += 1
        if index >= len(text) or text[index] != "{":
            search_from = start + len(command)
            continue
        end = _group_end(text, index)
        text = text[:start] + text[end if end is not None else start + len(command) :]
        search_from = start
    return text


def strip_formula_tags(text: str) -> str:
    """``strip_formula_tags``: ``\\tag`` groups (:func:`_delete_tags`), ``\\notag`` and
    ``\\nonumber`` deleted."""
    return _delete_tags(text).replace("\\notag", "").replace("\\nonumber", "")


def _delete_phantoms(text: str) -> str:
    """Every ``\\phantom{…}`` deleted with its balanced group, first to last; at the first
    unclosed one only ``\\phantom`` is deleted and the rest left (``\\vphantom`` and
    ``\\hphantom`` stay: only their group may be unwrapped later)."""
    token = "\\phantom{"
    while (start := text.find(token)) >= 0:
        end = _group_end(text, start + len(token) - 1)
        if end is None:
            return text[:start] + text[start + len("\\phantom") :]
        text = text[:start] + text[end:]
    return text


def _unwrap_group(found: re.Match[str]) -> str:
    inner = found.group(1)
    return inner if any(operator in inner for operator in _GROUP_OPERATORS) else found.group(0)


def normalize_formula(text: str) -> str:
    """v1.6 ``normalized_formula``: the string a display formula is matched and scored by.

    Steps: :func:`replace_circled`; :func:`strip_formula_delimiters`; :func:`strip_formula_tags`;
    the body of the first ``\\[…\\]`` or ``\\(…\\)`` left inside, if any (one line, stripped);
    ``\\phantom`` groups; ``\\!``, ``\\,``, ``\\;``, ``\\:`` and unescaped ``&`` deleted;
    ``\\mid``/``\\vert`` → ``|``; ``\\{``, ``\\}``, ``~``, ``\\hspace{…}``, ``\\begin{…}``,
    ``\\end{…}``, ``\\arraycolsep…}`` and column specs ``{lcr| }`` deleted; ``.`` stripped at
    both ends; the font, spacing and sizing commands of :data:`_DELETED_STRINGS` and spaces
    deleted; then until nothing changes: ``{token}`` of letters, digits, ``.+-`` unwrapped,
    ``{}`` deleted, ``{{``/``}}`` runs made single, and a group of 1-160 characters without
    braces unwrapped when it holds ``= + - \\\\ ^ _ [ ] ( )``; lower case; whitespace deleted.
    """
    text = strip_formula_tags(strip_formula_delimiters(replace_circled(text)))
    inner = _FIRST_DISPLAY_OR_INLINE.search(text)
    if inner:
        text = (inner.group(1) or inner.group(2) or "").strip()
    text = _delete_phantoms(text)
    for pattern in _DELETIONS:
        text = pattern.sub("", text)
    for old, new in _REPLACEMENTS:
        text = text.replace(old, new)
    for pattern in _LAYOUT:
        text = pattern.sub("", text)
    text = text.strip(".")
    for deleted in _DELETED_STRINGS:
        text = text.replace(deleted, "")
    previous = None
    while text != previous:
        previous = text
        text = _PLAIN_GROUP.sub(r"\1", text).replace("{}", "")
        text = _NESTED_CLOSE.sub("}", _NESTED_OPEN.sub("{", text))
        text = _SHORT_GROUP.sub(_unwrap_group, text)
    return _WHITESPACE.sub("", text.lower())


# --- text ---------------------------------------------------------------------------------------

_COMPLEX_INLINE = ("\\begin{", "\\end{", "\\array", "\\matrix", "\\tabular", "\\cases", "\\align",
                   "\\\\", "&")
_INLINE_MAX_CHARS = 128
_LATEX_SIGNAL = re.compile(r"\\[A-Za-z]+|[_^{}$]|\\[\[\]()]]|&|%|#")
"""v1.6's ``_LATEX_SIGNAL_RE``, quirk kept: ``\\[`` etc. count only when followed by ``]``."""
_NATURAL_WORD = re.compile(r"[A-Za-z]{3,}")
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_NOISE_COMMANDS = ("\\frac", "\\sqrt", "\\left", "\\right", "\\begin", "\\end", "\\sum", "\\int",
                   "\\alpha", "\\beta")
_TEXT_MAX_LATEX_CHARS = 8000


def _inline_too_complex(body: str) -> bool:
    """``_should_skip_inline_textblock_formula``: over 128 characters (stripped), an
    environment, array-like command, ``\\\\`` or ``&``, or unequal counts of ``{`` and ``}``."""
    body = body.strip()
    return bool(body) and (
        len(body) > _INLINE_MAX_CHARS
        or any(token in body for token in _COMPLEX_INLINE)
        or body.count("{") != body.count("}")
    )


def _plain_words(latex: str) -> bool:
    """``looks_like_plaintext_formula_noise``: 32+ characters, at most 2 LaTeX signals, none of
    ``{}$^_`` nor a common math command, 6+ words of 3+ letters and 5+ spaces."""
    if len(latex) < 32 or len(_LATEX_SIGNAL.findall(latex)) > 2:
        return False
    if any(char in latex for char in "{}$^_") or any(c in latex for c in _NOISE_COMMANDS):
        return False
    return len(_NATURAL_WORD.findall(latex)) >= 6 and latex.count(" ") >= 5


def _weak_latex(latex: str) -> bool:
    """``looks_like_weak_latex_input`` for a formula: too little LaTeX to be worth converting."""
    if latex in ("", "\\", "\\\\"):
        return True
    commands = len(_LATEX_COMMAND.findall(latex))
    words = len(_NATURAL_WORD.findall(latex))
    signals = sum(char in "{}$^_=&%#" for char in latex)
    return (
        (latex.endswith("\\") and not latex.endswith("\\\\") and commands == 0)
        or ("\\" in latex and commands == 0 and signals == 0)
        or (words >= 2 and commands == 0 and signals <= 1)
        or (words >= 4 and commands <= 1 and signals <= 2)
    )


def safe_latex_to_text(latex: str, fallback: str) -> str:
    """``safe_latex_to_text(latex, fallback=fallback)`` for a formula: ``latex`` itself when it has
    none of ``\\ { } $``; ``fallback`` when it reads as plain words, has too little LaTeX or is
    malformed (:func:`evalsuite.metrics.pylatexenc_v210.looks_malformed`), or when pylatexenc
    **2.10** raises; else pylatexenc 2.10's text.

    Deviation: the official conversion runs in a subprocess with a 30 s limit and falls back
    past it; here it runs unbounded, so results do not depend on machine speed (2.10 returned at
    once on every reference case)."""
    if not any(char in latex for char in "\\{}$"):
        return latex
    if _plain_words(latex) or _weak_latex(latex) or pylatexenc_v210.looks_malformed(
        latex, _TEXT_MAX_LATEX_CHARS
    ):
        return fallback
    try:
        return pylatexenc_v210.latex_to_text(latex)
    except pylatexenc_v210.PylatexencV210UnavailableError:
        raise
    except Exception:  # any failure of the conversion falls back officially
        return fallback


def inline_to_unicode(body: str) -> str | None:
    """How v1.6 converts an inline formula's body in text (``textblock2unicode``): None (span
    kept) when too complex (:func:`_inline_too_complex`), else
    :func:`safe_latex_to_text` of the stripped body with the body as fallback."""
    if _inline_too_complex(body):
        return None
    return safe_latex_to_text(body.strip(), fallback=body)


def normalize_text(text: str) -> str:
    """A text line as v1.6 compares it (``normalized_text``): circled characters read plainly
    (:func:`replace_circled`), inline formulas converted (:func:`inline_to_unicode`), circled
    characters read plainly again, then :func:`..common.normalize.keep_word_chars`."""
    converted = inline_math_to_unicode(replace_circled(text), inline_to_unicode)
    return keep_word_chars(replace_circled(converted))
