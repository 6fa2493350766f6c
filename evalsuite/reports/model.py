"""The in-memory form of what a benchmark run produced, as written to ``results.json``.

A run holds :class:`BenchmarkRecord` s, one per benchmark x engine x parameter; each holds
aggregate :class:`MetricSummary` s and the per-sample :class:`SampleRecord` s behind them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Direction = Literal["higher", "lower"]
MetricKind = Literal["proportion", "mean"]


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
    """An aggregate over samples with its 95% interval (Wilson for proportions, t for means)."""

    value: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    kind: MetricKind = "mean"
    direction: Direction = "higher"


@dataclass
class BenchmarkRecord:
    """Aggregates and samples of one benchmark x engine x parameter (e.g. ``mode=small``)."""

    benchmark: str
    engine: str
    parameter: str
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    samples: list[SampleRecord] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchmarkRecord:
        return cls(
            benchmark=data["benchmark"],
            engine=data["engine"],
            parameter=data["parameter"],
            metrics={k: MetricSummary(**v) for k, v in data.get("metrics", {}).items()},
            samples=[SampleRecord(**s) for s in data.get("samples", [])],
            params=dict(data.get("params", {})),
        )
