"""``evalsuite report``: one self-contained HTML dashboard of the run history, plus PNG plots.

Per benchmark: the newest run's regression status; rankings that compare only like with like
(one table per data source x measure, :data:`~evalsuite.reports.charts.MEASURE_KEYS`), ties
sharing a rank (values that print the same), medals only on the better side of
:data:`MEDAL_FLOOR`, rows that regressed against their previous run marked, each row's model
(a peer's profile and version, from the newest run's engine details) and whether its number
was measured here or published (golden entries of a paper or a leaderboard rank
beside the runs on the same data, without medals: see :func:`_rankings`); trend charts as
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
import hashlib
import json
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from evalsuite.benchmarks import Benchmark, load_declarations
from evalsuite.golden import GoldenEntry
from evalsuite.models import available_models
from evalsuite.records.atomic import atomic_write_text
from evalsuite.records.history import DEFAULT_HISTORY, HistoryEntry, read_history
from evalsuite.records.model import (
    BenchmarkRecord,
    Direction,
    MetricKind,
    MetricSummary,
    SampleRecord,
)
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
    MEASURED,
    PUBLISHED_SOURCES,
    PUBLISHED_SUFFIX,
    GoldenIndex,
    Point,
    SeriesKey,
    better_note,
    chronological,
    collect_series,
    load_golden_index,
    model_text,
    newest_regressions,
    profile_of,
    series_steps,
)
from evalsuite.reports.wordalign import align_words
from evalsuite.runner import MetricSpec
from evalsuite.textformat import MISSING, echo, significant

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
        echo("evalsuite report: --max-samples must be >= 0", file=sys.stderr)
        return 2
    if args.out.is_dir():
        echo(f"evalsuite report: --out {args.out} is a folder; give the HTML file to write, "
             f"e.g. {args.out / 'index.html'}", file=sys.stderr)
        return 2
    try:
        html_path, pngs = write_dashboard(
            args.history, args.out, golden_dir=args.golden_dir,
            max_samples=args.max_samples, png=not args.no_png,
        )
    except FileNotFoundError as error:
        echo(f"evalsuite report: {error}", file=sys.stderr)
        return 2
    echo(f"dashboard: {html_path}")
    for path in pngs:
        echo(f"plot: {path}")
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
        _rankings(benchmark, own, metrics, specs, golden, runs),
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
TableKey = tuple[str, str]  # data, measure
PUBLISHED = "published"


@dataclass(frozen=True)
class _Row:
    """A ranking's row: the latest values of one engine x data x parameter of the runs
    (measured), or the golden entries of a published figure; per metric, its hover text."""

    engine: str
    data: str
    parameter: str
    values: Mapping[str, MetricSummary]
    notes: Mapping[str, str]
    when: Cell
    model: Cell
    source: Cell
    published: bool = False
    profiled: bool = False
    """A measured row whose engine ran a peer model profile."""
    regressed: tuple[str, ...] = ()

    @property
    def table(self) -> TableKey:
        return self.data, measure_of(self.parameter)


def _rankings(
    benchmark: str,
    series: Mapping[SeriesKey, Sequence[Point]],
    metrics: Sequence[str],
    specs: Mapping[str, MetricSpec],
    golden: GoldenIndex,
    runs: Sequence[HistoryEntry] = (),
) -> str:
    """One ranked table per data source x measure: only rows measured alike are compared.

    Published figures (golden entries whose source is not ``measured``: a paper's, a
    leaderboard's, recorded outputs') rank in the table of their data and measure beside the
    runs, so ``dots.ocr (published)`` stands next to ``dots.ocr`` as measured here. They take a
    place in the order but no medal: nobody reproduced them here, with this suite's prompts,
    images and scorer, and a medal says "best of what we ran". Published figures on data that
    no run of the history used are kept out of the rankings (they compare with nothing
    measured): they follow in one folded block, a compact table per data source and measure,
    one click away rather than pages of paper figures on a dashboard of fixture runs."""
    details = {entry.metadata.run_id: entry.metadata.engine_details for entry in runs}
    names = {str(profile["name"]).lower(): str(profile["name"])
             for by_engine in details.values() for engine_details in by_engine.values()
             if (profile := profile_of(engine_details)) is not None}
    tables: dict[TableKey, list[_Row]] = {}
    for row in _measured_rows(series, golden, details):
        tables.setdefault(row.table, []).append(row)
    elsewhere: dict[TableKey, list[_Row]] = {}
    for row in _published_rows(benchmark, golden, names):
        (tables if row.table in tables else elsewhere).setdefault(row.table, []).append(row)
    several_data = len({data for data, _ in tables}) > 1
    parts = [
        _ranking(benchmark, data, measure, rows, metrics, specs, several_data)
        for (data, measure), rows in tables.items()
    ] or ['<p class="empty">No metrics recorded.</p>']
    if elsewhere:
        sources = ", ".join(dict.fromkeys(data for data, _ in elsewhere))
        count = sum(len(rows) for rows in elsewhere.values())
        inner = "".join(
            _ranking(benchmark, data, measure, rows, _compact(metrics, rows), specs, True,
                     table_id=slug("published", benchmark, data, measure))
            for (data, measure), rows in elsewhere.items()
        )
        parts.append(
            f'<details class="published"><summary>Published figures on data no run here used '
            f"({count} row{'s' if count > 1 else ''}: {escape(sources)})</summary>"
            f"{inner}</details>"
        )
    return "".join(parts)


def _compact(metrics: Sequence[str], rows: Sequence[_Row]) -> list[str]:
    """The columns of a table of published figures only: the metrics the runs measure, so it
    reads as the rankings above it; the figures' own (by name) where they share none."""
    common = [metric for metric in metrics if any(metric in row.values for row in rows)]
    return common or sorted({metric for row in rows for metric in row.values})


def _measured_rows(
    series: Mapping[SeriesKey, Sequence[Point]],
    golden: GoldenIndex,
    details: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> list[_Row]:
    """The latest value of each engine x data x parameter's metrics (per-group aggregates left
    out), whether it regressed against the run before, and the model of its newest run."""
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
    rows = []
    for (engine, data, parameter), points in sorted(latest.items()):
        newest = max(points.values(), key=lambda p: p.created_utc)
        engine_details = details.get(newest.run_id, {}).get(engine)
        rows.append(_Row(
            engine, data, parameter,
            values={metric: point.summary for metric, point in points.items()},
            notes={metric: _interval_note(point.summary) for metric, point in points.items()},
            when=Cell(newest.created_utc[:16].replace("T", " "), newest.created_utc,
                      newest.run_id),
            model=_model_cell(engine_details),
            source=Cell(MEASURED, MEASURED, f"measured here: run {newest.run_id}"),
            profiled=profile_of(engine_details) is not None,
            regressed=tuple(regressed.get((engine, data, parameter), ())),
        ))
    return rows


def _interval_note(summary: MetricSummary) -> str:
    interval = ("" if summary.ci_low is None
                else f"95% CI [{significant(summary.ci_low)}, {significant(summary.ci_high)}], ")
    return f"{interval}n={summary.n}"


def _model_cell(details: Mapping[str, Any] | None) -> Cell:
    """The model behind a run's engine (:func:`model_text`); hovering a peer profile's shows
    what pins it down: the served model, the prompt's hash, decoding, image and PDF rules,
    converter, a pipeline's further calls (hashed)."""
    text = model_text(details) or MISSING
    profile = profile_of(details)
    if profile is None or details is None:
        return Cell(text, text)
    decoding = profile.get("decoding") or {}
    facts = [
        f"profile {text}",
        f"served model {details['model']}" if details.get("model") else "",
        f"prompt sha256 {str(profile['prompt_sha256'])[:12]}"
        if profile.get("prompt_sha256") else "",
        "decoding " + ", ".join(f"{k}={v}" for k, v in decoding.items())
        if isinstance(decoding, Mapping) and decoding else "",
        f"image preparation {profile['image_preparation']}"
        if profile.get("image_preparation") else "",
        f"PDF pages {profile['pdf_rendering']}" if profile.get("pdf_rendering") else "",
        f"converter {profile['converter']}" if profile.get("converter") else "",
        "further calls sha256 " + hashlib.sha256(json.dumps(
            profile["pipeline"], sort_keys=True).encode()).hexdigest()[:12]
        if profile.get("pipeline") else "",
    ]
    return Cell(text, text, " · ".join(fact for fact in facts if fact))


def _published_rows(
    benchmark: str, golden: GoldenIndex, names: Mapping[str, str]
) -> list[_Row]:
    """A row per engine x data x parameter of ``benchmark``'s published golden entries (per-group
    aggregates left out): their values and n (0: no count published), the newest publication
    date, and the model: ``dots.ocr (published)`` names ``dots.ocr``, spelled as the runs'
    profiles spell it (``names``: by lower-case name) or as the model registry does
    (``paddleocr-vl (published)``: ``PaddleOCR-VL``)."""
    grouped: dict[RowKey, dict[str, GoldenEntry]] = {}
    for (bench, engine, data, parameter, metric), entry in sorted(golden.items()):
        published = entry.source in PUBLISHED_SOURCES
        if bench == benchmark and published and split_grouped(metric)[1] is None:
            grouped.setdefault((engine, data, parameter), {})[metric] = entry
    if grouped:  # the registry's spelling of each model, the runs' where they differ
        names = {name.lower(): name for name in available_models()} | dict(names)
    rows = []
    for (engine, data, parameter), entries in grouped.items():
        dates = sorted(entry.set_at for entry in entries.values() if entry.set_at)
        date = dates[-1] if dates else ""
        model = engine.removesuffix(PUBLISHED_SUFFIX)
        model = names.get(model.lower(), model)
        rows.append(_Row(
            engine, data, parameter,
            values={metric: MetricSummary(entry.value, entry.n, kind=_kind(entry.kind),
                                          direction=_direction(entry.direction))
                    for metric, entry in entries.items()},
            notes={metric: f"{entry.source} figure, "
                           + (f"n={entry.n}" if entry.n else "no sample count published")
                   for metric, entry in entries.items()},
            when=Cell(date[:10] or MISSING, date, f"published {date[:10]}" if date else ""),
            model=Cell(model, model, "a published figure: no profile of this suite"),
            source=Cell(PUBLISHED, PUBLISHED, _citation(entries.values())),
            published=True,
        ))
    return rows


def _kind(kind: str) -> MetricKind:
    return "proportion" if kind == "proportion" else "mean"


def _direction(direction: str | None) -> Direction | None:
    return "higher" if direction == "higher" else "lower" if direction == "lower" else None


def _citation(entries: Iterable[GoldenEntry]) -> str:
    """Where published entries come from: ``paper, 2026-02-03 · commit 2f3699e: <note>``, each
    distinct one once."""
    items = []
    for entry in entries:
        where = entry.source + (f", {entry.set_at[:10]}" if entry.set_at else "")
        if entry.commit and entry.commit != entry.source:
            where += f" · commit {entry.commit}"
        items.append(where + (f": {entry.note}" if entry.note else ""))
    return " | ".join(dict.fromkeys(items))


def _ranking(
    benchmark: str,
    data: str,
    measure: str,
    rows: Sequence[_Row],
    metrics: Sequence[str],
    specs: Mapping[str, MetricSpec],
    several_data: bool,
    *,
    table_id: str | None = None,
) -> str:
    """The rows on ``data`` and ``measure`` ranked by the first metric of ``metrics`` that a
    measured row has (the headline; any row's in a table of published figures only); a metric
    without a direction ranks nothing. Medals go to measured rows only (see :func:`_rankings`).
    The model column shows where it says more than the engine label in some row (a peer's
    profile and version, a served model id, ``dots.ocr`` of ``dots.ocr (published)``): on
    fixture runs of local engines it would repeat the engine; the source column where a
    published figure is among the rows, its citation in the hover."""
    only_published = all(row.published for row in rows)
    counted = [row for row in rows if only_published or not row.published]
    present = [m for m in metrics if any(m in row.values for row in counted)]
    rows = [row for row in rows if any(m in row.values for m in present)]  # no row of dashes
    zero = [m for m in present if m in HEALTH_METRICS and all(
        row.values[m].value == 0 for row in rows if m in row.values)]
    shown = [m for m in present if m not in zero]
    headline = shown[0] if shown else present[0]
    direction, bounds = metric_traits(headline, _any_summary(counted, headline), specs)

    def value(row: _Row) -> float | None:
        summary = row.values.get(headline)
        return None if summary is None else summary.value

    order = sorted(rows, key=lambda row: (
        value(row) is None or direction is None,
        0.0 if value(row) is None or direction is None
        else -value(row) if direction == "higher" else value(row),
    ))
    standings = []
    measured: list[tuple[float, int]] = []  # (value, place) of the ranked measured rows so far
    for index, row in enumerate(order):
        rank = place = None
        if value(row) is not None and direction is not None:
            previous = order[index - 1] if index else None
            ties = previous is not None and standings[-1].rank is not None and (
                significant(value(previous)) == significant(value(row)))
            rank = standings[-1].rank if ties else index + 1
            if not row.published:  # medals go by the place among the measured rows
                tied = measured and significant(measured[-1][0]) == significant(value(row))
                place = measured[-1][1] if tied else len(measured) + 1
                measured.append((value(row), place))
        standings.append(Standing(
            rank,
            _earns_medal(value(row), direction, bounds) and len(order) > 1 and not row.published,
            "regressed against the previous run: " + ", ".join(row.regressed)
            if row.regressed else "",
            PUBLISHED if row.published else "",
            place,
        ))
    published = any(row.published for row in rows)
    with_model = any(row.profiled or row.model.text not in (row.engine, MISSING)
                     for row in rows)
    cells = []
    for row in order:
        settings = ",".join(f"{k}={v}" if k != v else k for k, v in
                            parse_parameter(row.parameter).items() if k not in MEASURE_KEYS)
        cell = {"engine": Cell(row.engine, row.engine), "model": row.model,
                "source": row.source, "parameter": Cell(settings, row.parameter),
                "run": row.when}
        for metric in shown:
            summary = row.values.get(metric)
            if summary is not None:
                cell[metric] = Cell.number(summary.value, row.notes.get(metric, ""))
        head = row.values.get(headline)
        if head is None or (row.published and not head.n):
            cell["n"] = Cell(MISSING, None, "no sample count published" if head else "")
        else:
            cell["n"] = Cell(str(head.n), head.n)
        cells.append(cell)
    columns = [
        Column("engine", "engine", numeric=False),
        *([Column("model", "model", numeric=False,
                  title="the model profile and its version a run sent its pages with (hover: "
                        "prompt, decoding); a published figure's model")] if with_model else []),
        *([Column("source", "source", numeric=False,
                  title="measured by a run here, or a published figure (hover: its citation)")]
          if published else []),
        Column("parameter", "settings", numeric=False),
        *(Column(m, m, title=better_note(metric_traits(m, _any_summary(rows, m), specs)[0]))
          for m in shown),
        Column("n", "n"),
        Column("run", "published" if only_published else "run / published" if published
               else "latest run", numeric=False),
    ]
    where = " · ".join(filter(None, (f"data={data}" if several_data or data != "fixtures"
                                     else "", measure)))
    rule = (f"ranked by {headline} ({better_note(direction)}); equal printed values tie"
            if direction else f"{headline} has no better direction: not ranked")
    caption = f"{where + ': ' if where else ''}{rule}; "
    if only_published:
        caption += "published figures only, no run here used this data; hover the source for "
        caption += "the citation"
    else:
        caption += "hover a value for its interval and n"
    if published and not only_published:
        caption += ("; published figures rank without a medal, medals go to the measured rows "
                    "(hover the source for the citation)")
    if zero:
        caption += f"; {' and '.join(zero)}: 0 in every row"
    return ranked_table(table_id or slug("rank", benchmark, data, measure), columns, cells,
                        caption, standings=standings)


def _any_summary(rows: Sequence[_Row], metric: str) -> MetricSummary:
    return next(row.values[metric] for row in rows if metric in row.values)


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
