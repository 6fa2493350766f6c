"""The in-memory form of what a benchmark run produced, as written to ``results.json``.

A run holds :class:`BenchmarkRecord` s, one per benchmark x engine x data x parameter; each holds
aggregate :class:`MetricSummary` s and the per-sample :class:`SampleRecord` s behind them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Direction = Literal["higher", "lower"]
MetricKind = Literal["proportion", "mean"]
SCHEMA_VERSION = 2
"""Version of results.json and of history lines; readers reject versions they do not know."""


@dataclass
class SampleRecord:
    """One sample's outcome. ``error`` is set when the engine or scoring failed for it."""

    sample_id: str
    scores: dict[str, float | int | bool | None] = field(default_factory=dict)
    error: str | None = None
    prediction: str | None = None
    reference: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class MetricSummary:
    """An aggregate over samples with its 95% interval (Wilson for proportions, t for means).

    ``direction`` is None for a descriptive metric that has no better side (a token count).
    """

    value: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    kind: MetricKind = "mean"
    direction: Direction | None = "higher"


@dataclass
class BenchmarkRecord:
    """Aggregates and samples of one benchmark x engine x data x parameter.

    ``engine`` is the engine's label (``--engine-label``; its name by default), ``data`` the
    identity of the samples (``fixtures``, or a dataset with its revision, e.g.
    ``fox@3f2a…``), ``parameter`` the test's other settings (``mode=small,condition=text``).
    """

    benchmark: str
    engine: str
    parameter: str
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    samples: list[SampleRecord] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    data: str = "fixtures"

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.benchmark, self.engine, self.data, self.parameter

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchmarkRecord:
        return cls(
            benchmark=data["benchmark"],
            engine=data["engine"],
            parameter=data["parameter"],
            data=data.get("data", "fixtures"),
            metrics={k: MetricSummary(**v) for k, v in data.get("metrics", {}).items()},
            samples=[SampleRecord(**s) for s in data.get("samples", [])],
            params=dict(data.get("params", {})),
        )


def merge_records(records: Iterable[BenchmarkRecord]) -> list[BenchmarkRecord]:
    """Join records of the same benchmark x engine x data x parameter, sorted by that key.

    Records sharing a key (one test's samples spread over workers) are joined: samples
    concatenated and sorted by id, metrics and params united. A metric reported twice with
    different values raises ValueError, since its aggregate cannot be rebuilt here.
    """
    merged: dict[tuple[str, str, str, str], BenchmarkRecord] = {}
    for record in require_records(records):
        if record.key not in merged:
            merged[record.key] = BenchmarkRecord(
                record.benchmark, record.engine, record.parameter, dict(record.metrics),
                list(record.samples), dict(record.params), record.data,
            )
            continue
        into = merged[record.key]
        for name, summary in record.metrics.items():
            if name in into.metrics and into.metrics[name] != summary:
                raise ValueError(
                    f"records: metric {name!r} of {'/'.join(record.key)} was reported twice "
                    "with different values; aggregate it once, over all samples"
                )
            into.metrics[name] = summary
        into.samples.extend(record.samples)
        into.params.update(record.params)
    for record in merged.values():
        record.samples.sort(key=lambda sample: sample.sample_id)
    return [merged[key] for key in sorted(merged)]


def require_records(records: Iterable[BenchmarkRecord]) -> list[BenchmarkRecord]:
    """``records`` as a list, after checking every item (and its samples) has the right type."""
    if isinstance(records, BenchmarkRecord):
        raise TypeError("records must be an iterable of BenchmarkRecord, got one record")
    records = list(records)
    for index, record in enumerate(records):
        if not isinstance(record, BenchmarkRecord):
            raise TypeError(
                f"records[{index}] must be BenchmarkRecord, got {type(record).__name__}"
            )
        for sample_index, sample in enumerate(record.samples):
            if not isinstance(sample, SampleRecord):
                raise TypeError(
                    f"records[{index}].samples[{sample_index}] must be SampleRecord, "
                    f"got {type(sample).__name__}"
                )
    return records
