"""CDM v1.6 preparation after the tokenizer: normalise the token string and colour every token.

From a space-separated token string (the tokenizer's output) this builds the
:class:`~evalsuite.metrics.cdm.common.render.RenderJob` the official ``latex2bbox_color`` renders:
template choice and CJK rewrites, ``normalize_latex`` (multi-part tokens merged, function names
spelled out letter by letter, missing braces of \\frac/\\hat/\\sqrt... filled in) and
``token_add_color_RGB`` (token i wrapped in ``\\mathcolor[RGB]{palette entry i + 1}``).

Rewrites that the official code does as "find every match, then ``str.replace`` each found text
everywhere" are done the same way (:func:`_replace_found`): that can also rewrite copies of a
found text that the pattern itself would not match, and those quirks carry over.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.cdm.common.render import RenderJob, Template, palette_colour, paper_for

_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]+")
_CJK_MATHRM = re.compile(r"\\mathrm\s*\{([^{}]*[\u4e00-\u9fff\u3400-\u4dbf][^{}]*)\}")
_CJK_TEXT = re.compile(r"\\text\s*\{([^{}]*[\u4e00-\u9fff\u3400-\u4dbf][^{}]*)\}")
PERCENT_PLACEHOLDER = "<PERCENTAGETOKEN>"

_SKIP_PATTERNS = [
    re.compile(p)
    for p in (
        r"\{",
        r"\}",
        r"[\[\]]",
        r"\\begin\{.*?\}",
        r"\\end\{.*?\}",
        r"\^",
        r"\_",
        r"\\.*rule.*",
        r"\\.*line.*",
        r"\[[\-.0-9]+[epm][xtm]\]",
    )
]
_SKIP = {
    "\\",
    "\\\\",
    "\\index",
    "\\a",
    "&",
    "$",
    "\\multirow",
    "\\def",
    "\\edef",
    "\\raggedright",
    "\\url",
    "\\cr",
    "\\ensuremath",
    "\\left",
    "\\right",
    "\\mathchoice",
    "\\scriptstyle",
    "\\displaystyle",
    "\\qquad",
    "\\quad",
    "\\,",
    "\\!",
    "~",
    "\\boldmath",
    "\\gdef",
    "\\today",
    "\\the",
}
_PHANTOM = {
    "\\fontfamily",
    "\\vphantom",
    "\\phantom",
    "\\rowcolor",
    "\\ref",
    "\\thesubequation",
    "\\global",
    "\\theboldgroup",
}
_TWO_ARGS = {"\\frac", "\\binom"}
_OPTIONAL_THEN_ARG = {"\\xrightarrow", "\\xleftarrow", "\\sqrt"}
_TWO_ARGS_UNDRAWN = {"\\overset", "\\underset", "\\stackrel"}
_ACCENTS = {
    "\\widetilde",
    "\\overline",
    "\\hat",
    "\\widehat",
    "\\tilde",
    "\\Tilde",
    "\\dot",
    "\\bar",
    "\\vec",
    "\\underline",
    "\\underbrace",
    "\\check",
    "\\breve",
    "\\Bar",
    "\\Vec",
    "\\mathring",
    "\\ddot",
    "\\Ddot",
    "\\dddot",
    "\\ddddot",
}
_STYLES = {
    "\\boldsymbol",
    "\\pmb",
    "\\textbf",
    "\\mathrm",
    "\\mathbf",
    "\\mathbb",
    "\\mathcal",
    "\\textmd",
    "\\texttt",
    "\\textnormal",
    "\\text",
    "\\textit",
    "\\textup",
    "\\mathop",
    "\\mathbin",
    "\\smash",
    "\\operatorname",
    "\\textrm",
    "\\mathfrak",
    "\\emph",
    "\\textsf",
    "\\textsc",
}
# Whole tokens spelled out as several, in the official order: dashes and ellipses, then
# function names as upright letters (\\sin -> \\mathrm { s i n }).
_SPELLED_OUT = [("--", "- -"), ("---", "- - -")] + [
    (dots, ". . .")
    for dots in (
        "…",
        "\\ldots",
        "\\hdots",
        "\\cdots",
        "\\dddot",
        "\\dots",
        "\\dotsc",
        "\\dotsi",
        "\\dotsm",
        "\\dotso",
        "\\dotsb",
        "\\mathellipsis",
    )
]
_FUNCTION_NAMES = [
    "ex",
    "ln",
    "lg",
    "cot",
    "mod",
    "bmod",
    "pmod",
    "min",
    "max",
    "ker",
    "hom",
    "sec",
    "scs",
    "csc",
    "deg",
    "arg",
    "log",
    "dim",
    "exp",
    "sin",
    "cos",
    "tan",
    "tanh",
    "cosh",
    "sinh",
    "coth",
    "arcsin",
    "arccos",
    "arctan",
]
_COLOUR_RE = (
    r"\\colorbox[ \[\]RGBrgb]+{ [A-Za-z 0-9,!]+ } |\\color[ \[\]RGBrgb]+{ [A-Za-z 0-9,!]+ } "
    r"|\\textcolor[ \[\]RGBrgb]+{ [A-Za-z 0-9,!]+ } |\\cellcolor[ \[\]RGBrgb]+{ [A-Za-z 0-9,!]+ } "
)


def _spell_out_v16(text: str) -> str:
    """Dashes, ellipses and function names spelled out where they stand as whole tokens."""
    for whole, parts in _SPELLED_OUT:
        text = re.sub(r"(?<=\s)" + re.escape(whole) + r"(?=\s)", parts, text)
    for name in _FUNCTION_NAMES:
        letters = "m o d" if name in ("bmod", "pmod") else " ".join(name)
        text = re.sub(r"(?<=\s)\\" + name + r"(?=\s)", "\\\\mathrm { " + letters + " }", text)
    return text


@dataclass(frozen=True)
class TokenRules:
    """One version's token tables and the rewrites in which its normalisation differs.

    ``early_merges``: patterns squeezed to one token before the ellipses are spelled out;
    ``spell_out``: text (padded with spaces) -> text with multi-letter tokens spelled out;
    ``spaced_merges``: patterns squeezed to one token followed by a space;
    ``late_merges``: (pattern, rewrite of the found text) after the ``\\char`` merge.
    """

    skip: frozenset[str]
    phantom: frozenset[str]
    accents: frozenset[str]
    early_merges: tuple[str, ...]
    spell_out: Callable[[str], str]
    spaced_merges: tuple[str, ...]
    late_merges: tuple[tuple[str, Callable[[str], str]], ...]


class PreparationError(EvalsuiteError, ValueError):
    """The token list cannot be coloured (the official code raises too and drops the side)."""


def contains_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


def wrap_cjk_in_text(latex: str) -> str:
    """Put every run of CJK characters not already alone in ``\\text{...}`` into one."""
    latex = re.sub(r"\\text\s*\{", r"\\text{", latex)

    def wrap(match: re.Match[str]) -> str:
        inside = re.search(r"\\text\s*\{$", latex[: match.start()]) and re.match(
            r"\s*}", latex[match.end() :]
        )
        return match.group(0) if inside else f"\\text{{{match.group(0)}}}"

    return _CJK_RUN.sub(wrap, latex)


def _cjk_text_per_glyph(latex: str) -> str:
    if "\\mathrm" in latex:
        latex = _CJK_MATHRM.sub(r"\\text{\1}", latex)
    if "\\text" not in latex:
        return latex

    def spread(match: re.Match[str]) -> str:
        content = match.group(1).strip()
        return "\\text { " + content + " }" if content else match.group(0)

    return _CJK_TEXT.sub(spread, latex)


def closing_index(tokens: list[str], start: int, pair: tuple[str, str] = ("{", "}")) -> int:
    """Index closing the first group opened at or after ``start`` (-1 if none opens)."""
    depth = 0
    for i in range(start, len(tokens)):
        if tokens[i] == pair[0]:
            depth += 1
        elif tokens[i] == pair[1]:
            depth -= 1
            if depth == 0:
                return i
    if depth > 0:
        raise PreparationError(f"no closing {pair[1]!r}")
    return -1


def _replace_found(text: str, pattern: str, rewrite: Callable[[str], str]) -> str:
    for found in re.findall(pattern, text, re.DOTALL):
        text = text.replace(found, rewrite(found))
    return text


def _squeeze(found: str) -> str:
    return found.replace(" ", "")


def squeeze_then_space(found: str) -> str:
    """``found`` without spaces, then one space: a multi-part token merged into one."""
    return found.replace(" ", "") + " "


# \\big( and the like become one token (both versions).
BIG_DELIMITER_MERGES = (r"\\[Bb]ig[g]?[glrm]? [(){}|\[\]] ", r"\\[Bb]ig[g]?[glrm]? \\.*? ")
V16_RULES = TokenRules(
    skip=frozenset(_SKIP | _TWO_ARGS_UNDRAWN),
    phantom=frozenset(_PHANTOM),
    accents=frozenset(_ACCENTS),
    early_merges=(),
    spell_out=_spell_out_v16,
    spaced_merges=(r"\\string [^ ]+ ", *BIG_DELIMITER_MERGES),
    late_merges=((r"\\rule {[ .0-9a-z]+} {[ .0-9a-z]+}", _squeeze),),
)


def _merge_group_tokens(tokens: list[str], heads: set[str]) -> list[str]:
    """Tabular: \\cmidrule (a-b) {x} and \\cline {x} become one token each."""
    i = 0
    while i < len(tokens):
        if tokens[i] in heads:
            if tokens[i + 1] == "(":
                end = closing_index(tokens, closing_index(tokens, i + 1, ("(", ")")) + 1)
            else:
                end = closing_index(tokens, i + 1)
            tokens = [*tokens[:i], "".join(tokens[i : end + 1]), *tokens[end + 1 :]]
        i += 1
    return tokens


def _fill_braces(tokens: list[str], rules: TokenRules) -> list[str]:
    """Add braces an argument left out: \\hat x -> \\hat { x }, \\frac a b -> \\frac { a } { b }."""
    i = 0
    one_arg = rules.accents | _STYLES
    while i < len(tokens):
        token = tokens[i]
        if token in one_arg:
            last = i + 1
            while last < len(tokens) and tokens[last] in one_arg:
                last += 1
            head = tokens[:i]
            for k in range(i, last):
                head = [*head, tokens[k], "{"]
            if tokens[last] != "{":
                tokens = head + [tokens[last]] + ["}"] * (last - i) + tokens[last + 1 :]
            else:
                end = closing_index(tokens, last)
                tokens = head + tokens[last + 1 : end] + ["}"] * (last - i) + tokens[end + 1 :]
        elif token in _OPTIONAL_THEN_ARG:
            if tokens[i + 1] not in ("[", "{"):
                tokens = [*tokens[: i + 1], "{", tokens[i + 1], "}", *tokens[i + 2 :]]
            else:
                end = closing_index(tokens, i + 1, ("[", "]")) if tokens[i + 1] == "[" else i
                if tokens[end + 1] != "{":
                    tokens = [*tokens[: end + 1], "{", tokens[end + 1], "}", *tokens[end + 2 :]]
        elif token in _TWO_ARGS | _TWO_ARGS_UNDRAWN:
            if tokens[i + 1] != "{":
                tokens = [*tokens[: i + 1], "{", tokens[i + 1], "}", *tokens[i + 2 :]]
            end = closing_index(tokens, i + 1)
            if tokens[end + 1] != "{":
                tokens = [*tokens[: end + 1], "{", tokens[end + 1], "}", *tokens[end + 2 :]]
        i += 1
    return tokens


def normalize_tokens(text: str, rules: TokenRules = V16_RULES) -> str:
    """The official ``normalize_latex`` (without trailing-space removal) on a token string,
    with a version's ``rules`` (default: v1.6)."""
    tabular = "tabular" in text
    text = text.strip().replace("\\pmatrix", "\\mypmatrix").replace("\\matrix", "\\mymatrix")
    for dropped in ("\\raggedright", "\\arraybackslash", "\\lowercase", "\\uppercase"):
        text = text.replace(dropped, "")
    text = _replace_found(
        text, r"\\[hv]space { [.0-9a-z ]+ }", (lambda _: "") if tabular else _squeeze
    )
    if tabular:
        for env in ("tabular", "array"):
            text = text.replace(f"\\begin {{{env}}}", f"\\begin{{{env}}}")
            text = text.replace(f"\\end {{{env}}}", f"\\end{{{env}}}")
        tokens = text.split(" ")
        if "\\begin{tabular}" in tokens:
            start = tokens.index("\\begin{tabular}")
            end = closing_index(tokens, start + 1)
            tokens = [*tokens[:start], "".join(tokens[start : end + 1]), *tokens[end + 1 :]]
        text = " ".join(_merge_group_tokens(tokens, {"\\cmidrule", "\\cline"}))
    text = _replace_found(
        text,
        r"\\begin{array} { [lrc ]+ }",
        lambda found: (
            found.replace("\\begin{array} ", "<s>")
            .replace(" ", "")
            .replace("<s>", "\\begin{array} ")
        ),
    )
    for pattern in rules.early_merges:
        text = _replace_found(text, pattern, _squeeze)
    text = rules.spell_out(f" {text} ")
    for pattern in rules.spaced_merges:
        text = _replace_found(text, pattern, squeeze_then_space)
    text = _replace_found(text, r"\\operatorname \*", lambda _: "\\operatorname")
    text = text.replace("\\lefteqn", "").replace("\\footnote ", "^ ")
    text = _replace_found(text, r"\\\' [^{] ", squeeze_then_space)
    if tabular:
        text = _replace_found(text, r"\[ [\-.0-9 ]+[exptcm ]+ \]", _squeeze)
    text = _replace_found(text, r"\\parbox {[^{]+}", _squeeze)
    text = _replace_found(
        text, r"\\raisebox {[^{]+} [\[\]0-9 exptcm]+{", lambda f: _squeeze(f)[:-1] + " {"
    )
    text = _replace_found(text, r"{ \\char[0-9\' ]+}", lambda f: "{ " + _squeeze(f)[1:-1] + " }")
    for pattern, rewrite in rules.late_merges:
        text = _replace_found(text, pattern, rewrite)
    text = _replace_found(
        text, r"\\specialrule {[ .0-9a-z]+} {[ .0-9a-z]+} {[ .0-9a-z]+}", _squeeze
    )
    text = _replace_found(text, _COLOUR_RE, lambda _: "")
    return " ".join(_fill_braces(text.split(" "), rules))


def _mark(drawn: list[str]) -> str:
    return f"\\mathcolor[RGB]{{<color_{len(drawn)}>}}{{"


def _colour_span(
    tokens: list[str], i: int, end: int, drawn: list[str], braced: bool = False
) -> list[str]:
    """Colour token ``i`` with its arguments up to ``end``; ``braced`` adds an outer group."""
    drawn_token = tokens[i]
    opener = ("{" if braced else "") + _mark(drawn) + drawn_token
    closer = "}}" if braced else "}"
    drawn.append(drawn_token)
    return [*tokens[:i], opener, *tokens[i + 1 : end + 1], closer, *tokens[end + 1 :]]


def _colour_at(
    tokens: list[str], i: int, drawn: list[str], rules: TokenRules, optional_arg: bool = False
) -> tuple[list[str], int]:
    """Colour the token at ``i`` (for containers also the tokens inside); return tokens, next index.

    Loops over a container's inside keep the end index found before colouring, as the official
    code does, although colouring inserts tokens."""
    token = tokens[i]
    if not token:
        return tokens, i + 1
    if token in rules.phantom:
        end = closing_index(tokens, i + 1) if tokens[i + 1] == "{" else i + 1
        return tokens, end + 1
    if token in _TWO_ARGS:
        end = closing_index(tokens, closing_index(tokens, i + 1) + 1)
        return _colour_span(tokens, i, end, drawn), i + 1
    if token in rules.accents:
        end = closing_index(tokens, i + 1)
        subscripted = end + 1 < len(tokens) and tokens[end + 1] == "_"
        return _colour_span(tokens, i, end, drawn, token != "\\underbrace" and subscripted), i + 1
    if token in _STYLES:
        end = closing_index(tokens, i + 1)
        if end - (i + 1) == 2:
            inner = tokens[i + 2]
            tokens = [*tokens[: i + 2], _mark(drawn) + inner + "}", *tokens[end:]]
            drawn.append(inner)
        else:
            k = i + 2
            while k < end:
                tokens, k = _colour_at(tokens, k, drawn, rules)
        return tokens, end + 1
    if token in _OPTIONAL_THEN_ARG:
        if tokens[i + 1] not in ("{", "["):
            raise PreparationError(f"{token} without an argument")
        option_end = closing_index(tokens, i + 1, ("[", "]")) if tokens[i + 1] == "[" else None
        end = closing_index(tokens, i + 1 if option_end is None else option_end + 1)
        tokens = _colour_span(tokens, i, end, drawn)
        k = i + 2
        if option_end is not None:
            while k < option_end:
                tokens, k = _colour_at(tokens, k, drawn, rules, optional_arg=True)
            k = option_end + 2
        while k < end:
            tokens, k = _colour_at(tokens, k, drawn, rules)
        return tokens, end + 1
    if token in ("\\multicolumn", "\\multirow"):
        second_end = closing_index(tokens, closing_index(tokens, i + 1) + 1)
        end = closing_index(tokens, second_end + 1)
        k = second_end + 2
        while k < end:
            tokens, k = _colour_at(tokens, k, drawn, rules)
        return tokens, end + 1
    if token in rules.skip or any(p.match(token) for p in _SKIP_PATTERNS):
        # A bracket is drawn unless it is \\sqrt's option bracket.
        if (token == "[" and tokens[i - 1] != "\\sqrt") or (
            token == "]" and i >= 3 and tokens[i - 3] != "\\sqrt"
        ):
            tokens = [*tokens[:i], _mark(drawn) + token + "}", *tokens[i + 1 :]]
            drawn.append(token)
        return tokens, i + 1
    if optional_arg or (i > 1 and tokens[i - 1] == "_"):
        tokens = [*tokens[:i], "{" + _mark(drawn) + token + "}}", *tokens[i + 1 :]]
    else:
        tokens = [*tokens[:i], _mark(drawn) + token + "}", *tokens[i + 1 :]]
    drawn.append(token)
    return tokens, i + 1


def colour_tokens(normalized: str, rules: TokenRules) -> tuple[str, list[str]]:
    """(formula with ``<color_K>`` placeholders, drawn tokens in colour order) of a normalised
    token string; K is the token's index in the drawn list."""
    tokens = normalized.strip().split(" ")
    drawn: list[str] = []
    i = 0
    while i < len(tokens):
        tokens, i = _colour_at(tokens, i, drawn, rules)
    return " ".join(tokens), drawn


Tokenizer = Callable[[str], tuple[bool, str]]


def template_and_input(latex: str) -> tuple[Template, str]:
    """Template for a formula and the text handed to the tokenizer."""
    if "tabular" in latex:
        template = Template.TABULAR
    elif contains_cjk(latex):
        template = Template.CJK
        latex = wrap_cjk_in_text(latex.replace("，", ", ").replace("：", ": ").replace("；", "; "))
    else:
        template = Template.FORMULA
    return template, latex.replace("\n", " ").replace("\\%", PERCENT_PLACEHOLDER)


def prepare(latex: str, tokenize: Tokenizer) -> RenderJob | None:
    """RenderJob of one formula given the version's tokenizer; None where the official code
    gives up on the side before pdflatex."""
    template, tokenizer_input = template_and_input(latex)
    try:
        ok, text = tokenize(tokenizer_input)
        if not (ok and text):
            text = tokenizer_input
        if contains_cjk(text):
            text = _cjk_text_per_glyph(text)
        text = text.replace("< P E R C E N T A G E T O K E N >", "\\%")
        normalized = normalize_tokens(text)
        coloured_count = len(normalized.strip().split(" "))
        coloured, drawn = colour_tokens(normalized, V16_RULES)
    except (IndexError, ValueError):
        return None

    def rgb(match: re.Match[str]) -> str:
        index = int(match.group(1))
        if index >= coloured_count:
            return match.group(0)
        return ",".join(str(c) for c in palette_colour(index + 1))

    body = re.sub(r"<color_(\d+)>", rgb, coloured)
    return RenderJob(body=body, tokens=tuple(drawn), template=template, paper=paper_for(len(drawn)))
