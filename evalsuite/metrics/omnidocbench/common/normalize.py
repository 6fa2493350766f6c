"""OmniDocBench v1.0's normalisation of predicted and ground-truth elements before scoring.

Re-implements ``utils/data_preprocess.py`` and ``utils/table_utils.py`` of opendatalab/OmniDocBench
at 895837f (the v1.0 evaluation code), output for output, quirks included:

- text: :func:`normalize_text` (``clean_string(textblock2unicode(text))``, ``utils/match.py:97``);
- display formulas: :func:`normalize_formula` (``normalized_formula``);
- tables: :func:`normalize_table` / :func:`normalize_html_table` (``normalized_table``,
  ``normalized_html_table``) and :func:`latex_table_to_html` (LaTeXML, ``normalized_latex_table``);
- the raw markdown clean-up of :mod:`.extract`: :func:`strip_markdown_fences`,
  :func:`collapse_repeated_chars`, :func:`markdown_tables_to_html`.

v1.5's changes (0f22218) are switches of :class:`..versions.Rules` taken by these functions.
v1.6's normalisation (:mod:`..v1_6.normalize`, :mod:`..v1_6.tables`) reuses the markdown
clean-up, the inline-math conversion, :func:`keep_word_chars` and the table steps.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path

from bs4 import BeautifulSoup
from bs4.builder._htmlparser import BeautifulSoupHTMLParser, HTMLParserTreeBuilder
from pylatexenc.latex2text import LatexNodes2Text

from evalsuite.confined import file_size_limit, latexml_arguments, latexml_environment
from evalsuite.errors import ToolUnavailableError
from evalsuite.metrics.omnidocbench.versions import V10, Rules

__all__ = [
    "LatexmlUnavailableError",
    "collapse_repeated_chars",
    "inline_math_to_unicode",
    "keep_word_chars",
    "latex_table_preamble",
    "latex_table_to_html",
    "latex_to_text_or_none",
    "latexmlc_tables",
    "markdown_tables_to_html",
    "normalize_formula",
    "normalize_html_table",
    "normalize_html_table_with",
    "normalize_table",
    "normalize_text",
    "parse_table_bs4v411",
    "simplify_table_tags",
    "strip_markdown_fences",
]


class LatexmlUnavailableError(ToolUnavailableError, RuntimeError):
    """``latexmlc`` (LaTeXML), which converts LaTeX tables to HTML, is not on PATH."""


# --- markdown clean-up ------------------------------------------------------------------------

_FENCE_CLOSE = re.compile(r"```\n?$", re.MULTILINE)


def strip_markdown_fences(text: str, languages: tuple[str, ...] = ("markdown",)) -> str:
    """Delete every ```` ```<language> ```` at a line start (with its newline), for each of
    ``languages`` in turn (v1.0: ``markdown``; v1.5 adds ``html``, ``latex``), then every
    ```` ``` ```` ending a line (with its newline if the next line is empty)
    (``remove_markdown_fences``).

    Quirk: the second rule also deletes the closing fence of any code block that ends its line,
    so such a block is no longer a code block for :func:`..v1_0.extract.split_markdown`.
    """
    for language in languages:
        text = re.sub(f"^```{re.escape(language)}\\n?", "", text, flags=re.MULTILINE)
    return _FENCE_CLOSE.sub("", text)


_RUN_OF_UNDERSCORES = re.compile(r"_{4,}")
_RUN_OF_SPACES = re.compile(r" {4,}")
_RUN_OF_SYMBOLS = re.compile(r"([^a-zA-Z0-9])\1{10,}")


def collapse_repeated_chars(text: str, symbol_runs: bool = True) -> str:
    """Shorten runs: 4+ ``_`` to 4, 4+ spaces to 4, then, if ``symbol_runs`` (v1.0; v1.5 drops
    the rule), 11+ of any other character outside ``[a-zA-Z0-9]`` to 4
    (``replace_repeated_chars``).

    Quirk: "any other character" includes newlines, CJK characters and non-ASCII digits.
    """
    text = _RUN_OF_UNDERSCORES.sub("____", text)
    text = _RUN_OF_SPACES.sub("    ", text)
    return _RUN_OF_SYMBOLS.sub(r"\1\1\1\1", text) if symbol_runs else text


# A markdown table as the official code sees it: from a "|" to the nearest "|" + newline, across
# lines (so "a | b\nc |\n" gives "| b\nc |\n").
MARKDOWN_TABLE = re.compile(r"\|\s*.*?\s*\|\n", re.DOTALL)
_HTML_COMMENT = re.compile(r"<!--[\s\S]*?-->")
_PLAIN_TABLE = re.compile(r"<table>[\s\S]*?</table>")
_TABLE_FRAME_LINE = re.compile(r"</?t(able|head|body)>")


def _pipe_table_to_html(block: str) -> str:
    """One pipe table (``markdown_to_html``, from intsig-textin/markdown_tester): the first line's
    cells are ``th``, the second line is skipped whatever it is, the others are ``td`` rows;
    cells are what lies between the first and the last ``|`` of a line, split at ``|``."""
    rows = [row.strip() for row in block.strip().split("\n")]
    parts = ["<table>\n  <thead>\n    <tr>\n"]
    parts += [f"      <th>{cell.strip()}</th>\n" for cell in rows[0].split("|")[1:-1]]
    parts.append("    </tr>\n  </thead>\n  <tbody>\n")
    for row in rows[2:]:
        parts.append("    <tr>\n")
        parts += [f"      <td>{cell.strip()}</td>\n" for cell in row.split("|")[1:-1]]
        parts.append("    </tr>\n")
    parts.append("  </tbody>\n</table>\n")
    return "".join(parts)


def _merge_tables(block: str) -> str:
    """The lines of every ``<table>`` of ``block`` (``th`` turned into ``td``, lines holding a
    ``<table>``/``<thead>``/``<tbody>`` tag or its end tag dropped) as one table; a table left
    with at most two lines contributes nothing (``merge_tables``)."""
    rows: list[str] = []
    for table in _PLAIN_TABLE.findall(_HTML_COMMENT.sub("", block)):
        lines = [
            line.replace("<th>", "<td>").replace("</th>", "</td>") if "<th>" in line else line
            for line in table.split("\n")
        ]
        kept = [line for line in lines if not _TABLE_FRAME_LINE.search(line)]
        if len(kept) > 2:
            rows += kept
    return "\n\n<table>\n" + "\n".join(rows) + "\n</table>\n\n"


def _merge_table_runs(text: str) -> str:
    """Replace each run of lines from a ``<table>`` line to a ``</table>`` line by
    :func:`_merge_tables` of it (``replace_table_with_placeholder``).

    It walks the lines one behind: a line is judged when the next one is read. Quirks: inside a
    run, lines holding ``:`` or ``---`` (and ``</thead>``) are dropped; a ``<table>`` line joins
    the previous line to the run without a newline; a run never closed by a ``</table>`` line is
    lost with all the text after it; the output gains a leading newline and loses the final one
    (``text`` always ends with a newline here, so the official end-of-text branch never runs).
    """
    out: list[str] = []
    in_run = False
    run = ""
    previous = ""
    for line in text.split("\n"):
        if "<table>" in line:
            in_run = True
            run += previous
        elif in_run:
            if ":" not in previous and "---" not in previous and "</thead>" not in previous:
                run += "\n" + previous
            if "</table>" in previous:
                in_run = False
                out.append(_merge_tables(run))
                run = ""
        else:
            out.append(previous)
        previous = line
    return "\n".join(out)


def markdown_tables_to_html(text: str) -> str:
    """Rewrite every markdown table of ``text`` as HTML (``convert_markdown_to_html``).

    Rule: drop ``\\r``, append a newline, replace each :data:`MARKDOWN_TABLE` match (its first
    occurrence, in order) by its HTML, merge each run of table lines into one table
    (:func:`_merge_table_runs`), then ``<table>`` becomes ``<table border="1" >`` and ``<td>``
    becomes ``<td colspan="1" rowspan="1">`` everywhere in the text, tables or not.
    Quirk: adjacent markdown tables become one table (the run merge).
    """
    text = text.replace("\r", "") + "\n"
    for block in MARKDOWN_TABLE.findall(text):
        text = text.replace(block, _pipe_table_to_html(block), 1)
    text = _merge_table_runs(text)
    return text.replace("<table>", '<table border="1" >').replace(
        "<td>", '<td colspan="1" rowspan="1">'
    )


# --- text -------------------------------------------------------------------------------------

INLINE_MATH = re.compile(r"\$(.*?)\$|\\\((.*?)\\\)")
"""``$…$`` or ``\\(…\\)`` on one line (shortest match; ``$$x$$`` reads as ``$$`` then ``x``)."""
_ESCAPED_SYMBOL = re.compile(r"\\([\\_&%^])")
_LATEX_MARKERS = ("\\", "^", "_")


def latex_to_text_or_none(body: str) -> str | None:
    """pylatexenc 3.0a30's ``LatexNodes2Text().latex_to_text(body)``, None where it raises."""
    try:
        return LatexNodes2Text().latex_to_text(body)
    except Exception:  # the official code skips any span pylatexenc fails on
        return None


def inline_math_to_unicode(
    text: str, convert: Callable[[str], str | None] = latex_to_text_or_none
) -> str:
    """Replace each :data:`INLINE_MATH` span whose body holds ``\\``, ``^`` or ``_`` (once
    ``\\\\ \\_ \\& \\% \\^`` are deleted from it) by ``convert(body).strip()``
    (``textblock2unicode``); a span ``convert`` gives None for is left as it is. v1.0 and v1.5
    convert with :func:`latex_to_text_or_none`.

    Quirks: the escaped symbols are deleted, not unescaped (``$a\\_b^2$`` converts ``ab^2``); a
    body ending in ``\\`` gets a space appended (pylatexenc 3.0a30 never returns on a trailing
    backslash); spans without those markers keep their ``$``; a span pylatexenc raises on
    (``\\verb``, a lone ``\\begin{array}``…) is left as it is.
    """
    pieces: list[str] = []
    done = 0
    for match in INLINE_MATH.finditer(text):
        body = match.group(1) if match.group(1) is not None else match.group(2)
        body = _ESCAPED_SYMBOL.sub("", body)
        if not any(marker in body for marker in _LATEX_MARKERS):
            continue
        if body.endswith("\\"):
            body += " "
        converted = convert(body)
        if converted is None:
            continue
        pieces += [text[done : match.start()], converted.strip()]
        done = match.end()
    pieces.append(text[done:])
    return "".join(pieces)


_NOT_WORD = re.compile(r"[^\w\u4e00-\u9fff]")
_ESCAPE_LOOKALIKES = ("\\t", "\\n", "\t", "\n", "/t", "/n")


def keep_word_chars(text: str) -> str:
    """Delete the two-character strings ``\\t``, ``\\n`` (backslash + letter), then tabs and
    newlines, then ``/t`` and ``/n`` (in that order), then every character that is not ``\\w``
    (Unicode letters, digits, ``_``; CJK included) (``clean_string``).

    Quirks: a real letter ``t``/``n`` after ``\\`` or ``/`` is lost (``and/not`` gives
    ``andot``); the deletions run one after the other, so one can join the pieces of another.
    """
    for lookalike in _ESCAPE_LOOKALIKES:
        text = text.replace(lookalike, "")
    return _NOT_WORD.sub("", text)


def normalize_text(text: str) -> str:
    """A text block as v1.0 compares it: ``keep_word_chars(inline_math_to_unicode(text))``
    (``clean_string(textblock2unicode(text))``, ``utils/match.py:97-98``); case is kept."""
    return keep_word_chars(inline_math_to_unicode(text))


# --- formulas ---------------------------------------------------------------------------------

_DISPLAY_BODY = re.compile(r"\\\[(.+?)(?<!\\)\\\]")
_FORMULA_DELETIONS = tuple(
    re.compile(pattern)
    for pattern in (
        r"\\tag\{.*?\}",
        r"\\hspace\{.*?\}",
        r"\\begin\{.*?\}",
        r"\\end\{.*?\}",
        r"\\arraycolsep.*?\}",
    )
)
FORMULA_DELETED_STRINGS = (
    *(
        "\\" + name
        for name in (
            "mathbf mathrm mathnormal mathit mathbb mathcal mathscr mathfrak mathsf mathtt "
            "textbf text boldmath boldsymbol operatorname bm symbfit mathbfcal symbf "
            "scriptscriptstyle notag setlength coloneqq space thickspace thinspace medspace "
            "nobreakspace negmedspace quad qquad enspace substackw"
        ).split()
    ),
    " ",
)
"""Substrings :func:`normalize_formula` deletes, one after the other in this order."""


def normalize_formula(latex: str, rules: Rules = V10) -> str:
    """A display formula as ``rules``' version compares it (``normalized_formula``).

    Rule (v1.0): keep the stripped body of the first one-line ``\\[…\\]`` if any; delete
    ``\\tag{…}``, ``\\hspace{…}``, ``\\begin{…}``, ``\\end{…}`` (up to the first ``}``) and
    ``\\arraycolsep`` up to the next ``}``; strip ``.`` at both ends; delete
    :data:`FORMULA_DELETED_STRINGS` as plain substrings; lower-case.

    Quirks: ``$$`` delimiters and newlines are kept (ground truth stored as ``"$$\\n…\\n$$"``
    keeps them, only spaces go); deletions are substring deletions in order, so ``\\mathbfcal``
    leaves ``cal``, ``\\bmod`` leaves ``od``, ``\\textit`` leaves ``it``; a ``\\[…\\]`` spanning
    lines is not unwrapped.

    v1.5 (``rules.formula_extra_deletions`` non-empty) first strips whitespace, then ``$``, then
    newlines at both ends, and deletes those strings (``$$``, ``\\left``, ``\\right``,
    ``\\displaystyle``, ``\\text``) after the others.
    """
    if rules.formula_extra_deletions:
        latex = latex.strip().strip("$").strip("\n")
    match = _DISPLAY_BODY.search(latex)
    if match:
        latex = match.group(1).strip()
    for pattern in _FORMULA_DELETIONS:
        latex = pattern.sub("", latex)
    latex = latex.strip(".")
    for deleted in (*FORMULA_DELETED_STRINGS, *rules.formula_extra_deletions):
        latex = latex.replace(deleted, "")
    return latex.lower()


# --- tables -----------------------------------------------------------------------------------

TABLE_BODY = re.compile(r"<table\b[^>]*>(.*)</table>", re.DOTALL | re.IGNORECASE)
"""What lies between the first ``<table…>`` and the last ``</table>`` (group 1)."""
_TABLE_ATTRIBUTES = tuple(
    re.compile(f'( {name}=".*?")') for name in ("style", "height", "width", "align", "class")
)
_TBODY_TAG = re.compile("</?tbody>")
WHITESPACE_RUN = re.compile(r"\s+")
"""A run of whitespace."""
_DELETED_TABLE_TAGS = (
    "<sup>",
    "</sup>",
    "<sub>",
    "</sub>",
    "<span>",
    "</span>",
    "<div>",
    "</div>",
    "<p>",
    "</p>",
    '<spandata-span-identity="">',
)
_COLGROUP = re.compile("<colgroup>.*?</colgroup>")
TABLE_WRAPPER = ('<html><body><table border="1" >', "</table></body></html>")
"""What :func:`normalize_html_table` puts around the table body."""


class _Bs4v411Parser(BeautifulSoupHTMLParser):
    """bs4's ``html.parser`` events handled as bs4 4.11.1 (OmniDocBench v1.0's pin) does, where
    bs4 >= 4.13 differs (checked on fuzzed markup: nothing else differs):

    - ``<x/>`` checks an earlier ``<x>`` of a void element ``x`` off the list of end tags to
      ignore instead of closing itself, so after a ``<br>`` a ``<br/>`` stays open and wraps what
      follows up to the end of its parent (``<td>a<br>b<br/>c</td>`` serialises as
      ``<td>a<br/>b<br>c</br></td>``);
    - ``&#0;`` and surrogate references give those code points, not U+FFFD.
    """

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs, handle_empty_element=False)
        self.handle_endtag(tag)

    def handle_charref(self, name: str) -> None:
        digits, base = (name[1:], 16) if name[:1] in ("x", "X") else (name, 10)
        code = int(digits, base) if digits.isascii() and digits.isalnum() else -1
        if code == 0 or 0xD800 <= code <= 0xDFFF:
            self.handle_data(chr(code))
        else:
            super().handle_charref(name)


class _Bs4v411TreeBuilder(HTMLParserTreeBuilder):
    # bs4 >= 4.13's only hook for the parser class (older bs4 lacks it)
    def feed(self, markup: str) -> None:  # type: ignore[override]
        super().feed(markup, _parser_class=_Bs4v411Parser)


def parse_table_bs4v411(table: str) -> BeautifulSoup:
    """``table`` parsed as bs4 4.11.1's ``html.parser`` builder does."""
    return BeautifulSoup(table, builder=_Bs4v411TreeBuilder)


def simplify_table_tags(table: str, sections: tuple[str, ...] = ("thead",)) -> str:
    """Parse with :func:`parse_table_bs4v411`: ``th`` renamed ``td``, the ``sections`` tags
    (v1.0: ``thead``) and ``span`` unwrapped, each ``<math>`` replaced by ``$`` + its
    ``alttext`` + ``$``; serialised back."""
    soup = parse_table_bs4v411(table)
    for cell in soup.find_all("th"):
        cell.name = "td"
    for name in sections:
        for tag in soup.find_all(name):
            tag.unwrap()
    for math in soup.find_all("math"):
        math.replace_with(f"${math.get('alttext', '')}$")
    for tag in soup.find_all("span"):
        tag.unwrap()
    return str(soup)


def normalize_html_table_with(html_table: str, simplify: Callable[[str], str]) -> str:
    """:func:`normalize_html_table` with ``simplify`` as its DOM step (in place of
    :func:`simplify_table_tags`); v1.6 passes its own."""
    if "<table" not in html_table.replace(" ", ""):
        return ""
    table = html.unescape(simplify(html_table)).replace("\n", "")
    table = unicodedata.normalize("NFKC", table).strip()
    table = "".join(TABLE_BODY.findall(table))
    for attribute in _TABLE_ATTRIBUTES:
        table = attribute.sub("", table)
    table = WHITESPACE_RUN.sub(" ", _TBODY_TAG.sub("", table))
    table = TABLE_WRAPPER[0] + table + TABLE_WRAPPER[1]
    for tag in _DELETED_TABLE_TAGS:
        table = table.replace(tag, "")
    return _COLGROUP.sub("", table)


def normalize_html_table(html_table: str) -> str:
    """An HTML table as v1.0 compares it (``normalized_html_table``).

    Rule: "" unless ``<table`` occurs once spaces are deleted; else
    :func:`simplify_table_tags`, ``html.unescape``, delete newlines, NFKC, strip; keep what lies
    between the first ``<table…>`` and the last ``</table>``; delete `` style|height|width|align|
    class="…"`` attributes and ``<tbody>``/``</tbody>``; whitespace runs become one space; wrap in
    :data:`TABLE_WRAPPER`; delete the tags ``<sup> <sub> <span> <div> <p>`` (exact spelling, no
    attributes) and their end tags, and one-line ``<colgroup>…</colgroup>``.

    Quirks: unescaping after serialising turns a cell's ``&lt;td&gt;`` into markup; the test is
    case-sensitive (``<TABLE>`` gives ""); ``< table`` passes it but has no body, giving the empty
    wrapped table; nested tables are kept whole.
    """
    return normalize_html_table_with(html_table, simplify_table_tags)


LATEX_TABLE_PACKAGES = (
    "subcaption",
    "url",
    "graphicx",
    "caption",
    "multirow",
    "booktabs",
    "color",
    "colortbl",
    "xcolor,soul,framed",
    "fontspec",
    "amsmath,amssymb,mathtools,bm,mathrsfs,textcomp",
)
"""The packages of v1.0's LaTeX-table document (``\\documentclass[border=20pt]{article}``,
``\\setlength{\\parindent}{0pt}``)."""


def latex_table_preamble() -> list[str]:
    """The lines before ``\\begin{document}`` of the LaTeX-table document (v1.0 and v1.6)."""
    preamble = ["\\documentclass[border=20pt]{article}"]
    preamble += [f"\\usepackage{{{names}}}" for names in LATEX_TABLE_PACKAGES]
    preamble.append("\\setlength{\\parindent}{0pt}")
    return preamble


def _latex_table_document(latex: str) -> str:
    lines = [*latex_table_preamble(), "\\begin{document}", latex, "\\end{document}"]
    return "\n".join(lines) + "\n"


def latexmlc_tables(document: str, version: str, timeout_s: float | None = None) -> str:
    """The tables of ``latexmlc --quiet --nocomments`` run on the LaTeX ``document``: the text
    between the first ``<table…>`` and the last ``</table>`` of its output wrapped in
    ``<table>…</table>``; "" when latexmlc fails or runs past ``timeout_s`` seconds.

    Deviation from the official code, which runs latexmlc unconfined: the run is confined to
    its folder (:mod:`evalsuite.confined`), so a table that reads a file outside it (``\\input``
    of a path) is converted without that file.

    Raises:
        LatexmlUnavailableError: ``latexmlc`` is not on PATH (``version`` names the benchmark
            version in the message).
    """
    latexmlc = shutil.which("latexmlc")
    if latexmlc is None:
        raise LatexmlUnavailableError(
            f"latexmlc (LaTeXML) is not on PATH; OmniDocBench {version} converts LaTeX tables"
            " with it. Install it: `apt install latexml` (Debian/Ubuntu) or see"
            " https://math.nist.gov/~BMiller/LaTeXML/"
        )
    with tempfile.TemporaryDirectory(prefix="omnidocbench-latexml-") as tmp:
        source, dest = Path(tmp, "table.tex"), Path(tmp, "table.html")
        source.write_text(document, encoding="utf-8")
        command = [latexmlc, "--quiet", "--nocomments", *latexml_arguments(),
                   f"--log={tmp}/table.log", str(source), f"--dest={dest}"]
        try:
            done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  timeout=timeout_s, check=False, cwd=tmp,
                                  env=latexml_environment(Path(tmp)),
                                  preexec_fn=file_size_limit())
        except subprocess.TimeoutExpired:
            return ""
        if done.returncode != 0 or not dest.is_file():
            return ""
        output = dest.read_text(encoding="utf-8")
    return "\n".join(f"<table>{body}</table>" for body in TABLE_BODY.findall(output))


def latex_table_to_html(latex: str) -> str:
    """Convert a LaTeX table to HTML as v1.0 does before scoring it (inner
    ``convert_latex_to_html`` of ``normalized_latex_table``).

    Rule: ``latex`` goes verbatim into the body of a fixed document (:data:`LATEX_TABLE_PACKAGES`)
    run through ``latexmlc --quiet --nocomments``; the result is the text between the first
    ``<table…>`` and the last ``</table>`` of its output wrapped in ``<table>…</table>``, or ""
    when latexmlc fails.

    Quirks: v1.0 defines a clean-up of the LaTeX (``process_table_latex``: colours, rules, font
    sizes…) but never calls it, so none is applied; several tables come out as one.

    Raises:
        LatexmlUnavailableError: ``latexmlc`` is not on PATH (v1.0 would silently score "" instead).
    """
    return latexmlc_tables(_latex_table_document(latex), "v1.0")


def normalize_table(table: str, table_format: str = "html") -> str:
    """A predicted table as v1.0 compares it (``normalized_table``): :func:`normalize_html_table`
    of ``table`` (``"html"``) or of :func:`latex_table_to_html` of it (``"latex"``).

    Raises:
        ValueError: ``table_format`` is neither ``"html"`` nor ``"latex"``.
        LatexmlUnavailableError: ``"latex"`` without ``latexmlc`` on PATH.
    """
    if table_format == "html":
        return normalize_html_table(table)
    if table_format == "latex":
        return normalize_html_table(latex_table_to_html(table))
    raise ValueError(f"table_format must be 'html' or 'latex', not {table_format!r}")
