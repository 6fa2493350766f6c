"""Golden thresholds: one JSON file per benchmark under ``golden/``, and the gate that checks a
run's aggregates against them.

An entry is keyed by engine x parameter x metric and holds the golden value, its n, the
direction (higher or lower is better), the tolerance, the metric kind, and provenance (when, from
which commit, and its source: ``measured``, ``paper`` or ``recordings``).

The gate: a proportion fails only when the drop is significant at the 95% level (one-sided exact
binomial test against the golden proportion, see :func:`evalsuite.stats.compare_proportion`); a
mean fails when it is worse than golden by more than its tolerance.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from evalsuite.errors import GoldenError
from evalsuite.reports.atomic import atomic_write_text
from evalsuite.reports.model import MetricSummary, SampleRecord
from evalsuite.stats import Comparison, compare_mean, compare_proportion

GOLDEN_FORMAT_VERSION = 1


@dataclass(frozen=True)
class GoldenEntry:
    engine: str
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
    def key(self) -> tuple[str, str, str]:
        return self.engine, self.parameter, self.metric


@dataclass
class GateOutcome:
    """The verdict on one metric; ``message`` is what a failing test prints."""

    passed: bool
    message: str
    comparison: Comparison | None = None
    entry: GoldenEntry | None = None


@dataclass
class GoldenFile:
    benchmark: str
    entries: dict[tuple[str, str, str], GoldenEntry] = field(default_factory=dict)

    def to_json(self) -> str:
        ordered = [asdict(self.entries[key]) for key in sorted(self.entries)]
        document = {
            "benchmark": self.benchmark,
            "format": GOLDEN_FORMAT_VERSION,
            "entries": ordered,
        }
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


class GoldenStore:
    """Reads and updates the golden files of one directory."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path(self, benchmark: str) -> Path:
        return self.directory / f"{benchmark}.json"

    def load(self, benchmark: str) -> GoldenFile:
        path = self.path(benchmark)
        if not path.exists():
            return GoldenFile(benchmark)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            entries = [GoldenEntry(**raw) for raw in document["entries"]]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise GoldenError(f"golden file {path} is malformed: {exc}") from exc
        return GoldenFile(benchmark, {entry.key: entry for entry in entries})

    def update(
        self,
        benchmark: str,
        results: Iterable[tuple[str, str, str, MetricSummary]],
        *,
        tolerance: dict[str, float],
        commit: str,
        source: str = "measured",
    ) -> int:
        """Set the entries that ran (engine, parameter, metric, summary); keep all others.

        Read-modify-write under a file lock, written atomically. Returns how many changed.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(benchmark)
        with FileLock(str(path) + ".lock"):
            golden = self.load(benchmark)
            changed = 0
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            for engine, parameter, metric, summary in results:
                if summary.value is None:
                    continue
                old = golden.entries.get((engine, parameter, metric))
                new = GoldenEntry(
                    engine=engine,
                    parameter=parameter,
                    metric=metric,
                    value=float(summary.value),
                    n=summary.n,
                    direction=summary.direction,
                    tolerance=tolerance.get(metric, 0.0),
                    kind=summary.kind,
                    set_at=now,
                    commit=commit,
                    source=source,
                )
                if old is not None and (old.value, old.n) == (new.value, new.n):
                    continue  # unchanged: keep its provenance
                golden.entries[new.key] = new
                changed += 1
            if changed:
                atomic_write_text(path, golden.to_json())
        return changed


def check_metric(
    entry: GoldenEntry | None,
    summary: MetricSummary,
    *,
    benchmark: str,
    engine: str,
    parameter: str,
    metric: str,
    samples: Sequence[SampleRecord] = (),
    update_command: str = "",
) -> GateOutcome:
    """Gate one aggregate against its golden entry; the message names everything a reader needs."""
    where = f"{benchmark} [{engine} {parameter}] {metric}"
    if entry is None:
        return GateOutcome(
            False,
            f"{where}: no golden entry. Create it with:\n    {update_command}",
        )
    if summary.value is None or summary.n == 0:
        return GateOutcome(False, f"{where}: no samples were scored (n=0)", entry=entry)
    if entry.kind == "proportion":
        comparison = compare_proportion(
            entry.value, summary.value, summary.n, entry.direction, tolerance=entry.tolerance
        )
    else:
        comparison = compare_mean(
            entry.value, summary.value, entry.direction, tolerance=entry.tolerance
        )
    if not comparison.regressed:
        return GateOutcome(True, f"{where}: ok", comparison, entry)
    lines = [
        f"{where} regressed ({entry.direction} is better)",
        f"  golden  {entry.value:.4f} (n={entry.n}, set {entry.set_at} at {entry.commit[:10]},"
        f" source {entry.source})",
        f"  current {summary.value:.4f} (n={summary.n})",
        f"  delta   {comparison.delta:+.4f}",
        f"  test    {comparison.test}"
        + (f", p={comparison.p_value:.3g}" if comparison.p_value is not None else ""),
    ]
    worst = worst_samples(samples, metric, entry.direction)
    if worst:
        lines.append("  worst samples:")
        lines.extend(f"    {line}" for line in worst)
    return GateOutcome(False, "\n".join(lines), comparison, entry)


def worst_samples(
    samples: Sequence[SampleRecord], metric: str, direction: str, limit: int = 5
) -> list[str]:
    """The ``limit`` samples that score worst on ``metric`` (failed samples first)."""
    scored: list[tuple[float, SampleRecord]] = []
    for sample in samples:
        value = sample.scores.get(metric)
        if sample.error is not None:
            scored.append((float("-inf"), sample))
        elif isinstance(value, (int, float)):
            scored.append((float(value) if direction == "higher" else -float(value), sample))
    scored.sort(key=lambda pair: pair[0])
    lines = []
    for _, sample in scored[:limit]:
        detail = f"error: {sample.error}" if sample.error else f"{metric}={sample.scores[metric]}"
        lines.append(f"{sample.sample_id}: {detail}")
    return lines


def summarize_entries(golden: GoldenFile) -> list[dict[str, Any]]:
    """The entries as plain dicts (for reports and the dashboard)."""
    return [asdict(golden.entries[key]) for key in sorted(golden.entries)]


def snapshot(store: GoldenStore) -> dict[str, GoldenFile]:
    """Every golden file of ``store``'s directory, loaded (to diff before/after an update)."""
    if not store.directory.is_dir():
        return {}
    return {path.stem: store.load(path.stem) for path in sorted(store.directory.glob("*.json"))}


def diff_snapshots(before: dict[str, GoldenFile], after: dict[str, GoldenFile]) -> list[str]:
    """One line per golden entry that was added or whose value or n changed."""
    lines = []
    for benchmark in sorted(after):
        old_entries = before.get(benchmark, GoldenFile(benchmark)).entries
        for key, new in sorted(after[benchmark].entries.items()):
            old = old_entries.get(key)
            if old is not None and (old.value, old.n) == (new.value, new.n):
                continue
            was = "(new)" if old is None else f"{old.value:g} (n={old.n})"
            lines.append(f"{benchmark} {' '.join(key)}: {was} -> {new.value:g} (n={new.n})")
    return lines
