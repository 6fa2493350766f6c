"""Metric time series across runs, and the run-to-run comparisons the trend views flag.

A series is one benchmark x engine x data x parameter x metric over the runs of
``history.jsonl``, in run start order; runs on other data (``fixtures``, ``fox@<revision>``)
make another series, never compared with it. Consecutive points are compared with the golden
gate's statistics (:func:`evalsuite.stats.compare_to_reference`): a proportion with the
one-sided exact binomial test of the newer value's n against the older share, a mean against a
tolerance; a metric without a better direction is not judged. The tolerance is the golden
entry's for that key when one exists, else ``default_tolerance`` when given, else the half-width
of the older point's 95% interval: a new mean outside the old interval is, for equal n and
spread, roughly a one-sided 5% difference of two means; inside it, noise.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import GoldenError
from evalsuite.golden import GoldenEntry, GoldenStore, describe_key
from evalsuite.records.history import HistoryEntry
from evalsuite.records.model import MetricSummary
from evalsuite.stats import Comparison, compare_to_reference

MEASURED = "measured"
"""A golden entry's source when a run here set it (``--update-golden``)."""
PUBLISHED_SOURCES = frozenset({"paper", "leaderboard"})
"""The sources of a published figure (``recordings``, replayed real outputs, are not: they rank
as the replay runs that measure them)."""
PUBLISHED_SUFFIX = " (published)"
"""How a published figure's engine is told from the run it compares with: ``dots.ocr
(published)`` beside ``dots.ocr``."""

GoldenKey = tuple[str, str, str, str, str]
GoldenIndex = Mapping[GoldenKey, GoldenEntry]
"""Golden entries by (benchmark, engine, data, parameter, metric)."""


def series_label(engine: str, data: str, parameter: str) -> str:
    """``tesseract data=fixtures mode=native``: how one engine x data x parameter is named in
    lines of text, as the golden gate's messages name it."""
    return f"{engine} data={data} {parameter}".strip()


def better_note(direction: str | None) -> str:
    """``higher is better``; ``descriptive`` for a metric without a better side."""
    return f"{direction} is better" if direction else "descriptive"


@dataclass(frozen=True, order=True)
class SeriesKey:
    benchmark: str
    engine: str
    data: str
    parameter: str
    metric: str

    @property
    def label(self) -> str:
        """Engine, data and parameter (see :func:`series_label`)."""
        return series_label(self.engine, self.data, self.parameter)

    @property
    def golden_key(self) -> GoldenKey:
        return self.benchmark, self.engine, self.data, self.parameter, self.metric

    def describe(self) -> str:
        """``fox [tesseract data=fixtures mode=native] edit_precision``, as the gate says it."""
        return describe_key(self.benchmark, (self.engine, self.data, self.parameter, self.metric))


@dataclass(frozen=True)
class Point:
    """One run's value of a series."""

    run_id: str
    created_utc: str
    git_commit: str | None
    summary: MetricSummary


@dataclass(frozen=True)
class Step:
    """A point and how it compares with the series' previous point (None for the first one,
    or when either value is missing)."""

    point: Point
    previous: Point | None
    comparison: Comparison | None


def chronological(entries: Iterable[HistoryEntry]) -> list[HistoryEntry]:
    """Runs ordered by start time; runs started in the same second keep their file order."""
    return sorted(entries, key=lambda entry: entry.metadata.created_utc)


def collect_series(entries: Iterable[HistoryEntry]) -> dict[SeriesKey, list[Point]]:
    """Every series of the history, points in run start order, keys sorted."""
    series: dict[SeriesKey, list[Point]] = {}
    for entry in chronological(entries):
        run = entry.metadata
        for record in entry.records:
            for metric, summary in record.metrics.items():
                key = SeriesKey(
                    record.benchmark, record.engine, record.data, record.parameter, metric
                )
                point = Point(run.run_id, run.created_utc, run.git_commit, summary)
                series.setdefault(key, []).append(point)
    return {key: series[key] for key in sorted(series)}


def load_golden_index(
    golden_dir: str | Path, benchmarks: Iterable[str]
) -> dict[GoldenKey, GoldenEntry]:
    """Golden entries of ``benchmarks`` found under ``golden_dir``, each benchmark's own file
    first, then its per-dataset files (``pages-<name>``: their entries name the dataset in their
    data, so keys do not collide); absent files give none and a malformed file (or one of an
    older format) is skipped with a warning."""
    store = GoldenStore(golden_dir)
    index: dict[GoldenKey, GoldenEntry] = {}
    for benchmark in sorted(set(benchmarks)):
        for name in store.names_for(benchmark):
            try:
                golden = store.load(name)
            except GoldenError as error:
                warnings.warn(str(error), stacklevel=2)
                continue
            for (engine, data, parameter, metric), entry in golden.entries.items():
                index.setdefault((benchmark, engine, data, parameter, metric), entry)
    return index


def step_tolerance(
    key: SeriesKey, previous: MetricSummary, golden: GoldenIndex, default: float | None = None
) -> float:
    """The tolerance a step of ``key`` is judged with (see the module docstring); a per-group
    aggregate ``metric[group]`` without its own golden entry takes the metric's."""
    base = key.metric.split("[", 1)[0]
    entry = golden.get(key.golden_key) or golden.get(
        (key.benchmark, key.engine, key.data, key.parameter, base)
    )
    if entry is not None:
        return float(entry.tolerance)
    if default is not None:
        return default
    if previous.kind == "proportion" or previous.ci_low is None or previous.ci_high is None:
        return 0.0
    return max(0.0, (previous.ci_high - previous.ci_low) / 2)


def compare_summaries(
    previous: MetricSummary, current: MetricSummary, tolerance: float
) -> Comparison | None:
    """``current`` against ``previous`` with the gate's test for the metric's kind
    (:func:`evalsuite.stats.compare_to_reference`); None when either has no value, the current
    one no samples, or the metric no better direction."""
    if previous.value is None:
        return None
    return compare_to_reference(previous.value, current, tolerance=tolerance)


def series_steps(
    key: SeriesKey,
    points: Sequence[Point],
    golden: GoldenIndex | None = None,
    *,
    default_tolerance: float | None = None,
) -> list[Step]:
    """Each point compared with the one before it in the same series."""
    golden = golden or {}
    steps = []
    for index, point in enumerate(points):
        previous = points[index - 1] if index else None
        comparison = None
        if previous is not None:
            tolerance = step_tolerance(key, previous.summary, golden, default_tolerance)
            comparison = compare_summaries(previous.summary, point.summary, tolerance)
        steps.append(Step(point, previous, comparison))
    return steps


def profile_of(details: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The peer model profile in an engine's run details (``model_profile``: name, version,
    prompt_sha256, decoding, ...), None for an engine run without one."""
    profile = (details or {}).get("model_profile")
    return profile if isinstance(profile, Mapping) and profile.get("name") else None


def profile_text(profile: Mapping[str, Any]) -> str:
    """``dots.ocr v1``: a profile's name and version."""
    version = profile.get("version")
    return f"{profile['name']} v{version}" if version is not None else str(profile["name"])


def model_text(details: Mapping[str, Any] | None) -> str | None:
    """What model an engine's run details name: its peer profile's name and version
    (``dots.ocr v1``), else the served model id, else the engine's name; None when the details
    say nothing (a history older than them)."""
    profile = profile_of(details)
    if profile is not None:
        return profile_text(profile)
    for field in ("model", "engine"):
        value = (details or {}).get(field)
        if isinstance(value, str) and value:
            return value
    return None


def engine_profiles(entries: Iterable[HistoryEntry]) -> dict[str, list[str]]:
    """Per engine label, the peer profiles its runs ran (``dots.ocr v1``), distinct, in run
    order: one item unless the label was given to several versions (``--engine-label``).
    Engines run without a profile are left out."""
    seen: dict[str, list[str]] = {}
    for entry in chronological(entries):
        for label, details in entry.metadata.engine_details.items():
            profile = profile_of(details)
            if profile is not None and profile_text(profile) not in seen.get(label, []):
                seen.setdefault(label, []).append(profile_text(profile))
    return seen


def newest_regressions(
    series: Mapping[SeriesKey, Sequence[Point]],
    newest_run_id: str,
    golden: GoldenIndex | None = None,
    *,
    default_tolerance: float | None = None,
) -> list[tuple[SeriesKey, Step]]:
    """The series whose point from ``newest_run_id`` regressed against the previous comparable
    run (same benchmark, engine, data, parameter and metric)."""
    regressions = []
    for key, points in series.items():
        steps = series_steps(key, points[-2:], golden, default_tolerance=default_tolerance)
        last = steps[-1] if steps else None
        if (
            last is not None
            and last.point.run_id == newest_run_id
            and last.comparison is not None
            and last.comparison.regressed
        ):
            regressions.append((key, last))
    return regressions
