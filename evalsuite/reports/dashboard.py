"""``evalsuite report``: one self-contained HTML dashboard of the run history, plus PNG plots.

Per benchmark: the newest run's regression status; rankings that compare only like with like
(one table per data source x measure, :data:`~evalsuite.reports.charts.MEASURE_KEYS`), ties
sharing a rank (values that print the same), medals only on the better side of
:data:`MEDAL_FLOOR`, rows that regressed against their previous run marked; trend charts as
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

from evalsuite.benchmarks import Benchmark, load_declarations
from evalsuite.records.atomic import atomic_write_text
from evalsuite.records.history import DEFAULT_HISTORY, HistoryEntry, read_history
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.records.results import RESULTS_FILE, RunMetadata, read_results
from evalsuite.reports.charts import (
    HEALTH_METRICS,
    MEASURE_KEYS,
    Chart,
    FlatMetric,
    compression_curve,
    group_bars,
    measure_of,
    metric_traits,
    parse_parameter,
    slug,
    split_grouped,
    split_series,
    text_vision_bars,
    trend_charts,
)
from evalsuite.reports.html import (
    Cell,
    Column,
    DrillItem,
    Standing,
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
    series_steps,
)
from evalsuite.reports.wordalign import align_words
from evalsuite.runner import MetricSpec
from evalsuite.textformat import MISSING, significant

DEFAULT_OUT = Path("reports") / "index.html"
DEFAULT_MAX_SAMPLES = 30
PLOTS_DIR = "plots"
PAGE_BYTES_BOUND = 4_000_000
"""Most bytes of the HTML page for a history of the built-in benchmarks, however many runs it
holds (the trend charts draw a bounded number of runs; see the module docstring). Measured: 1 MB
for 300 runs of ``tests/reports_builder.py``'s bench-like history, 1.9 MB for a real CPU bench
run with ``--max-samples 3``. What does not depend on the history but can still grow is the
drill-down: the newest run's worst samples with their texts (``--max-samples``, default 30 per
record), about 0.8 MB of that 1.9 MB."""
STATUS_LINES = 5
"""Regressions listed openly under the status; more are folded (click to show)."""
MEDAL_FLOOR = 0.5
"""Where in a metric's range medals stop, as a share of the range: a higher-is-better score in
[0, 1] needs at least 0.5 for a medal, a lower-is-better one at most 0.5. A headline metric
without a direction or a bounded range gives no medals."""


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
    if args.out.is_dir():
        print(f"evalsuite report: --out {args.out} is a folder; give the HTML file to write, "
              f"e.g. {args.out / 'index.html'}", file=sys.stderr)
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


def duration_text(seconds: float) -> str:
    """A run's wall-clock duration, to its scale: ``0.8 s``, ``42 s``, ``5 min 39 s``,
    ``2 h 05 min``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def _run_facts(run: RunMetadata) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in run.versions.items() if v) or MISSING
    commit = (run.git_commit or MISSING)[:12] + (" (dirty)" if run.git_dirty else "")
    facts = [
        ("newest run", run.run_id + (" (interrupted: only its finished tests)"
                                     if run.interrupted else "")),
        ("started", run.created_utc),
        ("commit", commit),
        ("engines", ", ".join(run.engines) or MISSING),
        ("modes", ", ".join(run.modes) or MISSING),
        ("device", run.device or MISSING),
        ("versions", versions),
        ("seed", MISSING if run.seed is None else str(run.seed)),
        ("duration", MISSING if run.duration_s is None else duration_text(run.duration_s)),
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
    specs = _specs(benchmark)
    run_keys = [(e.metadata.created_utc, e.metadata.run_id, e.metadata.run_name) for e in runs]
    trends, flat = trend_charts(benchmark, own, golden, metrics, specs, run_keys)
    curve = compression_curve(benchmark, records)
    studies = [
        chart
        for study in [*([curve] if curve else []), *text_vision_bars(benchmark, records, specs),
                      *group_bars(benchmark, records, specs)]
        for chart in split_series(study)
    ]
    parts = [
        f'<section class="bench" id="bench-{slug(benchmark)}">'
        f'<h2>{escape(_title(benchmark))}<span class="pill">{escape(benchmark)} · '
        f'{len(runs)} runs</span></h2>',
        _status(own, golden, runs[-1].metadata.run_id),
        "<h3>Ranking</h3>",
        _rankings(benchmark, own, metrics, specs, golden),
        "<h3>Trends</h3>",
        _flat_lines(flat),
        _chart_grid(trends),
    ]
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


def _specs(benchmark: str) -> dict[str, MetricSpec]:
    """The benchmark's metric specs by name (none for a benchmark the registry does not know)."""
    declared: Benchmark | None = next(
        (b for b in load_declarations() if b.name == benchmark), None
    )
    if declared is None:
        return {}
    names = {m.name for m in declared.metrics} | set(HEALTH_METRICS)
    return {name: spec for name in names if (spec := declared.metric_spec(name)) is not None}


def _flat_lines(flat: Sequence[FlatMetric]) -> str:
    if not flat:
        return ""
    items = "".join(f"<li>{escape(item.text)}</li>" for item in flat)
    return f'<ul class="flat">{items}</ul>'


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
    status = f"▼ newest run: {len(regressions)} regression(s)"
    listed = f'<ul class="regressions">{items}</ul>'
    if len(regressions) <= STATUS_LINES:
        return f'<div class="status bad">{status}</div>{listed}'
    return (f'<details class="regressions"><summary><span class="status bad">{status} · show '
            f"them</span></summary>{listed}</details>")


RowKey = tuple[str, str, str]  # engine, data, parameter


def _rankings(
    benchmark: str,
    series: Mapping[SeriesKey, Sequence[Point]],
    metrics: Sequence[str],
    specs: Mapping[str, MetricSpec],
    golden: GoldenIndex,
) -> str:
    """One ranked table per data source x measure: only rows measured alike are compared."""
    latest: dict[RowKey, dict[str, Point]] = {}
    regressed: dict[RowKey, list[str]] = {}
    for key, points in series.items():
        if split_grouped(key.metric)[1] is not None:
            continue
        row = (key.engine, key.data, key.parameter)
        latest.setdefault(row, {})[key.metric] = points[-1]
        last = series_steps(key, points[-2:], golden)[-1]
        if last.comparison is not None and last.comparison.regressed:
            regressed.setdefault(row, []).append(key.metric)
    if not latest:
        return '<p class="empty">No metrics recorded.</p>'
    tables: dict[tuple[str, str], dict[RowKey, dict[str, Point]]] = {}
    for row, points in sorted(latest.items()):
        tables.setdefault((row[1], measure_of(row[2])), {})[row] = points
    several_data = len({data for data, _ in tables}) > 1
    return "".join(
        _ranking(benchmark, data, measure, rows, metrics, specs, regressed, several_data)
        for (data, measure), rows in tables.items()
    )


def _ranking(
    benchmark: str,
    data: str,
    measure: str,
    latest: Mapping[RowKey, Mapping[str, Point]],
    metrics: Sequence[str],
    specs: Mapping[str, MetricSpec],
    regressed: Mapping[RowKey, Sequence[str]],
    several_data: bool,
) -> str:
    """The latest value of each engine x parameter on ``data`` and ``measure``, ranked by the
    first metric of ``metrics`` they have (the headline); a metric without a direction ranks
    nothing."""
    present = [m for m in metrics if any(m in points for points in latest.values())]
    zero = [m for m in present if m in HEALTH_METRICS and all(
        points[m].summary.value == 0 for points in latest.values() if m in points)]
    shown = [m for m in present if m not in zero]
    headline = shown[0] if shown else present[0]
    direction, bounds = metric_traits(headline, _any_summary(latest, headline), specs)

    def value(row: RowKey) -> float | None:
        point = latest[row].get(headline)
        return None if point is None else point.summary.value

    order = sorted(latest, key=lambda row: (
        value(row) is None or direction is None,
        0.0 if value(row) is None or direction is None
        else -value(row) if direction == "higher" else value(row),
    ))
    standings = []
    for index, row in enumerate(order):
        rank = None
        if value(row) is not None and direction is not None:
            previous = order[index - 1] if index else None
            ties = previous is not None and standings[-1].rank is not None and (
                significant(value(previous)) == significant(value(row)))
            rank = standings[-1].rank if ties else index + 1
        standings.append(Standing(
            rank, _earns_medal(value(row), direction, bounds) and len(order) > 1,
            "regressed against the previous run: " + ", ".join(regressed[row])
            if row in regressed else "",
        ))
    rows = []
    for engine, _, parameter in order:
        points = latest[(engine, data, parameter)]
        settings = ",".join(f"{k}={v}" if k != v else k
                            for k, v in parse_parameter(parameter).items() if k not in MEASURE_KEYS)
        row = {"engine": Cell(engine, engine), "parameter": Cell(settings, parameter)}
        newest = max(points.values(), key=lambda p: p.created_utc)
        row["run"] = Cell(newest.created_utc[:16].replace("T", " "), newest.created_utc,
                          newest.run_id)
        for metric in shown:
            point = points.get(metric)
            if point is not None:
                s = point.summary
                interval = ("" if s.ci_low is None
                            else f"95% CI [{significant(s.ci_low)}, {significant(s.ci_high)}], ")
                row[metric] = Cell.number(s.value, f"{interval}n={s.n}")
        head = points.get(headline)
        row["n"] = Cell(str(head.summary.n) if head else MISSING, head.summary.n if head else None)
        rows.append(row)
    columns = [
        Column("engine", "engine", numeric=False),
        Column("parameter", "settings", numeric=False),
        *(Column(m, m, title=better_note(metric_traits(m, _any_summary(latest, m), specs)[0]))
          for m in shown),
        Column("n", "n"),
        Column("run", "latest run", numeric=False),
    ]
    where = " · ".join(filter(None, (f"data={data}" if several_data or data != "fixtures"
                                     else "", measure)))
    rule = (f"ranked by {headline} ({better_note(direction)}); equal printed values tie"
            if direction else f"{headline} has no better direction: not ranked")
    caption = f"{where + ': ' if where else ''}{rule}; hover a value for its interval and n"
    if zero:
        caption += f"; {' and '.join(zero)}: 0 in every row"
    return ranked_table(slug("rank", benchmark, data, measure), columns, rows, caption,
                        standings=standings)


def _any_summary(latest: Mapping[RowKey, Mapping[str, Point]], metric: str) -> MetricSummary:
    return next(points[metric].summary for points in latest.values() if metric in points)


def _earns_medal(
    value: float | None, direction: str | None, bounds: tuple[float | None, float | None]
) -> bool:
    """Whether ``value`` is on the better side of :data:`MEDAL_FLOOR` in its range."""
    low, high = bounds
    if value is None or direction is None or low is None or high is None:
        return False
    share = (value - low) / (high - low)
    return share >= MEDAL_FLOOR if direction == "higher" else share <= 1 - MEDAL_FLOOR


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
            why = "".join(f" — {name}: {value}" for name, value in
                          sample.details.get("explain", {}).items())
            label = sample.sample_id + note + why
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
    if isinstance(score, (int, float)):  # a bool prints yes/no
        return f" — {headline} {significant(score)}"
    return ""


def _badness(sample: SampleRecord, headline: str | None, direction: str) -> tuple[int, float, str]:
    if sample.error:
        return (0, 0.0, sample.sample_id)
    score = sample.scores.get(headline) if headline else None
    if not isinstance(score, (int, float)):  # bools sort as 0 and 1
        return (2, 0.0, sample.sample_id)
    return (1, float(score) if direction == "higher" else -float(score), sample.sample_id)
