"""TEDS: laws, hand-worked values, PubTabNet's quirks, real PubTabNet tables, bad input.

The differential oracle is ``baseline_teds`` of ``evalsuite.perf.tables``: PubTabNet's
``TEDS.evaluate`` written out plainly (APTED, a pure-Python Levenshtein per rename, no caching,
no shortcut). ``teds`` must agree within 1e-12: its compiled tree edit distance finds the same
minimum but adds the fractional rename costs in another order.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics import teds
from evalsuite.metrics.tables import FINIXDOCBENCH_MAX_CELLS
from evalsuite.perf.tables import (
    baseline_teds,
    edited_table,
    financial_table,
    restructured_table,
)
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data

FIXTURES = TEST_FIXTURES / "tables"


def document(rows: str) -> str:
    """A full HTML document holding one table with the given inner HTML."""
    return f"<html><body><table>{rows}</table></body></html>"


# ---------------------------------------------------------------- hypothesis tables
# A table is (sectioned, rows); a row a list of cells; a cell (tag, colspan, rowspan, html).

_INLINE_TAGS = ("b", "i", "sup", "unk")
_text = st.text(alphabet="ab1 <&é", max_size=3).map(escape)
_inline = st.recursive(
    _text,
    lambda inner: st.builds(
        lambda tag, parts: f"<{tag}>{''.join(parts)}</{tag}>",
        st.sampled_from(_INLINE_TAGS),
        st.lists(inner, max_size=2),
    ),
    max_leaves=4,
)
_span = st.sampled_from([None, 1, 2, 3])
_cell = st.tuples(
    st.sampled_from(["td", "td", "td", "th"]), _span, _span, st.lists(_inline, max_size=3)
).map(lambda c: (c[0], c[1], c[2], "".join(c[3])))
_rows = st.lists(st.lists(_cell, min_size=1, max_size=3), min_size=1, max_size=3)
_tables = st.tuples(st.booleans(), _rows)


def render(table: tuple[bool, list[list[tuple[Any, ...]]]]) -> str:
    """HTML document of a generated table (sections: first row in thead, the rest in tbody)."""
    sectioned, rows = table

    def cell_html(tag: str, colspan: int | None, rowspan: int | None, content: str) -> str:
        spans = "".join(
            f' {name}="{value}"'
            for name, value in (("colspan", colspan), ("rowspan", rowspan))
            if value is not None
        )
        return f"<{tag}{spans}>{content}</{tag}>"

    row_html = ["<tr>" + "".join(cell_html(*cell) for cell in row) + "</tr>" for row in rows]
    if sectioned:
        return document(f"<thead>{row_html[0]}</thead><tbody>{''.join(row_html[1:])}</tbody>")
    return document("".join(row_html))


@st.composite
def table_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """(pred, gt): an independent table, or gt with a few cells, rows or spans changed."""
    gt = draw(_tables)
    if draw(st.booleans()):
        return render(draw(_tables)), render(gt)
    sectioned, rows = gt
    rows = [list(row) for row in rows]
    for _ in range(draw(st.integers(1, 3))):
        r = draw(st.integers(0, len(rows) - 1))
        action = draw(st.sampled_from(["content", "span", "tag", "drop_row", "add_cell"]))
        c = draw(st.integers(0, len(rows[r]) - 1))
        tag, colspan, rowspan, content = rows[r][c]
        if action == "content":
            rows[r][c] = (tag, colspan, rowspan, draw(st.lists(_inline, max_size=3).map("".join)))
        elif action == "span":
            rows[r][c] = (tag, draw(_span), rowspan, content)
        elif action == "tag":
            rows[r][c] = ("th" if tag == "td" else "td", colspan, rowspan, content)
        elif action == "drop_row" and len(rows) > 1:
            del rows[r]
        else:
            rows[r].insert(c, draw(_cell))
    return render((sectioned, rows)), render(gt)


_SETTINGS = settings(max_examples=80, deadline=None)


@_SETTINGS
@given(_tables, st.booleans())
def test_teds_of_a_table_with_itself_is_one(table: Any, structure_only: bool) -> None:
    html = render(table)
    assert teds(html, html, structure_only=structure_only) == 1.0
    assert baseline_teds(html, html, structure_only) == 1.0


@_SETTINGS
@given(table_pairs(), st.booleans())
def test_teds_equals_the_direct_apted_implementation_within_1e_12(
    pair: tuple[str, str], structure_only: bool
) -> None:
    pred, gt = pair
    expected = baseline_teds(pred, gt, structure_only)
    assert teds(pred, gt, structure_only=structure_only) == pytest.approx(expected, abs=1e-12)


@_SETTINGS
@given(table_pairs())
def test_teds_ranges_symmetry_and_structure_only_bound(pair: tuple[str, str]) -> None:
    pred, gt = pair
    full = teds(pred, gt)
    structure = teds(pred, gt, structure_only=True)
    # distance <= (tree nodes of pred) + (tree nodes of gt) <= 2 max(n_pred, n_gt)
    assert -1.0 <= full <= 1.0
    # structure_only costs are pointwise <= the full costs, with the same n
    assert full <= structure <= 1.0
    # insert = delete = 1 and symmetric rename costs; APTED may add in another order
    assert teds(gt, pred) == pytest.approx(full, abs=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_larger_table_with_cell_and_structure_errors_equals_the_direct_implementation(
    seed: int,
) -> None:
    gt = financial_table(seed, rows=14, columns=7)
    for pred in (edited_table(gt, seed, rate=0.3), restructured_table(gt, seed, rate=0.2)):
        for structure_only in (False, True):
            expected = baseline_teds(pred, gt, structure_only)
            assert expected < 1.0 or structure_only  # cell edits leave the structure
            assert teds(pred, gt, structure_only=structure_only) == pytest.approx(
                expected, abs=1e-12
            )


# ---------------------------------------------------------------- hand-worked values


def test_one_renamed_cell() -> None:
    gt = document("<tr><td>ab</td><td>cd</td></tr><tr><td>ef</td><td>gh</td></tr>")
    pred = document("<tr><td>ab</td><td>cx</td></tr><tr><td>ef</td><td>gh</td></tr>")
    # n = 2 tr + 4 td = 6; only rename "cd" -> "cx": Levenshtein 1 over 2 tokens = 0.5
    assert teds(pred, gt) == 1 - 0.5 / 6
    # structure_only: the two trees are the same
    assert teds(pred, gt, structure_only=True) == 1.0


def test_a_deleted_row() -> None:
    gt = document(
        "<tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr><tr><td>e</td><td>f</td></tr>"
    )
    pred = document("<tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr>")
    # n = max(2 + 4, 3 + 6) = 9; insert one tr and its 2 td: distance 3
    assert teds(pred, gt) == 1 - 3 / 9
    assert teds(pred, gt, structure_only=True) == 1 - 3 / 9


def test_changed_colspan_costs_one_whatever_the_text() -> None:
    # n = 2 (tr, td) on both sides; rename td(colspan 2) -> td(colspan 1) costs 1
    assert teds(document('<tr><td colspan="2">x</td></tr>'), document("<tr><td>x</td></tr>")) == 0.5
    # int() of the attribute, as PubTabNet: " 2 " is 2
    spaced = document('<tr><td colspan=" 2 ">x</td></tr>')
    assert teds(spaced, document('<tr><td colspan="2">x</td></tr>')) == 1.0


def test_score_is_not_clamped_below_zero() -> None:
    # pred: a chain tr > th > b > i > u (5 nodes); gt: 5 sibling tr. Only one pred node can
    # map onto a gt tr (the pred tr, cost 0): delete th, b, i, u and insert 4 tr: distance 8.
    pred = document("<tr><th><b><i><u></u></i></b></th></tr>")
    gt = document("<tr></tr>" * 5)
    assert teds(pred, gt) == 1 - 8 / 5


def test_nested_table_in_a_cell_is_tokens_but_counted() -> None:
    pred = document("<tr><td><table><tr><td>n</td></tr></table></td></tr>")
    gt = document("<tr><td>n</td></tr>")
    # pred cell tokens: <table> <tr> <td> n </td> </tr> </table> (7) vs gt's n: Levenshtein 6;
    # n = max(tr, td, table, tr, td = 5; 2) = 5
    assert teds(pred, gt) == 1 - (6 / 7) / 5


# ---------------------------------------------------------------- PubTabNet's quirks


def test_th_text_is_ignored_but_its_inner_elements_are_nodes() -> None:
    assert teds(document("<tr><th>abc</th></tr>"), document("<tr><th>xyz</th></tr>")) == 1.0
    # n = max(tr, th, b = 3; 2); delete the b node: distance 1
    pred, gt = document("<tr><th><b>a</b></th></tr>"), document("<tr><th>a</th></tr>")
    assert teds(pred, gt) == 1 - 1 / 3


def test_cell_tokens_are_tags_and_characters() -> None:
    # <b> x </b> vs x: Levenshtein 2 over 3 tokens; n = max(tr, td, b = 3; 2) = 3
    assert teds(document("<tr><td><b>x</b></td></tr>"), document("<tr><td>x</td></tr>")) == (
        1 - (2 / 3) / 3
    )
    # the tail after </b> is part of the cell: <b> a </b> c vs a c: distance 2 over 4
    pred, gt = document("<tr><td><b>a</b>c</td></tr>"), document("<tr><td>ac</td></tr>")
    assert teds(pred, gt) == 1 - (2 / 4) / 3
    # unk has no closing token: <unk> a vs a: distance 1 over 2
    assert teds(document("<tr><td><unk>a</unk></td></tr>"), document("<tr><td>a</td></tr>")) == (
        1 - (1 / 2) / 3
    )


def test_structure_only_still_counts_elements_inside_cells() -> None:
    pred = document("<tr><td><b>a</b></td></tr><tr><td>x</td></tr>")
    gt = document("<tr><td>a</td></tr>")
    # trees differ by one tr and one td (distance 2); n_pred counts the b too: 5
    assert teds(pred, gt, structure_only=True) == 1 - 2 / 5


def test_bare_table_fragment_is_wrapped() -> None:
    rows = "<tr><td>ab</td><td>cd</td></tr>"
    fragment, full = f"  <!-- a\nnote --> <TABLE border='1'>{rows}</TABLE>", document(rows)
    edited = document("<tr><td>ab</td><td>c</td></tr>")
    assert teds(fragment, full) == 1.0
    assert teds(edited, fragment) == teds(edited, full) == 1 - 0.5 / 3
    # PubTabNet itself finds no body/table in a bare fragment (lxml returns the table element)
    assert baseline_teds(fragment, full) == 0.0


def test_comments_are_removed() -> None:
    pred = document("<tr><td>a<!-- note -->b</td></tr><!-- <tr><td>x</td></tr> -->")
    assert teds(pred, document("<tr><td>ab</td></tr>")) == 1.0


@pytest.mark.parametrize(
    "other",
    [
        "",
        "   \n",
        "<!-- only a comment -->",
        "<html><body><p>no table here</p></body></html>",
        # PubTabNet reads body/table only: a table inside a div is not found
        "<html><body><div><table><tr><td>a</td></tr></table></div></body></html>",
        "just text",
    ],
)
def test_empty_input_or_no_table_scores_zero(other: str) -> None:
    table = document("<tr><td>a</td></tr>")
    assert teds(other, table) == 0.0
    assert teds(table, other) == 0.0


def test_max_cells_safeguard() -> None:
    assert FINIXDOCBENCH_MAX_CELLS == 50_000
    gt = document("<tr><th>h</th><td>a</td></tr><tr><td>b</td><td>c</td></tr>")
    pred = document("<tr><th>h</th><td>a</td></tr><tr><td>b</td><td>x</td></tr>")
    assert teds(pred, gt, max_cells=4) == teds(pred, gt) == 1 - 1 / 6
    assert teds(pred, gt, max_cells=3) == 0.0  # 4 cells, th counted
    assert teds(pred, gt, max_cells=FINIXDOCBENCH_MAX_CELLS) == teds(pred, gt)


# ---------------------------------------------------------------- PubTabNet-format records


def pubtabnet_html(record: dict[str, Any]) -> str:
    """A record's HTML: cell tokens go after each ``<td>`` or ``>`` structure token, single
    characters HTML-escaped, as PubTabNet's examples/utils.py builds it."""
    pieces: list[str] = []
    cells = iter(record["html"]["cells"])
    for token in record["html"]["structure"]["tokens"]:
        pieces.append(token)
        if token in ("<td>", ">"):
            pieces.extend(escape(t) if len(t) == 1 else t for t in next(cells)["tokens"])
    return document("".join(pieces))


def perturbed(table_html: str) -> str:
    """``table_html`` without its last row, and the first character dropped from the 3rd, 7th,
    11th, ... plain ``<td>`` cell where that character is a letter or digit."""
    start, end = table_html.rfind("<tr>"), table_html.rfind("</tr>") + len("</tr>")
    parts = (table_html[:start] + table_html[end:]).split("<td>")
    for index in range(3, len(parts), 4):
        if parts[index][:1].isalnum():
            parts[index] = parts[index][1:]
    return "<td>".join(parts)


def load_records(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def test_pubtabnet_like_fixture_records() -> None:
    records = {r["filename"]: r for r in load_records(FIXTURES / "pubtabnet_like.jsonl")}
    for record in records.values():
        gt = pubtabnet_html(record)
        assert teds(gt, gt) == 1.0
        pred = perturbed(gt)
        assert teds(pred, gt) == pytest.approx(baseline_teds(pred, gt), abs=1e-12)
        assert teds(pred, gt, structure_only=True) == pytest.approx(
            baseline_teds(pred, gt, True), abs=1e-12
        )
    gt = pubtabnet_html(records["handmade_plain.png"])
    # gt: thead, tr, 2 td (each with a b inside), tbody, 2 tr, 4 td: n = 13. pred loses the
    # last tr and its 2 td (distance 3) and "TP53" -> "P53" (Levenshtein 1 over 4 tokens)
    assert teds(perturbed(gt), gt) == 1 - (3 + 1 / 4) / 13
    spans = pubtabnet_html(records["handmade_spans.png"])
    assert '<td colspan="2"><b>Dose</b></td>' in spans and "A &amp; B" in spans


def _pubtabnet_examples() -> list[dict[str, Any]]:
    return load_records(shared_data("pubtabnet", "PubTabNet_Examples.jsonl"))


def test_real_pubtabnet_examples() -> None:
    records = _pubtabnet_examples()
    assert len(records) == 20
    for record in records:
        gt = pubtabnet_html(record)
        assert teds(gt, gt) == 1.0
        assert teds(gt, gt, structure_only=True) == 1.0
    # the direct implementation is slow: compare on the four smallest tables
    for record in sorted(records, key=lambda r: len(r["html"]["cells"]))[:4]:
        gt = pubtabnet_html(record)
        pred = perturbed(gt)
        score = teds(pred, gt)
        assert score == pytest.approx(baseline_teds(pred, gt), abs=1e-12)
        assert score < 1.0
        assert teds(pred, gt, structure_only=True) == pytest.approx(
            baseline_teds(pred, gt, True), abs=1e-12
        )


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [None, b"<table></table>", 3])
def test_non_str_input_is_a_type_error_naming_the_argument(bad: Any) -> None:
    table = document("<tr><td>a</td></tr>")
    with pytest.raises(TypeError, match="pred_html"):
        teds(bad, table)
    with pytest.raises(TypeError, match="gt_html"):
        teds(table, bad)


def test_bad_options() -> None:
    table = document("<tr><td>a</td></tr>")
    with pytest.raises(TypeError, match="structure_only"):
        teds(table, table, structure_only="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_cells"):
        teds(table, table, max_cells=True)
    with pytest.raises(ValueError, match="max_cells"):
        teds(table, table, max_cells=-1)


def test_malformed_html_is_a_value_error_naming_the_argument() -> None:
    table = document("<tr><td>a</td></tr>")
    with pytest.raises(ValueError, match=r"gt_html.*colspan"):
        teds(table, document('<tr><td colspan="2.0">a</td></tr>'))
    with pytest.raises(ValueError, match=r"pred_html.*rowspan"):
        teds(document('<tr><td rowspan="">a</td></tr>'), table)
    declared = '<?xml version="1.0" encoding="utf-8"?><html><body><table></table></body></html>'
    with pytest.raises(ValueError, match="pred_html"):
        teds(declared, table)
    # both tables empty: PubTabNet divides 0 by 0
    with pytest.raises(ValueError, match="pred_html and gt_html"):
        teds(document(""), "<table></table>")
