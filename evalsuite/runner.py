"""Runs an engine over a benchmark's samples and turns the outcomes into a BenchmarkRecord.

Benchmarks supply samples and a scorer (a function of sample and engine result returning scores
computed with :mod:`evalsuite.metrics`); this module handles batching, the per-session result
cache, failures (recorded with their error and scored as the worst value, so they count against
the aggregate), the empty/degenerate output shares, and the aggregates with their intervals.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from evalsuite.engines.base import Engine, InferenceRequest, InferenceResult, iter_batches
from evalsuite.metrics.repetition import is_degenerate
from evalsuite.reports.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.stats import summarize_mean, summarize_proportion, summarize_weighted_mean

Score = float | int | bool | None


@dataclass(frozen=True)
class MetricSpec:
    """How a metric aggregates and gates: a proportion of true outcomes or a mean of values.

    With ``weight`` (the name of another per-sample score), a mean is weighted:
    Σ value·weight / Σ weight.
    """

    name: str
    kind: Literal["proportion", "mean"] = "mean"
    direction: Literal["higher", "lower"] = "higher"
    tolerance: float = 0.0
    gate: bool = True
    weight: str | None = None

    @property
    def worst(self) -> Score:
        """The value a failed sample scores: it counts against the aggregate."""
        if self.kind == "proportion":
            return self.direction == "lower"
        return 0.0 if self.direction == "higher" else 1.0


EMPTY_OUTPUT = MetricSpec("empty_output_rate", "proportion", "lower")
DEGENERATE_OUTPUT = MetricSpec("degenerate_output_rate", "proportion", "lower")
OUTPUT_HEALTH = (EMPTY_OUTPUT, DEGENERATE_OUTPUT)


@dataclass(frozen=True)
class Sample:
    """A benchmark sample: the engine request, what it is scored against, and display details."""

    sample_id: str
    request: InferenceRequest
    reference: Any = None
    details: Mapping[str, Any] = field(default_factory=dict)


Scorer = Callable[[Sample, InferenceResult], Mapping[str, Score]]


class ResultCache:
    """Engine results by content hash (engine, request key, prompt, image bytes), per session."""

    def __init__(self) -> None:
        self._results: dict[str, InferenceResult] = {}

    @staticmethod
    def key(engine_name: str, request: InferenceRequest) -> str:
        digest = hashlib.sha256()
        digest.update(engine_name.encode())
        digest.update(json.dumps(request.replay_key(), sort_keys=True, default=str).encode())
        digest.update(_image_digest(request.image).encode())
        return digest.hexdigest()

    def get(self, key: str) -> InferenceResult | None:
        return self._results.get(key)

    def put(self, key: str, result: InferenceResult) -> None:
        if result.error is None:  # a failure may be transient: never cache it
            self._results[key] = result


def _image_digest(image: Any) -> str:
    if image is None:
        return "no-image"
    if isinstance(image, Image.Image):
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return hashlib.sha256(buffer.getvalue()).hexdigest()
    return hashlib.sha256(Path(image).read_bytes()).hexdigest()


def infer_all(
    engine: Engine,
    engine_name: str,
    requests: Sequence[InferenceRequest],
    *,
    batch_size: int = 1,
    cache: ResultCache | None = None,
) -> list[InferenceResult]:
    """Results for ``requests`` in order, served from ``cache`` where possible."""
    keys = [ResultCache.key(engine_name, r) for r in requests] if cache else [""] * len(requests)
    results: list[InferenceResult | None] = [cache.get(k) if cache else None for k in keys]
    pending = [i for i, result in enumerate(results) if result is None]
    for batch in iter_batches(pending, batch_size):
        outputs = engine.infer_batch([requests[i] for i in batch])
        for index, output in zip(batch, outputs, strict=True):
            results[index] = output
            if cache:
                cache.put(keys[index], output)
    return [r for r in results if r is not None]


def score_samples(
    samples: Sequence[Sample],
    results: Sequence[InferenceResult],
    scorer: Scorer,
    specs: Sequence[MetricSpec],
) -> list[SampleRecord]:
    """One SampleRecord per sample; engine or scorer failures are recorded, scored worst."""
    records = []
    for sample, result in zip(samples, results, strict=True):
        error = result.error
        scores: dict[str, Score] = {}
        if error is None:
            try:
                scores = dict(scorer(sample, result))
            except Exception as exc:  # a scoring bug on one sample must be visible, not fatal
                error = f"scoring failed: {type(exc).__name__}: {exc}"
        if error is not None:
            scores = {spec.name: spec.worst for spec in specs}
        else:
            scores[EMPTY_OUTPUT.name] = not result.text.strip()
            scores[DEGENERATE_OUTPUT.name] = is_degenerate(result.text)
        records.append(
            SampleRecord(
                sample_id=sample.sample_id,
                scores=scores,
                error=error,
                prediction=result.text,
                reference=sample.reference if isinstance(sample.reference, str) else None,
                details={
                    **dict(sample.details),
                    "latency_s": round(result.latency_s, 4),
                    "output_tokens": result.output_tokens,
                    "settings": result.settings,
                },
            )
        )
    return records


def aggregate(
    samples: Iterable[SampleRecord], specs: Sequence[MetricSpec]
) -> dict[str, MetricSummary]:
    """Aggregate each spec over the samples that carry a value for it."""
    samples = list(samples)
    summaries = {}
    for spec in specs:
        present = [s for s in samples if s.scores.get(spec.name) is not None]
        values = [s.scores[spec.name] for s in present]
        if spec.kind == "proportion":
            summaries[spec.name] = summarize_proportion([bool(v) for v in values], spec.direction)
        elif spec.weight is not None:
            weights = [float(s.scores.get(spec.weight) or 0.0) for s in present]
            summaries[spec.name] = summarize_weighted_mean(
                [float(v) for v in values], weights, spec.direction
            )
        else:
            summaries[spec.name] = summarize_mean([float(v) for v in values], spec.direction)
    return summaries


def run_benchmark(
    engine: Engine,
    samples: Sequence[Sample],
    scorer: Scorer,
    specs: Sequence[MetricSpec],
    *,
    benchmark: str,
    engine_name: str,
    parameter: str,
    params: Mapping[str, Any] | None = None,
    batch_size: int = 1,
    cache: ResultCache | None = None,
) -> BenchmarkRecord:
    """Infer, score and aggregate: the whole of one benchmark x engine x parameter."""
    all_specs = _with_output_health(specs)
    results = infer_all(
        engine, engine_name, [s.request for s in samples], batch_size=batch_size, cache=cache
    )
    records = score_samples(samples, results, scorer, all_specs)
    return BenchmarkRecord(
        benchmark=benchmark,
        engine=engine_name,
        parameter=parameter,
        metrics=aggregate(records, all_specs),
        samples=records,
        params=dict(params or {}),
    )


def _with_output_health(specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    names = {spec.name for spec in specs}
    return [*specs, *(spec for spec in OUTPUT_HEALTH if spec.name not in names)]


def aggregate_by(
    samples: Iterable[SampleRecord],
    group_of: Callable[[SampleRecord], str],
    specs: Sequence[MetricSpec],
) -> dict[str, MetricSummary]:
    """Aggregates per group, named ``metric[group]`` (e.g. ``edit_precision[600-700]``)."""
    groups: dict[str, list[SampleRecord]] = {}
    for sample in samples:
        groups.setdefault(group_of(sample), []).append(sample)
    return {
        f"{name}[{group}]": summary
        for group in sorted(groups)
        for name, summary in aggregate(groups[group], specs).items()
    }
