"""Speed case: ``teds`` on a 40x15 table with edited cells vs the direct APTED implementation.

``baseline_teds`` is PubTabNet's ``TEDS.evaluate`` written out plainly: recursive tokenizer,
one tree node object per element, and a rename cost that runs a pure-Python Levenshtein on the
two token lists every time APTED asks for it. The tests use it as a differential oracle.
"""

from __future__ import annotations

import random
from typing import Any

from apted import APTED, Config
from lxml import html

from evalsuite.metrics.tables import teds
from evalsuite.perf import PerfCase
from evalsuite.perf.text import baseline_edit_distance

TABLE_ROWS, TABLE_COLUMNS = 40, 15


class BaselineTableNode:
    """BASELINE: a tree node as PubTabNet's TableTree holds it."""

    def __init__(
        self,
        tag: Any,
        colspan: int | None = None,
        rowspan: int | None = None,
        content: list[str] | None = None,
    ) -> None:
        self.tag = tag
        self.colspan = colspan
        self.rowspan = rowspan
        self.content = content
        self.children: list[BaselineTableNode] = []


class BaselineConfig(Config):
    """BASELINE: PubTabNet's cost model, recomputed on every call."""

    def rename(self, node1: BaselineTableNode, node2: BaselineTableNode) -> float:
        if (
            node1.tag != node2.tag
            or node1.colspan != node2.colspan
            or node1.rowspan != node2.rowspan
        ):
            return 1.0
        if node1.tag == "td" and (node1.content or node2.content):
            longer = max(len(node1.content or ()), len(node2.content or ()))
            return float(baseline_edit_distance(node1.content or [], node2.content or [])) / longer
        return 0.0


def baseline_tokens(element: Any) -> list[str]:
    """BASELINE: PubTabNet's tokenizer: ``<tag>``, text, children, ``</tag>`` (not for unk),
    then the tail unless the element is a td."""
    tokens = [f"<{element.tag}>"]
    if element.text is not None:
        tokens += list(element.text)
    for child in element:
        tokens += baseline_tokens(child)
    if element.tag != "unk":
        tokens.append(f"</{element.tag}>")
    if element.tag != "td" and element.tail is not None:
        tokens += list(element.tail)
    return tokens


def baseline_tree(element: Any, structure_only: bool) -> BaselineTableNode:
    """BASELINE: PubTabNet's load_html_tree."""
    if element.tag == "td":
        content = [] if structure_only else baseline_tokens(element)[1:-1]
        colspan = int(element.attrib.get("colspan", "1"))
        rowspan = int(element.attrib.get("rowspan", "1"))
        return BaselineTableNode("td", colspan, rowspan, content)
    node = BaselineTableNode(element.tag)
    node.children = [baseline_tree(child, structure_only) for child in element]
    return node


def baseline_teds(pred_html: str, gt_html: str, structure_only: bool = False) -> float:
    """BASELINE: PubTabNet's ``TEDS(structure_only).evaluate(pred_html, gt_html)``."""
    if not pred_html or not gt_html:
        return 0.0
    parser = html.HTMLParser(remove_comments=True, encoding="utf-8")
    pred_root = html.fromstring(pred_html, parser=parser)
    gt_root = html.fromstring(gt_html, parser=parser)
    if not (pred_root.xpath("body/table") and gt_root.xpath("body/table")):
        return 0.0
    pred_table = pred_root.xpath("body/table")[0]
    gt_table = gt_root.xpath("body/table")[0]
    n_nodes = max(len(pred_table.xpath(".//*")), len(gt_table.xpath(".//*")))
    distance = APTED(
        baseline_tree(pred_table, structure_only),
        baseline_tree(gt_table, structure_only),
        BaselineConfig(),
    ).compute_edit_distance()
    return 1.0 - float(distance) / n_nodes


def financial_table(seed: int, rows: int = TABLE_ROWS, columns: int = TABLE_COLUMNS) -> str:
    """A deterministic ``rows`` x ``columns`` HTML table: a bold header row, then figures."""
    rng = random.Random(seed)
    header = "".join(f"<td><b>Q{c} {2000 + c}</b></td>" for c in range(columns))
    body = "".join(
        "<tr>"
        + "".join(f"<td>{rng.randint(0, 99_999) / 100:,.2f}</td>" for _ in range(columns))
        + "</tr>"
        for _ in range(rows - 1)
    )
    table = f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"
    return f"<html><body>{table}</body></html>"


def edited_table(table_html: str, seed: int, rate: float = 0.1) -> str:
    """``table_html`` with about ``rate`` of its figure cells changed, as OCR would misread them:
    a digit replaced, a character dropped, or the cell emptied."""
    rng = random.Random(seed)
    pieces = table_html.split("<td>")
    for index in range(1, len(pieces)):
        text, end, rest = pieces[index].partition("</td>")
        if text.startswith("<b>") or rng.random() >= rate:
            continue
        roll, position = rng.random(), rng.randrange(len(text))
        if roll < 0.5:
            text = text[:position] + rng.choice("0123456789") + text[position + 1 :]
        elif roll < 0.9:
            text = text[:position] + text[position + 1 :]
        else:
            text = ""
        pieces[index] = text + end + rest
    return "<td>".join(pieces)


_GT_TABLE = financial_table(seed=1)
_PRED_TABLE = edited_table(_GT_TABLE, seed=2)

CASES = [
    PerfCase(
        name=f"teds, {TABLE_ROWS}x{TABLE_COLUMNS} table, edited cells",
        baseline=lambda: baseline_teds(_PRED_TABLE, _GT_TABLE),
        fast=lambda: teds(_PRED_TABLE, _GT_TABLE),
        required_ratio=3,
    ),
]
