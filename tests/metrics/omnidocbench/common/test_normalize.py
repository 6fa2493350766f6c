"""OmniDocBench v1.0 normalisation (evalsuite.metrics.omnidocbench.common.normalize).

Oracles: (a) the official functions' outputs on generated inputs
(``fixtures/omnidocbench/normalize_cases.json.gz``, made by ``gen_normalize_cases.py`` from
opendatalab/OmniDocBench at 895837f); (b) the ``norm_gt``/``norm_pred`` fields of the official
end-to-end runs (``fixtures/omnidocbench/cases.json.gz``); (c) laws against plain references.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics.omnidocbench.common.normalize import (
    LatexmlUnavailableError,
    collapse_repeated_chars,
    latex_table_to_html,
    markdown_tables_to_html,
    normalize_formula,
    normalize_html_table,
    normalize_table,
    normalize_text,
    strip_markdown_fences,
)
from evalsuite.metrics.omnidocbench.v1_0.extract import split_markdown
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"
needs_latexml = pytest.mark.skipif(
    shutil.which("latexmlc") is None,
    reason="latexmlc is not installed (apt install latexml); only LaTeX-table cases need it",
)


@functools.cache
def generated() -> dict[str, Any]:
    with gzip.open(FIXTURES / "normalize_cases.json.gz", "rt", encoding="utf-8") as file:
        return json.load(file)


@functools.cache
def end_to_end() -> dict[str, Any]:
    with gzip.open(FIXTURES / "cases.json.gz", "rt", encoding="utf-8") as file:
        return json.load(file)


def report(kind: str, mismatches: list[tuple[str, Any, Any, Any]]) -> str:
    """A failure message naming the first differing cases."""
    lines = [f"{len(mismatches)} {kind} case(s) differ from the official v1.0 output:"]
    for name, given_input, official, ours in mismatches[:5]:
        lines += [f"  {name}: input {given_input!r}", f"    official {official!r}"]
        lines.append(f"    ours     {ours!r}")
    return "\n".join(lines)


# --------------------------------------------------------------------- (a) generated cases

FUNCTIONS: dict[str, tuple[Callable[[str], str], int]] = {
    # kind: (our function, least number of generated cases)
    "text": (normalize_text, 800),
    "formula": (normalize_formula, 600),
    "html_table": (normalize_html_table, 400),
    "fences": (strip_markdown_fences, 100),
    "repeated": (collapse_repeated_chars, 100),
    "markdown_tables": (markdown_tables_to_html, 200),
}


@pytest.mark.filterwarnings("ignore::bs4.XMLParsedAsHTMLWarning")  # the official code warns too
@pytest.mark.filterwarnings("ignore::DeprecationWarning:pylatexenc")
@pytest.mark.parametrize("kind", sorted(FUNCTIONS))
def test_generated_cases_equal_the_official_outputs(kind: str) -> None:
    function, least = FUNCTIONS[kind]
    cases = generated()[kind]
    assert len(cases) >= least
    mismatches = []
    for index, (given_input, official) in enumerate(cases):
        ours = function(given_input)
        if ours != official:
            mismatches.append((f"{kind}[{index}]", given_input, official, ours))
    assert not mismatches, report(kind, mismatches)


@needs_latexml
def test_generated_latex_tables_equal_the_official_latexml_outputs() -> None:
    """Slow (~25 s here): one latexmlc process per generated LaTeX table (24), four at a time;
    each table is an official LaTeXML output to match, and one left out would go unchecked."""
    cases = generated()["latex_table"]
    assert len(cases) >= 20
    with ThreadPoolExecutor(max_workers=4) as pool:
        htmls = list(pool.map(latex_table_to_html, [latex for latex, _, _ in cases]))
    mismatches = []
    for index, ((latex, official_html, official), html) in enumerate(
        zip(cases, htmls, strict=True)
    ):
        if html != official_html:
            mismatches.append((f"latex_table[{index}] html", latex, official_html, html))
        elif normalize_html_table(html) != official:
            mismatches.append(
                (f"latex_table[{index}]", latex, official, normalize_html_table(html))
            )
    assert not mismatches, report("latex_table", mismatches)
    assert normalize_table(cases[0][0], "latex") == cases[0][2]


def test_latex_tables_without_latexml_raise_an_actionable_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LatexmlUnavailableError, match="apt install latexml"):
        normalize_table("\\begin{tabular}{c}a\\end{tabular}", "latex")


def test_normalize_table_rejects_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="'html' or 'latex'"):
        normalize_table("<table></table>", "markdown")


# ------------------------------------------------------------- (b) official end-to-end runs


def official_rows(element: str) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, case, row) of every v1.0 matched row of ``element`` in every run."""
    for case in end_to_end()["cases"]:
        for run, versions in case["official"].items():
            for index, row in enumerate(versions["v1.0"]["pairs"][element]):
                yield f"{case['id']}/{run}/{element}[{index}]", case, row


@pytest.mark.parametrize(
    ("element", "normalize"),
    [("text_block", normalize_text), ("display_formula", normalize_formula)],
)
def test_official_runs_normalise_text_and_formulas_as_we_do(
    element: str, normalize: Callable[[str], str]
) -> None:
    mismatches, checked = [], 0
    for name, _, row in official_rows(element):
        for side in ("gt", "pred"):
            if len(row[f"{side}_idx"]) == 1 and row[f"{side}_idx"] != [""]:
                checked += 1
                if normalize(row[side]) != row[f"norm_{side}"]:
                    mismatches.append(
                        (f"{name}.{side}", row[side], row[f"norm_{side}"], normalize(row[side]))
                    )
    assert checked >= (200 if element == "text_block" else 30)
    assert not mismatches, report(element, mismatches)


def table_rows(table_format: str) -> list[tuple[str, dict[str, Any]]]:
    """Table rows whose page v1.0 scores in ``table_format`` (latex iff the page has more LaTeX
    than HTML tables; the official code keeps only pages agreeing with the run's format)."""
    rows = []
    for name, case, row in official_rows("table"):
        split = split_markdown(case["prediction_md"])
        is_latex = len(split["latex_table"]) > len(split["html_table"])
        if is_latex == (table_format == "latex"):
            rows.append((name, row))
    return rows


def test_official_runs_normalise_html_tables_as_we_do() -> None:
    rows = table_rows("html")
    mismatches = []
    for name, row in rows:
        for side, value in (("gt", row["gt"]), ("pred", row["pred"])):
            if normalize_table(value) != row[f"norm_{side}"]:
                mismatches.append(
                    (f"{name}.{side}", value, row[f"norm_{side}"], normalize_table(value))
                )
    assert len(rows) >= 20
    assert not mismatches, report("table", mismatches)


@needs_latexml
def test_official_runs_normalise_latex_tables_as_we_do() -> None:
    rows = table_rows("latex")
    assert rows, "the latex_table_page run scores a LaTeX table"
    for name, row in rows:
        assert normalize_table(row["pred"], "latex") == row["norm_pred"], name
        assert normalize_table(row["gt"]) == row["norm_gt"], name


# -------------------------------------------------------------------------------- (c) laws

_TEXT_ALPHABET = st.characters(codec="utf-8", exclude_characters="$\\/")
_LATEXISH = st.text(alphabet="ab1 _^{}\\$()[]中.\n", max_size=30)


def word_filter(text: str) -> str:
    """The reference: keep the characters ``re``'s Unicode ``\\w`` accepts, one at a time."""
    return "".join(char for char in text if char.isalnum() or char == "_")


@settings(max_examples=300)
@given(st.text(alphabet=_TEXT_ALPHABET, max_size=60))
def test_text_without_math_or_escapes_keeps_exactly_its_word_characters(text: str) -> None:
    assert normalize_text(text) == word_filter(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_LATEXISH, st.text(max_size=40)))
def test_normalised_text_is_word_characters_and_a_fixed_point(text: str) -> None:
    normalized = normalize_text(text)
    assert all(char.isalnum() or char == "_" for char in normalized)
    assert normalize_text(normalized) == normalized


@given(st.text(alphabet="a_ -.。中1!\n$", max_size=80))
def test_collapsing_repeats_leaves_no_long_run_and_is_idempotent(text: str) -> None:
    collapsed = collapse_repeated_chars(text)
    assert not re.search(r"_{5}| {5}|([^a-zA-Z0-9])\1{10}", collapsed)
    assert collapse_repeated_chars(collapsed) == collapsed


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\\"), max_size=40))
def test_formulas_without_backslashes_only_lose_dots_at_the_ends_spaces_and_case(
    latex: str,
) -> None:
    assert normalize_formula(latex) == latex.strip(".").replace(" ", "").lower()


_CELL_TEXT = st.lists(st.text("abcXYZ019中", min_size=1, max_size=5), min_size=1, max_size=3)


@st.composite
def simple_tables(draw: st.DrawFn) -> tuple[str, str]:
    """(html, the normalised html written directly): th/td cells with plain text, optional
    colspan/style attributes, span wrappers, thead/tbody and newlines between tags."""
    newline = draw(st.sampled_from(["", "\n", "\n  "]))
    rows_html, rows_expected = [], []
    for _ in range(draw(st.integers(1, 3))):
        cells_html, cells_expected = [], []
        for _ in range(draw(st.integers(1, 3))):
            text = " ".join(draw(_CELL_TEXT))
            colspan = draw(st.sampled_from(["", ' colspan="2"']))
            style = draw(st.sampled_from(["", ' style="color:red"']))
            inner = f"<span>{text}</span>" if draw(st.booleans()) else text
            tag = draw(st.sampled_from(["td", "th"]))
            cells_html.append(f"<{tag}{style}{colspan}>{inner}</{tag}>")
            cells_expected.append(f"<td{colspan}>{text}</td>")
        rows_html.append("<tr>" + newline.join(cells_html) + "</tr>")
        rows_expected.append("<tr>" + "".join(cells_expected) + "</tr>")
    head = f"<thead>{rows_html[0]}</thead>" if draw(st.booleans()) else rows_html[0]
    body = newline.join(rows_html[1:])
    if body and draw(st.booleans()):
        body = f"<tbody>{body}</tbody>"
    html = f'<table class="t">{newline}{head}{newline}{body}{newline}</table>'
    expected = '<html><body><table border="1" >' + "".join(rows_expected) + "</table></body></html>"
    return html, expected


@given(simple_tables())
def test_simple_tables_normalise_to_their_plain_td_form_and_stay_there(
    table: tuple[str, str],
) -> None:
    html, expected = table
    assert normalize_html_table(html) == expected
    assert normalize_html_table(expected) == expected


@given(st.text(alphabet="| -:ab\n", max_size=60).filter(lambda text: text.count("|") < 2))
def test_markdown_conversion_keeps_text_without_tables(text: str) -> None:
    """Without two pipes there is no table: only the leading newline is added (the appended one
    is dropped again)."""
    assert markdown_tables_to_html(text) == "\n" + text
