"""The loader of pylatexenc 2.10 (OmniDocBench v1.6's release) beside the installed 3.0a30."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pylatexenc.latex2text import LatexNodes2Text

from evalsuite.metrics import pylatexenc_v210


def test_loads_release_210_under_its_own_name() -> None:
    package = pylatexenc_v210.module()
    assert package.__name__ == "pylatexenc_v210"
    assert sys.modules["pylatexenc_v210.version"].version_str == "2.10"
    assert sys.modules["pylatexenc"] is not package


@pytest.mark.parametrize(("latex", "v210", "v30a30"), [
    ("{a", "a", ""),           # 2.10 keeps an unclosed group's content, 3.0a30 drops it
    ("a_{b", "a_b", "a_"),
    ("\\textbf{a", "a", ""),
    ("\\alpha_1 \\cdot \\sqrt{2}", "α_1 ·√(2)", "α_1 ·√(2)"),  # well-formed: both agree
])
def test_converts_as_210_where_30a30_differs(latex: str, v210: str, v30a30: str) -> None:
    assert pylatexenc_v210.latex_to_text(latex) == v210
    assert LatexNodes2Text().latex_to_text(latex) == v30a30


def test_absent_folder_is_a_one_line_error_naming_the_fix(tmp_path) -> None:
    script = ("from evalsuite.metrics import pylatexenc_v210 as p\n"
              "try:\n    p.module()\nexcept p.PylatexencV210UnavailableError as e:\n    print(e)\n")
    env = {"EVALSUITE_PYLATEXENC210": str(tmp_path / "absent"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.count("\n") == 1
    assert "make setup" in out
    assert f"pip install --no-deps --target {tmp_path / 'absent'} pylatexenc==2.10" in out


def test_folder_follows_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("EVALSUITE_PYLATEXENC210", str(tmp_path))
    assert pylatexenc_v210.folder() == tmp_path
    monkeypatch.delenv("EVALSUITE_PYLATEXENC210")
    assert pylatexenc_v210.folder() == pylatexenc_v210.Path(sys.prefix) / "pylatexenc-2.10"


@pytest.mark.parametrize(("latex", "formula", "malformed"), [
    ("\\frac{a}{b}", True, False),
    ("  ", True, False),
    ("a}{b", True, True),                      # closes before it opens
    ("\\{a", True, False),                     # escaped brace
    ("\\begin{a}\\begin{b}\\end{a}\\end{b}", True, True),
    ("\\left( a", True, True),
    ("\\left( a", False, False),               # delimiters are checked for formulas only
    ("a $ b", True, True),
    ("a \\$ b", True, False),
    ("\\( a \\) \\[", True, True),
    ("x" * 13, True, True),                    # longer than max_chars (12 here)
])
def test_looks_malformed(latex: str, formula: bool, malformed: bool) -> None:
    assert pylatexenc_v210.looks_malformed(latex, 12, formula=formula) is malformed
