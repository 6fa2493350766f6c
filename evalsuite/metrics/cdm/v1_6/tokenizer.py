"""CDM v1.6 tokenizer: LaTeX -> space-separated tokens, as OmniDocBench v1.6 (9dc1dec) does it.

:func:`tokenize` is the official ``tokenize_latex`` with its caller's wall-clock limit
(``_tokenize_latex_with_timeout``): it returns ``(ok, text)`` and the preparation stage falls
back to the input where ``ok`` is false or ``text`` empty. Two paths:

* formula: aligned-family/smallmatrix environments renamed, the line cleaned (comments,
  ``\\~``, ``\\>``, ``\\label{}``, ``$``, ``\\\\`` outside environments), a parse guard that gives
  up on unbalanced braces/environments/``\\left``-``\\right``/math delimiters or over 20,000
  characters, then pylatexenc 2.10 -> KaTeX-like tree -> tokens
  (:mod:`~evalsuite.metrics.cdm.v1_6.katex_like`); ``\\operatorname{sin}`` -> ``\\sin``,
  ``\\left (`` -> ``\\left(``;
* tabular (the input contains "tabular"): pylatexenc's nodes printed as a flat token stream.

Any error while normalising gives the empty result, hence the fallback, as officially, except
that a missing pylatexenc 2.10 raises :class:`~evalsuite.metrics.pylatexenc_v210.
PylatexencV210UnavailableError` instead of scoring every formula from its raw text. The
official limits can be changed through environment variables (``CDM_MAX_LATEX_INPUT_LEN``,
``CDM_TOKENIZE_TIMEOUT_SEC``); here they are fixed at the official defaults. The time limit is a
SIGALRM timer and, as officially, only applies in the main thread.
"""

from __future__ import annotations

import importlib
import logging
import re
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType

from evalsuite.metrics import pylatexenc_v210
from evalsuite.metrics.cdm.v1_6.katex_like import OPERATOR_NAMES, katex_tree, render_tokens

__all__ = ["MAX_INPUT_CHARS", "TIMEOUT_SECONDS", "tokenize"]

MAX_INPUT_CHARS = 20000
TIMEOUT_SECONDS = 30.0

_ALIGN_ENVIRONMENT = re.compile(
    r"\\begin{(split|align|alignedat|alignat|eqnarray)\*?}(.+?)\\end{\1\*?}", flags=re.S
)
_SMALLMATRIX = re.compile(r"\\begin{(smallmatrix)\*?}(.+?)\\end{\1\*?}", flags=re.S)
_HSKIP = re.compile(r"hskip(.*?)(cm|in|pt|mm|em)")
_OPERATORNAME_GROUP = re.compile(r"\\operatorname\s*\{([^{}]*?)\}")
_MACRO_BEFORE_CJK = re.compile(r"(\\[A-Za-z]+)(?=[\u4e00-\u9fff])")
_LABEL = re.compile(r"\\label\{.*?\}")
_LABEL_TOKENS = re.compile(r"\\label \{ .*? \}")


class _TokenizerTimeout(Exception):
    """Raised by the SIGALRM handler when :data:`TIMEOUT_SECONDS` have passed."""


def tokenize(latex: str) -> tuple[bool, str]:
    """Official v1.6 tokenizer output ``(ok, tokens)`` of one LaTeX string (see module doc);
    ``(False, latex)`` when it runs over :data:`TIMEOUT_SECONDS`.

    A caller's own SIGALRM handler and pending timer are put back afterwards (the timer with
    what was left of it)."""
    if threading.current_thread() is not threading.main_thread():
        return _tokenize(latex)

    def expire(_signum: int, _frame: object) -> None:
        raise _TokenizerTimeout

    started = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, expire)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, TIMEOUT_SECONDS)
    try:
        return _tokenize(latex)
    except _TokenizerTimeout:
        return False, latex
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(
            signal.SIGALRM, signal.SIG_DFL if previous_handler is None else previous_handler
        )
        if previous_delay > 0:
            left = max(previous_delay - (time.monotonic() - started), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, previous_interval)


def _tokenize(latex: str) -> tuple[bool, str]:
    if not latex:
        return False, latex
    if "tabular" in latex:
        return _tokenize_tabular(latex)
    latex = _ALIGN_ENVIRONMENT.sub(r"\\begin{aligned}\2\\end{aligned}", latex)
    latex = _SMALLMATRIX.sub(r"\\begin{matrix}\2\\end{matrix}", latex)
    text = _normalise_formula(latex)
    if not text:
        return True, ""
    text = " ".join(text.split())
    text = _OPERATORNAME_GROUP.sub(_known_operator, text)
    return True, _join_left_right(text).replace("\\\\ \\end{array}", "\\end{array}")


def _known_operator(match: re.Match[str]) -> str:
    name = re.sub(r"\s+", "", match.group(1).strip())
    return "\\" + name if name in OPERATOR_NAMES else match.group(0)


def _join_left_right(text: str) -> str:
    """A lone ``\\left``/``\\right`` token glued to the token after it."""
    tokens = text.split()
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] in {"\\left", "\\right"} and i + 1 < len(tokens):
            out.append(tokens[i] + tokens[i + 1])
            i += 2
        else:
            out.append(tokens[i])
            i += 1
    return " ".join(out)


def _clean_line(line: str, formula: bool) -> str:
    """The official line preprocessing (formula: comments cut, space after a macro touching
    a CJK character; both: ``\\~``/``\\>`` -> space, labels dropped, ``\\\\`` -> ``\\,`` where
    no environment is mentioned)."""
    if not line:
        return line
    if line.startswith("%"):
        line = line[1:]
    if formula:
        line = line.split("%", 1)[0]
    line = line.replace("\\~", " ")
    if formula:
        line = _MACRO_BEFORE_CJK.sub(r"\1 ", line)
    line = line.replace("\\>", " ")
    line = _LABEL.sub("", line)
    if all(word not in line for word in ("matrix", "cases", "array", "begin")):
        line = line.replace("\\\\", "\\,")
    return line


@contextmanager
def _quiet_pylatexenc() -> Iterator[ModuleType]:
    """pylatexenc 2.10's ``latexwalker``, its warnings (tolerated parse errors) silenced."""
    pylatexenc_v210.module()
    walker = importlib.import_module(f"{pylatexenc_v210.MODULE_NAME}.latexwalker")
    logger = logging.getLogger(pylatexenc_v210.MODULE_NAME)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield walker
    finally:
        logger.setLevel(level)


def _with_trailing_backslash(text: str, wanted: bool) -> str:
    if not wanted or not text or text.split()[-1] == "\\":
        return text
    return text + " \\"


def _normalise_formula(line: str) -> str:
    """Normalised token string of a formula; "" where the guard or the parse gives up."""
    pylatexenc_v210.module()  # a missing install is reported, not scored as a failure
    try:
        guarded = _clean_line(line, formula=True)
        if pylatexenc_v210.looks_malformed(guarded, MAX_INPUT_CHARS):
            return ""
        text = guarded.replace("$", " ")
        trailing_backslash = text.endswith("\\")
        for old in ("{\\rm", "{ \\rm", "\\rm{"):
            text = text.replace(old, "\\mathrm{")
        with _quiet_pylatexenc() as walker:
            out = " ".join(render_tokens(katex_tree(text, walker))).strip()
        out = out.replace("SSSSSS", "$").replace(" S S S S S S", "$")
        out = _LABEL_TOKENS.sub("", out).strip()
        if not out and text.strip() == "\\":
            out = "\\"
        return _with_trailing_backslash(out, trailing_backslash)
    except _TokenizerTimeout:
        raise
    except Exception:
        return ""


def _tokenize_tabular(latex: str) -> tuple[bool, str]:
    code = latex.replace("\\\\%", "\\\\ %").replace("\\%", "<PERCENTAGE_TOKEN>")
    code = code.split("%")[0].replace("<PERCENTAGE_TOKEN>", "\\%")
    if "\\end{tabular}" not in code:
        code += "\\end{tabular}"
    code = _HSKIP.sub(r"hspace{\1\2}", code).replace("\r", " ").replace("\n", " ")
    pylatexenc_v210.module()
    try:
        line = _clean_line(code, formula=False)
        if pylatexenc_v210.looks_malformed(line, MAX_INPUT_CHARS, formula=False):
            return False, latex
        with _quiet_pylatexenc() as walker:
            nodes, _, _ = walker.LatexWalker(line).get_latex_nodes()
            tokens = " ".join(_flat_tokens(nodes, walker)).strip()
    except _TokenizerTimeout:
        raise
    except Exception:
        return False, latex
    if not tokens:
        return False, latex
    return True, " ".join(tokens.split())


def _flat_tokens(nodes: Sequence | None, walker: ModuleType) -> Iterator[str]:
    """pylatexenc nodes as KaTeX's lexer would list them: characters (whitespace dropped),
    group delimiters, ``$`` around math, ``\\begin``/``{name}`` ... ``\\end``/``{name}``,
    macros followed by their parsed arguments; comments dropped."""
    for node in nodes or []:
        if isinstance(node, walker.LatexCharsNode):
            yield from (ch for ch in node.chars or "" if not ch.isspace())
        elif isinstance(node, walker.LatexSpecialsNode):
            yield from (ch for ch in node.specials_chars or "" if not ch.isspace())
        elif isinstance(node, walker.LatexGroupNode):
            left, right = node.delimiters
            yield left
            yield from _flat_tokens(node.nodelist, walker)
            yield right
        elif isinstance(node, walker.LatexMathNode):
            yield "$"
            yield from _flat_tokens(node.nodelist, walker)
            yield "$"
        elif isinstance(node, (walker.LatexEnvironmentNode, walker.LatexMacroNode)):
            arguments = [a for a in getattr(node.nodeargd, "argnlist", None) or [] if a is not None]
            if isinstance(node, walker.LatexMacroNode):
                yield "\\" + node.macroname
                yield from _flat_tokens(arguments, walker)
            else:
                mark = "{" + node.environmentname + "}"
                yield from ("\\begin", mark)
                yield from _flat_tokens(arguments, walker)
                yield from _flat_tokens(node.nodelist, walker)
                yield from ("\\end", mark)
