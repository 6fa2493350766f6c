"""Block parsing for the FinixDocBench evaluator: tables to canonical HTML, text blocks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics.markdown_blocks import (
    Block,
    normalize_text,
    parse_blocks,
    strip_grounding_markup,
)


def texts(markdown: str) -> list[str]:
    return [block.content for block in parse_blocks(markdown) if block.kind == "text"]


def tables(markdown: str) -> list[Block]:
    return [block for block in parse_blocks(markdown) if block.kind == "table"]


def test_pipe_table_with_alignment_row_becomes_canonical_html() -> None:
    markdown = "| Item | 2023 | 2022 |\n|:-----|-----:|:----:|\n| Revenue | 412.6 | 380.6 |\n"
    (table,) = parse_blocks(markdown)
    assert table.kind == "table"
    assert table.content == (
        "<table><tr><td>Item</td><td>2023</td><td>2022</td></tr>"
        "<tr><td>Revenue</td><td>412.6</td><td>380.6</td></tr></table>"
    )
    assert table.rows == (
        (("Item", 1, 1), ("2023", 1, 1), ("2022", 1, 1)),
        (("Revenue", 1, 1), ("412.6", 1, 1), ("380.6", 1, 1)),
    )
    assert table.cells == 6
    assert table.well_formed


def test_escaped_pipe_stays_inside_its_cell() -> None:
    (table,) = tables("| Net debt \\| cash | x |\n|---|---|\n| (23.4) | y |\n")
    assert table.rows[0] == (("Net debt | cash", 1, 1), ("x", 1, 1))


def test_pipe_table_cells_lose_emphasis_and_escape_html_specials() -> None:
    (table,) = tables("| **Total** | a < b & c |\n|---|---|\n| `x\\|y` | [link](u) |\n")
    assert table.rows == ((("Total", 1, 1), ("a < b & c", 1, 1)), (("x|y", 1, 1), ("link", 1, 1)))
    assert "<td>a &lt; b &amp; c</td>" in table.content


def test_short_pipe_row_is_padded_like_gfm() -> None:
    (table,) = tables("| a | b |\n|---|---|\n| 1 |\n")
    assert table.rows[1] == (("1", 1, 1), ("", 1, 1))


def test_html_table_with_spans_headers_and_inline_markup() -> None:
    markdown = (
        "<table>\n<thead><tr><th rowspan='2'>Segment</th><th colspan=\"2\">Revenue</th></tr>"
        "<tr><th>2023</th><th>2022</th></tr></thead>\n"
        "<tbody><tr><td><b>Total</b></td><td>H<sub>2</sub>O</td><td>a<br>b</td></tr></tbody>\n"
        "</table>\n"
    )
    (table,) = parse_blocks(markdown)
    assert table.content == (
        '<table><tr><td rowspan="2">Segment</td><td colspan="2">Revenue</td></tr>'
        "<tr><td>2023</td><td>2022</td></tr>"
        "<tr><td>Total</td><td>H2O</td><td>a b</td></tr></table>"
    )
    assert table.cells == 7


def test_html_table_split_by_blank_lines_is_rejoined() -> None:
    markdown = "Before.\n\n<table><tr><td>a</td></tr>\n\n<tr><td>b</td></tr>\n\n</table>\n\nAfter."
    blocks = parse_blocks(markdown)
    assert [block.kind for block in blocks] == ["text", "table", "text"]
    assert blocks[1].rows == ((("a", 1, 1),), (("b", 1, 1),))
    assert [blocks[0].content, blocks[2].content] == ["Before.", "After."]


def test_rejoined_table_lines_are_not_parsed_twice() -> None:
    markdown = (
        "<table><tr><td>a</td></tr>\n\nstray</td></tr>\n\n<tr><td>b</td></tr></table>\n\nEnd."
    )
    blocks = parse_blocks(markdown)
    assert [block.kind for block in blocks] == ["table", "text"]
    assert blocks[0].rows[0] == (("a", 1, 1),) and blocks[0].rows[-1] == (("b", 1, 1),)
    assert blocks[1].content == "End."


def test_deepseek_ocr_page_with_grounding_markup_and_one_line_table() -> None:
    markdown = (
        "<|ref|>title<|/ref|><|det|>[[10, 20, 300, 40]]<|/det|>\n# Results\n\n"
        "<|ref|>table<|/ref|><|det|>[[10, 50, 900, 400]]<|/det|>\n"
        '<table><tr><td colspan="2">Q1</td></tr><tr><td>1</td><td>2</td></tr></table>\n\n'
        "<|ref|>image<|/ref|><|det|>[[10, 410, 900, 800]]<|/det|>\n![](images/0.jpg)\n"
    )
    blocks = parse_blocks(markdown)
    assert [(block.kind, block.content) for block in blocks] == [
        ("text", "Results"),
        (
            "table",
            '<table><tr><td colspan="2">Q1</td></tr><tr><td>1</td><td>2</td></tr></table>',
        ),
    ]


def test_strip_grounding_markup_removes_spans_and_stray_tags() -> None:
    text = "<|ref|>text<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\nBody <|det|> end<|/ref|>"
    assert strip_grounding_markup(text) == "\nBody  end"


def test_nested_lists_give_one_block_per_item_in_order() -> None:
    markdown = "Intro:\n- first\n  - nested *one*\n  - nested two\n- second\n\n  continued\n"
    assert texts(markdown) == ["Intro:", "first", "nested one", "nested two", "second", "continued"]


def test_code_fence_with_pipes_is_one_text_block_not_a_table() -> None:
    markdown = "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```\n"
    assert parse_blocks(markdown) == [Block("text", "| a | b | |---|---| | 1 | 2 |")]


def test_blocks_split_at_blank_lines_and_block_starts() -> None:
    markdown = (
        "# Title\nfirst paragraph\nstill first\n\nsecond paragraph\n> quoted\n\n"
        "text\n$$\nx = 1\n$$\nafter math\n\\[ y \\]\n"
    )
    assert texts(markdown) == [
        "Title",
        "first paragraph still first",
        "second paragraph",
        "quoted",
        "text",
        "x = 1",
        "after math",
        "y",
    ]


def test_unclosed_display_math_stays_paragraph_text() -> None:
    assert texts("costs $$5\n\nnext") == ["costs $$5", "next"]
    assert texts("$$ a\n\nb $$") == ["$$ a", "b $$"]


def test_normalisation_drops_markup_images_and_collapses_whitespace() -> None:
    markdown = (
        "## *Heading*   with  **bold**\n\n"
        "![chart](c.png) See [the note](n.html) on p.\u00a03 &amp; <sup>2</sup> ~~old~~ `code`\n\n"
        '<div align="center"><img src="x.png"> Caption <p>text</p></div>\n'
    )
    assert texts(markdown) == [
        "Heading with bold",
        "See the note on p. 3 & 2 old code",
        "Caption text",
    ]


def test_image_only_and_empty_blocks_are_dropped() -> None:
    assert parse_blocks("![only](a.png)\n\n<img src='b.png'>\n\n---\n\n   \n") == []
    assert parse_blocks("") == []


def test_unparseable_html_tables_are_flagged() -> None:
    (unclosed,) = tables("<table><tr><td>open")
    assert unclosed.rows == ((("open", 1, 1),),) and not unclosed.well_formed
    (empty,) = tables("<table></table>")
    assert empty.cells == 0 and not empty.well_formed


def test_bad_span_attributes_fall_back_to_one() -> None:
    (table,) = tables('<table><tr><td colspan="x">a</td><td rowspan="0">b</td></tr></table>')
    assert table.rows == ((("a", 1, 1), ("b", 1, 1)),)


@pytest.mark.parametrize("value", [None, b"# bytes", 3])
def test_non_str_input_raises_type_error_naming_the_argument(value: object) -> None:
    with pytest.raises(TypeError, match="markdown"):
        parse_blocks(value)  # type: ignore[arg-type]


def test_normalize_text_collapses_unicode_whitespace() -> None:
    assert normalize_text("  a\t\nb\u2003 c  ") == "a b c"


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab |-#*>`$\\[]<>/tdrable\n\t!()&;:_~=")), max_size=80)
)
def test_any_text_parses_into_nonempty_normalised_blocks(markdown: str) -> None:
    for block in parse_blocks(markdown):
        assert block.content
        if block.kind == "text":
            assert normalize_text(block.content) == block.content
        else:
            assert block.content.startswith("<table>") and block.content.endswith("</table>")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.text(alphabet="abc 12|*", max_size=6), min_size=1, max_size=4),
        min_size=1,
        max_size=5,
    )
)
def test_pipe_and_html_spellings_of_a_table_agree(rows: list[list[str]]) -> None:
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]

    def escape_pipe(cell: str) -> str:
        return cell.replace("|", "\\|").replace("*", "\\*")

    pipe = "\n".join(
        ["| " + " | ".join(escape_pipe(c) for c in rows[0]) + " |", "|" + "---|" * width]
        + ["| " + " | ".join(escape_pipe(c) for c in row) + " |" for row in rows[1:]]
    )
    html = (
        "<table>"
        + "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
        + "</table>"
    )
    (from_pipe,) = tables(pipe)
    (from_html,) = tables(html)
    assert from_pipe.rows == from_html.rows
    assert from_pipe.rows == tuple(tuple((normalize_text(c), 1, 1) for c in row) for row in rows)
