"""Golden thresholds: one JSON file per benchmark under ``golden/``, the gate that checks a run's
aggregates against them, and the updates that set them.

An entry is keyed by engine (label) x data x parameter x metric and holds the golden value, its
n, the direction (higher or lower is better), the tolerance, the metric kind, and provenance
(when, from which commit, and its source: ``measured``, ``paper`` or ``recordings``). ``data``
names the samples the value was measured on (``fixtures``, ``fox@<revision>``…), so a run on
other samples never meets a golden made on different ones.

The gate: a proportion fails only when the drop is significant at the 95% level (one-sided exact
binomial test against the golden proportion, see :func:`evalsuite.stats.compare_proportion`); a
mean fails when it is worse than golden by more than its tolerance. A metric without an entry
fails too; its measured entry is written to ``<benchmark>.obtained.json`` beside the golden file
(pytest-regressions' convention), where ``evalsuite golden accept`` takes it from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock

from evalsuite.errors import GoldenError
from evalsuite.records.atomic import atomic_write_text
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.stats import Comparison, compare_to_reference
from evalsuite.textformat import shorten, significant

GOLDEN_FORMAT_VERSION = 2
OBTAINED_SUFFIX = ".obtained.json"
EntryKey = tuple[str, str, str, str]
GateStatus = Literal[
    "ok", "improved", "regressed", "no golden", "no samples", "not gated", "not measured",
    "golden set",
]
_REQUIRED_FIELDS = ("engine", "data", "parameter", "metric", "value", "n", "direction", "kind")
_TEXT_FIELDS = ("set_at", "commit", "source", "note")  # optional provenance


@dataclass(frozen=True)
class GoldenEntry:
    """One golden value. ``tolerance`` is the allowed worsening of a mean (absolute) or of a
    proportion's reference share before the binomial test."""

    engine: str
    data: str
    parameter: str
    metric: str
    value: float
    n: int
    direction: str
    tolerance: float
    kind: str
    set_at: str
    commit: str
    source: str = "measured"
    note: str = ""

    @property
    def key(self) -> EntryKey:
        return self.engine, self.data, self.parameter, self.metric

    def where(self, benchmark: str) -> str:
        return describe_key(benchmark, self.key)


def describe_key(benchmark: str, key: EntryKey) -> str:
    """``fox [tesseract data=fixtures mode=native] edit_precision``: how messages name a key."""
    engine, data, parameter, metric = key
    return f"{benchmark} [{engine} data={data} {parameter}] {metric}"


@dataclass
class GoldenFile:
    benchmark: str
    entries: dict[EntryKey, GoldenEntry] = field(default_factory=dict)

    def to_json(self) -> str:
        ordered = [asdict(self.entries[key]) for key in sorted(self.entries)]
        document = {
            "benchmark": self.benchmark,
            "format": GOLDEN_FORMAT_VERSION,
            "entries": ordered,
        }
        return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


@dataclass(frozen=True)
class EntryChange:
    """An entry added or changed by an update; ``describe`` names every field that changed."""

    benchmark: str
    old: GoldenEntry | None
    new: GoldenEntry

    def describe(self) -> str:
        where = self.new.where(self.benchmark)
        if self.old is None:
            return (
                f"{where}: new, value {significant(self.new.value)}, n {self.new.n}, "
                f"tolerance {significant(self.new.tolerance)}, kind {self.new.kind}"
            )
        parts = [
            f"{name} {_show(getattr(self.old, name))} -> {_show(getattr(self.new, name))}"
            for name in ("value", "tolerance", "n", "kind", "direction", "source")
            if getattr(self.old, name) != getattr(self.new, name)
        ]
        return f"{where}: " + ", ".join(parts)


class GoldenStore:
    """Reads and updates the golden files of one directory."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path(self, benchmark: str) -> Path:
        return self.directory / f"{benchmark}.json"

    def obtained_path(self, benchmark: str) -> Path:
        return self.directory / f"{benchmark}{OBTAINED_SUFFIX}"

    def names_for(self, benchmark: str) -> list[str]:
        """The golden files of ``benchmark`` in this directory: ``<benchmark>`` and each
        ``<benchmark>-<dataset name>`` (a user's own page set gates against its own file)."""
        found = [path.name.removesuffix(".json")
                 for path in self.directory.glob(f"{benchmark}-*.json")
                 if not path.name.endswith(OBTAINED_SUFFIX)]
        return [benchmark, *sorted(found)]

    def load(self, benchmark: str) -> GoldenFile:
        """The golden file of ``benchmark`` (empty when absent); GoldenError names the file and
        the entry when it is malformed."""
        return _load_file(self.path(benchmark), benchmark)

    def update(self, benchmark: str, entries: Iterable[GoldenEntry]) -> list[EntryChange]:
        """Set ``entries``; keep all others. An entry equal to the stored one in value, n,
        tolerance and kind is left alone (its provenance kept). Read-modify-write under a file
        lock, written atomically. Obtained entries waiting for the same keys are dropped (the
        file goes when it empties), so a later ``accept`` cannot bring back older values.
        Returns what changed."""
        entries = list(entries)
        changes = self._merge(self.path(benchmark), benchmark, entries)
        self._drop_obtained(benchmark, {entry.key for entry in entries})
        return changes

    def write_obtained(self, benchmark: str, entries: Iterable[GoldenEntry]) -> Path:
        """Add ``entries`` to ``<benchmark>.obtained.json`` (created when missing)."""
        self._merge(self.obtained_path(benchmark), benchmark, entries)
        return self.obtained_path(benchmark)

    def accept_obtained(self, benchmark: str) -> list[EntryChange]:
        """Move every entry of ``<benchmark>.obtained.json`` into the golden file and delete
        the obtained file; GoldenError when there is none."""
        obtained = self.obtained_path(benchmark)
        if not obtained.is_file():
            raise GoldenError(f"no obtained golden entries at {obtained}")
        return self.update(benchmark, _load_file(obtained, benchmark).entries.values())

    def _drop_obtained(self, benchmark: str, keys: set[EntryKey]) -> None:
        path = self.obtained_path(benchmark)
        if not path.is_file():
            return
        with FileLock(str(path) + ".lock"):
            obtained = _load_file(path, benchmark)
            kept = {key: entry for key, entry in obtained.entries.items() if key not in keys}
            if not kept:
                path.unlink()
            elif len(kept) < len(obtained.entries):
                atomic_write_text(path, replace(obtained, entries=kept).to_json())

    def obtained_benchmarks(self) -> list[str]:
        """Benchmarks with an ``.obtained.json`` file waiting to be accepted."""
        return sorted(
            path.name.removesuffix(OBTAINED_SUFFIX)
            for path in self.directory.glob(f"*{OBTAINED_SUFFIX}")
        )

    def snapshot(self) -> dict[str, GoldenFile]:
        """Every golden file of the directory, loaded (to diff before/after an update)."""
        if not self.directory.is_dir():
            return {}
        return {
            path.stem: self.load(path.stem)
            for path in sorted(self.directory.glob("*.json"))
            if not path.name.endswith(OBTAINED_SUFFIX)
        }

    def _merge(
        self, path: Path, benchmark: str, entries: Iterable[GoldenEntry]
    ) -> list[EntryChange]:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            golden = _load_file(path, benchmark)
            changes = []
            for entry in entries:
                old = golden.entries.get(entry.key)
                if old is not None and _same_value(old, entry):
                    continue
                golden.entries[entry.key] = entry
                changes.append(EntryChange(benchmark, old, entry))
            if changes:
                atomic_write_text(path, golden.to_json())
        return changes


def diff_snapshots(
    before: Mapping[str, GoldenFile],
    after: Mapping[str, GoldenFile],
    records: Collection[tuple[str, str, str]] | None = None,
) -> list[str]:
    """One line per entry added or changed between two snapshots, naming every changed field;
    with ``records`` ((engine, data, parameter) of a run's records; a golden file's name need
    not be the benchmark's), only that run's entries, not those another run wrote meanwhile."""
    lines = []
    for benchmark in sorted(after):
        old_entries = before.get(benchmark, GoldenFile(benchmark)).entries
        for key, new in sorted(after[benchmark].entries.items()):
            if records is not None and tuple(key[:3]) not in records:
                continue
            old = old_entries.get(key)
            if old is None or not _same_value(old, new):
                lines.append(EntryChange(benchmark, old, new).describe())
    return lines


@dataclass(frozen=True)
class GateResult:
    """The verdict on one metric of a record; ``message`` is what a failing test prints."""

    metric: str
    status: GateStatus
    current: MetricSummary
    entry: GoldenEntry | None = None
    comparison: Comparison | None = None
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("regressed", "no golden", "no samples")

    def to_dict(self) -> dict[str, Any]:
        """What results.json keeps of the verdict (the record's ``gates``)."""
        comparison = self.comparison
        return {
            "status": self.status,
            "golden": None if self.entry is None else self.entry.value,
            "golden_n": None if self.entry is None else self.entry.n,
            "tolerance": None if self.entry is None else self.entry.tolerance,
            "delta": None if comparison is None else comparison.delta,
            "test": None if comparison is None else comparison.test,
            "p_value": None if comparison is None else comparison.p_value,
        }


def gate_metric(
    benchmark: str,
    record: BenchmarkRecord,
    metric: str,
    entry: GoldenEntry | None,
    *,
    samples: tuple[str, Sequence[SampleRecord]] | None = None,
) -> GateResult:
    """Gate ``record.metrics[metric]`` against ``entry``; a failing verdict's message names the
    golden, current value, delta, n, test and p-value, then the worst samples: of ``samples``
    (a per-sample score name and the samples aggregated, for a per-group metric), else of the
    record on ``metric``. A metric no sample carries (n = 0) is "not measured" when it has no
    golden entry (it neither fails nor counts as gated), "no samples" (a failure) when it has."""
    summary = record.metrics[metric]
    where = describe_key(benchmark, (record.engine, record.data, record.parameter, metric))
    measured = summary.value is not None and summary.n > 0
    if entry is None and not measured:
        # e.g. table TEDS on pages without a table: nothing to gate now or to set as golden
        return GateResult(metric, "not measured", summary,
                          message=f"{where}: not measured (no sample carries it)")
    if entry is None:
        return GateResult(metric, "no golden", summary, message=f"{where}: no golden entry")
    if not measured:
        return GateResult(
            metric, "no samples", summary, entry,
            message=f"{where}: no sample was scored (n=0), nothing to compare with golden "
            f"{significant(entry.value)}",
        )
    comparison = compare_to_reference(
        entry.value, replace(summary, direction=entry.direction), tolerance=entry.tolerance,
        kind=entry.kind,
    )
    if comparison is None:
        return GateResult(metric, "not gated", summary, entry)
    if not comparison.regressed:
        status: GateStatus = "improved" if comparison.improved else "ok"
        return GateResult(metric, status, summary, entry, comparison)
    p_value = "" if comparison.p_value is None else f", p={significant(comparison.p_value, 3)}"
    lines = [
        f"{where} regressed ({entry.direction} is better)",
        f"  golden  {significant(entry.value)} (n={entry.n}, set {entry.set_at} at "
        f"{entry.commit[:10]}, source {entry.source})",
        f"  current {significant(summary.value)} (n={summary.n})",
        f"  delta   {significant(comparison.delta, signed=True)}",
        f"  test    {comparison.test}{p_value}",
    ]
    score, members = samples or (metric, record.samples)
    worst = worst_samples(members, score, entry.direction)
    if worst:
        lines.append("  worst samples:")
        lines.extend(f"    {line}" for line in worst)
    return GateResult(metric, "regressed", summary, entry, comparison, "\n".join(lines))


def gate_record(
    benchmark: str,
    record: BenchmarkRecord,
    gated: Sequence[str],
    golden: GoldenFile,
    *,
    group_of: Callable[[SampleRecord], str] | None = None,
    required_groups: Sequence[str] = (),
) -> list[GateResult]:
    """Gate ``record``'s ``gated`` metrics (each must have a golden entry: one without fails as
    "no golden"), and with ``group_of`` their per-group aggregates (``metric[group]``, e.g.
    ``edit_precision[600-700]``, see :func:`evalsuite.runner.aggregate_by`) that have an entry;
    a group without one is left ungated, except for the metrics in ``required_groups``, whose
    every group is gated like a metric. A group's verdict lists its own worst samples."""

    def entry(metric: str) -> GoldenEntry | None:
        return golden.entries.get((record.engine, record.data, record.parameter, metric))

    results = [gate_metric(benchmark, record, metric, entry(metric)) for metric in gated]
    if group_of is None:
        return results
    groups: dict[str, list[SampleRecord]] = {}
    for sample in record.samples:
        groups.setdefault(group_of(sample), []).append(sample)
    for metric in gated:
        for group, members in sorted(groups.items()):
            name = f"{metric}[{group}]"
            if name in record.metrics and (metric in required_groups or entry(name) is not None):
                results.append(
                    gate_metric(benchmark, record, name, entry(name), samples=(metric, members))
                )
    return results


def tolerance_rule(
    tolerances: Mapping[str, float], *, exact: bool, override: float | None = None
) -> Callable[[str, GoldenEntry | None], float]:
    """The tolerance of a new entry for ``metric``: ``override`` when given, else the old
    entry's, else 0 for an engine whose outputs are exactly reproducible (``exact``), else the
    metric's own (``tolerances``; a per-group ``metric[group]`` takes its metric's), else 0."""

    def tolerance(metric: str, old: GoldenEntry | None) -> float:
        if override is not None:
            return override
        if old is not None:
            return old.tolerance
        return 0.0 if exact else tolerances.get(metric.split("[", 1)[0], 0.0)

    return tolerance


def subset_data(data: str, chosen: int, available: int) -> str:
    """The data part of golden keys for a run of the first ``chosen`` of ``available``
    samples: ``data`` itself for all of them, else ``data[first N of M]``, so that a subset is
    never gated against (nor drawn in one series with) the whole set."""
    return data if chosen >= available else f"{data}[first {chosen} of {available}]"


def worst_samples(
    samples: Sequence[SampleRecord], metric: str, direction: str, limit: int = 5
) -> list[str]:
    """The ``limit`` samples that score worst on ``metric`` (failed samples first), each with
    its score, what was expected and what the engine said (80 characters each). A yes/no score
    lists only the samples that got it wrong (a right answer is never among the worst)."""
    scored: list[tuple[float, SampleRecord]] = []
    for sample in samples:
        value = sample.scores.get(metric)
        if sample.error is not None:
            scored.append((float("-inf"), sample))
        elif isinstance(value, bool):
            if value != (direction == "higher"):
                scored.append((0.0, sample))
        elif isinstance(value, (int, float)):
            scored.append((float(value) if direction == "higher" else -float(value), sample))
    scored.sort(key=lambda pair: pair[0])
    lines = []
    for _, sample in scored[:limit]:
        if sample.error:
            lines.append(f"{sample.sample_id}: failed: {shorten(sample.error, 200)}")
            continue
        extra = "".join(
            f", {name}={_show(value)}" for name, value in sample.details.get("explain", {}).items()
        )
        lines.append(
            f"{sample.sample_id}: {metric}={significant(sample.scores[metric])}{extra}; "
            f"expected {shorten(sample.reference)!s}; got {shorten(sample.prediction)!s}"
        )
    return lines


def entries_from_record(
    record: BenchmarkRecord,
    metrics: Iterable[str],
    *,
    tolerance: Callable[[str, GoldenEntry | None], float],
    existing: GoldenFile,
    commit: str,
    source: str = "measured",
    now: datetime | None = None,
) -> list[GoldenEntry]:
    """Golden entries of ``metrics`` as ``record`` measured them. ``tolerance(metric, old)``
    gives each entry's tolerance (the caller keeps an old entry's unless told otherwise);
    metrics without a value or a better direction give none."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    entries = []
    for metric in metrics:
        summary = record.metrics[metric]
        if summary.value is None or summary.direction is None:
            continue
        key = (record.engine, record.data, record.parameter, metric)
        entries.append(
            GoldenEntry(
                engine=record.engine,
                data=record.data,
                parameter=record.parameter,
                metric=metric,
                value=float(summary.value),
                n=summary.n,
                direction=summary.direction,
                tolerance=tolerance(metric, existing.entries.get(key)),
                kind=summary.kind,
                set_at=stamp,
                commit=commit,
                source=source,
            )
        )
    return entries


def _load_file(path: Path, benchmark: str) -> GoldenFile:
    if not path.exists():
        return GoldenFile(benchmark)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GoldenError(f"golden file {path} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("entries"), list):
        raise GoldenError(f"golden file {path} must be an object with an 'entries' list")
    if document.get("format") != GOLDEN_FORMAT_VERSION:
        raise GoldenError(
            f"golden file {path} has format {document.get('format')!r}; this evalsuite reads "
            f"format {GOLDEN_FORMAT_VERSION}"
        )
    known = {f.name for f in fields(GoldenEntry)}
    golden = GoldenFile(benchmark)
    for index, raw in enumerate(document["entries"]):
        entry = _entry(raw, known, f"golden file {path}, entry {index}")
        if entry.key in golden.entries:
            raise GoldenError(f"golden file {path}, entry {index}: duplicate key {entry.key}")
        golden.entries[entry.key] = entry
    return golden


def _entry(raw: Any, known: set[str], where: str) -> GoldenEntry:
    if not isinstance(raw, dict):
        raise GoldenError(f"{where}: expected an object, got {type(raw).__name__}")
    missing = [name for name in _REQUIRED_FIELDS if name not in raw]
    unknown = sorted(set(raw) - known)
    if missing or unknown:
        raise GoldenError(f"{where}: missing fields {missing}, unknown fields {unknown}")
    for name in ("engine", "data", "parameter", "metric", "direction", "kind", *_TEXT_FIELDS):
        if not isinstance(raw.get(name, ""), str):
            raise GoldenError(f"{where}: field {name!r} must be a string, got {raw[name]!r}")
    for name in ("value", "tolerance"):
        value = raw.get(name, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise GoldenError(f"{where}: field {name!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise GoldenError(f"{where}: field {name!r} must be a finite number, got {value!r}")
    if isinstance(raw["n"], bool) or not isinstance(raw["n"], int) or raw["n"] < 0:
        raise GoldenError(f"{where}: field 'n' must be a count, got {raw['n']!r}")
    if raw["direction"] not in ("higher", "lower") or raw["kind"] not in ("mean", "proportion"):
        raise GoldenError(f"{where}: direction must be higher|lower and kind mean|proportion")
    return GoldenEntry(**{"tolerance": 0.0, "set_at": "", "commit": "", **raw})


def _same_value(old: GoldenEntry, new: GoldenEntry) -> bool:
    return (old.value, old.n, old.tolerance, old.kind, old.direction) == (
        new.value, new.n, new.tolerance, new.kind, new.direction
    )


def _show(value: Any) -> str:
    return significant(value) if isinstance(value, (int, float)) or value is None else str(value)
