"""Runs an engine over a benchmark's samples and turns the outcomes into a BenchmarkRecord.

Benchmarks supply samples and a scorer (a function of sample and engine result returning scores
computed with :mod:`evalsuite.metrics`); this module handles batching (all samples at once, in
batches of the engine's preferred size), the per-session result cache (identical requests are
computed once), failures (recorded with their error and scored as the worst value, so they
count against the aggregate), the empty/degenerate output shares, and the aggregates with their
intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalsuite.engines.base import Engine, InferenceRequest, InferenceResult, iter_batches
from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.repetition import is_degenerate
from evalsuite.records.model import BenchmarkRecord, Direction, MetricSummary, SampleRecord
from evalsuite.request_cache import ResultCache, request_key
from evalsuite.stats import summarize_mean, summarize_proportion, summarize_weighted_mean
from evalsuite.textfiles import MAX_PREDICTION_CHARS

Score = float | int | bool | None
UNIT = (0.0, 1.0)
"""The bounds of a score between 0 and 1 (a precision, an F1, a normalized distance)."""


@dataclass(frozen=True)
class MetricSpec:
    """How a metric aggregates and gates: a proportion of true outcomes or a mean of values.

    With ``weight`` (the name of another per-sample score), a mean is weighted:
    Σ value·weight / Σ weight. ``direction`` None marks a descriptive metric (a token count):
    reported, never gated. ``bounds`` is the range a value can take (None: open on that side);
    a proportion is always in [0, 1]. Charts clip intervals to it.
    """

    name: str
    kind: Literal["proportion", "mean"] = "mean"
    direction: Direction | None = "higher"
    tolerance: float = 0.0
    gate: bool = True
    weight: str | None = None
    bounds: tuple[float | None, float | None] = (0.0, None)

    def __post_init__(self) -> None:
        if self.direction is None and self.gate:
            raise ValueError(f"metric {self.name!r} has no better direction and cannot be gated")

    @property
    def value_range(self) -> tuple[float | None, float | None]:
        """``bounds``, or [0, 1] for a proportion."""
        return (0.0, 1.0) if self.kind == "proportion" else self.bounds

    @property
    def worst(self) -> Score:
        """The value a failed sample scores: it counts against the aggregate (None for a
        descriptive metric, which a failed sample simply lacks)."""
        if self.direction is None:
            return None
        if self.kind == "proportion":
            return self.direction == "lower"
        return 0.0 if self.direction == "higher" else 1.0


EMPTY_OUTPUT = MetricSpec("empty_output_rate", "proportion", "lower")
DEGENERATE_OUTPUT = MetricSpec("degenerate_output_rate", "proportion", "lower")
OUTPUT_HEALTH = (EMPTY_OUTPUT, DEGENERATE_OUTPUT)


def output_health(text: str) -> dict[str, bool]:
    """The output-health flags of one output: empty (nothing but whitespace) and degenerate
    (a repetition loop, :func:`~evalsuite.metrics.repetition.is_degenerate`)."""
    return {EMPTY_OUTPUT.name: not text.strip(), DEGENERATE_OUTPUT.name: is_degenerate(text)}


def with_output_health(specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    """``specs`` plus the empty- and degenerate-output shares, which every benchmark reports
    and gates (unless it declares them itself)."""
    names = {spec.name for spec in specs}
    return [*specs, *(spec for spec in OUTPUT_HEALTH if spec.name not in names)]


@dataclass(frozen=True)
class Sample:
    """A benchmark sample: the engine request, what it is scored against, and display details.

    ``error``: an input problem found while the sample was built (e.g. an unreadable page
    image); the sample is then recorded as failed with it, scored worst, without an engine call.
    A metric's weight (``MetricSpec.weight``) found in ``details`` is the sample's weight unless
    the scorer returns one. ``measures``: the metrics the sample is scored on when not all are
    (an OmniDocBench page without a table has no table score); a failed sample scores worst on
    these only.
    """

    sample_id: str
    request: InferenceRequest
    reference: Any = None
    details: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    measures: frozenset[str] | None = None
    extra_requests: tuple[InferenceRequest, ...] = ()
    combine: Callable[[Sequence[InferenceResult]], InferenceResult] | None = None
    """How the results of ``request`` and ``extra_requests`` become the one result scored
    (None: :func:`joined_result`, the pages of a document)."""


@dataclass(frozen=True)
class Scored:
    """A scorer's answer when it also explains a score: ``explain`` (e.g. the gold option and
    the parsed choice of a QA sample) is shown next to the sample in gate messages."""

    scores: Mapping[str, Score]
    explain: Mapping[str, Any] = field(default_factory=dict)


Scorer = Callable[[Sample, InferenceResult], "Mapping[str, Score] | Scored"]


@dataclass(frozen=True)
class Inferred:
    """Results in request order, and how many requests went to the engine (the rest came from
    the cache or repeated a request of the same call), in all and per mode. A resumed run
    counts the answers its resumed run's engine computed (once each) as its own model calls."""

    results: list[InferenceResult]
    model_calls: int
    calls_by_mode: Mapping[str, int] = field(default_factory=dict)


def infer_all(
    engine: Engine,
    engine_label: str,
    requests: Sequence[InferenceRequest],
    *,
    batch_size: int | None = None,
    cache: ResultCache | None = None,
) -> Inferred:
    """Results for ``requests`` in order. Each distinct request goes to the engine once, in
    batches of ``batch_size`` (default: the engine's ``preferred_batch_size``, else 1). An
    engine with ``record_reused`` (a recording) is told of the requests answered without it."""
    cache = cache if cache is not None else ResultCache()
    size = batch_size or getattr(engine, "preferred_batch_size", 1) or 1
    keys = [request_key(engine_label, engine, request) for request in requests]
    results: dict[str, InferenceResult] = {}
    pending: dict[str, InferenceRequest] = {}
    awaited: dict[str, InferenceRequest] = {}  # claimed by another process of the run
    resumed: list[InferenceRequest] = []  # answered by the engine of the run resumed
    for key, request in zip(keys, requests, strict=True):
        cached = cache.get(key)
        if cached is not None:
            results[key] = cached
            if cache.resumed_answer(key):
                resumed.append(request)
        elif key in pending or key in awaited:
            continue
        elif cache.claim(key):
            pending[key] = request
        else:
            awaited[key] = request
    computed = list(pending)
    try:
        for batch in iter_batches(computed, size):
            outputs = infer_batch_isolating_failures(engine, [pending[key] for key in batch])
            for key, output in zip(batch, outputs, strict=True):
                results[key] = output
                cache.put(key, output)
        for key, request in awaited.items():
            answer = cache.wait(key)
            if answer is None:  # its computation failed or died: ours now
                pending[key] = request
                computed.append(key)
                answer = infer_batch_isolating_failures(engine, [request])[0]
                cache.put(key, answer)
            results[key] = answer
    except BaseException:
        for key in computed:
            if key not in results:
                cache.release(key)
        raise
    record_reused = getattr(engine, "record_reused", None)
    reused = [
        (request, results[key])
        for key, request in zip(keys, requests, strict=True)
        if pending.get(key) is not request
    ]
    if record_reused is not None and reused:
        record_reused(reused)
    by_mode: dict[str, int] = {}
    for request in [*pending.values(), *resumed]:
        by_mode[request.mode] = by_mode.get(request.mode, 0) + 1
    return Inferred([results[key] for key in keys], len(pending) + len(resumed), by_mode)


def infer_batch_isolating_failures(
    engine: Engine, requests: Sequence[InferenceRequest]
) -> list[InferenceResult]:
    """``engine.infer_batch(requests)``; when the batch raises, each request again on its own,
    and a request that raises by itself is a failed sample with the exception as its error.
    evalsuite's own errors (an engine that cannot run at all) propagate."""
    try:
        return engine.infer_batch(requests)
    except EvalsuiteError:
        raise
    except Exception as exc:  # one sample's failure must not lose the others
        if len(requests) == 1:
            return [InferenceResult(text="", error=f"{type(exc).__name__}: {exc}")]
    return [infer_batch_isolating_failures(engine, [request])[0] for request in requests]


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
        explain: dict[str, Any] = {}
        if error is None and len(result.text) > MAX_PREDICTION_CHARS:
            error = (f"the answer has {len(result.text):_} characters, over the limit of "
                     f"{MAX_PREDICTION_CHARS:_} that every scorer reads")
        if error is None:
            try:
                scored = scorer(sample, result)
            except Exception as exc:  # a scoring bug on one sample must be visible, not fatal
                error = f"scoring failed: {type(exc).__name__}: {exc}"
            else:
                if isinstance(scored, Scored):
                    scores, explain = dict(scored.scores), dict(scored.explain)
                else:
                    scores = dict(scored)
        if error is not None:
            scores = {
                spec.name: spec.worst
                for spec in specs
                if sample.measures is None or spec.name in sample.measures
                or spec in OUTPUT_HEALTH
            }
        else:
            scores.update(output_health(result.text))
        # a weight the sample was built with counts unless the scorer gives one, so a failed
        # sample still weighs in a weighted mean
        for spec in specs:
            if spec.weight is not None and spec.weight in sample.details:
                scores.setdefault(spec.weight, sample.details[spec.weight])
        details = {
            **dict(sample.details),
            "latency_s": round(result.latency_s, 4),
            "output_tokens": result.output_tokens,
            "settings": result.settings,
        }
        if explain:
            details["explain"] = explain
        records.append(
            SampleRecord(
                sample_id=sample.sample_id,
                scores=scores,
                error=error,
                prediction=result.text,
                reference=sample.reference if isinstance(sample.reference, str) else None,
                details=details,
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


def joined_result(parts: Sequence[InferenceResult]) -> InferenceResult:
    """One result of a document read page by page: the pages' texts joined by a blank line in
    page order, latencies and output tokens summed (None if a page has none), the first
    failure naming its page; the first page's settings."""
    if len(parts) == 1:
        return parts[0]
    failed = next(((n, p) for n, p in enumerate(parts, 1) if p.error is not None), None)
    tokens = [p.output_tokens for p in parts]
    return InferenceResult(
        text="\n\n".join(p.text for p in parts),
        output_tokens=None if None in tokens else sum(t for t in tokens if t is not None),
        latency_s=sum(p.latency_s for p in parts),
        error=None if failed is None else f"page {failed[0]}: {failed[1].error}",
        settings=dict(parts[0].settings),
    )


def run_benchmark(
    engine: Engine,
    samples: Sequence[Sample],
    scorer: Scorer,
    specs: Sequence[MetricSpec],
    *,
    benchmark: str,
    engine_label: str,
    data: str,
    parameter: str,
    params: Mapping[str, Any] | None = None,
    batch_size: int | None = None,
    cache: ResultCache | None = None,
) -> BenchmarkRecord:
    """Infer, score and aggregate: the whole of one benchmark x engine x data x parameter.

    ``params["model_calls"]`` of the record counts the requests that reached the engine
    (in a resumed run: also those its resumed run's engine answered, :class:`Inferred`),
    ``params["model_calls_by_mode"]`` the same per request mode.
    """
    all_specs = with_output_health(specs)
    ready = [r for s in samples if s.error is None for r in (s.request, *s.extra_requests)]
    inferred = infer_all(engine, engine_label, ready, batch_size=batch_size, cache=cache)
    answers = iter(inferred.results)
    results = [
        (s.combine or joined_result)([next(answers) for _ in range(1 + len(s.extra_requests))])
        if s.error is None else InferenceResult(text="", error=s.error)
        for s in samples
    ]
    records = score_samples(samples, results, scorer, all_specs)
    return BenchmarkRecord(
        benchmark=benchmark,
        engine=engine_label,
        parameter=parameter,
        data=data,
        metrics=aggregate(records, all_specs),
        samples=records,
        params={
            **dict(params or {}),
            "model_calls": inferred.model_calls,
            "model_calls_by_mode": dict(inferred.calls_by_mode),
        },
    )
