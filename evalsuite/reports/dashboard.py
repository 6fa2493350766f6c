"""``evalsuite report``: one self-contained HTML dashboard of the run history, plus PNG plots.

Per benchmark: the newest run's regression status, an engine ranking (medals, sortable, CSV),
a trend chart per metric with its golden line, the compression-precision curve and the
text-vs-vision bars where the metrics exist, and a drill-down into the newest run's samples
(ground truth and prediction side by side, unmatched words in red). Everything is inline: the
file opens from disk with no network. The same charts are written as PNGs to ``plots/`` next
to the HTML.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from evalsuite.benchmarks import load_declarations
from evalsuite.records.atomic import atomic_write_text
from evalsuite.records.history import DEFAULT_HISTORY, HistoryEntry, read_history
from evalsuite.records.model import BenchmarkRecord, SampleRecord
from evalsuite.records.results import RESULTS_FILE, RunMetadata, read_results
from evalsuite.reports.charts import (
    Chart,
    compression_curve,
    group_bars,
    series_colors,
    slug,
    split_grouped,
    text_vision_bars,
    trend_charts,
)
from evalsuite.reports.html import (
    Cell,
    Column,
    DrillItem,
    chart_card,
    drilldown,
    ranked_table,
    render_page,
)
from evalsuite.reports.series import (
    GoldenIndex,
    Point,
    SeriesKey,
    better_note,
    chronological,
    collect_series,
    load_golden_index,
    newest_regressions,
)
from evalsuite.reports.wordalign import align_words
from evalsuite.textformat import MISSING, significant

DEFAULT_OUT = Path("reports") / "index.html"
DEFAULT_MAX_SAMPLES = 30
PLOTS_DIR = "plots"


@dataclass
class Dashboard:
    html: str
    charts: list[Chart]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", type=Path, default=DEFAULT_HISTORY,
                        help="run history file (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="HTML file to write (default: %(default)s)")
    parser.add_argument("--golden-dir", type=Path, default=Path("golden"),
                        help="golden files for the golden lines (default: %(default)s)")
    parser.add_argument("--max-samples", type=int, default=DEFAULT_MAX_SAMPLES, metavar="N",
                        help="worst samples per engine x data x parameter in the drill-down "
                             "(default: %(default)s)")
    parser.add_argument("--no-png", action="store_true", help="skip the PNG plots")


def run(args: argparse.Namespace) -> int:
    if args.max_samples < 0:
        print("evalsuite report: --max-samples must be >= 0", file=sys.stderr)
        return 2
    try:
        html_path, pngs = write_dashboard(
            args.history, args.out, golden_dir=args.golden_dir,
            max_samples=args.max_samples, png=not args.no_png,
        )
    except FileNotFoundError as error:
        print(f"evalsuite report: {error}", file=sys.stderr)
        return 2
    print(f"dashboard: {html_path}")
    for path in pngs:
        print(f"plot: {path}")
    return 0


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
    golden = load_golden_index(golden_dir, _benchmarks(entries))
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
    if not ordered:
        body = '<p class="empty card facts">No runs recorded yet: run the benchmarks first.</p>'
        return Dashboard(render_page("dashboard", f"generated {stamp}", [], body), [])
    series = collect_series(ordered)
    newest_records = _newest_records(ordered, Path(history_dir))
    benchmarks = _benchmarks(ordered)
    sections, charts = [], []
    for benchmark in benchmarks:
        html, benchmark_charts = _benchmark_section(
            benchmark, ordered, series, golden, newest_records[benchmark], max_samples
        )
        sections.append(html)
        charts.extend(benchmark_charts)
    newest = ordered[-1].metadata
    subtitle = f"{len(ordered)} runs · newest {newest.created_utc} · generated {stamp}"
    nav = [(f"bench-{slug(b)}", b) for b in benchmarks]
    body = _run_facts(newest) + "".join(sections)
    return Dashboard(render_page("dashboard", subtitle, nav, body), charts)


def _title(benchmark: str) -> str:
    """The benchmark's declared title; its name when the registry does not know it."""
    return next((b.title for b in load_declarations() if b.name == benchmark), benchmark)


def _benchmarks(entries: Sequence[HistoryEntry]) -> list[str]:
    """The benchmarks of the history in the registry's order (a benchmark the registry does not
    know, e.g. declared in a user's folder, after them by name)."""
    names = {record.benchmark for entry in entries for record in entry.records}
    known = [b.name for b in load_declarations() if b.name in names]
    return known + sorted(names - set(known))


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


def _run_facts(run: RunMetadata) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in run.versions.items() if v) or MISSING
    commit = (run.git_commit or MISSING)[:12] + (" (dirty)" if run.git_dirty else "")
    facts = [
        ("newest run", run.run_id),
        ("started", run.created_utc),
        ("commit", commit),
        ("engines", ", ".join(run.engines) or MISSING),
        ("modes", ", ".join(run.modes) or MISSING),
        ("device", run.device or MISSING),
        ("versions", versions),
        ("seed", MISSING if run.seed is None else str(run.seed)),
        ("duration", MISSING if run.duration_s is None else f"{run.duration_s:,.0f} s"),
        ("command", run.command or MISSING),
    ]
    items = "".join(
        f'<div class="wide"><dt>{escape(name)}</dt><dd><code>{escape(value)}</code></dd></div>'
        if name == "command"
        else f"<div><dt>{escape(name)}</dt><dd><code>{escape(value)}</code></dd></div>"
        if name in {"newest run", "commit"}
        else f"<div><dt>{escape(name)}</dt><dd>{escape(value)}</dd></div>"
        for name, value in facts
    )
    return f'<section class="card"><dl class="facts">{items}</dl></section>'


def _benchmark_section(
    benchmark: str,
    entries: Sequence[HistoryEntry],
    series: Mapping[SeriesKey, Sequence[Point]],
    golden: GoldenIndex,
    records: Sequence[BenchmarkRecord],
    max_samples: int,
) -> tuple[str, list[Chart]]:
    runs = [e for e in entries if any(r.benchmark == benchmark for r in e.records)]
    own = {key: points for key, points in series.items() if key.benchmark == benchmark}
    metrics = _metric_order(records, own)
    colors = series_colors([key.label for key in own])
    trends = trend_charts(benchmark, own, golden, metrics, colors)
    curve = compression_curve(benchmark, records, colors)
    bars = [*text_vision_bars(benchmark, records), *group_bars(benchmark, records, colors)]
    parts = [
        f'<section class="bench" id="bench-{slug(benchmark)}">'
        f'<h2>{escape(_title(benchmark))}<span class="pill">{escape(benchmark)} · '
        f'{len(runs)} runs</span></h2>',
        _status(own, golden, runs[-1].metadata.run_id),
        "<h3>Ranking</h3>",
        _ranking(benchmark, own, metrics),
        "<h3>Trends</h3>",
        _chart_grid(trends),
    ]
    studies = [*([curve] if curve else []), *bars]
    if studies:
        parts += ["<h3>Compression and context studies</h3>", _chart_grid(studies)]
    items = _drill_items(records, metrics[0] if metrics else None, max_samples)
    parts.append(f"<h3>Samples of the newest run ({escape(runs[-1].metadata.run_id)})</h3>")
    if items:
        parts.append(drilldown(f"drill-{slug(benchmark)}", items))
    else:
        parts.append('<p class="empty">No per-sample texts in this run\'s results.json.</p>')
    parts.append("</section>")
    return "".join(parts), [*trends, *studies]


def _metric_order(
    records: Sequence[BenchmarkRecord], series: Mapping[SeriesKey, Sequence[Point]]
) -> list[str]:
    """The newest run's metric order (headline first), then metrics only older runs had;
    per-group aggregates (``metric[group]``) left out."""
    newest = [name for record in records for name in record.metrics]
    names = dict.fromkeys([*newest, *(key.metric for key in series)])
    return [name for name in names if split_grouped(name)[1] is None]


def _status(series: Mapping[SeriesKey, Sequence[Point]], golden: GoldenIndex, run_id: str) -> str:
    regressions = newest_regressions(series, run_id, golden)
    if not regressions:
        return ('<div class="status good">✓ newest run: no regression against the previous '
                "comparable run</div>")
    items = "".join(
        f"<li>{escape(key.label)} · {escape(key.metric)}: "
        f"{significant(step.previous.summary.value if step.previous else None)} → "
        f"{significant(step.point.summary.value)}"
        f" ({escape(step.comparison.test if step.comparison else '')})</li>"
        for key, step in regressions
    )
    return (f'<div class="status bad">▼ newest run: {len(regressions)} regression(s)</div>'
            f'<ul class="regressions">{items}</ul>')


def _ranking(
    benchmark: str, series: Mapping[SeriesKey, Sequence[Point]], metrics: Sequence[str]
) -> str:
    """Latest value of every engine x data x parameter, ranked by the headline metric."""
    latest: dict[tuple[str, str, str], dict[str, Point]] = {}
    for key, points in series.items():
        latest.setdefault((key.engine, key.data, key.parameter), {})[key.metric] = points[-1]
    if not metrics:
        return '<p class="empty">No metrics recorded.</p>'
    headline = metrics[0]

    def rank_key(item: tuple[tuple[str, str, str], dict[str, Point]]) -> tuple[int, float, str]:
        point = item[1].get(headline)
        if point is None or point.summary.value is None:
            return (1, 0.0, " ".join(item[0]))
        sign = -1 if point.summary.direction == "higher" else 1
        return (0, sign * point.summary.value, " ".join(item[0]))

    rows = []
    for (engine, data, parameter), points in sorted(latest.items(), key=rank_key):
        row = {"engine": Cell(engine, engine), "parameter": Cell(parameter, parameter),
               "data": Cell(data, data)}
        newest = max(points.values(), key=lambda p: p.created_utc)
        row["run"] = Cell(newest.created_utc[:10], newest.created_utc, newest.run_id)
        for metric in metrics:
            point = points.get(metric)
            if point is not None:
                s = point.summary
                interval = "" if s.ci_low is None else f"95% CI [{s.ci_low:.4g}, {s.ci_high:.4g}], "
                row[metric] = Cell.number(s.value, f"{interval}n={s.n}")
        row["n"] = Cell(str(points[headline].summary.n) if headline in points else MISSING,
                        points[headline].summary.n if headline in points else None)
        rows.append(row)
    directions = {key.metric: points[-1].summary.direction for key, points in series.items()}
    columns = [
        Column("engine", "engine", numeric=False),
        Column("parameter", "parameter", numeric=False),
        *(Column(m, m, title=better_note(directions.get(m, "higher"))) for m in metrics),
        Column("n", f"n ({headline})"),
        Column("data", "data", numeric=False),
        Column("run", "latest run", numeric=False),
    ]
    caption = (f"ranked by {headline}; latest run of each engine x data x parameter; hover a "
               "value for n")
    unranked = sum(1 for item in latest.items() if rank_key(item)[0])
    return ranked_table(f"rank-{slug(benchmark)}", columns, rows, caption, unranked=unranked)


def _chart_grid(charts: Sequence[Chart]) -> str:
    return f'<div class="charts">{"".join(chart_card(chart) for chart in charts)}</div>'


def _drill_items(
    records: Sequence[BenchmarkRecord], headline: str | None, max_samples: int
) -> list[DrillItem]:
    """The worst ``max_samples`` samples with texts of each record (failed ones first)."""
    items = []
    for record in sorted(records, key=lambda r: _record_badness(r, headline)):
        direction = record.metrics[headline].direction if headline in record.metrics else "higher"
        shown = [s for s in record.samples if s.error or (s.prediction is not None
                                                          and s.reference is not None)]
        shown.sort(key=lambda s: _badness(s, headline, direction))
        group = f"{record.engine} · {record.data} · {record.parameter}"
        for sample in shown[:max_samples]:
            pred, gt = align_words(sample.prediction or "", sample.reference or "")
            note = " — failed" if sample.error else _score_note(sample, headline)
            label = sample.sample_id + note
            items.append(DrillItem(label, group, gt, pred, sample.scores, sample.error))
    return items


def _record_badness(record: BenchmarkRecord, headline: str | None) -> tuple[int, float]:
    """Records whose headline aggregate is worst come first; those without it last."""
    summary = record.metrics.get(headline) if headline else None
    if summary is None or summary.value is None:
        return (1, 0.0)
    return (0, summary.value if summary.direction == "higher" else -summary.value)


def _score_note(sample: SampleRecord, headline: str | None) -> str:
    score = sample.scores.get(headline) if headline else None
    if isinstance(score, bool):
        return f" — {headline} {'yes' if score else 'no'}"
    if isinstance(score, (int, float)):
        return f" — {headline} {significant(score)}"
    return ""


def _badness(sample: SampleRecord, headline: str | None, direction: str) -> tuple[int, float, str]:
    if sample.error:
        return (0, 0.0, sample.sample_id)
    score = sample.scores.get(headline) if headline else None
    if not isinstance(score, (int, float)):  # bools sort as 0 and 1
        return (2, 0.0, sample.sample_id)
    return (1, float(score) if direction == "higher" else -float(score), sample.sample_id)
