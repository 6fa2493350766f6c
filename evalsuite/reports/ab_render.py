"""The output of ``evalsuite ab`` from a computed :class:`~evalsuite.reports.ab_compute.AbReport`:
the terminal table with the samples that got worse most and a word-level diff of their two
outputs, the JSON, and the HTML page in the dashboard's style with a paired plot (candidate vs
baseline per sample) per changed metric."""

from __future__ import annotations

from dataclasses import asdict
from html import escape
from typing import Any

from evalsuite.records.results import RunResults
from evalsuite.reports.ab_compute import AbReport, SampleChange
from evalsuite.reports.charts import PALETTE, Chart, ChartPoint, ChartSeries, slug
from evalsuite.reports.geometry import MUTED
from evalsuite.reports.html import (
    Cell,
    Column,
    DrillItem,
    drilldown,
    legend,
    ranked_table,
    render_page,
)
from evalsuite.reports.series import profile_of, profile_text
from evalsuite.reports.svg import render_svg
from evalsuite.reports.wordalign import UNMATCHED, align_words
from evalsuite.textformat import format_table, shorten, significant

PAIRED_CHARTS = 12
"""Most paired plots on the HTML page: the changed metrics with the smallest adjusted p."""
DIFF_WORDS = 100
"""Characters of each side's unmatched words shown per sample in the terminal."""


def _run_line(results: RunResults, role: str) -> str:
    meta = results.metadata
    name = f"{meta.run_name} ({meta.run_id})" if meta.run_name else meta.run_id
    commit = (meta.git_commit or "unknown")[:8] + ("-dirty" if meta.git_dirty else "")
    engines = []
    for engine in meta.engines:
        profile = profile_of(meta.engine_details.get(engine))
        engines.append(engine if profile is None else f"{engine} ({profile_text(profile)})")
    return f"{role + ':':<10} {name}, commit {commit}, engines {', '.join(engines) or '—'}"


def render_text(report: AbReport, *, show_all: bool = False) -> str:
    """Both runs, the metrics that moved (all with ``show_all``), the verdict and the samples
    that got worse most, each with the words only one of its two outputs has."""
    lines = [
        _run_line(report.baseline, "baseline"),
        _run_line(report.candidate, "candidate"),
        f"{len(report.pairs)} record pair(s), {report.paired_samples} paired samples, "
        f"{len(report.comparisons)} tests Holm-adjusted at alpha {significant(report.alpha)}, "
        f"tolerance {significant(report.tolerance)}",
        *(f"warning: {warning}" for warning in report.warnings),
        "",
    ]
    shown = [c for c in report.comparisons if show_all or c.test.delta != 0 or c.significant]
    headers = ["benchmark", "engine", "data", "parameter", "metric", "n", "baseline",
               "candidate", "delta", "test", "p", "p Holm", "verdict"]
    rows = [
        [c.benchmark, c.engines, c.data, c.parameter, c.metric, str(c.test.n),
         significant(c.baseline), significant(c.candidate),
         significant(c.test.delta, signed=True), c.test.test, significant(c.test.p_value),
         significant(c.p_holm), c.verdict]
        for c in shown
    ]
    if rows:
        lines.append(format_table(headers, rows, align="lllllrrrrlrrl"))
    hidden = len(report.comparisons) - len(shown)
    if hidden:
        lines.append(
            f"{hidden} metric(s) with the same value in both runs, not shown (--all shows them)"
        )
    lines.append("")
    regressions = report.regressions
    if regressions:
        lines.append(f"{len(regressions)} significant regression(s): " + "; ".join(
            f"{c.benchmark} {c.metric} ({c.parameter}) {significant(c.test.delta, signed=True)}"
            for c in regressions))
    else:
        lines.append("no significant regression")
    if report.worst:
        lines += ["", f"samples that got worse most ({len(report.worst)}):"]
        for rank, change in enumerate(report.worst, start=1):
            lines.append(f"{rank:>3}. {change.sample_id} · {change.where}")
            lines.append(
                f"     {change.metric} {significant(change.baseline_score)} → "
                f"{significant(change.candidate_score)}"
            )
            lines += [f"     {line}" for line in _diff_lines(change)]
    return "\n".join(lines)


def _diff_lines(change: SampleChange) -> list[str]:
    """The words only the baseline's output has and those only the candidate's has."""
    lines = []
    for role, error in (("baseline", change.baseline_error),
                        ("candidate", change.candidate_error)):
        if error:
            lines.append(f"{role} failed: {shorten(error, DIFF_WORDS)}")
    if change.baseline_text == change.candidate_text:
        return [*lines, "outputs identical"]
    cand_segments, base_segments = align_words(change.candidate_text, change.baseline_text)
    for role, segments in (("- baseline only", base_segments),
                           ("+ candidate only", cand_segments)):
        words = " ".join(s.text for s in segments if s.match == UNMATCHED)
        lines.append(f"{role}: {shorten(words, DIFF_WORDS) if words else '(nothing)'}")
    return lines


def report_json(report: AbReport) -> dict[str, Any]:
    """The comparison as JSON: both runs' metadata, every test, the worst samples."""
    return {
        "baseline": {"results": report.sources[0], **report.baseline.metadata.to_dict()},
        "candidate": {"results": report.sources[1], **report.candidate.metadata.to_dict()},
        "alpha": report.alpha,
        "tolerance": report.tolerance,
        "correction": "holm",
        "warnings": report.warnings,
        "comparisons": [c.to_dict() for c in report.comparisons],
        "regressions": len(report.regressions),
        "worst_samples": [asdict(change) for change in report.worst],
    }


def render_html(report: AbReport) -> str:
    """A page in the dashboard's style: the tests, paired plots of the metrics that moved, and
    the worst samples' two outputs side by side."""
    columns = [
        Column("where", "benchmark · engine · data · parameter", numeric=False),
        Column("metric", "metric", numeric=False),
        Column("n", "n"),
        Column("baseline", "baseline"),
        Column("candidate", "candidate"),
        Column("delta", "delta"),
        Column("p", "p", title="two-sided p-value of the paired test"),
        Column("p_holm", "p Holm", title="Holm-adjusted over every test of the page"),
        Column("verdict", "verdict", numeric=False),
    ]
    ordered = report.by_evidence()
    rows = []
    for index in ordered:
        c = report.comparisons[index]
        rows.append({
            "where": Cell(c.where, c.where), "metric": Cell(c.metric, c.metric),
            "n": Cell(str(c.test.n), c.test.n), "baseline": Cell.number(c.baseline),
            "candidate": Cell.number(c.candidate),
            "delta": Cell(significant(c.test.delta, signed=True), c.test.delta, c.test.test),
            "p": Cell.number(c.test.p_value), "p_holm": Cell.number(c.p_holm),
            "verdict": Cell(c.verdict, c.verdict),
        })
    caption = (f"{len(report.comparisons)} paired tests, Holm-adjusted at alpha "
               f"{significant(report.alpha)}; regressed: significant and worse by more than "
               f"{significant(report.tolerance)}")
    charts = [_paired_chart(report, index) for index in ordered
              if report.changed(index)][:PAIRED_CHARTS]
    items = [_drill_item(rank, change) for rank, change in enumerate(report.worst, start=1)]
    body = [
        *(f'<div class="status bad">⚠ {escape(warning)}</div>' for warning in report.warnings),
        '<section id="tests"><h2>Paired tests</h2>',
        ranked_table("ab-tests", columns, rows, caption, unranked=len(rows)),
        '</section><section id="paired"><h2>Candidate vs baseline, per sample</h2>',
        '<div class="charts">' + "".join(charts) + "</div>" if charts
        else "<p>No sample changed its score.</p>",
        '</section><section id="worst"><h2>Samples that got worse most</h2>',
        drilldown("ab-worst", items, titles=("Baseline output", "Candidate output"))
        if items else "<p>No sample got worse.</p>",
        "</section>",
    ]
    verdict = (f"{len(report.regressions)} significant regression(s)" if report.regressions
               else "no significant regression")
    subtitle = (f"{_run_line(report.baseline, 'baseline')} · "
                f"{_run_line(report.candidate, 'candidate')} · {verdict}")
    nav = [("tests", "tests"), ("paired", "paired plots"), ("worst", "worst samples")]
    return render_page("A/B comparison", subtitle, nav, "".join(body))


def _paired_chart(report: AbReport, index: int) -> str:
    """Each paired sample as a dot at (baseline, candidate), ringed when it moved, with the
    diagonal y = x on which unchanged samples lie."""
    comparison = report.comparisons[index]
    values = report.series[index]
    sign = 1.0 if comparison.direction == "higher" else -1.0
    dots = []
    for sample_id, base, cand in values:
        moved = sign * (cand - base)
        flag = "regressed" if moved < 0 else "improved" if moved > 0 else None
        point = ChartPoint(base, cand, label=f"baseline {significant(base)} → candidate "
                           f"{significant(cand)}", flag=flag)
        dots.append(ChartSeries(sample_id, (point,), color=PALETTE[0]))
    low = min(min(b, c) for _, b, c in values)
    high = max(max(b, c) for _, b, c in values)
    diagonal = ChartSeries("y = x (unchanged)", (ChartPoint(low, low), ChartPoint(high, high)),
                           color=MUTED)
    title = f"{comparison.metric} · {comparison.where}"
    chart = Chart(kind="curve", chart_id=slug("ab", str(index), comparison.metric), title=title,
                  x_label=f"baseline {comparison.metric}",
                  y_label=f"candidate {comparison.metric}", series=(diagonal, *dots))
    note = (f"{comparison.test.test}, p Holm {significant(comparison.p_holm)}; "
            f"{comparison.direction} is better")
    keys = legend(
        [ChartSeries("sample", (), color=PALETTE[0])],
        '<span class="key"><i class="ring bad"></i>worse</span>'
        '<span class="key"><i class="ring good"></i>better</span>',
    )
    return (
        f'<figure class="card chart-card"><figcaption><b>{escape(title)}</b>'
        f'<span class="note">{escape(note)}</span></figcaption>{render_svg(chart)}{keys}</figure>'
    )


def _drill_item(rank: int, change: SampleChange) -> DrillItem:
    cand_segments, base_segments = align_words(change.candidate_text, change.baseline_text)
    label = (f"{rank}. {change.sample_id} — {change.metric} {significant(change.baseline_score)}"
             f" → {significant(change.candidate_score)}")
    error = "; ".join(
        f"{role} failed: {error}" for role, error in
        (("baseline", change.baseline_error), ("candidate", change.candidate_error)) if error
    ) or None
    change_of_score = {f"{change.metric} change": change.candidate_score - change.baseline_score}
    return DrillItem(label, change.where, base_segments, cand_segments, change_of_score, error)
