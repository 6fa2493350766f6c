"""Markdown to page images: ``render_markdown`` (headings, paragraphs, lists, tables, code).

Parsed with markdown-it-py (CommonMark plus GitHub pipe tables); HTML ``<table>`` blocks are
parsed with lxml. Inline emphasis, links and inline HTML are drawn as their plain text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import lxml.html
from markdown_it import MarkdownIt
from markdown_it.token import Token

from evalsuite.render.config import RenderConfig
from evalsuite.render.document import RenderedDocument
from evalsuite.render.fonts import load_font
from evalsuite.render.layout import (
    Band,
    RuleOp,
    Run,
    blank_band,
    check_render_args,
    paginate,
    paint,
    text_band,
    wrap,
    wrap_indented,
)
from evalsuite.render.tables import (
    SourceCell,
    Table,
    alignment,
    parse_html_tables,
    place_cells,
    table_bands,
)

HEADING_SCALE: dict[int, float] = {1: 1.6, 2: 1.4, 3: 1.2, 4: 1.0, 5: 1.0, 6: 1.0}
"""Heading size as a multiple of the body size, by level; headings use the bold face."""

BULLETS = ("•", "◦", "▪")
"""Bullet of an unordered list, by nesting level (cycling)."""

INDENT_EM = 2.0
"""Indent per list or blockquote level, in multiples of the body font size."""

_BREAK_TAG = re.compile(r"<br\s*/?>", re.IGNORECASE)


@dataclass(frozen=True)
class TextBlock:
    """Wrapped text: ``lines`` are the hard-broken parts; ``marker`` starts a list item;
    ``tight`` = an item of a tight list that follows another item (no gap before it)."""

    lines: tuple[str, ...]
    role: str
    depth: int = 0
    marker: str | None = None
    level: int = 0
    tight: bool = False


@dataclass(frozen=True)
class CodeBlock:
    lines: tuple[str, ...]
    depth: int = 0


@dataclass(frozen=True)
class TableBlock:
    table: Table
    depth: int = 0


@dataclass(frozen=True)
class RuleBlock:
    depth: int = 0


Block = TextBlock | CodeBlock | TableBlock | RuleBlock


@functools.cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def render_markdown(
    md: str, config: RenderConfig | None = None, *, single_page: bool = False
) -> RenderedDocument:
    """Render markdown ``md`` on pages of ``config`` (default ``RenderConfig()``).

    Headings are bold and ``HEADING_SCALE`` times the body size; paragraphs wrap; list items
    get a bullet or their number in a hanging indent of ``INDENT_EM`` per level; code blocks
    keep their spacing in the mono face; pipe and HTML tables are ruled grids with colspan and
    rowspan; ``---`` is a horizontal rule. Blocks are half a line apart (a full line above
    headings), tight list items not at all. Layout metadata: every drawn line (``role`` says
    which kind of block it belongs to), every table cell and every rule. ``single_page`` as in
    :func:`evalsuite.render.render_text`.
    """
    config = RenderConfig() if config is None else config
    normalised = check_render_args(md, "md", config, single_page)
    bands: list[Band] = []
    previous: Block | None = None
    tables = 0
    for block in parse_blocks(normalised):
        if previous is not None and not _continues_list(previous, block):
            heading = isinstance(block, TextBlock) and block.role == "heading"
            bands.append(blank_band(config.line_pitch_px if heading else config.line_pitch_px // 2))
        if isinstance(block, TableBlock):
            x = _indent_x(config, block.depth)
            bands.extend(
                table_bands(
                    block.table, tables, config, x, config.page_width - config.margins[2] - x
                )
            )
            tables += 1
        else:
            bands.extend(_block_bands(block, config))
        previous = block
    return paint(paginate(bands, config, single_page=single_page), config, md)


def _continues_list(previous: Block, block: Block) -> bool:
    return (
        isinstance(block, TextBlock)
        and block.tight
        and isinstance(previous, TextBlock)
        and previous.role == "list_item"
    )


def _indent_x(config: RenderConfig, depth: int) -> int:
    """Left edge of a block nested ``depth`` levels deep; deep nesting stops at mid-page."""
    left, _, right, _ = config.margins
    limit = (config.page_width - left - right) // 2
    return left + min(round(depth * INDENT_EM * config.size_px), limit)


def _block_bands(block: TextBlock | CodeBlock | RuleBlock, config: RenderConfig) -> list[Band]:
    right = config.page_width - config.margins[2]
    pitch = config.line_pitch_px
    x = _indent_x(config, block.depth)
    if isinstance(block, RuleBlock):
        thickness = max(1, round(config.size_px / 10))
        top = (pitch - thickness) // 2
        return [Band(pitch, top + thickness, (RuleOp((x, top, right, top + thickness)),))]
    if isinstance(block, CodeBlock):
        font = load_font("mono", config.size_px)
        bands = []
        for line in block.lines:
            pieces = wrap_indented(line, font, right - x)
            bands.extend(text_band([Run(x + dx, p, font)], "code", pitch) for dx, p in pieces)
            if not pieces:
                bands.append(blank_band(pitch))
        return bands
    size_px = config.size_px * HEADING_SCALE.get(block.level, 1.0)
    font = load_font(config.font, size_px, bold=block.role == "heading")
    pitch = max(1, round(size_px * config.line_spacing))
    marker_run = None
    if block.marker is not None:
        # The marker hangs in the indent of the item's own level, the text one level in.
        marker_x = _indent_x(config, block.depth - 1)
        x = max(x, marker_x + round(font.getlength(block.marker + " ")))
        marker_run = Run(marker_x, block.marker, font)
    runs = [[Run(x, piece, font)] for line in block.lines for piece in wrap(line, font, right - x)]
    if marker_run is not None:
        runs = [[marker_run, *runs[0]], *runs[1:]] if runs else [[marker_run]]
    return [text_band(line_runs, block.role, pitch) for line_runs in runs]


def parse_blocks(md: str) -> list[Block]:
    """The blocks of ``md`` in reading order, with their list/blockquote nesting depth."""
    tokens = _parser().parse(md)
    blocks: list[Block] = []
    containers: list[str] = []  # "bullet", "ordered" or "blockquote", innermost last
    marker: str | None = None  # of a list item whose first line is still to come
    starts_list = False

    def flush() -> None:
        """Emit a pending marker whose item starts with something other than a paragraph."""
        nonlocal marker
        if marker is not None:
            blocks.append(TextBlock((), "list_item", len(containers), marker))
            marker = None

    def add(block: Block) -> None:
        flush()
        blocks.append(block)

    index = 0
    while index < len(tokens):
        token = tokens[index]
        kind = token.type
        depth = len(containers)
        if kind in ("bullet_list_open", "ordered_list_open", "blockquote_open"):
            flush()
            starts_list = not containers  # a new top-level list is set off by a gap
            containers.append(kind.split("_")[0])
        elif kind in ("bullet_list_close", "ordered_list_close", "blockquote_close"):
            containers.pop()
        elif kind == "list_item_open":
            marker = _marker(token, containers)
        elif kind == "list_item_close":
            flush()
        elif kind == "paragraph_open":
            in_list = bool(containers) and containers[-1] != "blockquote"
            role = "list_item" if in_list else "paragraph"
            lines = _inline_lines(tokens[index + 1])
            tight = token.hidden and not starts_list
            blocks.append(TextBlock(lines, role, depth, marker, tight=tight))
            starts_list = False
            marker = None
        elif kind == "heading_open":
            add(
                TextBlock(
                    _inline_lines(tokens[index + 1]), "heading", depth, level=int(token.tag[1])
                )
            )
        elif kind in ("fence", "code_block"):
            add(CodeBlock(tuple(token.content.rstrip("\n").split("\n")), depth))
        elif kind == "hr":
            add(RuleBlock(depth))
        elif kind == "html_block":
            for block in _html_blocks(token.content, depth):
                add(block)
        elif kind == "table_open":
            end = next(i for i in range(index, len(tokens)) if tokens[i].type == "table_close")
            add(TableBlock(_pipe_table(tokens[index:end]), depth))
            index = end
        index += 1
    return blocks


def _marker(item: Token, containers: list[str]) -> str:
    """``3.`` or ``3)`` for an ordered item; the bullet of its unordered nesting level otherwise."""
    if containers[-1] == "ordered":
        return f"{item.info}{item.markup}"
    level = sum(1 for kind in containers if kind == "bullet")
    return BULLETS[(level - 1) % len(BULLETS)]


def _inline_lines(token: Token) -> tuple[str, ...]:
    """Plain text of an inline token, split at hard breaks, whitespace collapsed."""
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak" or (
            child.type == "html_inline" and _BREAK_TAG.fullmatch(child.content.strip())
        ):
            parts.append("\n")
    return tuple(" ".join(line.split()) for line in "".join(parts).split("\n"))


def _pipe_table(tokens: Sequence[Token]) -> Table:
    rows: list[list[SourceCell]] = []
    in_head = False
    for position, token in enumerate(tokens):
        if token.type in ("thead_open", "thead_close"):
            in_head = token.type == "thead_open"
        elif token.type == "tr_open":
            rows.append([])
        elif token.type in ("th_open", "td_open"):
            text = " ".join(_inline_lines(tokens[position + 1])).strip()
            header = in_head or token.type == "th_open"
            rows[-1].append(
                SourceCell(text, header=header, align=alignment(token.attrGet("style")))
            )
    return place_cells(rows)


def _html_blocks(html: str, depth: int) -> list[Block]:
    """Tables of an HTML block; an HTML block without one becomes a paragraph of its text."""
    if "<table" in html.lower():
        return [TableBlock(table, depth) for table in parse_html_tables(html)]
    text = " ".join(lxml.html.fragment_fromstring(html, create_parent="div").text_content().split())
    return [TextBlock((text,), "paragraph", depth)] if text else []
