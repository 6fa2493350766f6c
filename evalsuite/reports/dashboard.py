"""The dashboard of ``evalsuite report`` (:mod:`evalsuite.commands.report`): one self-contained
HTML page of the run history, plus PNG plots.

Per benchmark: the newest run's regression status; rankings that compare only like with like
(one table per data source x measure, :data:`~evalsuite.reports.charts.MEASURE_KEYS`), ties
sharing a rank (values that print the same), medals only on the better side of
:data:`~evalsuite.reports.dashboard_compute.MEDAL_FLOOR`, rows that regressed against their
previous run marked, each row's model (a peer's profile and version, from the newest run's
engine details) and whether its number was measured here or published (golden entries of a
paper or a leaderboard rank beside the runs on the same data, without medals: see
:func:`~evalsuite.reports.dashboard_compute.rankings`); trend charts as
small multiples (:func:`~evalsuite.reports.charts.trend_charts`: at most
:data:`~evalsuite.reports.charts.MAX_SERIES` series each, one color per series in every chart,
whiskers clipped to the metric's range, health metrics that stayed 0 said in one line); the
compression-precision curve and the text-vs-vision bars where the metrics exist; and a
drill-down into the newest run's samples (ground truth and prediction side by side, unmatched
words in red). Directions and ranges come from the benchmark's metric specs in the registry.
Everything is inline: the file opens from disk with no network. The same charts are written as
PNGs to ``plots/`` next to the HTML.

Long histories: each trend chart draws the newest
:data:`~evalsuite.reports.charts.MAX_RUNS_DRAWN` runs and says in one line how many older runs
it leaves out; rankings and drill-down show the newest values only. So the page's size does not
grow with the number of runs: it stays under :data:`PAGE_BYTES_BOUND` for histories of the
built-in benchmarks, however long (the drill-down, newest run only, grows with its samples).

This module reads the history and the newest runs' results.json, and writes the page
(:mod:`~evalsuite.reports.dashboard_render`) of what :mod:`~evalsuite.reports.dashboard_compute`
computes, and the PNGs.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalsuite.records.atomic import atomic_write_text
from evalsuite.records.history import HistoryEntry, read_history
from evalsuite.records.model import BenchmarkRecord
from evalsuite.records.results import RESULTS_FILE, read_results
from evalsuite.reports.charts import Chart
from evalsuite.reports.dashboard_compute import BenchmarkView, benchmark_view, benchmarks
from evalsuite.reports.dashboard_render import render_dashboard
from evalsuite.reports.series import (
    GoldenIndex,
    chronological,
    collect_series,
    load_golden_index,
)

DEFAULT_MAX_SAMPLES = 30
PLOTS_DIR = "plots"
PAGE_BYTES_BOUND = 4_000_000
"""Most bytes of the HTML page for a history of the built-in benchmarks, however many runs it holds
(the trend charts draw a bounded number of runs; see the module docstring). Measured: 1 MB for 300
runs of ``tests/support/reports_builder.py``'s bench-like history, 1.9 MB for a real CPU bench run
with ``--max-samples 3``. What does not depend on the history but can still grow is the drill-down:
the newest run's worst samples with their texts (``--max-samples``, default 30 per record), about
0.8 MB of that 1.9 MB."""


@dataclass
class Dashboard:
    html: str
    charts: list[Chart]


def write_dashboard(
    history_path: str | Path,
    out: str | Path,
    *,
    golden_dir: str | Path = "golden",
    max_samples: int = DEFAULT_MAX_SAMPLES,
    png: bool = True,
) -> tuple[Path, list[Path]]:
    """Write the HTML (atomically) and, with ``png``, one PNG per chart; returns their paths."""
    history_path = Path(history_path)
    entries = read_history(history_path)
    golden = load_golden_index(golden_dir, benchmarks(entries))
    dashboard = build_dashboard(
        entries, history_dir=history_path.parent, golden=golden, max_samples=max_samples
    )
    out = Path(out)
    html_path = atomic_write_text(out, dashboard.html)
    pngs: list[Path] = []
    if png and dashboard.charts:
        from evalsuite.reports.plots import write_pngs

        pngs = write_pngs(dashboard.charts, out.parent / PLOTS_DIR)
    return html_path, pngs


def build_dashboard(
    entries: Sequence[HistoryEntry],
    *,
    history_dir: str | Path,
    golden: GoldenIndex,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    generated: datetime | None = None,
) -> Dashboard:
    """The page and the charts on it, from the history and the newest runs' results.json."""
    stamp = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    ordered = chronological(entries)
    views: list[BenchmarkView] = []
    if ordered:
        series = collect_series(ordered)
        newest_records = _newest_records(ordered, Path(history_dir))
        views = [benchmark_view(benchmark, ordered, series, golden, newest_records[benchmark],
                                max_samples) for benchmark in benchmarks(ordered)]
    charts = [chart for view in views for chart in view.charts]
    return Dashboard(render_dashboard(ordered, views, stamp), charts)


def _newest_records(
    entries: Sequence[HistoryEntry], history_dir: Path
) -> dict[str, list[BenchmarkRecord]]:
    """Per benchmark, the records of the newest run that had it: from its results.json (with
    samples) when readable, else the aggregates of the history line."""
    newest: dict[str, list[BenchmarkRecord]] = {}
    for entry in reversed(entries):
        missing = {r.benchmark for r in entry.records} - set(newest)
        if not missing:
            continue
        records = _load_results(entry, history_dir) or entry.records
        for benchmark in missing:
            newest[benchmark] = [r for r in records if r.benchmark == benchmark]
    return newest


def _load_results(entry: HistoryEntry, history_dir: Path) -> list[BenchmarkRecord] | None:
    relative = entry.results_path or f"{entry.metadata.run_id}/{RESULTS_FILE}"
    path = history_dir / relative
    if not path.is_file():
        return None
    try:
        return read_results(path).records
    except (OSError, ValueError) as error:
        warnings.warn(f"{path}: skipped ({error})", stacklevel=2)
        return None
