"""OTSL to HTML against MinerU2.5's client (mineru-vl-utils 2.0.7, unmodified, 405 generated
answers: spans of every kind, orphan span tags, text before tags, ragged rows, HTML kept)."""

from __future__ import annotations

import gzip
import json

from evalsuite.models.convert.otsl import otsl_to_html
from tests.support.paths import TEST_FIXTURES

CASES = TEST_FIXTURES / "models" / "mineru" / "mineru25_otsl2html.json.gz"


def test_otsl_becomes_the_official_html() -> None:
    with gzip.open(CASES, "rt", encoding="utf-8") as handle:
        cases = json.load(handle)["cases"]
    assert len(cases) >= 400
    assert sum('rowspan="' in case["output"] for case in cases) >= 20
    assert sum('colspan="' in case["output"] for case in cases) >= 20
    wrong = [(case["input"], case["output"], otsl_to_html(case["input"]))
             for case in cases if otsl_to_html(case["input"]) != case["output"]]
    assert wrong == []


def test_a_two_by_two_table_with_a_merged_header() -> None:
    answer = "<fcel>Name<lcel><nl><fcel>a &<fcel>b<nl>"
    assert otsl_to_html(answer) == (
        '<table><tr><td colspan="2">Name</td></tr><tr><td>a &amp;</td><td>b</td></tr></table>')
