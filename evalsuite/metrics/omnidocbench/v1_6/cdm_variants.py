"""OmniDocBench v1.6's CDM variants of a display-formula row: the matrix clean-up of
``src/core/preprocess/formula_cdm.py`` (``build_matrix_cdm_variants``,
``sanitize_formula_for_cdm``) and the formula-candidate clean-up of
``src/core/preprocess/extract.py`` (``_sanitize_formula_candidate``), opendatalab/OmniDocBench
at 9dc1dec, quirks included.

When either side of a row holds a matrix (a ``matrix``/``bmatrix``/``pmatrix``/``vmatrix``/
``Vmatrix``/``smallmatrix`` environment, or an ``array`` with ``\\left[``, ``\\right]`` or ``&``),
the prediction is cleaned for CDM rendering: outer braces of each cell removed, empty
``array`` specs set to ``l``, ``\\dfrac`` → ``\\frac``, style wrappers (``\\mathbf{…}``, …)
unwrapped, ``\\operatorname{det}`` → ``\\det``, row breaks right after ``\\begin{matrix}`` or
right before ``\\end{matrix}`` dropped, a matrix alone in ``aligned`` unwrapped, a one-column
``array`` of matrices written as matrices separated by ``\\qquad``.
"""

from __future__ import annotations

import re

from evalsuite.metrics.omnidocbench.v1_6.normalize import (
    strip_formula_delimiters,
    strip_formula_tags,
)
from evalsuite.metrics.omnidocbench.v1_6.split import skip_row_break_options

__all__ = [
    "build_matrix_cdm_variants",
    "sanitize_formula_candidate",
    "sanitize_formula_for_cdm",
    "strip_formula_wrappers",
]

_MATRIX_ENVS = ("matrix", "bmatrix", "pmatrix", "vmatrix", "Vmatrix", "smallmatrix")
_MATRIX_GROUP = "|".join(_MATRIX_ENVS)
_STYLE_WRAPPER = re.compile(
    r"\\(?:boldsymbol|mathbf|mathrm|mathit|mathsf|mathtt|textbf)\s*\{([^{}]+)\}"
)
_OPERATORNAME_DET = re.compile(r"\\operatorname\s*\{\s*det\s*\}")
_EMPTY_ARRAY_SPEC = re.compile(r"\\begin\{array\}\s*\{\s*\}")
_SINGLE_COLUMN_ARRAY = re.compile(
    r"^\s*\\begin\{array\}\s*\{\s*l\s*\}(?P<body>.*)\\end\{array\}\s*$", re.S
)
_ALIGNED_MATRIX = re.compile(
    r"^\s*\\begin\{aligned\*?\}\s*&?\s*"
    rf"(?P<body>\\begin\{{(?:{_MATRIX_GROUP})\}}.*?\\end\{{(?:{_MATRIX_GROUP})\}})"
    r"\s*(?:\\\\\s*)?\\end\{aligned\*?\}\s*$",
    re.S,
)
_ARRAY_ENV = re.compile(r"\\begin\{array\}\s*\{(?P<spec>[^}]*)\}(?P<body>.*?)\\end\{array\}", re.S)
_MATRIX_ENV = re.compile(rf"\\begin\{{(?P<env>{_MATRIX_GROUP})\}}(?P<body>.*?)\\end\{{(?P=env)\}}",
                         re.S)
_BREAK_AFTER_BEGIN = re.compile(rf"(\\begin\{{(?:{_MATRIX_GROUP})\}})\s*\\\\")
_BREAK_BEFORE_END = re.compile(rf"\\\\\s*(\\end\{{(?:{_MATRIX_GROUP})\}})")
_DOUBLE_SUBSCRIPTS = ((re.compile(r"_\{_\{([^{}]+)\}\}"), r"_{\1}"),
                      (re.compile(r"x_\{_\{([^{}]+)\}\}"), r"x_{\1}"))
_ROW_BREAK = "\\\\"

_DELIMITED = (re.compile(r"\$\$(.*?)\$\$", re.S), re.compile(r"\\\[(.*?)\\\]", re.S),
              re.compile(r"\\\((.*?)\\\)", re.S), re.compile(r"\$(.*?)\$", re.S))
_CANDIDATE_REPLACEMENTS = (
    ("……", " \\cdots \\cdots "), ("…", " \\cdots "), ("×", " \\times "), ("÷", " \\div "),
    ("≤", " \\leq "), ("≥", " \\geq "), ("≠", " \\neq "), ("≈", " \\approx "),
    ("□", " \\square "), ("△", " \\triangle "), ("（", "("), ("）", ")"), ("［", "["),
    ("］", "]"), ("｛", "{"), ("｝", "}"),
)
_ARROW = re.compile(r"(?P<lhs>.*?)\\xrightarrow\s*\{(?P<label>[^{}]+)\}(?P<rhs>.*)")
_REDOX = "氧化还原反应"


def _top_level_parts(text: str, separator: str, *, row_options: bool = False) -> list[str]:
    """The stripped parts of ``text`` between ``separator``s outside braces (escaped ones
    counted too) and ``\\begin``/``\\end`` tokens; the last part only if not empty.
    ``row_options`` (``_split_latex_rows``): empty parts dropped, and spaces, a ``*`` and a
    ``[…]`` after each separator skipped."""
    parts: list[str] = []
    current: list[str] = []
    braces = envs = 0
    index = 0
    while index < len(text):
        token = next((t for t in ("\\begin{", "\\end{") if text.startswith(t, index)), None)
        close = text.find("}", index + len(token)) if token else -1
        if close != -1:
            current.append(text[index : close + 1])
            envs = envs + 1 if token == "\\begin{" else max(0, envs - 1)
            index = close + 1
            continue
        if text.startswith(separator, index) and braces == 0 and envs == 0:
            part = "".join(current).strip()
            if part or not row_options:
                parts.append(part)
            current = []
            index += len(separator)
            if row_options:
                index = skip_row_break_options(text, index)
            continue
        char = text[index]
        current.append(char)
        if char == "{":
            braces += 1
        elif char == "}":
            braces = max(0, braces - 1)
        index += 1
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return parts


def _bare(text: str) -> str:
    """Delimiters, then ``\\tag``s, removed."""
    return strip_formula_tags(strip_formula_delimiters(text).strip())


def _has_matrix(text: str) -> bool:
    """``_contains_matrix_hint``: a matrix environment, or an ``array`` with ``\\left[``,
    ``\\right]`` or ``&``."""
    if any(f"\\begin{{{env}}}" in text for env in _MATRIX_ENVS):
        return True
    return "\\begin{array}" in text and ("\\left[" in text or "\\right]" in text or "&" in text)


def _brace_wrapped(text: str) -> bool:
    """Whether ``text`` is one balanced ``{…}`` group."""
    if not text or text[0] != "{" or text[-1] != "}":
        return False
    depth = 0
    for index, char in enumerate(text):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0 and index != len(text) - 1:
                return False
    return depth == 0


def _without_outer_braces(text: str) -> str:
    text = text.strip()
    while _brace_wrapped(text) and (inner := text[1:-1].strip()):
        text = inner
    return text


def _clean_cells(body: str) -> str:
    rows = _top_level_parts(body, _ROW_BREAK)
    return _ROW_BREAK.join(
        "&".join(_without_outer_braces(cell) for cell in _top_level_parts(row, "&"))
        for row in rows
    )


def _clean_matrix_cells(text: str) -> str:
    """Each ``array``'s and matrix's cells without their outer braces (rows rejoined with
    ``\\\\``, cells with ``&``, no spaces)."""
    def array(found: re.Match[str]) -> str:
        return f"\\begin{{array}}{{{found['spec']}}}{_clean_cells(found['body'])}\\end{{array}}"

    def matrix(found: re.Match[str]) -> str:
        env = found["env"]
        return f"\\begin{{{env}}}{_clean_cells(found['body'])}\\end{{{env}}}"

    return _MATRIX_ENV.sub(matrix, _ARRAY_ENV.sub(array, text))


def _unwrap_styles(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, _STYLE_WRAPPER.sub(r"\1", text)
    return _OPERATORNAME_DET.sub(r"\\det", text)


def _clean_matrix_fragment(text: str) -> str:
    """``_sanitize_matrix_fragment`` (module docstring)."""
    fragment = _without_outer_braces(text)
    fragment = _EMPTY_ARRAY_SPEC.sub(r"\\begin{array}{l}", fragment)
    fragment = fragment.replace("\\dfrac", "\\frac")
    for double_subscript, single in _DOUBLE_SUBSCRIPTS:  # the second catches what the first made
        fragment = double_subscript.sub(single, fragment)
    fragment = _clean_matrix_cells(_unwrap_styles(fragment))
    fragment = _BREAK_AFTER_BEGIN.sub(r"\1 ", fragment)
    fragment = _BREAK_BEFORE_END.sub(r" \1", fragment)
    aligned = _ALIGNED_MATRIX.match(fragment)
    if aligned:
        fragment = aligned["body"].strip()
    return fragment.strip()


def sanitize_formula_for_cdm(text: str, gt_text: str = "") -> str:
    """``sanitize_formula_for_cdm``: ``text`` without delimiters and tags; cleaned for CDM
    (module docstring) when it or ``gt_text`` holds a matrix."""
    formula = _bare(str(text or ""))
    if not formula:
        return ""
    if not (_has_matrix(formula) or _has_matrix(strip_formula_tags(gt_text))):
        return formula.strip()
    formula = _clean_matrix_fragment(formula)
    single_column = _SINGLE_COLUMN_ARRAY.match(formula)
    if single_column:
        rows = [_clean_matrix_fragment(row)
                for row in _top_level_parts(single_column["body"], _ROW_BREAK, row_options=True)]
        if rows and any(_has_matrix(row) for row in rows):
            formula = " \\qquad ".join(rows)
    return _clean_matrix_fragment(formula).strip()


def build_matrix_cdm_variants(gt_text: str, pred_text: str) -> tuple[str, str]:
    """``build_matrix_cdm_variants``: (ground truth for CDM, cleaned prediction or ``""``).

    Both sides lose delimiters and tags. Without a matrix on either side: (bare ground truth,
    ``""``). Else the ground truth is cleaned only when it has an empty ``array`` spec, and the
    prediction cleaned against the cleaned ground truth is returned when it differs from the
    bare prediction."""
    raw_gt = _bare(str(gt_text or ""))
    raw_pred = _bare(str(pred_text or ""))
    if not raw_gt and not raw_pred:
        return "", ""
    if not (_has_matrix(raw_gt) or _has_matrix(raw_pred)):
        return raw_gt, ""
    cleaned_gt = sanitize_formula_for_cdm(raw_gt, raw_gt)
    gt_cdm = cleaned_gt if _EMPTY_ARRAY_SPEC.search(_bare(raw_gt)) else raw_gt
    pred_cdm = sanitize_formula_for_cdm(raw_pred, cleaned_gt or raw_gt)
    return gt_cdm or raw_gt, pred_cdm if pred_cdm and pred_cdm != raw_pred else ""


def strip_formula_wrappers(text: str) -> str:
    """Every ``$$…$$``, ``\\[…\\]``, ``\\(…\\)`` then ``$…$`` replaced by its content with a
    space either side (``_strip_formula_wrappers_keep_content``); a non-string reads as ''."""
    if not isinstance(text, str):
        return ""
    for pattern in _DELIMITED:
        text = pattern.sub(lambda found: f" {found[1]} ", text)
    return text


def sanitize_formula_candidate(text: str) -> str:
    """``_sanitize_formula_candidate``: a text line made a display formula: whitespace
    collapsed, math delimiters removed (content kept), Unicode operators and full-width brackets
    written in LaTeX, an ``\\xrightarrow{label}`` given ``\\text{label}`` for a plain label (and a
    trailing 氧化还原反应 set under the arrow), ``%``/``&`` escaped; wrapped in ``\\[ … \\]``
    unless it starts with ``\\begin{``, ``$$`` or ``\\[``. ``""`` for blank text."""
    text = " ".join(str(text or "").replace("\u3000", " ").split())
    if not text:
        return ""
    text = strip_formula_wrappers(text)
    for old, new in _CANDIDATE_REPLACEMENTS:
        text = text.replace(old, new)
    arrow = _ARROW.search(text)
    if arrow:
        lhs, label, rhs = arrow["lhs"].strip(), arrow["label"].strip(), arrow["rhs"].strip()
        if label and "\\" not in label:
            label = f"\\text{{{label}}}"
        if rhs.endswith(_REDOX):
            text = (f"{lhs} \\underset{{{_REDOX}}}{{\\xrightarrow{{{label}}}}} "
                    f"{rhs[: -len(_REDOX)].strip()}").strip()
        else:
            text = f"{lhs} \\xrightarrow{{{label}}} {rhs}".strip()
    text = re.sub(r"(?<!\\)%", r"\\%", text)
    text = re.sub(r"(?<!\\)&", r"\\&", text)
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return ""
    if text.startswith(("\\begin{", "$$", "\\[")):
        return text
    return f"\\[ {text} \\]"
