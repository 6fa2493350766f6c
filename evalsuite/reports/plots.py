"""PNG versions of the dashboard's charts (matplotlib, Agg backend), for CI artifacts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalsuite.reports.charts import (
    IMPROVED_COLOUR,
    REGRESSED_COLOUR,
    Chart,
    ChartSeries,
    thin_ticks,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

DPI = 110
LEGEND_COLUMNS = 3


def write_pngs(charts: Sequence[Chart], folder: str | Path) -> list[Path]:
    """One ``<chart_id>.png`` per chart in ``folder`` (created when missing); PNGs of charts that
    are gone are removed, so the folder shows the current dashboard only. Returns the paths."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib import pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in charts:
        legend_rows = -(-len(chart.series) // LEGEND_COLUMNS)
        size = (6.4, 3.4 + 0.2 * legend_rows)
        figure, axes = plt.subplots(figsize=size, dpi=DPI, layout="constrained")
        try:
            _draw(axes, chart)
            path = folder / f"{chart.chart_id}.png"
            figure.savefig(path)
            written.append(path)
        finally:
            plt.close(figure)
    for stale in set(folder.glob("*.png")) - set(written):
        stale.unlink()
    return written


def _draw(axes: Axes, chart: Chart) -> None:
    if chart.kind == "bars":
        _draw_bars(axes, chart)
    else:
        for index, series in enumerate(chart.series):
            _draw_line(axes, series, series.colour_at(index), bands=chart.kind == "line")
        if chart.kind == "line" and chart.x_ticks:
            positions, labels = zip(*thin_ticks(chart.x_ticks), strict=True)
            axes.set_xticks(positions, labels)
    axes.set_title(f"{chart.title}" + (f"  ({chart.note})" if chart.note else ""), fontsize=10)
    axes.set_xlabel(chart.x_label, fontsize=9)
    axes.set_ylabel(chart.y_label, fontsize=9)
    axes.grid(True, color="#e5e7eb", linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    if chart.series:
        axes.figure.legend(fontsize=7, frameon=False, loc="outside lower center",
                           ncols=min(LEGEND_COLUMNS, len(chart.series)))


def _draw_line(axes: Axes, series: ChartSeries, colour: str, *, bands: bool) -> None:
    xs = [p.x for p in series.points]
    ys = [p.y for p in series.points]
    axes.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.6, color=colour, label=series.label)
    spans = [p for p in series.points if p.low is not None and p.high is not None]
    if bands and len(spans) > 1:
        axes.fill_between([p.x for p in spans], [p.low for p in spans], [p.high for p in spans],
                          color=colour, alpha=0.12, linewidth=0)
    if series.reference is not None:
        axes.axhline(series.reference, color=colour, linestyle="--", linewidth=1, alpha=0.8)
    for point in series.points:
        if point.flag:
            ring = REGRESSED_COLOUR if point.flag == "regressed" else IMPROVED_COLOUR
            axes.scatter([point.x], [point.y], s=90, facecolors="none", edgecolors=ring,
                         linewidths=1.5, zorder=3)


def _draw_bars(axes: Axes, chart: Chart) -> None:
    count = max(1, len(chart.series))
    width = 0.72 / count
    for index, series in enumerate(chart.series):
        xs = [p.x - 0.36 + (index + 0.5) * width for p in series.points]
        errors = [
            # clamped: a point's interval need not contain the plotted value (rounding, or an
            # interval of another aggregate), and matplotlib rejects negative error bars
            [max(0.0, p.y - p.low) if p.low is not None else 0 for p in series.points],
            [max(0.0, p.high - p.y) if p.high is not None else 0 for p in series.points],
        ]
        axes.bar(xs, [p.y for p in series.points], width=width * 0.92,
                 color=series.colour_at(index), label=series.label,
                 yerr=errors, error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#374151"})
    axes.set_xticks(range(len(chart.groups)), chart.groups, rotation=30, ha="right", fontsize=8)
