"""OmniDocBench v1.6's table normalisers against the official code's outputs
(``v16_extract_cases.json.gz``, from ``gen_v16_extract_cases.py``)."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from evalsuite.metrics.omnidocbench.v1_6.tables import normalize_table
from tests.support.paths import TEST_FIXTURES

CASES = TEST_FIXTURES / "omnidocbench" / "v16_extract_cases.json.gz"
TABLES = json.loads(gzip.decompress(CASES.read_bytes()))["tables"]
HTML = [case for case in TABLES if case[0] == "html"]
LATEX = [case for case in TABLES if case[0] == "latex"]


@pytest.mark.parametrize(("table_format", "table", "expected"), HTML)
def test_html_table_equals_official(table_format: str, table: str, expected: str) -> None:
    assert normalize_table(table, table_format) == expected


@pytest.mark.skipif(shutil.which("latexmlc") is None, reason="latexmlc (LaTeXML) not installed")
@pytest.mark.parametrize(("table_format", "table", "expected"), LATEX)
def test_latex_table_equals_official(table_format: str, table: str, expected: str) -> None:
    assert normalize_table(table, table_format) == expected


def test_unknown_format_rejected() -> None:
    with pytest.raises(ValueError, match="table_format"):
        normalize_table("<table></table>", "markdown")
