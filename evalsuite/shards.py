"""A run split over machines: ``--shard K/N`` takes the samples at positions ``i`` with
``i % N == K - 1`` of every benchmark test (after ``--max-samples`` and the engine's cap, so
the N parts make up exactly what one run would take) and gates nothing; :func:`merge_shards`
joins the N shard runs' records into the records one unsharded run would have written, samples
in their original order, every aggregate computed again over all of them, ready to be gated
against the same goldens with the same statistics.

A shard record keeps in ``params["shard"]`` what the merge needs: its index and count, its
samples' positions and the whole test's sample count, the metric specs, the golden file, each
sample's group (``metric[group]`` aggregates) and the metrics gated in every group.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.records.model import BenchmarkRecord, SampleRecord
from evalsuite.records.results import RunResults
from evalsuite.runner import MetricSpec, aggregate, aggregate_by, with_output_health

SHARD_PARAM = "shard"
SUMMED_PARAMS = ("model_calls",)


class ShardError(EvalsuiteError, ValueError):
    """Shard runs that cannot be merged: a record that is no shard, shards of different
    counts, a shard given twice or missing, positions that do not make up the whole."""


def shard_positions(requests: Sequence[Hashable], index: int, count: int) -> list[int]:
    """The positions (0-based) of shard ``index`` of ``count``: the samples whose request is
    the ``g``-th distinct one with ``g % count == index - 1``, so samples sharing a request
    (olmOCR-bench's tests of one page) stay in one shard and no page is read twice."""
    order: dict[Hashable, int] = {}
    for request in requests:
        order.setdefault(request, len(order))
    return [i for i, request in enumerate(requests) if order[request] % count == index - 1]


def shard_params(
    shard: tuple[int, int],
    positions: Mapping[str, int],
    total: int,
    specs: Sequence[MetricSpec],
    golden_file: str,
    groups: Mapping[str, str] | None,
    required_groups: Sequence[str],
) -> dict[str, Any]:
    """What a shard record keeps for :func:`merge_shards` (see the module docstring):
    ``positions`` and ``groups`` by sample id."""
    return {
        "index": shard[0],
        "count": shard[1],
        "positions": dict(positions),
        "total": total,
        "specs": [asdict(spec) for spec in specs],
        "golden_file": golden_file,
        "groups": None if groups is None else dict(groups),
        "required_groups": list(required_groups),
    }


@dataclass
class MergedRecord:
    """A joined record with what gating it needs: its golden file, gated metric names, the
    group of each sample (None without groups) and the metrics gated in every group."""

    record: BenchmarkRecord
    golden_file: str
    gated: list[str]
    group_of: Callable[[SampleRecord], str] | None
    required_groups: list[str]


def merge_shards(runs: Sequence[RunResults]) -> list[MergedRecord]:
    """The records of one unsharded run, from the N shard runs ``runs``; ShardError naming
    the run and record when they do not make up exactly one whole."""
    parts: dict[tuple[str, str, str, str], list[tuple[str, BenchmarkRecord]]] = {}
    for run in runs:
        for record in run.records:
            if not isinstance(record.params.get(SHARD_PARAM), dict):
                raise ShardError(
                    f"run {run.metadata.run_id}: {'/'.join(record.key)} is not a shard "
                    "(run each part with --shard K/N)"
                )
            parts.setdefault(record.key, []).append((run.metadata.run_id, record))
    return [_join(key, found) for key, found in sorted(parts.items())]


def _join(
    key: tuple[str, ...], found: list[tuple[str, BenchmarkRecord]]
) -> MergedRecord:
    where = "/".join(key)
    shards = [(run_id, record.params[SHARD_PARAM], record) for run_id, record in found]
    count = shards[0][1]["count"]
    if any(shard["count"] != count for _, shard, _ in shards):
        raise ShardError(f"{where}: shards of different counts "
                         f"({', '.join(sorted({str(s['count']) for _, s, _ in shards}))})")
    seen: dict[int, str] = {}
    for run_id, shard, _ in shards:
        if shard["index"] in seen:
            raise ShardError(f"{where}: shard {shard['index']}/{count} is given twice "
                             f"(runs {seen[shard['index']]} and {run_id})")
        seen[shard["index"]] = run_id
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise ShardError(f"{where}: shard(s) {', '.join(f'{k}/{count}' for k in missing)} "
                         "missing")
    first = shards[0][1]
    total = first["total"]
    placed: dict[int, tuple[SampleRecord, str | None]] = {}
    for _, shard, record in shards:
        if shard["total"] != total or len(shard["positions"]) != len(record.samples):
            raise ShardError(f"{where}: the shards were cut from different sample sets")
        for sample in record.samples:
            position = shard["positions"].get(sample.sample_id)
            if position is None or position in placed:
                raise ShardError(f"{where}: sample {sample.sample_id!r} has no place of its own")
            placed[position] = (sample, (shard["groups"] or {}).get(sample.sample_id))
    if sorted(placed) != list(range(total)):
        raise ShardError(f"{where}: the shards' samples do not make up the {total} samples")
    samples = [placed[position][0] for position in range(total)]
    specs = with_output_health([_spec(raw) for raw in first["specs"]])
    params = {name: value for name, value in shards[0][2].params.items()
              if name != SHARD_PARAM}
    for name in SUMMED_PARAMS:
        params[name] = sum(int(record.params.get(name, 0)) for _, _, record in shards)
    by_mode: dict[str, int] = {}
    for _, _, record in shards:
        for mode, calls in record.params.get("model_calls_by_mode", {}).items():
            by_mode[mode] = by_mode.get(mode, 0) + int(calls)
    params["model_calls_by_mode"] = by_mode
    benchmark, engine, data, parameter = key
    record = BenchmarkRecord(benchmark, engine, parameter, aggregate(samples, specs), samples,
                             params, data)
    gated = [spec for spec in specs if spec.gate and spec.name in record.metrics]
    group_of = None
    if first["groups"] is not None:
        label_of = {id(placed[p][0]): placed[p][1] for p in range(total)}

        def group_of(sample: SampleRecord) -> str:
            return str(label_of[id(sample)])

        record.metrics.update(aggregate_by(samples, group_of, gated))
    return MergedRecord(record, first["golden_file"], [spec.name for spec in gated], group_of,
                        list(first["required_groups"]))


def _spec(raw: dict[str, Any]) -> MetricSpec:
    return MetricSpec(**{**raw, "bounds": tuple(raw["bounds"])})
