"""The pieces of OmniDocBench's markdown extraction (``md_tex_filter``) that v1.0's
(``utils/extract.py`` at 895837f, :mod:`..v1_0.extract`) and v1.6's (:mod:`..v1_6.extract`)
extractions share: the element model (:class:`PredictedElement`, :data:`CATEGORIES`), the
table, formula, code and wrapper patterns, the balanced-span scan (:func:`balanced_spans`), the
LaTeX tables of a text (:func:`latex_tables`), blanking (:func:`blank_span`) and a formula
match's content (:func:`formula_from_match`), quirks included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalsuite.metrics.omnidocbench.versions import Rules

__all__ = [
    "CATEGORIES",
    "PredictedElement",
    "balanced_spans",
    "blank_span",
    "formula_from_match",
    "latex_tables",
]

CATEGORIES = ("text_all", "equation_isolated", "html_table", "latex_table")
"""The element categories of a split page (official ``category_type``)."""


@dataclass(frozen=True)
class PredictedElement:
    """One predicted element (an item of the official ``md_tex_filter`` output).

    ``category`` is the official ``category_type``; ``fine_category`` its ``fine_category_type``
    (``"text_block"``, ``"code"``, ``"equation_inline"``, ``"md2html_table"``; ``None`` where the
    official item has none: display formulas, HTML and LaTeX tables); ``position`` the official
    ``[start, end)`` character span (see :func:`..v1_0.extract.split_markdown` for what it is
    relative to); ``language`` the info string of a code block (official ``language``, read by
    nothing).
    """

    category: str
    content: str
    position: tuple[int, int]
    fine_category: str | None = None
    language: str | None = None


_TABLE_ENV = re.compile(r"\\begin{table}(.*?)\\end{table}", re.DOTALL)
_TABULAR_BEGIN = re.compile(r"\\begin{tabular}")
_TABULAR_END = re.compile(r"\\end{tabular}")
HTML_TABLE_BEGIN = re.compile(r"<table(?:[^>]*)>")
HTML_TABLE_END = re.compile(r"</table>")
FORMULA = re.compile(r"\$\$(.*?)\$\$|\\\[(.*?)\\\]|\$(.*?)\$|\\\((.*?)\\\)", re.DOTALL)
_DOLLAR_OR_PAREN_FORMULA = re.compile(r"\$\$(.*?)\$\$|\$(.*?)\$|\\\((.*?)\\\)", re.DOTALL)
CONVERTED_TABLE = re.compile(r"(<table.*?</table>)", re.DOTALL)
PAGE_TAGS = ("<html>", "</html>", "<body>", "</body>")
CODE_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
LATEX_WRAPPERS = tuple(
    re.compile(pattern, flags)
    for pattern, flags in (
        (r"\\title\{(.*?)\}", 0),
        (r"\\title\s*\{\s*(.*?)\s*\}", re.DOTALL),
        (r"\\text\s*\{\s*(.*?)\s*\}", re.DOTALL),
        (r"\\section\*?\{(.*?)\}", 0),
        (r"\\section\*?\{\s*(.*?)\s*\}", re.DOTALL),
    )
)


def balanced_spans(
    text: str, begin: re.Pattern[str], end: re.Pattern[str], step: int, restart: int
) -> list[tuple[int, int]]:
    """Outermost begin/end-balanced spans of ``text`` (``extract_tabular``/``extract_html_table``).

    The scan jumps ``step`` characters from the start of each begin or end token it meets, and an
    outermost span ends ``step`` characters after the start of its end token. If begins remain
    open at the end, the scan reruns on the text from ``restart`` characters after the first one.

    Quirks (``step`` is the length of the end pattern's source, ``restart`` the begin pattern's):
    for ``\\end{tabular}`` (13 characters, ``step`` 14) a span takes one character more and a
    token right after an end token is skipped; for ``<table>`` (7 characters, ``step`` 8) a
    token right after it is skipped. Spans are in scan order, reruns last; an end may lie past
    the text's end.
    """
    spans: list[tuple[int, int]] = []
    offset = 0
    while True:
        position, open_starts = offset, list[int]()
        while position < len(text):
            begin_match = begin.search(text, position)
            end_match = end.search(text, position)
            if end_match is None and begin_match is None:
                break
            if begin_match and (end_match is None or begin_match.start() < end_match.start()):
                open_starts.append(begin_match.start())
                position = begin_match.start() + step
            elif end_match is not None:
                if open_starts:
                    start = open_starts.pop()
                    if not open_starts:
                        spans.append((start, end_match.start() + step))
                position = end_match.start() + step
        if not open_starts:
            return spans
        offset = open_starts[0] + restart


def latex_tables(text: str) -> list[tuple[int, str]]:
    """(start, source) of the LaTeX tables (``extract_tex_table``): every shortest
    ``\\begin{table}…\\end{table}``, then the balanced tabulars of the text with those blanked,
    sorted by start. ``\\begin{table*}`` is not a table; its tabulars are found."""
    tables = [(match.start(), match.group(0)) for match in _TABLE_ENV.finditer(text)]
    for start, table in tables:
        text = blank_span(text, start, start + len(table))
    tables += [
        (start, text[start:end])
        for start, end in balanced_spans(text, _TABULAR_BEGIN, _TABULAR_END, 14, 16)
    ]
    return sorted(tables, key=lambda table: table[0])


def blank_span(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` replaced by as many spaces (positions stay put)."""
    return text[:start] + " " * (end - start) + text[end:]


def formula_from_match(match: re.Match[str], rules: Rules) -> tuple[str, str | None, bool]:
    """(content, fine category, blanked?) of one formula match.

    Rule: all whitespace is deleted (``str.split``; v1.5: the match is stripped and its lines
    joined with one space); then, if a ``$$…$$``, ``$…$`` or ``\\(…\\)``
    is found in it: when the first found is a non-empty ``$$…$$`` each such span becomes
    ``\\[…\\]`` and the formula is display (blanked); otherwise each becomes ``\\[…\\]`` and the
    formula is inline (``fine_category`` ``"equation_inline"``, left in the text). A plain
    ``\\[…\\]`` is display and kept as it is.

    Quirk: ``\\[a$b$c\\]`` is inline, content ``\\[a\\[b\\]c\\]``; ``$$$$`` is inline ``\\[\\]``.
    """
    whole = match.group(0)
    compact = (" ".join(whole.strip().split("\n")) if rules.formula_lines_joined
               else "".join(whole.split()))
    inner = _DOLLAR_OR_PAREN_FORMULA.search(compact)
    if inner is None:
        return compact, None, True
    if inner.group(1):
        return _DOLLAR_OR_PAREN_FORMULA.sub(r"\\[\1\\]", compact), None, True
    return _DOLLAR_OR_PAREN_FORMULA.sub(r"\\[\2\3\\]", compact), "equation_inline", False
