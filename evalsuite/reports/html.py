"""Building blocks of the self-contained HTML pages (dashboard and compare): the page shell
with its inline CSS and script (``templates/page.html``), chart cards, ranked sortable tables
with CSV export, and the side-by-side word drill-down."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from evalsuite.reports.charts import Chart, ChartSeries
from evalsuite.reports.svg import render_svg
from evalsuite.reports.wordalign import Segment
from evalsuite.textformat import MISSING, significant

MEDALS = ("gold", "silver", "bronze")
DRILL_TEXT_LIMIT = 20_000
"""Characters of a text shown in the drill-down; the alignment always uses the whole text."""


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    numeric: bool = True
    title: str = ""


@dataclass(frozen=True)
class Cell:
    """A table cell: what it shows, what it sorts and exports by, and a hover text."""

    text: str
    sort: float | str | None = None
    title: str = ""

    @classmethod
    def number(cls, value: float | None, title: str = "") -> Cell:
        return cls(significant(value), value, title)


@dataclass(frozen=True)
class DrillItem:
    """One sample of the drill-down: its texts as aligned segments and its scores."""

    label: str
    group: str
    gt: Sequence[Segment]
    pred: Sequence[Segment]
    scores: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None


@cache
def _template() -> str:
    return resources.files("evalsuite.reports").joinpath("templates/page.html").read_text("utf-8")


def render_page(title: str, subtitle: str, nav: Sequence[tuple[str, str]], body: str) -> str:
    """The whole HTML document; ``nav`` holds (anchor id, label) pairs."""
    links = "".join(f'<a href="#{escape(anchor)}">{escape(label)}</a>' for anchor, label in nav)
    replacements = {
        "{{TITLE}}": escape(title),
        "{{SUBTITLE}}": escape(subtitle),
        "{{NAV}}": links,
        "{{BODY}}": body,
    }
    page = _template()
    for marker, value in replacements.items():
        page = page.replace(marker, value)
    return page


def json_script(element_id: str, data: Any) -> str:
    """Data for the page's script, safe inside ``<script>`` (no ``</`` can close it)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" id="{escape(element_id)}">{text}</script>'


def legend(series: Sequence[ChartSeries], extras: str = "") -> str:
    """Color keys of the series, then ``extras`` (markup of more keys)."""
    items = "".join(
        f'<span class="key"><i style="background:{s.color_at(i)}"></i>{escape(s.label)}</span>'
        for i, s in enumerate(series)
    )
    return f'<div class="legend">{items}{extras}</div>'


def chart_card(chart: Chart) -> str:
    has_golden = any(series.reference is not None for series in chart.series)
    extras = []
    if has_golden:
        extras.append('<span class="key"><i class="dash"></i>golden</span>')
    if any(point.flag for series in chart.series for point in series.points):
        extras.append('<span class="key"><i class="ring bad"></i>regressed</span>'
                      '<span class="key"><i class="ring good"></i>improved</span>')
    note = f'<span class="note">{escape(chart.note)}</span>' if chart.note else ""
    return (
        f'<figure class="card chart-card"><figcaption><b>{escape(chart.title)}</b>{note}'
        f"</figcaption>{render_svg(chart)}"
        f"{legend(chart.series, ''.join(extras))}</figure>"
    )


def ranked_table(
    table_id: str,
    columns: Sequence[Column],
    rows: Sequence[Mapping[str, Cell]],
    caption: str,
    *,
    unranked: int = 0,
) -> str:
    """A sortable table whose rows come in rank order; the top three get medals. The last
    ``unranked`` rows (without the ranking metric) get no rank."""
    head = ['<th class="text" data-numeric="1" aria-sort="ascending" title="rank">#</th>']
    for column in columns:
        kind = ' data-numeric="1"' if column.numeric else ' class="text"'
        title = f' title="{escape(column.title)}"' if column.title else ""
        head.append(f'<th{kind}{title}>{escape(column.label)}</th>')
    body = []
    ranked = len(rows) - unranked
    for rank, row in enumerate(rows, start=1):
        medal = f' class="medal {MEDALS[rank - 1]}"' if rank <= min(len(MEDALS), ranked) else ""
        shown = str(rank) if rank <= ranked else MISSING
        cells = [f'<td class="text" data-sort="{rank}"><span{medal}>{shown}</span></td>']
        for column in columns:
            cell = row.get(column.key, Cell(MISSING))
            sort = "" if cell.sort is None else str(cell.sort)
            kind = "" if column.numeric else ' class="text"'
            title = f' title="{escape(cell.title)}"' if cell.title else ""
            cells.append(f'<td{kind} data-sort="{escape(sort)}"{title}>{escape(cell.text)}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<div class="table-tools"><span class="caption">{escape(caption)}</span>'
        f'<button type="button" class="csv" data-table="{escape(table_id)}">Download CSV</button>'
        f'</div><div class="table-wrap"><table class="sortable" id="{escape(table_id)}">'
        f"<thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def drilldown(drill_id: str, items: Sequence[DrillItem]) -> str:
    """A sample picker over ``items`` and the two texts side by side: words without a partner
    in red, hovering a word highlights its partner."""
    data = [
        {
            "label": item.label,
            "group": item.group,
            "gt": _segments(item.gt),
            "pred": _segments(item.pred),
            "scores": dict(item.scores),
            "error": item.error,
        }
        for item in items
    ]
    return (
        f'<div class="drill card" data-source="{escape(drill_id)}-data">'
        '<div class="drill-bar"><label>Sample <select class="drill-select"></select></label>'
        '<span class="hint">red: word missing from the other text · hover a word to see its '
        "match</span></div>"
        '<div class="drill-scores"></div><div class="drill-panels">'
        '<div class="panel"><h4>Ground truth</h4><div class="text gt"></div></div>'
        '<div class="panel"><h4>Prediction</h4><div class="text pred"></div></div>'
        f"</div></div>{json_script(f'{drill_id}-data', data)}"
    )


def _segments(segments: Sequence[Segment]) -> list[list[Any]]:
    """``[[text, match], ...]`` cut at ``DRILL_TEXT_LIMIT`` characters with a closing note."""
    out: list[list[Any]] = []
    shown = 0
    total = sum(len(segment.text) for segment in segments)
    for segment in segments:
        if shown + len(segment.text) > DRILL_TEXT_LIMIT:
            out.append([f" … ({total - shown:,} more characters not shown)", None])
            break
        out.append([segment.text, segment.match])
        shown += len(segment.text)
    return out
