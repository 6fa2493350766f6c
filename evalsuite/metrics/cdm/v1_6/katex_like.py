"""CDM v1.6 normal form of a formula: pylatexenc 2.10 parse tree -> KaTeX-like tree -> tokens.

OmniDocBench v1.6 replaced KaTeX's parser by pylatexenc 2.10 and rebuilt a small KaTeX parse
tree from its nodes (:func:`katex_tree`), which it prints back as space-separated LaTeX tokens
the way the old KaTeX-based ``preprocess_formula.js`` did (:func:`render_tokens`). Behaviour,
quirks included, is the official one (9dc1dec, ``pylatexenc_to_katex.py`` and
``katex_renderer.py`` in formula mode, the only mode its CDM uses):

* macros pylatexenc gives no arguments (``\\mathrm x``, ``\\binom a b``, ``\\operatorname``,
  ``\\phantom``, ``\\rule``...) take the following nodes, skipping whitespace-only text;
  ``\\binom`` may split a text node, which is cut in place in the parse tree;
* ``^``/``_`` attach the next non-space node; ``'`` is ``^{\\prime}`` and primes merge;
* the few operator names of KaTeX become ``\\operatorname{...}`` / ``\\operatorname*{...}``;
* every environment becomes an ``array`` (cases/matrices inside ``\\left``/``\\right``), with
  empty cells dropped and aligned-family odd columns prefixed by ``{ }``.

Conversion and printing recurse as deep per nesting level as the official code does, so a
formula nested too deep for Python's stack gives up (no tokens) at the same depth as officially
when called from an equally deep stack (the recursion limit counts the caller's frames too).

Converter and printer are one module because they are one idea, the round trip through the
:class:`Node` tree: the node kinds the converter builds are exactly those the printer's table
(:data:`_PRINTERS`) prints, and neither half is used without the other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType

__all__ = ["Node", "katex_tree", "render_tokens"]

_DIMENSION = re.compile(r"^\s*(-?)\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]{2})\s*$")

_OPERATORS_WITH_LIMITS = frozenset("det gcd inf lim liminf limsup max min Pr sup".split())
_OPERATORS_WITHOUT_LIMITS = frozenset({"arccos", "tanh"})
_FONTS = frozenset(
    "mathrm mathbf mathit mathsf mathtt mathcal mathbb mathfrak mathscr mbox hbox".split()
)
_ACCENTS = frozenset("hat bar vec dot ddot tilde breve check acute grave".split())
_WIDE_ACCENTS = frozenset({"widetilde", "widehat"})
# \operatorname{name} of these names is written as the macro \name (KaTeX's own operators).
OPERATOR_NAMES = frozenset(
    "arccos arcsin arctan arg cos cosh cot coth csc deg det dim exp gcd hom inf injlim ker lg "
    "lim liminf limsup ln log max min Pr projlim sec sin sinh sup tan tanh".split()
)
# environment (without its star) -> (\left delimiter, \right delimiter)
_DELIMITED_ENVIRONMENTS = {
    "pmatrix": ("(", ")"),
    "bmatrix": ("[", "]"),
    "Bmatrix": ("\\{", "\\}"),
    "vmatrix": ("|", "|"),
    "Vmatrix": ("\\Vert", "\\Vert"),
}
_CASES = {"cases": ("\\{", "."), "dcases": ("\\{", "."), "rcases": (".", "\\}")}
_PRIMES = frozenset({"'", "\\prime"})


@dataclass
class Node:
    """One node of the KaTeX-like tree.

    ``kind`` is KaTeX's group type. ``text``: a leaf's token (mathord, textord, open, close,
    spacing; "dim": a \\rule size "number unit"), the accent, font or operator macro, an
    array's environment name, a leftright's left delimiter. ``children``: the nodes of an
    ordgroup, text, phantom, leftright or the two dims of a rule. ``parts``: named sub-nodes
    (supsub base/sup/sub, genfrac numer/denom, sqrt body/index, accent base, font/lap/line
    body, leftright right). ``rows``: an array's cells (each an ordgroup)."""

    kind: str
    text: str = ""
    children: list[Node] = field(default_factory=list)
    parts: dict[str, Node | None] = field(default_factory=dict)
    rows: list[list[Node]] = field(default_factory=list)
    # array column spec: "l"/"c"/"r", "" for any other character; None: no spec
    columns: list[str] | None = None
    flag: bool = False  # genfrac: has a bar line (\frac, not \binom); op: limits below

    def is_leaf(self, kind: str, texts: frozenset[str] | set[str]) -> bool:
        return self.kind == kind and self.text in texts


@dataclass(frozen=True)
class _Script:
    """A ``^`` or ``_`` not yet attached to its base."""

    kind: str


_Item = Node | _Script


def _leaf(kind: str, text: str) -> Node:
    return Node(kind, text=text)


def _group(children: list[Node]) -> Node:
    return Node("ordgroup", children=children)


def _single_or_group(nodes: list[Node]) -> Node:
    return nodes[0] if len(nodes) == 1 else _group(nodes)


class _Converter:
    """pylatexenc 2.10 nodes -> :class:`Node` lists (one conversion per instance)."""

    def __init__(self, walker: ModuleType) -> None:
        self.w = walker

    # -- helpers on pylatexenc nodes ---------------------------------------------------------
    def is_brace_like(self, node: object) -> bool:
        """A group or math node (both have a node list and delimiters)."""
        return isinstance(node, (self.w.LatexGroupNode, self.w.LatexMathNode))

    def is_brace_group(self, node: object) -> bool:
        return self.is_brace_like(node) and node.delimiters == ("{", "}")  # type: ignore[attr-defined]

    def macro_name(self, node: object) -> str | None:
        return node.macroname if isinstance(node, self.w.LatexMacroNode) else None  # type: ignore[attr-defined]

    @staticmethod
    def raw_args(node: object) -> list:
        return list(getattr(getattr(node, "nodeargd", None), "argnlist", None) or [])

    def args(self, node: object) -> list:
        return [arg for arg in self.raw_args(node) if arg is not None]

    @staticmethod
    def contents(node: object | None) -> list:
        """The node's own node list, or the node alone where it has none."""
        if node is None:
            return []
        nodelist = getattr(node, "nodelist", None)
        return [node] if nodelist is None else list(nodelist)

    def is_blank(self, node: object) -> bool:
        return isinstance(node, self.w.LatexCharsNode) and node.chars.strip() == ""  # type: ignore[attr-defined]

    @staticmethod
    def direct_text(node: object) -> str:
        """The characters of the text nodes directly inside a group."""
        return "".join(
            child.chars
            for child in getattr(node, "nodelist", None) or []
            if getattr(child, "chars", None)
        )

    # -- node lists -------------------------------------------------------------------------
    def convert(self, nodes: Sequence | None, text_mode: bool, primes: bool = True) -> list[Node]:
        nodes = list(nodes or [])
        items: list[_Item] = []
        i = 0
        while i < len(nodes):
            taken = self.lookahead(nodes, i, text_mode, items)
            if taken is not None:
                i = taken
                continue
            node_primes = primes and not (items and isinstance(items[-1], _Script))
            items.extend(self.convert_one(nodes[i], text_mode, node_primes))
            i += 1
        return attach_scripts(items)

    def next_nonblank(self, nodes: list, j: int) -> int:
        while j < len(nodes) and self.is_blank(nodes[j]):
            j += 1
        return j

    def lookahead(self, nodes: list, i: int, text_mode: bool, items: list[_Item]) -> int | None:
        """Macros that take following sibling nodes as arguments; the index to go on from, or
        None where ``nodes[i]`` is converted on its own."""
        name = self.macro_name(nodes[i])
        if name is None:
            return None
        has_next = i + 1 < len(nodes)
        j1 = self.next_nonblank(nodes, i + 1)
        following = nodes[j1] if j1 < len(nodes) else None

        if (name in _ACCENTS or name in _WIDE_ACCENTS) and has_next:
            args = self.args(nodes[i])
            if (
                len(args) == 1
                and self.macro_name(args[0]) in _FONTS
                and not self.args(args[0])
                and self.is_brace_group(following)
            ):
                font = Node(
                    "font",
                    text=args[0].macroname,
                    parts={"body": _group(self.convert(following.nodelist, text_mode))},
                )
                if name in _ACCENTS:
                    items.append(Node("accent", text="\\" + name, parts={"base": font}))
                else:
                    items += [_leaf("textord", "\\" + name), font]
                return j1 + 1

        if name == "operatorname" and has_next and self.is_brace_like(following):
            raw = self.direct_text(following)
            if raw == raw.strip() and re.sub(r"\s+", "", raw) in OPERATOR_NAMES:
                items.append(_leaf("textord", "\\" + re.sub(r"\s+", "", raw)))
            else:
                items += [
                    _leaf("mathord", "\\operatorname"),
                    _group(self.convert(following.nodelist, False)),
                ]
            return j1 + 1

        if name in _FONTS and has_next and not self.args(nodes[i]) and following is not None:
            if self.is_brace_group(following):
                body = _group(self.convert(following.nodelist, text_mode))
            else:
                body = _single_or_group(self.convert(self.contents(following), text_mode))
            items.append(Node("font", text=name, parts={"body": body}))
            return j1 + 1

        if name in _OPERATORS_WITH_LIMITS or name in _OPERATORS_WITHOUT_LIMITS:
            items.append(Node("op", text="\\" + name, flag=name in _OPERATORS_WITH_LIMITS))
            return i + 1

        if name in {"binom", "frac", "tfrac", "dfrac"} and has_next and not self.args(nodes[i]):
            return self.fraction_from_siblings(nodes, name, j1, text_mode, items)

        if name in {"phantom", "llap", "rlap"} and has_next and self.is_brace_like(following):
            body = self.convert(following.nodelist, text_mode)
            if name == "phantom":
                items.append(Node("phantom", children=body))
            else:
                items.append(Node(name, parts={"body": _group(body)}))
            return j1 + 1

        if name == "rule" and has_next:
            j2 = self.next_nonblank(nodes, j1 + 1)
            if j2 < len(nodes) and self.is_brace_like(nodes[j1]) and self.is_brace_like(nodes[j2]):
                width = _dimension(self.direct_text(nodes[j1]))
                height = _dimension(self.direct_text(nodes[j2]))
                if width and height:
                    items.append(Node("rule", children=[_leaf("dim", width), _leaf("dim", height)]))
                    return j2 + 1
        return None

    def fraction_from_siblings(
        self, nodes: list, name: str, j1: int, text_mode: bool, items: list[_Item]
    ) -> int | None:
        """\\frac/\\binom without parsed arguments: numerator and denominator from the following
        siblings (for \\binom also the first words of a text node, which is then cut)."""
        j2 = self.next_nonblank(nodes, j1 + 1)
        first = nodes[j1] if j1 < len(nodes) else None
        second = nodes[j2] if j2 < len(nodes) else None

        def words(chars: str) -> list[Node]:
            return attach_scripts(_chars_to_items(chars, text_mode))

        def binom(numer: list[Node], denom: list[Node]) -> None:
            items.append(
                Node(
                    "genfrac",
                    parts={"numer": _single_or_group(numer), "denom": _single_or_group(denom)},
                )
            )

        if name == "binom" and isinstance(first, self.w.LatexCharsNode):
            two_words = re.match(r"\s*([^\s]+)\s+([^\s]+)(.*)", first.chars, flags=re.S)
            if two_words:
                numer, denom = words(two_words.group(1)), words(two_words.group(2))
                if numer and denom:
                    binom(numer, denom)
                    first.chars = two_words.group(3)
                    return j1

        if self.is_brace_like(first) and self.is_brace_like(second):
            items.append(
                Node(
                    "genfrac",
                    parts={
                        "numer": _group(self.convert(first.nodelist, text_mode)),
                        "denom": _group(self.convert(second.nodelist, text_mode)),
                    },
                    flag=name != "binom",
                )
            )
            return j2 + 1

        if (
            name == "binom"
            and first is not None
            and second is not None
            and getattr(first, "specials_chars", None) != "&"
            and getattr(second, "specials_chars", None) != "&"
            and self.macro_name(second) != "\\"
        ):
            if isinstance(second, self.w.LatexCharsNode):
                one_word = re.match(r"\s*([^\s]+)(.*)", second.chars, flags=re.S)
                if one_word and one_word.group(2).strip():
                    numer = self.convert(self.contents(first), text_mode)
                    denom = words(one_word.group(1))
                    if numer and denom:
                        binom(numer, denom)
                        second.chars = one_word.group(2)
                        return j2
            # (converted again, as officially: a nested \binom may have cut a text node)
            numer = self.convert(self.contents(first), text_mode)
            denom = self.convert(self.contents(second), text_mode)
            if numer and denom:
                binom(numer, denom)
                return j2 + 1
        return None

    # -- single nodes -----------------------------------------------------------------------
    def convert_one(self, node: object, text_mode: bool, primes: bool) -> list[_Item]:
        w = self.w
        if isinstance(node, w.LatexCharsNode):
            return _chars_to_items(node.chars or "", text_mode, primes)
        if isinstance(node, w.LatexSpecialsNode):
            return _chars_to_items(node.specials_chars or "", text_mode, primes)
        if isinstance(node, w.LatexGroupNode):
            return [_group(self.convert(node.nodelist, text_mode, primes))]
        if isinstance(node, w.LatexMathNode):
            # the old KaTeX tokenizer saw "$" as a symbol of the formula
            dollar = _leaf("mathord", "$")
            return [dollar, *self.convert(node.nodelist, False, primes), _leaf("mathord", "$")]
        if isinstance(node, w.LatexEnvironmentNode):
            return [self.environment(node)]
        if isinstance(node, w.LatexMacroNode):
            return self.macro(node, text_mode)
        return []  # comments

    def argument(self, arg: object | None, text_mode: bool) -> Node:
        """A macro argument as one node: {...} stays a group, a bare token stays itself."""
        if arg is None:
            return _group([])
        if self.is_brace_group(arg):
            return _group(self.convert(arg.nodelist, text_mode))  # type: ignore[attr-defined]
        return _single_or_group(self.convert(self.contents(arg), text_mode))

    def inline_argument(self, arg: object, text_mode: bool) -> list[Node]:
        """An argument of an unknown macro, kept in line ([...] as open/close brackets)."""
        if not self.is_brace_like(arg):
            return self.convert(self.contents(arg), text_mode)
        inner = self.convert(arg.nodelist, text_mode)  # type: ignore[attr-defined]
        if arg.delimiters == ("[", "]"):  # type: ignore[attr-defined]
            return [_leaf("open", "["), *inner, _leaf("close", "]")]
        return [_group(inner)]

    def macro(self, node: object, text_mode: bool) -> list[_Item]:
        name: str = node.macroname  # type: ignore[attr-defined]
        if name in {"limits", "nolimits"}:
            return []
        args = self.args(node)
        first = args[0] if args else None
        out: list[_Item]
        if name in {"frac", "tfrac", "dfrac", "binom"}:
            numer, denom = (
                (self.argument(args[0], text_mode), self.argument(args[1], text_mode))
                if len(args) >= 2
                else (_group([]), _group([]))
            )
            out = [Node("genfrac", parts={"numer": numer, "denom": denom}, flag=name != "binom")]
        elif name == "sqrt":
            raw = self.raw_args(node)
            index_arg = raw[0] if len(raw) >= 2 else None
            body_arg = raw[1] if len(raw) >= 2 else (raw[0] if raw else None)
            index = (
                None
                if index_arg is None
                else _group(self.convert(self.contents(index_arg), text_mode))
            )
            out = [Node("sqrt", parts={"body": self.argument(body_arg, text_mode), "index": index})]
        elif name in _ACCENTS:
            out = [
                Node("accent", text="\\" + name, parts={"base": self.argument(first, text_mode)})
            ]
        elif name in _FONTS:
            out = [Node("font", text=name, parts={"body": self.argument(first, text_mode)})]
        elif name == "text":
            out = [Node("text", children=self.convert(self.contents(first), True))]
        elif name in {"overline", "underline"}:
            out = [Node(name, parts={"body": self.argument(first, text_mode)})]
        else:
            out = [_leaf("textord", "\\" + name)]
            for arg in args:
                out += self.inline_argument(arg, text_mode)
        if (
            text_mode
            and getattr(node, "macro_post_space", "")
            and not (out and isinstance(out[-1], Node) and out[-1].is_leaf("spacing", {" "}))
        ):
            out.append(_leaf("spacing", " "))
        return out

    def environment(self, env: object) -> Node:
        name: str = env.environmentname  # type: ignore[attr-defined]
        rows = self.environment_rows(env, name)
        columns = self.environment_columns(env, name)
        if columns is None and name.startswith("aligned"):
            widest = max((len(row) for row in rows), default=0)
            if widest:
                columns = ["r" if k % 2 == 0 else "l" for k in range(widest)]
        array = Node("array", text=name or "array", rows=rows, columns=columns)
        delimiters = _CASES.get(name.rstrip("*")) or _DELIMITED_ENVIRONMENTS.get(name.rstrip("*"))
        if delimiters:
            return Node(
                "leftright",
                text=delimiters[0],
                parts={"right": _leaf("close", delimiters[1])},
                children=[array],
            )
        return array

    def environment_columns(self, env: object, name: str) -> list[str] | None:
        """Column alignments of the column spec (separators only count for being there)."""
        if name.rstrip("*") in _CASES:
            return ["l", "l"]
        raw = self.raw_args(env)
        if name == "array":
            spec_node = raw[1] if len(raw) >= 2 else None
        elif name in {"tabular", "tabularx"}:
            spec_node = raw[0] if raw else None
        else:
            spec_node = raw[-1] if raw else None
        if spec_node is None:
            return None
        spec = self.direct_text(spec_node)
        if spec == "":
            return []
        # every other non-space character is a separator: no alignment, but it keeps the list
        # non-empty ("" entries are skipped when printed)
        columns = [ch if ch in "lcr" else "" for ch in spec if not ch.isspace()]
        return columns or None

    def environment_rows(self, env: object, name: str) -> list[list[Node]]:
        w = self.w
        aligned = name.startswith("aligned")
        rows: list[list[Node]] = []
        row: list[Node] = []
        cell: list = []

        def end_cell() -> None:
            nonlocal cell
            nodes = self.convert(cell, False)
            if aligned and len(row) % 2 == 1:
                nodes = [_group([]), *nodes]
            row.append(_group(nodes))
            cell = []

        for node in env.nodelist or []:  # type: ignore[attr-defined]
            if isinstance(node, w.LatexSpecialsNode) and node.specials_chars == "&":
                end_cell()
            elif isinstance(node, w.LatexMacroNode) and node.macroname == "\\":
                raw = self.raw_args(node)
                star = (
                    raw[0]
                    if raw and isinstance(raw[0], w.LatexCharsNode) and raw[0].chars == "*"
                    else None
                )
                end_cell()
                rows.append(row)
                row = []
                if star is not None:
                    cell.append(star)
            else:
                cell.append(node)
        end_cell()
        rows.append(row)
        return rows


def _dimension(text: str) -> str | None:
    """``\\rule`` size as printed (number without a trailing ``.0``, then its unit)."""
    match = _DIMENSION.match(text or "")
    if not match:
        return None
    value = float(match.group(1) + match.group(2))
    number = str(int(value)) if value.is_integer() else str(value)
    return f"{number} {match.group(3)}"


def _chars_to_items(chars: str, text_mode: bool, primes: bool = True) -> list[_Item]:
    """Characters -> one mathord each; ``--`` one token in math; ``'`` runs -> ``^\\prime``s;
    ``^``/``_`` script marks; whitespace dropped (one ``~`` spacing per run in text mode)."""
    out: list[_Item] = []
    i = 0
    while i < len(chars):
        ch = chars[i]
        if ch.isspace():
            if text_mode and not (
                out and isinstance(out[-1], Node) and out[-1].is_leaf("spacing", {" "})
            ):
                out.append(_leaf("spacing", " "))
            i += 1
        elif not text_mode and chars.startswith("--", i):
            out.append(_leaf("mathord", "--"))
            i += 2
        elif ch == "'" and not text_mode and primes:
            run = len(chars[i:]) - len(chars[i:].lstrip("'"))
            out += [
                _Script("^"),
                _single_or_group([_leaf("mathord", "\\prime") for _ in range(run)]),
            ]
            i += run
        elif ch in "^_":
            out.append(_Script(ch))
            i += 1
        else:
            out.append(_leaf("mathord", ch))
            i += 1
    return out


def _prime_list(node: Node | None) -> list[Node] | None:
    """The primes a script consists of (None: not only primes)."""
    if node is None:
        return None
    if node.is_leaf("mathord", _PRIMES):
        return [node]
    if (
        node.kind == "ordgroup"
        and node.children
        and all(c.is_leaf("mathord", _PRIMES) for c in node.children)
    ):
        return list(node.children)
    return None


def _superscript_primes(script: Node | None) -> Node | None:
    """A group ``{^ ' '}`` (a stray ``^`` then primes) -> the primes themselves."""
    if script is None or script.kind != "ordgroup" or not script.children:
        return script
    if not script.children[0].is_leaf("textord", {"^"}):
        return script
    primes: list[Node] = []
    for child in script.children[1:]:
        found = _prime_list(child)
        if found is None:
            return script
        primes += found
    return _single_or_group(primes) if primes else script


def attach_scripts(items: list[_Item]) -> list[Node]:
    """Give each base the nodes after its ``^``/``_`` marks (spacings skipped); a mark with no
    base stays as a ``^``/``_`` token; repeated ``^`` keep the last script unless both are
    primes, which merge."""
    out: list[Node] = []
    i = 0
    while i < len(items):
        base = items[i]
        if isinstance(base, _Script):
            out.append(_leaf("textord", base.kind))
            i += 1
            continue
        sup: Node | None = None
        sub: Node | None = None
        j = i + 1
        while j < len(items) and isinstance(items[j], _Script):
            mark = items[j].kind  # type: ignore[union-attr]
            script: Node | None = None
            k = j + 1
            while k < len(items) and not isinstance(items[k], _Script):
                candidate = items[k]
                assert isinstance(candidate, Node)
                if not candidate.is_leaf("spacing", {" "}):
                    script = candidate
                    break
                k += 1
            if mark == "_":
                sub = script
            else:
                script = _superscript_primes(script)
                if sup is None:
                    sup = script
                else:
                    before, added = _prime_list(sup), _prime_list(script)
                    sup = (
                        _single_or_group(before + added)
                        if before is not None and added is not None
                        else script
                    )
            j = k + 1 if script is not None else j + 1
        if sup is not None or sub is not None:
            out.append(Node("supsub", parts={"base": base, "sup": sup, "sub": sub}))
            i = j
        else:
            out.append(base)
            i += 1
    return out


def katex_tree(latex: str, walker: ModuleType) -> list[Node]:
    """KaTeX-like tree of a formula parsed by pylatexenc 2.10 (``walker``: its ``latexwalker``)."""
    nodes, _, _ = walker.LatexWalker(latex).get_latex_nodes()
    return _Converter(walker).convert(nodes, False)


def render_tokens(tree: list[Node]) -> list[str]:
    """The tree printed as the official formula-mode renderer does (one string per token).

    One printer per node kind, each calling :func:`_render` / :func:`_render_all` where the
    official renderer recurses, so that a formula nested too deep for Python's stack fails
    here where it fails officially (an error means "could not normalise")."""
    tokens: list[str] = []
    _render_all(tree, None, tokens)
    return tokens


def _render_all(nodes: list[Node], font: str | None, out: list[str]) -> None:
    for node in nodes:
        _render(node, font, out)


def _render(node: Node, font: str | None, out: list[str]) -> None:
    _PRINTERS[node.kind](node, font, out)


def _print_symbol(node: Node, font: str | None, out: list[str]) -> None:
    """mathord/textord/open/close; under ``\\mathrm`` a mathord is spelt out, space as ``\\;``."""
    if node.kind == "mathord" and font == "mathrm" and not node.text.startswith("\\"):
        out += ["\\;" if ch == " " else ch for ch in node.text]
    elif node.text:
        out.append(node.text)


def _print_spacing(_node: Node, _font: str | None, out: list[str]) -> None:
    out.append("~")


def _print_group(node: Node, font: str | None, out: list[str]) -> None:
    out.append("{")
    _render_all(node.children, font, out)
    out.append("}")


def _print_text(node: Node, font: str | None, out: list[str]) -> None:
    out += ["\\mathrm", "{"]
    _render_all(node.children, font, out)
    out.append("}")


def _print_scripts(node: Node, font: str | None, out: list[str]) -> None:
    """base, then ``_`` sub, then ``^`` sup; a script that is not a group gets braces."""
    _render(node.parts["base"], font, out)  # type: ignore[arg-type]
    for mark, script in (("_", node.parts["sub"]), ("^", node.parts["sup"])):
        if script is None:
            continue
        out.append(mark)
        if script.kind == "ordgroup":
            _render(script, font, out)
        else:
            out.append("{")
            _render(script, font, out)
            out.append("}")


def _print_fraction(node: Node, font: str | None, out: list[str]) -> None:
    out.append("\\frac" if node.flag else "\\binom")
    _render(node.parts["numer"], font, out)  # type: ignore[arg-type]
    _render(node.parts["denom"], font, out)  # type: ignore[arg-type]


def _print_sqrt(node: Node, font: str | None, out: list[str]) -> None:
    index = node.parts["index"]
    out.append("\\sqrt")
    if index is not None:
        out.append("[")
        _render_all(index.children, font, out)
        out.append("]")
    _render(node.parts["body"], font, out)  # type: ignore[arg-type]


def _print_left_right(node: Node, font: str | None, out: list[str]) -> None:
    out.append("\\left" + node.text)
    _render_all(node.children, font, out)
    out.append("\\right" + node.parts["right"].text)  # type: ignore[union-attr]


def _print_accent(node: Node, font: str | None, out: list[str]) -> None:
    base = node.parts["base"]
    assert base is not None
    if base.kind == "ordgroup":
        out.append(node.text)
        _render(base, font, out)
    else:
        out += [node.text, "{"]
        _render(base, font, out)
        out.append("}")


def _print_operator(node: Node, _font: str | None, out: list[str]) -> None:
    """``\\operatorname{s i n}`` (``*`` where limits go below), one token per letter."""
    out += ["\\operatorname*" if node.flag else "\\operatorname", "{", *node.text[1:], "}"]


def _print_font(node: Node, _font: str | None, out: list[str]) -> None:
    face = "mathrm" if node.text in {"mbox", "hbox"} else node.text
    out.append("\\" + face)
    _render(node.parts["body"], face, out)  # type: ignore[arg-type]


def _print_line(node: Node, font: str | None, out: list[str]) -> None:
    """\\overline / \\underline: the body inside braces."""
    out += ["\\" + node.kind, "{"]
    _render(node.parts["body"], font, out)  # type: ignore[arg-type]
    out.append("}")


def _print_rule(node: Node, _font: str | None, out: list[str]) -> None:
    out.append("\\rule")
    for dimension in node.children:
        out += ["{", *dimension.text.split(" "), "}"]


def _print_lap(node: Node, font: str | None, out: list[str]) -> None:
    out.append("\\" + node.kind)
    _render(node.parts["body"], font, out)  # type: ignore[arg-type]


def _print_phantom(node: Node, font: str | None, out: list[str]) -> None:
    out += ["\\phantom", "{"]
    _render_all(node.children, font, out)
    out.append("}")


def _print_array(node: Node, font: str | None, out: list[str]) -> None:
    """``\\begin{array}{cols}`` rows ``\\end{array}``: rows with no content skipped, empty cells
    dropped, a row's last ``&`` removed, each row ended by ``\\\\``."""
    out += ["\\begin{array}", "{"]
    if node.columns is not None:
        out += [align for align in node.columns if align]
    elif node.rows:
        width = len(node.rows[0])
        aligned = node.text.startswith("aligned")
        out += [("r" if k % 2 == 0 else "l") if aligned else "l" for k in range(width)]
    out.append("}")
    for row in node.rows:
        if not any(cell.children for cell in row):
            continue
        for cell in row:
            _render(cell, font, out)
            if out[-2:] == ["{", "}"]:
                del out[-2:]
            out.append("&")
        if out[-1] == "&":
            out.pop()
        out.append("\\\\")
    out.append("\\end{array}")


_PRINTERS = {
    "mathord": _print_symbol,
    "textord": _print_symbol,
    "open": _print_symbol,
    "close": _print_symbol,
    "spacing": _print_spacing,
    "ordgroup": _print_group,
    "text": _print_text,
    "supsub": _print_scripts,
    "genfrac": _print_fraction,
    "sqrt": _print_sqrt,
    "leftright": _print_left_right,
    "accent": _print_accent,
    "op": _print_operator,
    "font": _print_font,
    "overline": _print_line,
    "underline": _print_line,
    "rule": _print_rule,
    "llap": _print_lap,
    "rlap": _print_lap,
    "phantom": _print_phantom,
    "array": _print_array,
}
