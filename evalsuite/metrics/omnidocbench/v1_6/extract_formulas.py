"""OmniDocBench v1.6's formula helpers of ``md_tex_filter`` (``src/core/preprocess/extract.py``,
opendatalab/OmniDocBench at 9dc1dec, the ``_formula_like_text`` … ``_append_display_formula_item``
block), quirks included.

Two jobs: *rescue* text lines or HTML table cells that read as formulas (arithmetic, arrows,
boxes) into formula items, and turn a display formula into its items: equation numbers and
captions at its margin become ``text_all`` items, ``a = 1 \\quad b = 2`` of arithmetic segments
becomes one item per segment.

Items are plain dicts with the official keys in the official order. ``_sanitize_formula_candidate``
is :func:`.cdm_variants.sanitize_formula_candidate`.

Deviation: the official LaTeX-to-text conversion (``safe_latex_to_text``) runs pylatexenc in a
subprocess with a time limit and can be switched off by ``OMNIDOCBENCH_DISABLE_LATEX_TO_TEXT``;
here it runs unbounded and always (:func:`latex_fragment_to_plain_text`). The margin-text split
switch (officially the environment variables ``OMNIDOCBENCH_FORMULA_MARGIN_SPLIT`` /
``FORMULA_MARGIN_SPLIT``, default off) is the keyword ``split_margin_text``.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup

from evalsuite.metrics.omnidocbench.v1_6.cdm_variants import (
    sanitize_formula_candidate,
    strip_formula_wrappers,
)
from evalsuite.metrics.omnidocbench.v1_6.normalize import safe_latex_to_text

__all__ = [
    "display_formula_items",
    "formula_like_text",
    "formula_rescue_item",
    "html_table_formula_rescue_items",
    "latex_fragment_to_plain_text",
    "strip_formula_wrappers",
]

_FORMULA_TOKEN = re.compile(
    r"(\\frac|\\sqrt|\\sum|\\int|\\prod|\\times|\\div|\\square|\\cdots|\\left|\\right|"
    r"\\approx|\\xrightarrow|\\rightarrow|\\longrightarrow|"
    r"=|<|>|≤|≥|≈|÷|×|±|∑|∫|√|→|\^|_|□|△|…|%|/|\+|-)"
)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_LONG_WORD = re.compile(r"[A-Za-z]{4,}")
_INLINE_MATH = re.compile(r"\$(.*?)\$|\\\((.*?)\\\)")
_DISPLAY_MATH = re.compile(r"\$\$(.*?)\$\$|\\\[(.*?)\\\]", re.DOTALL)
_NOT_RESIDUE = re.compile(r"(\\[A-Za-z]+|[=<>≤≥÷×±∑∫√\^_□△…%/()+\-])")
_DIGIT = re.compile(r"\d")
_WHITESPACE = re.compile(r"\s+")
_MAX_FORMULA_LIKE_CHARS = 220
_MAX_TABLE_CELL_CHARS = 120
_MAX_COMPOUND_CHARS = 160
_FRACTION = re.compile(r"\d+\s*/\s*\d+")
_TABLE_CELL_OPERATORS = ("=", "+", "-", "×", "÷", "/", "≈", "\\times", "\\div", "\\approx")

_ENVELOPES = (("\\[", "\\]"), ("\\(", "\\)"), ("$$", "$$"), ("$", "$"))
_SPACING = r"(?:\\qquad|\\quad|\\enspace|\\,|\\;|\\:)"
_LEADING_NUMBER = re.compile(
    r"^\s*(?P<prefix>(?:\\left\(\s*[0-9IVXivx]+\s*\\right\)|\(\s*[0-9IVXivx]+\s*\)))\s*"
    rf"(?:{_SPACING}\s*)*"
)
_TRAILING_CAPTIONS = (
    re.compile(rf"(?P<sep>{_SPACING}\s*)(?P<caption>\\text\s*\{{[^{{}}]*\}}\.?)\s*$"),
    re.compile(rf"(?P<sep>{_SPACING}\s*)(?P<caption>\([^)]*[A-Za-z][^)]*\)\.?)\s*$"),
)
_TRAILING_SPACING = re.compile(rf"(?:{_SPACING}\s*)+$")
_CAPTION_MATH = re.compile(r"(\\[A-Za-z]+|[=<>≤≥÷×±∑∫√_^{}])")
_LETTER = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"[A-Za-z]{2,}")
_NUMERAL = re.compile(r"[0-9IVXivx]+")
_QUAD = re.compile(r"\s*(?:\\qquad|\\quad)\s*")
_NOT_ARITHMETIC = re.compile(
    r"\\(mathbf|left|right|cdot|lambda|Gamma|varGamma|text|matrix|pmatrix|bmatrix)"
)
_RELATIONS = ("=", "\\approx", "≈", "\\neq", "≠", "\\leq", "≤", "\\geq", "≥")


def _squeeze(text: str) -> str:
    """Whitespace runs collapsed to one space, ends stripped (``' '.join(text.split())``)."""
    return " ".join(text.split())


def formula_like_text(text: str) -> bool:
    """``_formula_like_text``: a line of at most 220 characters that reads as a formula by its
    counts of operators, digits, wrapped spans, CJK characters and 4+-letter words."""
    text = _squeeze(text)
    if not text or len(text) > _MAX_FORMULA_LIKE_CHARS:
        return False
    bare = strip_formula_wrappers(text)
    compact = _WHITESPACE.sub("", bare)
    if not compact:
        return False
    operators = len(_FORMULA_TOKEN.findall(bare))
    digits = len(_DIGIT.findall(bare))
    wrapped = len(list(_INLINE_MATH.finditer(text))) + len(list(_DISPLAY_MATH.finditer(text)))
    cjk = len(_CJK.findall(bare))
    words = len(_LONG_WORD.findall(bare))
    residue = _WHITESPACE.sub("", _DIGIT.sub(" ", _NOT_RESIDUE.sub(" ", bare)))
    return (
        (wrapped > 0 and len(residue) <= 18 and operators >= 1)
        or (
            ("□" in bare or "\\square" in bare)
            and operators >= 1 and words <= 1 and len(compact) <= 80
        )
        or (
            ("\\xrightarrow" in bare or "\\longrightarrow" in bare or "→" in bare)
            and cjk <= 24 and len(compact) <= 120
        )
        or (operators >= 2 and digits >= 1 and words <= 2 and cjk <= 12 and len(compact) <= 100)
        or (operators >= 3 and words == 0 and cjk <= 18 and len(compact) <= 80)
    )


def _table_formula_cell(text: str) -> bool:
    """``_looks_like_table_formula_cell``: formula-like text of at most 120 characters with an
    arithmetic operator and two digits, or a fraction."""
    text = _squeeze(text)
    if not text or len(text) > _MAX_TABLE_CELL_CHARS or not formula_like_text(text):
        return False
    if not any(operator in text for operator in _TABLE_CELL_OPERATORS):
        return False
    return len(_DIGIT.findall(text)) >= 2 or "\\frac" in text or bool(_FRACTION.search(text))


def html_table_formula_rescue_items(html_table: str, position: list[int]) -> list[dict]:
    """``_build_html_table_formula_rescue_items``: one ``equation_isolated`` item per ``td``/``th``
    cell (document order) whose text reads as a formula; positions are pseudo spans laid end to
    end from the table's start (cell text length, at least 1, then a gap of 1)."""
    items: list[dict] = []
    cursor = max(int(position[0]), 0)
    for cell in BeautifulSoup(html_table, "html.parser").find_all(["td", "th"]):
        cell_text = _squeeze(cell.get_text(separator=" "))
        if not _table_formula_cell(cell_text):
            continue
        content = sanitize_formula_candidate(cell_text)
        if not content:
            continue
        end = cursor + max(len(cell_text), 1)
        items.append({
            "category_type": "equation_isolated",
            "position": [cursor, end],
            "content": content,
            "fine_category_type": "table_formula_rescue",
        })
        cursor = end + 1
    return items


def formula_rescue_item(text: str, position: list[int], fine_category: str) -> dict | None:
    """The item ``_append_formula_rescue_candidate`` appends for formula-like text
    (``formula_rescue``, or ``equation_isolated`` when it holds a long right arrow), None
    where it appends nothing."""
    if not formula_like_text(text):
        return None
    content = sanitize_formula_candidate(text)
    if not content:
        return None
    arrow = "\\xrightarrow" in content or "\\longrightarrow" in content
    return {
        "category_type": "equation_isolated" if arrow else "formula_rescue",
        "position": position,
        "content": content,
        "fine_category_type": fine_category,
    }


def _unwrap(text: str) -> tuple[str, str, str]:
    """``_unwrap_formula_envelope``: (left, right, stripped inner) for the first of ``\\[ \\]``,
    ``\\( \\)``, ``$$ $$``, ``$ $`` enclosing the squeezed text, else ('', '', text)."""
    text = _squeeze(text)
    for left, right in _ENVELOPES:
        if text.startswith(left) and text.endswith(right) and len(text) >= len(left) + len(right):
            return left, right, text[len(left) : len(text) - len(right)].strip()
    return "", "", text


def _wrap(inner: str, left: str, right: str) -> str:
    """``_wrap_formula_envelope``: ``left inner right`` ('' for blank inner; bare
    without wrappers)."""
    inner = inner.strip()
    if not inner:
        return ""
    return f"{left} {inner} {right}" if left and right else inner


def latex_fragment_to_plain_text(text: str) -> str:
    """``_latex_fragment_to_plain_text``: ``safe_latex_to_text(text, fallback=text)`` of the
    stripped text (pylatexenc **2.10**; the text itself where it has no ``\\ { } $``, reads as
    plain words, has too little LaTeX, is malformed or pylatexenc raises), no-break spaces as
    spaces, whitespace squeezed."""
    text = text.strip()
    if not text:
        return ""
    plain = safe_latex_to_text(text, fallback=text)
    return _WHITESPACE.sub(" ", plain.replace("\xa0", " ")).strip()


def _equation_caption(text: str) -> bool:
    """``_looks_like_equation_caption``: not a bare (parenthesised) numeral; 10+ letters in 2+
    words with at most 6 math signs, or 14+ letters, no digit and at most 3 math signs."""
    raw = text.strip()
    if not raw:
        return False
    plain = latex_fragment_to_plain_text(raw)
    if not plain:
        return False
    letters = len(_LETTER.findall(plain))
    words = len(_WORD.findall(plain))
    math = len(_CAPTION_MATH.findall(raw))
    digits = len(_DIGIT.findall(plain))
    core = plain[1:-1].strip() if plain.startswith("(") and plain.endswith(")") else plain
    if _NUMERAL.fullmatch(core.replace(" ", "")):
        return False
    return (letters >= 10 and words >= 2 and math <= 6) or (
        letters >= 14 and digits == 0 and math <= 3
    )


def _margin_text_item(text: str, position: list[int]) -> dict | None:
    """``_make_equation_margin_text_item``: a ``text_all``/``equation_caption`` item of the plain
    text, None when that is blank."""
    plain = latex_fragment_to_plain_text(text)
    if not plain:
        return None
    return {
        "category_type": "text_all",
        "position": position,
        "content": plain,
        "fine_category_type": "equation_caption",
    }


def _split_margin_text(formula: str, position: list[int]) -> tuple[str, list[dict]]:
    """``_split_display_formula_margin_text``: (formula without margin text, margin items): a
    leading ``(n)`` and trailing captions after a spacing command become items; the formula
    unchanged (squeezed) with no items where nothing else would remain."""
    squeezed = _squeeze(formula)
    if not squeezed:
        return squeezed, []
    left, right, inner = _unwrap(squeezed)
    if not inner:
        return squeezed, []
    items: list[dict] = []
    leading = _LEADING_NUMBER.match(inner)
    if leading:
        prefix = leading.group("prefix").strip()
        prefix_end = min(position[1], position[0] + max(len(prefix), 1))
        prefix_item = _margin_text_item(prefix, [position[0], prefix_end])
        if prefix_item:
            items.append(prefix_item)
        inner = inner[leading.end() :].strip()
    while inner:
        for pattern in _TRAILING_CAPTIONS:
            trailing = pattern.search(inner)
            if not trailing:
                continue
            caption = trailing.group("caption").strip()
            if not _equation_caption(caption):
                continue
            caption_start = max(position[0], position[1] - max(len(caption), 1))
            caption_item = _margin_text_item(caption, [caption_start, position[1]])
            if caption_item:
                items.append(caption_item)
            inner = inner[: trailing.start("sep")].rstrip()
            break
        else:
            break
    inner = _TRAILING_SPACING.sub("", inner).strip()
    if not inner:
        return squeezed, []
    return _wrap(inner, left, right), items


def _has_margin_text(formula: str) -> bool:
    """``_has_display_formula_margin_text``: the formula's inner text starts with an equation
    number or ends with a caption after a spacing command."""
    squeezed = _squeeze(formula)
    if not squeezed:
        return False
    inner = _unwrap(squeezed)[2]
    if not inner:
        return False
    if _LEADING_NUMBER.match(inner):
        return True
    for pattern in _TRAILING_CAPTIONS:
        trailing = pattern.search(inner)
        if trailing and _equation_caption(trailing.group("caption")):
            return True
    return False


def _compound_arithmetic_segment(segment: str) -> bool:
    """``_looks_like_compound_arithmetic_formula``: at most 160 characters, no environment nor
    structural command, a relation and two digits or a fraction."""
    segment = _squeeze(segment)
    if not segment or len(segment) > _MAX_COMPOUND_CHARS:
        return False
    if "\\begin{" in segment or "\\end{" in segment or _NOT_ARITHMETIC.search(segment):
        return False
    if not any(relation in segment for relation in _RELATIONS):
        return False
    return len(_DIGIT.findall(segment)) >= 2 or "\\frac" in segment or bool(
        _FRACTION.search(segment)
    )


def _compound_items(formula: str, position: list[int]) -> list[dict]:
    """``_split_compound_display_formula``: one ``equation_isolated`` item per ``\\quad``/
    ``\\qquad``-separated segment when there are 2+ and all are arithmetic; the span is shared
    out evenly (integer division, the last segment ends at the formula's end)."""
    squeezed = _squeeze(formula)
    if not squeezed:
        return []
    left, right, inner = _unwrap(squeezed)
    if not inner or ("\\quad" not in inner and "\\qquad" not in inner):
        return []
    segments = [part.strip() for part in _QUAD.split(inner) if part.strip()]
    if len(segments) <= 1 or not all(map(_compound_arithmetic_segment, segments)):
        return []
    per_span = max(max(position[1] - position[0], len(segments)) // len(segments), 1)
    items = []
    for index, segment in enumerate(segments):
        start = position[0] + index * per_span
        end = position[1] if index == len(segments) - 1 else min(position[1], start + per_span)
        items.append({
            "category_type": "equation_isolated",
            "position": [start, end],
            "content": _wrap(segment, left, right),
        })
    return items


def display_formula_items(
    single_line: str,
    position: list[int],
    fine_category: str | None = None,
    *,
    split_margin_text: bool = False,
) -> list[dict]:
    """The items ``_append_display_formula_item`` appends for one display formula, in order:
    the formula (or its compound segments), then its margin text items. Margin text is split off
    when ``split_margin_text`` (officially the ``OMNIDOCBENCH_FORMULA_MARGIN_SPLIT`` switch,
    default off) or when the formula has margin text; a truthy ``fine_category`` is added to the
    formula items."""
    if split_margin_text or _has_margin_text(single_line):
        formula, margin_items = _split_margin_text(single_line, position)
    else:
        formula, margin_items = single_line, []
    items = _compound_items(formula, position) or [
        {"category_type": "equation_isolated", "position": position, "content": formula}
    ]
    if fine_category:
        for item in items:
            item["fine_category_type"] = fine_category
    return items + margin_items
