"""Splitting a predicted markdown page into OmniDocBench v1.0's elements.

Re-implements ``md_tex_filter`` of ``utils/extract.py`` (opendatalab/OmniDocBench at 895837f,
the v1.0 evaluation code), element for element, positions and quirks included. Order of work
(each step blanks what it takes with spaces, so later steps do not see it again):

1. delete images ``![…](…)``; :func:`..common.normalize.strip_markdown_fences`;
   :func:`..common.normalize.collapse_repeated_chars`;
2. LaTeX tables: ``\\begin{table}…\\end{table}``, then balanced ``\\begin{tabular}…\\end{tabular}``;
3. HTML tables: balanced ``<table…>…</table>``;
4. formulas ``$$…$$``, ``\\[…\\]``, ``$…$``, ``\\(…\\)`` (inline ones are kept in the text too);
5. markdown tables, when at least two rows are found (the whole text is rewritten);
6. code blocks ```` ```lang\\n…``` ````;
7. ``\\title{}``, ``\\text{}``, ``\\section{}`` unwrapped; the rest split into paragraphs.

The steps' patterns and primitives are :mod:`..common.extract`'s. v1.5 (0f22218) differs in
step 1 and in formula whitespace (:func:`split_markdown`).
"""

from __future__ import annotations

import re

from evalsuite.metrics.omnidocbench.common.extract import (
    CATEGORIES,
    CODE_BLOCK,
    CONVERTED_TABLE,
    FORMULA,
    HTML_TABLE_BEGIN,
    HTML_TABLE_END,
    LATEX_WRAPPERS,
    PAGE_TAGS,
    PredictedElement,
    balanced_spans,
    blank_span,
    formula_from_match,
    latex_tables,
)
from evalsuite.metrics.omnidocbench.common.normalize import (
    MARKDOWN_TABLE,
    collapse_repeated_chars,
    markdown_tables_to_html,
    strip_markdown_fences,
)
from evalsuite.metrics.omnidocbench.versions import V10, Rules

__all__ = ["split_markdown"]

_IMAGE = re.compile(r"!\[.*?\]\(.*?\)")


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
