"""OmniDocBench v1.0 markdown splitting (evalsuite.metrics.omnidocbench.v1_0.extract).

Oracles: (a) the official ``md_tex_filter`` output on ~700 generated pages
(``fixtures/omnidocbench/normalize_cases.json.gz``, from opendatalab/OmniDocBench at 895837f);
(b) the predicted elements the official end-to-end runs matched (``cases.json.gz``: contents,
positions, categories of the rows' ``pred_idx``); (c) laws against plain references.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalsuite.metrics.omnidocbench.common.extract import CATEGORIES, PredictedElement
from evalsuite.metrics.omnidocbench.common.normalize import normalize_formula, normalize_text
from evalsuite.metrics.omnidocbench.v1_0.extract import split_markdown
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"


@functools.cache
def generated_pages() -> list[list[Any]]:
    with gzip.open(FIXTURES / "normalize_cases.json.gz", "rt", encoding="utf-8") as file:
        return json.load(file)["pages"]


@functools.cache
def end_to_end_cases() -> list[dict[str, Any]]:
    with gzip.open(FIXTURES / "cases.json.gz", "rt", encoding="utf-8") as file:
        return json.load(file)["cases"]


def as_official(element: PredictedElement) -> dict[str, Any]:
    """The official item dict of an element (keys the official code leaves out are absent)."""
    item: dict[str, Any] = {
        "category_type": element.category,
        "position": list(element.position),
        "content": element.content,
    }
    if element.language is not None:
        item["language"] = element.language
    if element.fine_category is not None:
        item["fine_category_type"] = element.fine_category
    return item


# --------------------------------------------------------------------- (a) generated pages


def test_generated_pages_split_exactly_as_md_tex_filter() -> None:
    pages = generated_pages()
    assert len(pages) >= 600
    mismatches = []
    for index, (markdown, official) in enumerate(pages):
        ours = split_markdown(markdown)
        assert tuple(ours) == CATEGORIES
        assert set(official) <= set(CATEGORIES)
        for category in CATEGORIES:
            mine = [as_official(element) for element in ours[category]]
            if mine != official.get(category, []):
                mismatches.append((index, category, markdown, official.get(category), mine))
                break
    if mismatches:
        lines = [f"{len(mismatches)} page(s) differ from the official md_tex_filter:"]
        for index, category, markdown, official, mine in mismatches[:3]:
            lines += [f"  pages[{index}] {category}: input {markdown!r}"]
            lines += [f"    official {official!r}", f"    ours     {mine!r}"]
        pytest.fail("\n".join(lines))


def test_every_official_item_shape_is_covered() -> None:
    """The generated pages reach every kind of item md_tex_filter makes."""
    kinds = {
        (item["category_type"], item.get("fine_category_type"))
        for _, official in generated_pages()
        for items in official.values()
        for item in items
    }
    assert kinds == {
        ("text_all", "text_block"),
        ("text_all", "code"),
        ("equation_isolated", None),
        ("equation_isolated", "equation_inline"),
        ("html_table", None),
        ("html_table", "md2html_table"),
        ("latex_table", None),
    }


# ------------------------------------------------------------- (b) official end-to-end runs

ELEMENTS: dict[str, tuple[str, Callable[[str], str]]] = {
    # official element: (category of its predictions, normaliser used to drop empty lines)
    "text_block": ("text_all", normalize_text),
    "display_formula": ("equation_isolated", normalize_formula),
    "table": ("html_table", lambda content: content),
}


def official_rows() -> Iterator[tuple[str, str, dict[str, Any], dict[str, list[PredictedElement]]]]:
    """(name, element, row, our split) of each v1.0 row with a prediction, every run."""
    for case in end_to_end_cases():
        if case["prediction_md"] is None:
            continue
        split = split_markdown(case["prediction_md"])
        for run, versions in case["official"].items():
            pairs = versions["v1.0"]["pairs"]
            for element in ELEMENTS:
                for index, row in enumerate(pairs[element]):
                    if row["pred_idx"] != [""]:
                        yield f"{case['id']}/{run}/{element}[{index}]", element, row, split


def test_official_matched_predictions_are_our_elements() -> None:
    """``pred_idx`` indexes the elements left after dropping empty contents/normalisations;
    ``pred_position`` and the category come from the unfiltered list at the same index (v1.0's
    desynchronisation), and table rows give pred 0 no position or category (its ``if pred_idx``)."""
    checked, mismatches = 0, []
    for name, element, row, split in official_rows():
        category, normalize = ELEMENTS[element]
        if element == "table" and len(split["latex_table"]) > len(split["html_table"]):
            category = "latex_table"
        elements = split[category]
        kept = [e for e in elements if e.content and normalize(e.content)]
        first = elements[row["pred_idx"][0]]
        expected = {
            "pred": "".join(kept[index].content for index in row["pred_idx"]),
            "pred_position": first.position[0],
            "pred_category_type": first.fine_category or first.category,
        }
        if element != "table":
            expected["norm_pred"] = "".join(normalize(kept[i].content) for i in row["pred_idx"])
        elif row["pred_idx"] == [0]:
            expected["pred_position"] = expected["pred_category_type"] = ""
        got = {key: row[key] for key in expected}
        checked += 1
        if got != expected:
            mismatches.append(f"{name}: official {got!r}, ours {expected!r}")
    assert checked >= 150
    assert not mismatches, "\n".join(mismatches[:5])


# -------------------------------------------------------------------------------- (c) laws

_FILLER = st.text(alphabet="ab c", min_size=1, max_size=3)


@st.composite
def nested_pages(draw: st.DrawFn, begins: list[str], end: str) -> tuple[str, list[tuple[int, int]]]:
    """Text with balanced, nested begin/end tokens, ≥1 filler character after every token;
    and the outermost (start, end) spans, found by a plain stack scan over the tokens."""
    pieces = [draw(_FILLER)]
    spans: list[tuple[int, int]] = []
    depth, start, length = 0, 0, len(pieces[0])
    for _ in range(draw(st.integers(0, 12))):
        opening = depth == 0 or draw(st.booleans())
        token = draw(st.sampled_from(begins)) if opening else end
        if opening and depth == 0:
            start = length
        depth += 1 if opening else -1
        if not opening and depth == 0:
            spans.append((start, length + len(token)))
        filler = draw(_FILLER)
        pieces += [token, filler]
        length += len(token) + len(filler)
    while depth:
        depth -= 1
        if depth == 0:
            spans.append((start, length + len(end)))
        pieces += [end, "a"]
        length += len(end) + 1
    return "".join(pieces), spans


@given(nested_pages(["<table>", '<table class="x">', "<table border=1>"], "</table>"))
def test_html_tables_are_the_outermost_balanced_tables(
    page: tuple[str, list[tuple[int, int]]],
) -> None:
    markdown, spans = page
    tables = split_markdown(markdown)["html_table"]
    assert [(t.content, t.position) for t in tables] == [(markdown[s:e], (s, e)) for s, e in spans]


@given(nested_pages(["\\begin{tabular}{c}", "\\begin{tabular}{l|r}"], "\\end{tabular}"))
def test_tabulars_are_the_outermost_balanced_ones_plus_one_character(
    page: tuple[str, list[tuple[int, int]]],
) -> None:
    """The official scan ends a tabular 14 characters after its 13-character end token."""
    markdown, spans = page
    tables = split_markdown(markdown)["latex_table"]
    expected = [(markdown[s : e + 1], (s, min(e + 1, len(markdown)))) for s, e in spans]
    assert [(t.content, t.position) for t in tables] == expected


_WORD = st.text(alphabet="abcXYZ0189中文,.;:!?", min_size=1, max_size=10)
_PARAGRAPH = st.lists(_WORD, min_size=1, max_size=6).map(" ".join)
_FORMULA_BODY = st.lists(st.text("xy2+= ", min_size=1, max_size=4), min_size=1, max_size=3)


@given(
    st.lists(
        st.one_of(_PARAGRAPH, _FORMULA_BODY.map(lambda body: ("\\[", " ".join(body), "\\]"))),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.sampled_from(["\n", "\n\n", " \n\n ", "\n\n\n", "\n \n"]), min_size=8, max_size=8),
)
def test_text_and_display_formulas_lose_no_characters(
    blocks: list[str | tuple[str, str, str]], separators: list[str]
) -> None:
    """Paragraphs of plain words come back as text (whitespace aside, in order); each display
    formula ``\\[…\\]`` becomes one element with its whitespace deleted."""
    markdown = "".join(
        separator + ("".join(block) if isinstance(block, tuple) else block)
        for separator, block in zip(separators, blocks, strict=False)
    )
    split = split_markdown(markdown)
    text = "".join(block for block in blocks if isinstance(block, str))
    assert "".join("".join(e.content.split()) for e in split["text_all"]) == "".join(text.split())
    formulas = ["\\[" + "".join(b[1].split()) + "\\]" for b in blocks if isinstance(b, tuple)]
    assert [e.content for e in split["equation_isolated"]] == formulas
    assert all(e.fine_category is None for e in split["equation_isolated"])


@given(st.lists(_PARAGRAPH, min_size=2, max_size=8))
def test_paragraph_positions_drift_by_the_uncounted_separators(paragraphs: list[str]) -> None:
    """Paragraph i starts 2·i characters before its true offset (the official position bug)."""
    markdown = "\n\n".join(paragraphs)
    offsets = [m.start() for m in re.finditer(r"(?:^|(?<=\n\n))[^\n]", markdown)]
    positions = [e.position for e in split_markdown(markdown)["text_all"]]
    assert positions == [
        (offset - 2 * i, offset - 2 * i + len(p))
        for i, (offset, p) in enumerate(zip(offsets, paragraphs, strict=True))
    ]
