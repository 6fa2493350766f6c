"""Predicted tables as OmniDocBench v1.6 normalises them (``normalized_table`` of
``src/core/preprocess/data_preprocess.py``, opendatalab/OmniDocBench at 9dc1dec).

v1.6 keeps v1.0's pipeline (:mod:`..common.normalize`: bs4 DOM clean-up, unescape, NFKC,
attribute and tag deletion, LaTeXML for LaTeX tables) and adds:

- the DOM step also unwraps ``<tbody>`` and then normalises the text of every cell
  (:func:`normalize_cell_text`: NFKC, symbol spellings, simple math wrappers, lone dashes);
- LaTeX that looks broken (:func:`table_latex_is_bad`) is not converted (gives "");
- ``latexmlc`` runs under a 60 s limit (a timeout gives "").

Deliberate deviations: the official environment overrides (``OMNIDOCBENCH_MAX_LATEX_INPUT_LEN``,
``OMNIDOCBENCH_LATEXMLC_TIMEOUT_SEC``) are not read; their defaults (8000 characters, 60 s) are
fixed. A missing ``latexmlc`` raises :class:`..common.normalize.LatexmlUnavailableError` (v1.6
would score "").
"""

from __future__ import annotations

import re
import unicodedata

from bs4 import NavigableString

from evalsuite.metrics.omnidocbench.common.normalize import (
    WHITESPACE_RUN,
    latex_table_preamble,
    latexmlc_tables,
    normalize_html_table_with,
    parse_table_bs4v411,
    simplify_table_tags,
)

__all__ = [
    "LATEXMLC_TIMEOUT_S",
    "latex_table_to_html",
    "normalize_cell_text",
    "normalize_html_table",
    "normalize_table",
    "table_latex_is_bad",
]

LATEXMLC_TIMEOUT_S = 60.0
"""Seconds ``latexmlc`` may run on one table before v1.6 gives up (scores "")."""
TABLE_LATEX_MAX_CHARS = 8000
"""Longest (stripped) LaTeX table v1.6 hands to ``latexmlc``."""

_LATEX_SYMBOLS = (
    ("\\checkmark", "√"), ("\\checked", "√"), ("\\surd", "√"), ("\\times", "×"),
    ("\\xmark", "×"), ("\\crossmark", "×"), ("\\pm", "±"), ("\\mp", "∓"), ("\\alpha", "α"),
    ("\\beta", "β"), ("\\gamma", "γ"), ("\\gama", "γ"), ("\\mu", "μ"), ("\\lambda", "λ"),
    ("\\theta", "θ"), ("\\eta", "η"), ("\\pi", "π"), ("\\rho", "ρ"), ("\\sigma", "σ"),
    ("\\omega", "ω"), ("\\delta", "δ"), ("\\Delta", "Δ"), ("\\epsilon", "ε"),
    ("\\varepsilon", "ε"), ("\\phi", "φ"), ("\\varphi", "φ"), ("\\tau", "τ"),
    ("\\partial", "∂"), ("\\varnothing", "∅"), ("\\emptyset", "∅"), ("\\sim", "～"),
)
"""LaTeX symbol commands spelled as characters in cells, replaced in this order (so ``\\pi``
also rewrites the start of ``\\pick``, and ``\\eta`` the end of ``\\beta`` never, as ``\\beta``
goes first)."""
_CHARACTER_SYMBOLS = (
    ("✓", "√"), ("✔", "√"), ("☑", "√"), ("✅", "√"), ("🗸", "√"), ("✗", "×"), ("✘", "×"),
    ("✕", "×"), ("✖", "×"), ("☒", "×"), ("❌", "×"), ("╳", "×"), ("⨯", "×"), ("Ø", "∅"),
    ("∼", "～"), ("〜", "～"),
    ("\\%", "%"), ("\\#", "#"), ("\\&", "&"), ("\\_", "_"),
)
_LONE_DASHES = frozenset("-–−－—")
_MATH_WRAPPERS = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))
_WRAPPED_MAX_CHARS = 128
_ENVIRONMENT = re.compile(r"\\(begin|end)\{([^{}]+)\}")


def _spell_symbols(text: str) -> str:
    for pairs in (_LATEX_SYMBOLS, _CHARACTER_SYMBOLS):
        for spelling, symbol in pairs:
            text = text.replace(spelling, symbol)
    return text


def _unwrap_simple_math(text: str) -> str:
    """Strip, then repeatedly remove the first of ``$$ \\[ \\( $`` pairs wrapping the whole text
    whose stripped inside is 1..128 characters without ``< > $``."""
    text = text.strip()
    while text:
        for left, right in _MATH_WRAPPERS:
            if not (text.startswith(left) and text.endswith(right)):
                continue
            if len(text) < len(left) + len(right):
                continue
            inside = text[len(left):len(text) - len(right)].strip()
            if 0 < len(inside) <= _WRAPPED_MAX_CHARS and not any(c in inside for c in "<>$"):
                text = inside
                break
        else:
            return text
    return text


def normalize_cell_text(text: str) -> str:
    """One text node of a table cell as v1.6 normalises it (``normalize_table_cell_text``).

    Rule: NFKC; no-break space to space, zero-width space deleted; symbols spelled as characters
    (:data:`_LATEX_SYMBOLS`, then ``✓ ✗ Ø ∼``… and ``\\% \\# \\& \\_``); simple math wrappers
    removed; symbols spelled again; a text that is only a dash (``- – − － —``) becomes ``—``;
    whitespace runs become one space; stripped.
    """
    text = unicodedata.normalize("NFKC", text).replace("\xa0", " ").replace("\u200b", "")
    text = _spell_symbols(_unwrap_simple_math(_spell_symbols(text)))
    if text.strip() in _LONE_DASHES:
        text = "—"
    return WHITESPACE_RUN.sub(" ", text).strip()


def _normalize_cells(table: str) -> str:
    """Every text node under each ``td``/``th`` (outer cells first, so nested cells' text is
    normalised twice) replaced by :func:`normalize_cell_text` of it when that differs."""
    soup = parse_table_bs4v411(table)
    for cell in soup.find_all(["td", "th"]):
        for node in list(cell.descendants):
            if isinstance(node, NavigableString):
                normalized = normalize_cell_text(str(node))
                if normalized != str(node):
                    node.replace_with(normalized)
    return str(soup)


def _simplify_table_dom(table: str) -> str:
    return _normalize_cells(simplify_table_tags(table, sections=("thead", "tbody")))


def normalize_html_table(html_table: str) -> str:
    """An HTML table as v1.6 compares it (``normalized_html_table``): v1.0's rule
    (:func:`..common.normalize.normalize_html_table`) with ``<tbody>`` also unwrapped in the DOM
    step and each cell's text through :func:`normalize_cell_text` before unescaping."""
    return normalize_html_table_with(html_table, _simplify_table_dom)


def _braces_balanced(latex: str) -> bool:
    depth, index = 0, 0
    while index < len(latex):
        if latex[index] == "\\" and latex[index + 1:index + 2] in tuple("{}[]()"):
            index += 2
            continue
        depth += {"{": 1, "}": -1}.get(latex[index], 0)
        if depth < 0:
            return False
        index += 1
    return depth == 0


def _environments_balanced(latex: str) -> bool:
    open_names: list[str] = []
    for found in _ENVIRONMENT.finditer(latex):
        if found.group(1) == "begin":
            open_names.append(found.group(2))
        elif not open_names or open_names.pop() != found.group(2):
            return False
    return not open_names


def table_latex_is_bad(latex: str) -> bool:
    """Whether v1.6 refuses to convert a LaTeX table (``likely_bad_latex(…, 'table')``): its
    stripped text is longer than :data:`TABLE_LATEX_MAX_CHARS`, or has unbalanced braces
    (``\\{ \\} \\[ \\] \\( \\)`` skipped) or unbalanced/misnested ``\\begin``/``\\end``."""
    stripped = latex.strip()
    if not stripped:
        return False
    return (
        len(stripped) > TABLE_LATEX_MAX_CHARS
        or not _braces_balanced(stripped)
        or not _environments_balanced(stripped)
    )


def _latex_table_document(latex: str) -> str:
    """v1.6's document around the table (v1.0's preamble, each line indented by 8 spaces)."""
    indent = "\n        "
    head = indent + indent.join([*latex_table_preamble(), "\\begin{document}", ""])
    return head + latex + indent + "\\end{document}"


def latex_table_to_html(latex: str) -> str:
    """A predicted LaTeX table as v1.6 scores it (``normalized_table(latex, 'latex')``).

    Rule: "" when :func:`table_latex_is_bad`; else ``latexmlc --quiet --nocomments`` on
    :func:`_latex_table_document` (limit :data:`LATEXMLC_TIMEOUT_S`; failure or timeout
    gives ""); the bodies of its output's tables, each wrapped in ``<table>…</table>``, joined by
    newlines, through :func:`normalize_html_table` (so "" stays "").

    Raises:
        LatexmlUnavailableError: ``latexmlc`` is not on PATH.
    """
    if table_latex_is_bad(latex):
        return ""
    tables = latexmlc_tables(_latex_table_document(latex), "v1.6", LATEXMLC_TIMEOUT_S)
    return normalize_html_table(tables)


def normalize_table(table: str, table_format: str) -> str:
    """``normalized_table(table, table_format)`` of v1.6: :func:`normalize_html_table`
    (``"html"``) or :func:`latex_table_to_html` (``"latex"``).

    Raises:
        ValueError: ``table_format`` is neither ``"html"`` nor ``"latex"``.
        LatexmlUnavailableError: ``"latex"`` without ``latexmlc`` on PATH.
    """
    if table_format == "html":
        return normalize_html_table(table)
    if table_format == "latex":
        return latex_table_to_html(table)
    raise ValueError(f"table_format must be 'html' or 'latex', not {table_format!r}")
