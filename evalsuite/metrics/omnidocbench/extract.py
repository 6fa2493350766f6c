"""Splitting a predicted markdown page into OmniDocBench v1.0's elements.

Re-implements ``md_tex_filter`` of ``utils/extract.py`` (opendatalab/OmniDocBench at 895837f,
the v1.0 evaluation code), element for element, positions and quirks included. Order of work
(each step blanks what it takes with spaces, so later steps do not see it again):

1. delete images ``![…](…)``; :func:`.normalize.strip_markdown_fences`;
   :func:`.normalize.collapse_repeated_chars`;
2. LaTeX tables: ``\\begin{table}…\\end{table}``, then balanced ``\\begin{tabular}…\\end{tabular}``;
3. HTML tables: balanced ``<table…>…</table>``;
4. formulas ``$$…$$``, ``\\[…\\]``, ``$…$``, ``\\(…\\)`` (inline ones are kept in the text too);
5. markdown tables, when at least two rows are found (the whole text is rewritten);
6. code blocks ```` ```lang\\n…``` ````;
7. ``\\title{}``, ``\\text{}``, ``\\section{}`` unwrapped; the rest split into paragraphs.

v1.5 (0f22218) differs in step 1 and in formula whitespace (:func:`split_markdown`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalsuite.metrics.omnidocbench.normalize import (
    MARKDOWN_TABLE,
    collapse_repeated_chars,
    markdown_tables_to_html,
    strip_markdown_fences,
)
from evalsuite.metrics.omnidocbench.versions import V10, Rules

__all__ = ["CATEGORIES", "PredictedElement", "split_markdown"]

CATEGORIES = ("text_all", "equation_isolated", "html_table", "latex_table")
"""The element categories of a split page (official ``category_type``)."""


@dataclass(frozen=True)
class PredictedElement:
    """One predicted element (an item of the official ``md_tex_filter`` output).

    ``category`` is the official ``category_type``; ``fine_category`` its ``fine_category_type``
    (``"text_block"``, ``"code"``, ``"equation_inline"``, ``"md2html_table"``; ``None`` where the
    official item has none: display formulas, HTML and LaTeX tables); ``position`` the official
    ``[start, end)`` character span (see :func:`split_markdown` for what it is relative to);
    ``language`` the info string of a code block (official ``language``, read by nothing).
    """

    category: str
    content: str
    position: tuple[int, int]
    fine_category: str | None = None
    language: str | None = None


_IMAGE = re.compile(r"!\[.*?\]\(.*?\)")
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


def _paragraph(text: str, position: tuple[int, int]) -> PredictedElement | None:
    """The element of one paragraph piece, or None if it has no text.

    Rule: lines stripped, blank ones dropped; a piece starting ``<table`` and ending
    ``</table>`` is an HTML table; one starting and ending with ``$`` a display formula (dropped
    if nothing but ``$`` and whitespace); anything else a ``text_block``."""
    text = "\n".join(line.strip() for line in text.strip().split("\n") if line.strip())
    if not text:
        return None
    if text.startswith("<table") and text.endswith("</table>"):
        return PredictedElement("html_table", text, position)
    if text.startswith("$") and text.endswith("$"):
        if not text.replace("$", "").strip():
            return None
        return PredictedElement("equation_isolated", text, position)
    return PredictedElement("text_all", text, position, "text_block")


def split_markdown(markdown: str, rules: Rules = V10) -> dict[str, list[PredictedElement]]:
    """Split one predicted page into elements by category, as ``md_tex_filter`` of ``rules``'
    version does (v1.5: more fences stripped, no symbol-run collapsing, ``<html>``/``<body>``
    tags deleted before anything is taken, formulas keep their spaces).

    Returns every category of :data:`CATEGORIES` (the official ``defaultdict`` holds only those
    found and yields ``[]`` for the others), each list sorted by ``position[0]`` (ties in order of
    the steps in the module docstring).

    Positions: character spans in the text as it is when the element is taken, so they are only
    roughly comparable. Quirks:

    - the text is shortened by image deletion, fence stripping and run collapsing first;
    - after a markdown-table rewrite, later positions are in the rewritten text;
    - paragraph positions are in the text after the ``\\title{}``-style unwrapping, and each
      paragraph starts where the previous one ended, not counting the ``\\n\\n`` (or ``\\n``)
      separators (the position drift bug), so the n-th paragraph drifts by 2(n-1) (or n-1);
    - paragraphs come from ``split("\\n\\n")``, or from ``split("\\n")`` when that gives one piece;
    - inline formulas stay in the text and are also ``equation_isolated`` items; a paragraph
      that is only ``$…$`` is a second, undelimited-converted ``equation_isolated`` item;
    - a paragraph that is only ``$`` characters and whitespace is dropped;
    - ``\\text{…}`` is unwrapped everywhere, inline formulas included;
    - after a markdown-table rewrite, a stray ``<table`` in the text pairs with the next
      ``</table>`` into one table.
    """
    content = collapse_repeated_chars(
        strip_markdown_fences(_IMAGE.sub("", markdown), rules.fence_languages),
        rules.collapse_symbol_runs,
    )
    if rules.strip_page_tags:
        for tag in PAGE_TAGS:
            content = content.replace(tag, "")
    found: list[PredictedElement] = []

    for start, table in latex_tables(content):
        found.append(PredictedElement("latex_table", table, (start, start + len(table))))
        content = blank_span(content, start, start + len(table))

    html_spans = balanced_spans(content, HTML_TABLE_BEGIN, HTML_TABLE_END, 8, 16)
    for start, table in [(start, content[start:end]) for start, end in html_spans]:
        found.append(PredictedElement("html_table", table, (start, start + len(table))))
        content = blank_span(content, start, start + len(table))

    for match in FORMULA.finditer(content):
        formula, fine_category, blanked = formula_from_match(match, rules)
        found.append(PredictedElement("equation_isolated", formula, match.span(), fine_category))
        if blanked:
            content = blank_span(content, *match.span())

    if len(MARKDOWN_TABLE.findall(content + "\n")) >= 2:
        content = markdown_tables_to_html(content)
        for match in CONVERTED_TABLE.finditer(content):
            found.append(
                PredictedElement("html_table", match.group(0), match.span(), "md2html_table")
            )
            content = blank_span(content, *match.span())

    for match in CODE_BLOCK.finditer(content):
        code = match.group(2).strip()
        found.append(PredictedElement("text_all", code, match.span(), "code", match.group(1)))
        content = blank_span(content, *match.span())

    for wrapper in LATEX_WRAPPERS:
        content = wrapper.sub(r"\1", content)

    pieces = content.split("\n\n")
    if len(pieces) == 1:
        pieces = content.split("\n")
    start = 0
    for piece in pieces:
        element = _paragraph(piece, (start, start + len(piece)))
        start += len(piece)
        if element is not None:
            found.append(element)

    found.sort(key=lambda element: element.position[0])
    return {
        category: [element for element in found if element.category == category]
        for category in CATEGORIES
    }
