"""Splitting a predicted markdown page into OmniDocBench v1.6's elements (``md_tex_filter`` of
``src/core/preprocess/extract.py``, opendatalab/OmniDocBench at 9dc1dec), quirks included.

v1.6 keeps v1.5's steps (:func:`..v1_0.extract.split_markdown`: fences, ``<html>``/``<body>``
tags, LaTeX tables, HTML tables, formulas, markdown tables, code blocks, ``\\title{}``-style
unwrapping, paragraphs) and changes:

- images are blanked with spaces (positions kept), and their alt text can be rescued as a
  formula (:func:`.extract_formulas.formula_rescue_item`, ``image_formula``);
- in a paragraph that reads as an image description (:func:`looks_like_image_description`),
  ``$…$`` and ``\\(…\\)`` delimiters are deleted before formulas are taken;
- LaTeX tables are converted to HTML at once (:func:`.tables.latex_table_to_html`):
  ``html_table`` / ``latex2html_table``, or ``latex_table`` where the conversion gives "";
- HTML and markdown tables add formula-like cells as ``table_formula_rescue`` items;
- display formulas go through :func:`.extract_formulas.display_formula_items` (margin
  text, compound arithmetic);
- a paragraph is any piece with text: a ``<div>``/``<dir>`` fragment is reduced to its text
  (:func:`html_fragment_text`), and formula-like paragraphs are rescued (``text_formula``);
- short inline formulas that read as labels are dropped (:func:`is_dropped_inline_label`).

Items are plain dicts with the official keys in the official order.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup

from evalsuite.metrics.omnidocbench.common.extract import (
    CODE_BLOCK,
    CONVERTED_TABLE,
    FORMULA,
    HTML_TABLE_BEGIN,
    HTML_TABLE_END,
    LATEX_WRAPPERS,
    PAGE_TAGS,
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
from evalsuite.metrics.omnidocbench.v1_6.extract_formulas import (
    display_formula_items,
    formula_rescue_item,
    html_table_formula_rescue_items,
    strip_formula_wrappers,
)
from evalsuite.metrics.omnidocbench.v1_6.tables import latex_table_to_html
from evalsuite.metrics.omnidocbench.versions import V16

__all__ = [
    "html_fragment_text",
    "is_dropped_inline_label",
    "looks_like_image_description",
    "md_tex_filter",
]

_IMAGE = re.compile(r"!\[(.*?)\]\((.*?)\)")
_BLOCK_OPENING = re.compile(r"^<(div|dir)\b", re.IGNORECASE)
_INLINE_TAGS = ("span", "font", "b", "strong", "i", "em", "u", "a", "sup", "sub")
_BLOCK_TAGS = ("div", "dir", "p", "li")
_SPACES_AROUND_NEWLINE = re.compile(r"[ \t]*\n[ \t]*")
_IMAGE_DESCRIPTION_MIN_CHARS = 24
_IMAGE_DESCRIPTION_OPENINGS = (
    "the image ", "the image displays", "the figure ", "the figure shows", "the diagram ",
    "diagram:", "[diagram:", "[image:", "qr code ",
)
_PARAGRAPH_BREAK = re.compile(r"(\n\s*\n)")
_INLINE_DELIMITERS = (re.compile(r"\\\((.*?)\\\)", re.DOTALL), re.compile(r"\$(.*?)\$", re.DOTALL))
_WHITESPACE = re.compile(r"\s+")
_ARROWS = ("\\xrightarrow", "\\longrightarrow")
_LABEL_MAX_CHARS = 24
_MATH_TOKENS = (
    "=", "<", ">", "≤", "≥", "≈", "≠", "^", "+", "-", "/", "\\cdot", "\\frac", "\\sqrt", "\\sum",
    "\\int", "\\times", "\\div", "\\approx", "\\neq", "\\leq", "\\geq", *_ARROWS,
)
_LABELS = tuple(re.compile(pattern) for pattern in (
    r"[A-Za-z0-9._,-]+",
    r"[A-Za-z][A-Za-z0-9_.,-]*",
    r"[A-Za-z0-9]+Oy",
    r"[ΓγλμνxyzuvwMNOabcABC0-9._,-]+",
))


def html_fragment_text(text: str) -> str:
    """``_normalize_html_text_fragment``: the stripped text, or, for a fragment opening with
    ``<div``/``<dir`` and holding no ``<table``, its text: ``style``/``script`` deleted, inline
    tags unwrapped, ``<br>`` and the end of each ``div``/``dir``/``p``/``li`` made line breaks,
    no-break spaces made spaces, lines stripped, blank ones dropped (the stripped text where
    that leaves nothing)."""
    stripped = text.strip()
    if not stripped or "<table" in stripped.lower() or not _BLOCK_OPENING.match(stripped):
        return stripped
    soup = BeautifulSoup(stripped, "html.parser")
    for tag in soup.find_all(["style", "script"]):
        tag.decompose()
    for tag in soup.find_all(list(_INLINE_TAGS)):
        tag.unwrap()
    for tag in soup.find_all("br"):
        tag.replace_with("\n")
    for tag in soup.find_all(list(_BLOCK_TAGS)):
        if not tag.contents or tag.contents[-1] != "\n":
            tag.append("\n")
    extracted = _SPACES_AROUND_NEWLINE.sub("\n", soup.get_text(separator="").replace("\xa0", " "))
    lines = [line.strip() for line in extracted.split("\n") if line.strip()]
    return "\n".join(lines).strip() or stripped


def looks_like_image_description(text: str) -> bool:
    """``_looks_like_image_description_block``: the text, whitespace runs made one space and
    lower-cased, has at least 24 characters and opens like "the image ", "[diagram:", "qr code "…"""
    compact = " ".join(text.split()).strip().lower()
    return len(compact) >= _IMAGE_DESCRIPTION_MIN_CHARS and compact.startswith(
        _IMAGE_DESCRIPTION_OPENINGS)


def _without_description_math(content: str) -> str:
    """``_suppress_formula_delimiters_in_image_descriptions``: in each blank-line separated
    block that :func:`looks_like_image_description`, ``\\(x\\)`` then ``$x$`` become ``x``."""
    pieces = _PARAGRAPH_BREAK.split(content)
    for index in range(0, len(pieces), 2):
        if looks_like_image_description(pieces[index]):
            for delimiters in _INLINE_DELIMITERS:
                pieces[index] = delimiters.sub(r"\1", pieces[index])
    return "".join(pieces)


def is_dropped_inline_label(item: dict) -> bool:
    """``_should_drop_short_inline_formula_item``: whether an inline formula item
    (``equation_isolated`` / ``equation_inline``) is dropped from the page.

    Rule: with its wrappers stripped (:func:`.extract_formulas.strip_formula_wrappers`) and
    whitespace deleted, it is dropped when it opens with a long right arrow, or when it has at
    most 24 characters, no math token (``=``, ``+``, ``\\frac``…) and looks like a label
    (letters, digits, ``._,-``; or ``…Oy``; or a few Greek/axis letters).

    The official also converts the formula to plain text as a fallback label for an empty
    compact text, which cannot occur at that point; that conversion is left out."""
    if item.get("category_type") != "equation_isolated":
        return False
    if item.get("fine_category_type") != "equation_inline":
        return False
    formula = str(item.get("content", "") or "").strip()
    if not formula:
        return False
    core = strip_formula_wrappers(formula)
    compact = _WHITESPACE.sub("", core)
    if compact.startswith(_ARROWS):
        return True
    if not compact or len(compact) > _LABEL_MAX_CHARS:
        return False
    if any(token in core for token in _MATH_TOKENS):
        return False
    return any(label.fullmatch(compact) for label in _LABELS)


def _paragraph_items(content: str) -> list[dict]:
    """The ``text_block`` items (each followed by its ``text_formula`` rescue, if any) of the
    paragraphs of ``content``, positions drifting as in v1.0
    (:func:`..v1_0.extract.split_markdown`)."""
    pieces = content.split("\n\n")
    if len(pieces) == 1:
        pieces = content.split("\n")
    items: list[dict] = []
    start = 0
    for piece in pieces:
        position = [start, start + len(piece)]
        start += len(piece)
        lines = (line.strip() for line in piece.strip().strip("\n").split("\n"))
        text = html_fragment_text("\n".join(line for line in lines if line)).strip()
        if text:
            items.append({"category_type": "text_all", "position": position, "content": text,
                          "fine_category_type": "text_block"})
            rescued = formula_rescue_item(text, position, "text_formula")
            if rescued is not None:
                items.append(rescued)
    return items


def md_tex_filter(content: str) -> dict[str, list[dict]]:
    """One predicted page split into v1.6's items by ``category_type`` (the official
    ``md_tex_filter``); the keys in order of first appearance, each list sorted by
    ``position[0]`` (ties in order of the steps in the module docstring); categories without
    items are absent (the official ``defaultdict`` yields ``[]`` for them).

    Raises:
        LatexmlUnavailableError: the page has a LaTeX table and ``latexmlc`` is not on PATH.
    """
    found: list[dict] = []
    for match in _IMAGE.finditer(content):
        rescued = formula_rescue_item((match.group(1) or "").strip(), list(match.span()),
                                      "image_formula")
        if rescued is not None:
            found.append(rescued)
    content = _IMAGE.sub(lambda match: " " * len(match.group(0)), content)
    content = collapse_repeated_chars(strip_markdown_fences(content, V16.fence_languages),
                                      V16.collapse_symbol_runs)
    for tag in PAGE_TAGS:
        content = content.replace(tag, "")
    content = _without_description_math(content)

    for start, table in latex_tables(content):
        position = [start, start + len(table)]
        html = latex_table_to_html(table)
        found.append({
            "category_type": "html_table" if html else "latex_table",
            "position": position,
            "content": html or table,
            "fine_category_type": "latex2html_table" if html else "latex_table",
        })
        content = blank_span(content, *position)

    for start, end in balanced_spans(content, HTML_TABLE_BEGIN, HTML_TABLE_END, 8, 16):
        table = content[start:end]
        position = [start, start + len(table)]
        found.append({"category_type": "html_table", "position": position, "content": table})
        found += html_table_formula_rescue_items(table, position)
        content = blank_span(content, *position)

    for match in FORMULA.finditer(content):
        formula, fine_category, blanked = formula_from_match(match, V16)
        if blanked:
            content = blank_span(content, *match.span())
        found += display_formula_items(formula, list(match.span()), fine_category)

    if len(MARKDOWN_TABLE.findall(content + "\n")) >= 2:
        content = markdown_tables_to_html(content)
        for match in CONVERTED_TABLE.finditer(content):
            position = list(match.span())
            content = blank_span(content, *position)
            table = match.group(0).strip()
            found.append({"category_type": "html_table", "position": position, "content": table,
                          "fine_category_type": "md2html_table"})
            found += html_table_formula_rescue_items(table, position)

    for match in CODE_BLOCK.finditer(content):
        position = list(match.span())
        content = blank_span(content, *position)
        found.append({"category_type": "text_all", "position": position,
                      "content": match.group(2).strip(), "language": match.group(1),
                      "fine_category_type": "code"})

    for wrapper in LATEX_WRAPPERS:
        content = wrapper.sub(r"\1", content)
    found += _paragraph_items(content)

    dataset: dict[str, list[dict]] = {}
    for item in sorted(found, key=lambda item: item["position"][0]):
        if not is_dropped_inline_label(item):
            dataset.setdefault(item["category_type"], []).append(item)
    return dataset
