"""The report of ``evalsuite trend`` (:mod:`evalsuite.commands.trend`): how each metric moved
over the last runs, regressions flagged.

By default one line per series (benchmark x engine x data x parameter x metric): its last value,
the change against the run before, the difference to its golden value, a sparkline of its last N
values, and a flag when the last change is a regression or an improvement by the golden gate's
statistics (see :mod:`evalsuite.reports.series`). The long form (``every_run``) is one table per
benchmark x metric with every one of the last N runs, its 95% interval and change. Per-group
aggregates (``edit_precision[600-700]``) are left out unless asked for (:func:`select_series`).
The header names the peer model profile and version behind each engine that ran one (from the
runs' engine details): a series of ``dots.ocr`` says it is ``dots.ocr v1``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby

from evalsuite.records.history import HistoryEntry
from evalsuite.reports.series import (
    GoldenIndex,
    Point,
    SeriesKey,
    Step,
    better_note,
    chronological,
    engine_profiles,
    newest_regressions,
    series_steps,
)
from evalsuite.textformat import MISSING, format_table, significant, sparkline

REGRESSED = "▼ REGRESSED"
IMPROVED = "▲ improved"


def select_series(
    series: Mapping[SeriesKey, Sequence[Point]],
    benchmark: str | None,
    metric: str | None,
    *,
    groups: bool = False,
) -> dict[SeriesKey, Sequence[Point]]:
    """The series of ``benchmark`` and ``metric`` (all when None); per-group aggregates
    (``metric[group]``) only with ``groups`` or when ``metric`` names one."""
    return {
        key: points
        for key, points in series.items()
        if (benchmark is None or key.benchmark == benchmark)
        and (key.metric == metric if metric is not None else groups or "[" not in key.metric)
    }


def render_trend(
    entries: Sequence[HistoryEntry],
    series: Mapping[SeriesKey, Sequence[Point]],
    golden: GoldenIndex,
    *,
    last: int,
    source: str,
    default_tolerance: float | None = None,
    every_run: bool = False,
) -> str:
    """The whole terminal report: a header; one line per series (a table per benchmark), or
    with ``every_run`` one table per benchmark x metric with a row per run; the verdict."""
    newest = chronological(entries)[-1].metadata
    engines = ", ".join(newest.engines) or MISSING
    dirty = " (dirty)" if newest.git_dirty else ""
    shape = (
        f"last {last} per series" if every_run
        else f"one line per series, sparkline of its last {last} runs (--all: every run)"
    )
    blocks = [
        f"evalsuite trend: {source}, {len(entries)} runs, {shape}",
        f"newest run {newest.run_id} at {newest.created_utc}, "
        f"commit {_short(newest.git_commit)}{dirty}, engines {engines}"
        + (" (interrupted: only its finished tests)" if newest.interrupted else ""),
    ]
    peers = _peer_line(entries, series)
    if peers:
        blocks.append(peers)
    by_metric = sorted(series.items(), key=lambda item: _metric_order(item[0]))
    if every_run:
        for (benchmark, metric), group in groupby(
            by_metric, lambda item: _metric_order(item[0])[:2]
        ):
            keys_points = list(group)
            summary = keys_points[-1][1][-1].summary
            blocks.append(
                f"\n{benchmark} · {metric} ({summary.kind}, {better_note(summary.direction)})\n"
                + _metric_table(keys_points, golden, last, default_tolerance)
            )
    else:
        for benchmark, group in groupby(by_metric, lambda item: item[0].benchmark):
            blocks.append(
                f"\n{benchmark}\n" + _series_table(list(group), golden, last, default_tolerance)
            )
    regressions = newest_regressions(series, newest.run_id, golden,
                                     default_tolerance=default_tolerance)
    blocks.append("\n" + _verdict(regressions))
    blocks.append(
        "tests: proportions one-sided exact binomial (95%) against the previous run's share; "
        "means by tolerance (golden entry, else half the previous 95% interval)"
    )
    return "\n".join(blocks)


def _peer_line(
    entries: Sequence[HistoryEntry], series: Mapping[SeriesKey, Sequence[Point]]
) -> str:
    """``model profiles: dots.ocr = dots.ocr v1; olmocr-2 = olmOCR-2 v1 → olmOCR-2 v2 (changed
    within its series)``: the peer profile and version behind each shown engine that ran one,
    every version in run order where one label ran several (--engine-label); "" when none."""
    profiles = engine_profiles(entries)
    parts = []
    for engine in dict.fromkeys(key.engine for key in series):
        ran = profiles.get(engine)
        if ran:
            changed = " (changed within its series)" if len(ran) > 1 else ""
            parts.append(f"{engine} = {' → '.join(ran)}{changed}")
    return "model profiles: " + "; ".join(parts) if parts else ""


def _metric_table(
    keys_points: Sequence[tuple[SeriesKey, Sequence[Point]]],
    golden: GoldenIndex,
    last: int,
    default_tolerance: float | None,
) -> str:
    shown = [
        (key, series_steps(key, points, golden, default_tolerance=default_tolerance)[-last:])
        for key, points in keys_points
    ]
    rows = []
    for key, steps in shown:
        for index, step in enumerate(steps):
            label = (key.engine, key.data, key.parameter) if index == 0 else ("", "", "")
            rows.append([*label, *_step_cells(step)])
    headers = ["engine", "data", "parameter", "run", "commit", "value", "95% CI", "n", "Δ prev",
               "flag"]
    return format_table(headers, rows, align="lllllrrrrl", indent="  ")


def _series_table(
    keys_points: Sequence[tuple[SeriesKey, Sequence[Point]]],
    golden: GoldenIndex,
    last: int,
    default_tolerance: float | None,
) -> str:
    """One row per series: its last value and n, the change against the run before, the
    difference to its golden value, a sparkline of its last ``last`` values, the last flag."""
    rows = []
    for key, points in keys_points:
        steps = series_steps(key, points, golden, default_tolerance=default_tolerance)
        newest = steps[-1]
        value = newest.point.summary.value
        entry = golden.get(key.golden_key)
        versus = None if entry is None or value is None else value - entry.value
        rows.append([
            key.metric,
            key.engine,
            key.data,
            key.parameter,
            significant(value),
            str(newest.point.summary.n),
            _delta(newest),
            significant(versus, signed=True),
            sparkline([point.summary.value for point in points[-last:]]),
            _flag(newest),
        ])
    headers = ["metric", "engine", "data", "parameter", "last", "n", "Δ prev", "vs golden",
               f"last {last}", "flag"]
    return format_table(headers, rows, align="llllrrrrll", indent="  ")


def _step_cells(step: Step) -> list[str]:
    summary = step.point.summary
    if summary.ci_low is None or summary.ci_high is None:
        interval = MISSING
    else:
        low = significant(summary.ci_low)
        interval = f"{low}–{significant(summary.ci_high)}"
    return [
        step.point.run_id,
        _short(step.point.git_commit),
        significant(summary.value),
        interval,
        str(summary.n),
        _delta(step),
        _flag(step),
    ]


def _delta(step: Step) -> str:
    """The change against the run before (as the gate's test measured it); empty for the
    first run of a series."""
    current = step.point.summary.value
    previous = step.previous.summary.value if step.previous else None
    if step.comparison is not None:
        return significant(step.comparison.delta, signed=True)
    if previous is not None and current is not None:
        return significant(current - previous, signed=True)  # a descriptive metric
    return ""


def _flag(step: Step) -> str:
    comparison = step.comparison
    if comparison is None or not (comparison.regressed or comparison.improved):
        return ""
    flag = REGRESSED if comparison.regressed else IMPROVED
    if comparison.p_value is not None and comparison.regressed:
        return f"{flag} p={comparison.p_value:.2g}"
    return flag


def _verdict(regressions: Sequence[tuple[SeriesKey, Step]]) -> str:
    if not regressions:
        return "newest run: no regression against the previous comparable runs"
    lines = [f"newest run: {len(regressions)} regression(s) against the previous comparable run"]
    for key, step in regressions:
        assert step.previous is not None and step.comparison is not None
        lines.append(
            f"  {key.describe()}: "
            f"{significant(step.previous.summary.value)} ({step.previous.run_id}) -> "
            f"{significant(step.point.summary.value)}, Δ "
            f"{significant(step.comparison.delta, signed=True)} ({step.comparison.test})"
        )
    return "\n".join(lines)


def _metric_order(key: SeriesKey) -> tuple[str, str, str, str, str]:
    return key.benchmark, key.metric, key.engine, key.data, key.parameter


def _short(commit: str | None) -> str:
    return commit[:7] if commit else MISSING
