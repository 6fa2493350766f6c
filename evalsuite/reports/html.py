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
class Standing:
    """A table row's place: its rank (None: unranked; equal ranks are ties), whether it may
    have a medal (its value is above the page's floor), when it regressed, in what, and how it
    is drawn (``tone``)."""

    rank: int | None
    medal: bool = True
    regressed: str = ""
    tone: str = ""
    """A class of the row: ``published`` for a published figure (drawn as a reference line)."""
    medal_place: int | None = None
    """The place that picks the medal's colour where it is not the rank (the rank among the
    rows that can have medals, when others rank among them)."""


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
    """A chart with its caption, legend and the line on runs not drawn."""
    has_golden = any(series.reference is not None for series in chart.series)
    extras = []
    if has_golden:
        extras.append('<span class="key"><i class="dash"></i>golden</span>')
    if any(point.flag for series in chart.series for point in series.points):
        extras.append('<span class="key"><i class="ring bad"></i>regressed</span>'
                      '<span class="key"><i class="ring good"></i>improved</span>')
    note = f'<span class="note">{escape(chart.note)}</span>' if chart.note else ""
    older = f'<p class="older">{escape(chart.older)}</p>' if chart.older else ""
    return (
        f'<figure class="card chart-card" data-series-count="{len(chart.series)}">'
        f"<figcaption><b>{escape(chart.title)}</b>{note}"
        f"</figcaption>{render_svg(chart)}"
        f"{legend(chart.series, ''.join(extras))}{older}</figure>"
    )


def ranked_table(
    table_id: str,
    columns: Sequence[Column],
    rows: Sequence[Mapping[str, Cell]],
    caption: str,
    *,
    unranked: int = 0,
    standings: Sequence[Standing] | None = None,
) -> str:
    """A sortable table whose rows come in rank order. Without ``standings`` the rows are ranked
    1, 2, 3, … and the last ``unranked`` rows (without the ranking metric) get no rank; with
    them, each row's standing says. Ranks 1 to 3 get medals (a tie shows as ``2=``); a
    regressed row is marked ▼ and tinted."""
    if standings is None:
        ranked = len(rows) - unranked
        standings = [Standing(i if i <= ranked else None) for i in range(1, len(rows) + 1)]
    counts: dict[int | None, int] = {}
    for standing in standings:
        counts[standing.rank] = counts.get(standing.rank, 0) + 1
    head = ['<th class="text" data-numeric="1" aria-sort="ascending" title="rank">#</th>']
    for column in columns:
        kind = ' data-numeric="1"' if column.numeric else ' class="text"'
        title = f' title="{escape(column.title)}"' if column.title else ""
        label = escape(column.label).replace("_", "_<wbr>")  # long metric names wrap there
        head.append(f'<th{kind}{title}>{label}</th>')
    body = []
    for position, (row, standing) in enumerate(zip(rows, standings, strict=True), start=1):
        rank = standing.rank
        place = rank if standing.medal_place is None else standing.medal_place
        medal = (f' class="medal {MEDALS[place - 1]}"'
                 if place is not None and place <= len(MEDALS) and standing.medal else "")
        shown = MISSING if rank is None else f"{rank}=" if counts[rank] > 1 else str(rank)
        mark = ""
        if standing.regressed:
            mark = (f' <span class="regressed-mark" title="{escape(standing.regressed)}">'
                    "▼ regressed</span>")
        cells = [f'<td class="text" data-sort="{position}"><span{medal}>{shown}</span>{mark}</td>']
        for column in columns:
            cell = row.get(column.key, Cell(MISSING))
            sort = "" if cell.sort is None else str(cell.sort)
            kind = "" if column.numeric else ' class="text"'
            title = f' title="{escape(cell.title)}"' if cell.title else ""
            cells.append(f'<td{kind} data-sort="{escape(sort)}"{title}>{escape(cell.text)}</td>')
        classes = " ".join(filter(None, ("regressed" if standing.regressed else "",
                                         standing.tone)))
        tint = f' class="{escape(classes)}"' if classes else ""
        body.append(f"<tr{tint}>{''.join(cells)}</tr>")
    return (
        f'<div class="table-tools"><span class="caption">{escape(caption)}</span>'
        f'<button type="button" class="csv" data-table="{escape(table_id)}">Download CSV</button>'
        f'</div><div class="table-wrap"><table class="sortable" id="{escape(table_id)}">'
        f"<thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def drilldown(
    drill_id: str,
    items: Sequence[DrillItem],
    *,
    titles: tuple[str, str] = ("Ground truth", "Prediction"),
) -> str:
    """A sample picker over ``items`` and the two texts side by side (headed ``titles``: the
    ``gt`` text's, the ``pred`` text's): words without a partner in red, hovering a word
    highlights its partner."""
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
        f'<div class="panel"><h4>{escape(titles[0])}</h4><div class="text gt"></div></div>'
        f'<div class="panel"><h4>{escape(titles[1])}</h4><div class="text pred"></div></div>'
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
