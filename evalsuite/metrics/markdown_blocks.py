"""Split a page of markdown into scorable blocks: text blocks and tables (as canonical HTML).

The block structure comes from markdown-it-py (CommonMark + GFM tables + strikethrough, raw HTML
enabled) with one extra block rule for display math. Rules, in order:

1. DeepSeek-OCR grounding markup is removed: every ``<|ref|>…<|/ref|>`` and ``<|det|>…<|/det|>``
   span (labels and coordinates included), then any stray ``<|ref|>``, ``<|/ref|>``, ``<|det|>``,
   ``<|/det|>`` tag.
2. Every paragraph, heading, fenced or indented code block and display-math block (``$$…$$`` or
   ``\\[…\\]``, on lines of their own) is one text block. A list item, block quote or HTML block
   contributes the blocks it contains, so blocks split at blank lines and at every block start.
3. A block's text is its plain text: emphasis, strikethrough, heading, list and quote markers,
   link targets, inline HTML tags and images (``![alt](src)``, ``<img>``) are dropped; inline code
   keeps its content; backslash escapes and entities are decoded by the parser. For HTML, text is
   the element text, with ``<br>`` and non-inline elements acting as spaces. Then every run of
   whitespace becomes one space and the ends are stripped. Case, punctuation and Unicode forms are
   kept. Blocks whose text ends up empty are dropped.
4. GitHub pipe tables and HTML ``<table>`` elements become table blocks in one canonical HTML form,
   ``<table><tr><td>…</td>…</tr>…</table>``: every row in document order (``thead``/``tbody``/
   ``tfoot`` wrappers and ``th``/``td`` differences removed), cell text normalised as in rule 3,
   ``colspan``/``rowspan`` kept when greater than 1. An HTML table broken by blank lines is rejoined
   up to its ``</table>``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

import lxml.html
from lxml import etree
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token

from evalsuite.metrics._validation import require_str

_GROUNDING_SPAN = re.compile(r"<\|(ref|det)\|>.*?<\|/\1\|>", re.DOTALL)
_GROUNDING_TAG = re.compile(r"<\|/?(?:ref|det)\|>")
_TABLE_OPEN = re.compile(r"<table\b", re.IGNORECASE)
_TABLE_CLOSE = re.compile(r"</table\s*>", re.IGNORECASE)
_MATH_DELIMITERS = (("$$", "$$"), ("\\[", "\\]"))
# Elements whose text runs on into the neighbouring text; every other element separates words.
_INLINE_TAGS = frozenset(
    {
        *("a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "del", "dfn", "em", "font"),
        *("i", "ins", "kbd", "mark", "q", "s", "samp", "small", "span", "strike", "strong"),
        *("sub", "sup", "tt", "u", "var"),
    }
)
_SPAN_ATTRIBUTES = ("colspan", "rowspan")


Cell = tuple[str, int, int]
"""A table cell: (normalised text, colspan, rowspan)."""


@dataclass(frozen=True)
class Block:
    """One scorable unit of a page.

    ``kind`` is ``"text"`` (``content`` = normalised text) or ``"table"`` (``content`` = canonical
    table HTML, ``rows`` = its cells row by row). ``well_formed`` is False for an HTML table that
    has no closing ``</table>`` or no cell.
    """

    kind: Literal["text", "table"]
    content: str
    rows: tuple[tuple[Cell, ...], ...] = ()
    well_formed: bool = True

    @property
    def cells(self) -> int:
        """Number of table cells (0 for text)."""
        return sum(len(row) for row in self.rows)


def strip_grounding_markup(markdown: str) -> str:
    """Remove DeepSeek-OCR grounding markup.

    That is ``<|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2]]<|/det|>`` spans and stray tags.
    """
    require_str(markdown, "markdown")
    return _GROUNDING_TAG.sub("", _GROUNDING_SPAN.sub("", markdown))


def normalize_text(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends (rule 3's last step)."""
    return " ".join(require_str(text, "text").split())


def parse_blocks(markdown: str) -> list[Block]:
    """The page's text and table blocks in document order (rules in the module docstring)."""
    source = strip_grounding_markup(markdown).replace("\r\n", "\n").replace("\r", "\n")
    return list(_blocks_from_tokens(_parser().parse(source), source.split("\n")))


@cache
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    parser.block.ruler.before(
        "fence",
        "display_math",
        _display_math_rule,
        {"alt": ["paragraph", "reference", "blockquote", "list"]},
    )
    return parser


def _display_math_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """A ``$$…$$`` or ``\\[…\\]`` block: opens at the start of a line, closes at a line end.

    TeX forbids blank lines in display math, so a block not closed before one is not math.
    """
    if state.is_code_block(start_line):
        return False
    first = _line_text(state, start_line)
    opener, closer = next(
        ((opener, closer) for opener, closer in _MATH_DELIMITERS if first.startswith(opener)),
        ("", ""),
    )
    if not opener:
        return False
    lines = [first[len(opener) :]]
    line = start_line
    while not lines[-1].rstrip().endswith(closer):
        line += 1
        if line >= end_line or state.isEmpty(line):
            return False
        lines.append(_line_text(state, line))
    if silent:
        return True
    lines[-1] = lines[-1].rstrip()[: -len(closer)]
    token = state.push("math_block", "math", 0)
    token.block = True
    token.content = "\n".join(lines)
    token.markup = opener
    token.map = [start_line, line + 1]
    state.line = line + 1
    return True


def _line_text(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _blocks_from_tokens(tokens: Sequence[Token], lines: Sequence[str]) -> Iterator[Block]:
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.type == "inline":
            yield from _text_block(_inline_text(token.children or []))
        elif token.type in ("fence", "code_block", "math_block"):
            yield from _text_block(token.content)
        elif token.type == "table_open":
            index = yield from _pipe_table(tokens, index)
        elif token.type == "html_block":
            source = token.content
            if token.level == 0 and token.map and _opens_unclosed_table(source):
                source, end_line = _rejoin_html_table(lines, token.map[0])
                # Skip the tokens markdown-it made of those lines (closing tokens have no map).
                while index < len(tokens) and (tokens[index].map or [-1])[0] < end_line:
                    index += 1
            yield from _html_blocks(source)


def _text_block(text: str) -> Iterator[Block]:
    normalized = normalize_text(text)
    if normalized:
        yield Block("text", normalized)


def _inline_text(children: Sequence[Token]) -> str:
    parts = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def _pipe_table(tokens: Sequence[Token], index: int) -> Generator[Block, None, int]:
    """Consume a markdown-it table up to ``table_close``; yield its block, return the next index."""
    rows: list[list[Cell]] = []
    while tokens[index].type != "table_close":
        token = tokens[index]
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline":
            rows[-1].append((normalize_text(_inline_text(token.children or [])), 1, 1))
        index += 1
    yield _table_block(rows, well_formed=True)
    return index + 1


def _table_block(rows: list[list[Cell]], *, well_formed: bool) -> Block:
    parts = ["<table>"]
    for row in rows:
        parts.append("<tr>")
        for text, colspan, rowspan in row:
            spans = "".join(
                f' {name}="{value}"'
                for name, value in zip(_SPAN_ATTRIBUTES, (colspan, rowspan), strict=True)
                if value > 1
            )
            parts.append(f"<td{spans}>{html.escape(text, quote=False)}</td>")
        parts.append("</tr>")
    parts.append("</table>")
    block = Block("table", "".join(parts), tuple(tuple(row) for row in rows), well_formed)
    return block if block.cells else replace(block, well_formed=False)


def _opens_unclosed_table(source: str) -> bool:
    return len(_TABLE_OPEN.findall(source)) > len(_TABLE_CLOSE.findall(source))


def _rejoin_html_table(lines: Sequence[str], start_line: int) -> tuple[str, int]:
    """Source lines from ``start_line`` through the line that closes every open ``<table>``
    (or the end of the page), and the index of the line after them."""
    opened = closed = 0
    for line_index in range(start_line, len(lines)):
        opened += len(_TABLE_OPEN.findall(lines[line_index]))
        closed += len(_TABLE_CLOSE.findall(lines[line_index]))
        if opened and closed >= opened:
            return "\n".join(lines[start_line : line_index + 1]), line_index + 1
    return "\n".join(lines[start_line:]), len(lines)


def _html_blocks(source: str) -> Iterator[Block]:
    """Tables of an HTML fragment as table blocks, the text between them as text blocks."""
    if not source.strip():
        return
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True)
    try:
        root = lxml.html.fragment_fromstring(source, create_parent="div", parser=parser)
    except (etree.ParserError, ValueError):
        return
    closed = not _opens_unclosed_table(source)
    pending: list[str] = []
    for item in _html_pieces(root, split_tables=True):
        if isinstance(item, str):
            pending.append(item)
            continue
        yield from _text_block("".join(pending))
        pending.clear()
        yield _html_table_block(item, well_formed=closed)
    yield from _text_block("".join(pending))


def _html_pieces(element: etree._Element, *, split_tables: bool) -> Iterator[str | etree._Element]:
    """Text of ``element`` (without its tail) in document order; with ``split_tables`` its tables
    are yielded as elements instead of text."""
    if split_tables and element.tag == "table":
        yield element
        return
    separator = "" if element.tag in _INLINE_TAGS else " "
    yield separator + (element.text or "")
    for child in element:
        if isinstance(child.tag, str):
            yield from _html_pieces(child, split_tables=split_tables)
        yield child.tail or ""
    yield separator


def _html_text(element: etree._Element) -> str:
    return "".join(str(piece) for piece in _html_pieces(element, split_tables=False))


def _html_table_block(table: etree._Element, *, well_formed: bool) -> Block:
    rows = []
    for row in table.iter("tr"):
        if next(row.iterancestors("table"), None) is not table:
            continue
        rows.append(
            [
                (normalize_text(_html_text(cell)), _span(cell, "colspan"), _span(cell, "rowspan"))
                for cell in row
                if cell.tag in ("td", "th")
            ]
        )
    return _table_block(rows, well_formed=well_formed)


def _span(cell: etree._Element, name: str) -> int:
    value = (cell.get(name) or "").strip()
    return max(int(value), 1) if value.isdigit() else 1
