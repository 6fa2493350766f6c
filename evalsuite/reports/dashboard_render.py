"""The HTML of ``evalsuite report`` (:mod:`evalsuite.reports.dashboard`) from what
:mod:`~evalsuite.reports.dashboard_compute` computed: the newest run's facts, and per benchmark
its regression status, ranked tables (hover texts: intervals, models, citations), trend and
study charts and the drill-down of the newest run's samples."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from evalsuite.golden import GoldenEntry
from evalsuite.records.history import HistoryEntry
from evalsuite.records.model import MetricSummary, SampleRecord
from evalsuite.records.results import RunMetadata
from evalsuite.reports.charts import MEASURE_KEYS, Chart, FlatMetric, parse_parameter, slug
from evalsuite.reports.dashboard_compute import BenchmarkView, Placed, Ranking, Rankings, Row
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
from evalsuite.reports.series import MEASURED, better_note, model_text, profile_of
from evalsuite.reports.wordalign import align_words
from evalsuite.textformat import MISSING, significant

STATUS_LINES = 5
"""Regressions listed openly under the status; more are folded (click to show)."""
PUBLISHED = "published"


def render_dashboard(entries: Sequence[HistoryEntry], views: Sequence[BenchmarkView],
                     stamp: str) -> str:
    """The page of the history ``entries`` (oldest first; none: an empty page) with a section
    per benchmark, ``stamp`` saying when it was generated."""
    if not entries:
        body = '<p class="empty card facts">No runs recorded yet: run the benchmarks first.</p>'
        return render_page("dashboard", f"generated {stamp}", [], body)
    newest = entries[-1].metadata
    subtitle = f"{len(entries)} runs · newest {newest.created_utc} · generated {stamp}"
    nav = [(f"bench-{slug(view.benchmark)}", view.benchmark) for view in views]
    body = _run_facts(newest) + "".join(_section(view) for view in views)
    return render_page("dashboard", subtitle, nav, body)


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


def _section(view: BenchmarkView) -> str:
    benchmark, newest = view.benchmark, view.runs[-1].metadata.run_id
    parts = [
        f'<section class="bench" id="bench-{slug(benchmark)}">'
        f'<h2>{escape(view.title)}<span class="pill">{escape(benchmark)} · '
        f'{len(view.runs)} runs</span></h2>',
        _status(view),
        "<h3>Ranking</h3>",
        _rankings(benchmark, view.rankings),
        "<h3>Trends</h3>",
        _flat_lines(view.flat),
        _chart_grid(view.trends),
    ]
    if view.studies:
        parts += ["<h3>Compression and context studies</h3>", _chart_grid(view.studies)]
    items = _drill_items(view)
    parts.append(f"<h3>Samples of the newest run ({escape(newest)})</h3>")
    if items:
        parts.append(drilldown(f"drill-{slug(benchmark)}", items))
    else:
        parts.append('<p class="empty">No per-sample texts in this run\'s results.json.</p>')
    parts.append("</section>")
    return "".join(parts)


def _flat_lines(flat: Sequence[FlatMetric]) -> str:
    if not flat:
        return ""
    items = "".join(f"<li>{escape(item.text)}</li>" for item in flat)
    return f'<ul class="flat">{items}</ul>'


def _status(view: BenchmarkView) -> str:
    regressions = view.regressions
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


def _rankings(benchmark: str, rankings: Rankings) -> str:
    """The rankings where runs measured, then the published figures on data no run used in one
    folded block, one click away rather than pages of paper figures on a dashboard of fixture
    runs."""
    several_data = len({ranking.data for ranking in rankings.tables}) > 1
    parts = [_ranking(benchmark, ranking, several_data) for ranking in rankings.tables] or [
        '<p class="empty">No metrics recorded.</p>']
    if rankings.elsewhere:
        sources = ", ".join(dict.fromkeys(ranking.data for ranking in rankings.elsewhere))
        count = rankings.elsewhere_rows
        inner = "".join(
            _ranking(benchmark, ranking, True, table_id=slug(
                "published", benchmark, ranking.data, ranking.measure))
            for ranking in rankings.elsewhere
        )
        parts.append(
            f'<details class="published"><summary>Published figures on data no run here used '
            f"({count} row{'s' if count > 1 else ''}: {escape(sources)})</summary>"
            f"{inner}</details>"
        )
    return "".join(parts)


def _ranking(
    benchmark: str, ranking: Ranking, several_data: bool, *, table_id: str | None = None
) -> str:
    """The ranking as a table. The model column shows where it says more than the engine label
    in some row (a peer's profile and version, a served model id, ``dots.ocr`` of ``dots.ocr
    (published)``): on fixture runs of local engines it would repeat the engine; the source
    column where a published figure is among the rows, its citation in the hover."""
    published, only_published = ranking.published, ranking.only_published
    columns = [
        Column("engine", "engine", numeric=False),
        *([Column("model", "model", numeric=False,
                  title="the model profile and its version a run sent its pages with (hover: "
                        "prompt, decoding); a published figure's model")]
          if ranking.with_model else []),
        *([Column("source", "source", numeric=False,
                  title="measured by a run here, or a published figure (hover: its citation)")]
          if published else []),
        Column("parameter", "settings", numeric=False),
        *(Column(m, m, title=better_note(ranking.directions[m])) for m in ranking.metrics),
        Column("n", "n"),
        Column("run", "published" if only_published else "run / published" if published
               else "latest run", numeric=False),
    ]
    data, measure, headline = ranking.data, ranking.measure, ranking.headline
    where = " · ".join(filter(None, (f"data={data}" if several_data or data != "fixtures"
                                     else "", measure)))
    rule = (f"ranked by {headline} ({better_note(ranking.direction)}); equal printed values tie"
            if ranking.direction else f"{headline} has no better direction: not ranked")
    caption = f"{where + ': ' if where else ''}{rule}; "
    if only_published:
        caption += "published figures only, no run here used this data; hover the source for "
        caption += "the citation"
    else:
        caption += "hover a value for its interval and n"
    if published and not only_published:
        caption += ("; published figures rank without a medal, medals go to the measured rows "
                    "(hover the source for the citation)")
    if ranking.zero:
        caption += f"; {' and '.join(ranking.zero)}: 0 in every row"
    return ranked_table(table_id or slug("rank", benchmark, data, measure), columns,
                        [_cells(placed.row, ranking) for placed in ranking.rows], caption,
                        standings=[_standing(placed) for placed in ranking.rows])


def _standing(placed: Placed) -> Standing:
    row = placed.row
    regressed = ("regressed against the previous run: " + ", ".join(row.regressed)
                 if row.regressed else "")
    return Standing(placed.rank, placed.medal is not None, regressed,
                    PUBLISHED if row.published else "", placed.medal)


def _cells(row: Row, ranking: Ranking) -> dict[str, Cell]:
    """A row's cells: engine, model, source, settings, run or publication date, the values with
    their hover notes, and the headline's n."""
    settings = ",".join(f"{k}={v}" if k != v else k for k, v in
                        parse_parameter(row.parameter).items() if k not in MEASURE_KEYS)
    if row.published:
        date, model = row.when, row.model or ""
        notes = {metric: f"{entry.source} figure, "
                 + (f"n={entry.n}" if entry.n else "no sample count published")
                 for metric, entry in row.golden.items()}
        cell = {"model": Cell(model, model, "a published figure: no profile of this suite"),
                "source": Cell(PUBLISHED, PUBLISHED, _citation(row.golden.values())),
                "run": Cell(date[:10] or MISSING, date, f"published {date[:10]}" if date else "")}
    else:
        notes = {metric: _interval_note(summary) for metric, summary in row.values.items()}
        cell = {"model": _model_cell(row.details),
                "source": Cell(MEASURED, MEASURED, f"measured here: run {row.run_id}"),
                "run": Cell(row.when[:16].replace("T", " "), row.when, row.run_id)}
    cell |= {"engine": Cell(row.engine, row.engine), "parameter": Cell(settings, row.parameter)}
    for metric in ranking.metrics:
        summary = row.values.get(metric)
        if summary is not None:
            cell[metric] = Cell.number(summary.value, notes.get(metric, ""))
    head = row.values.get(ranking.headline)
    if head is None or (row.published and not head.n):
        cell["n"] = Cell(MISSING, None, "no sample count published" if head else "")
    else:
        cell["n"] = Cell(str(head.n), head.n)
    return cell


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


def _chart_grid(charts: Sequence[Chart]) -> str:
    return f'<div class="charts">{"".join(chart_card(chart) for chart in charts)}</div>'


def _drill_items(view: BenchmarkView) -> list[DrillItem]:
    """The drill-down's samples: their two texts aligned word by word, labelled with the
    headline score (or failure) and the scorer's explanations."""
    headline = view.headline
    items = []
    for record, sample in view.drill:
        group = f"{record.engine} · {record.data} · {record.parameter}"
        pred, gt = align_words(sample.prediction or "", sample.reference or "")
        note = " — failed" if sample.error else _score_note(sample, headline)
        why = "".join(f" — {name}: {value}" for name, value in
                      sample.details.get("explain", {}).items())
        label = sample.sample_id + note + why
        items.append(DrillItem(label, group, gt, pred, sample.scores, sample.error))
    return items


def _score_note(sample: SampleRecord, headline: str | None) -> str:
    score = sample.scores.get(headline) if headline else None
    if isinstance(score, (int, float)):  # a bool prints yes/no
        return f" — {headline} {significant(score)}"
    return ""
