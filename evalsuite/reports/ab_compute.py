"""The computing side of ``evalsuite ab`` (:mod:`evalsuite.commands.ab`), with no output
formatting: two runs' records and samples paired, a paired test of every metric with a better
direction, Holm-adjusted together, each metric's verdict and the samples that got worse most."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evalsuite.errors import NothingPairedError
from evalsuite.records.model import BenchmarkRecord, SampleRecord
from evalsuite.records.results import RunResults
from evalsuite.reports.series import profile_of, profile_text
from evalsuite.stats_paired import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    SIGN_FLIP_MAX_PAIRS,
    PairedTest,
    holm_adjust,
    mcnemar_exact,
    paired_bootstrap,
    sign_flip_exact,
    wilcoxon_signed_rank,
)

ALPHA = 0.05
WORST_SAMPLES = 10
MEAN_TESTS = ("bootstrap", "wilcoxon")


@dataclass(frozen=True)
class RecordPair:
    """The baseline's and the candidate's record of one benchmark x data x parameter."""

    baseline: BenchmarkRecord
    candidate: BenchmarkRecord

    @property
    def engines(self) -> str:
        """The engine label, or ``baseline → candidate`` when they differ."""
        base, cand = self.baseline.engine, self.candidate.engine
        return base if base == cand else f"{base} → {cand}"

    @property
    def where(self) -> str:
        record = self.candidate
        return _where(record.benchmark, self.engines, record.data, record.parameter)


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one record pair: both values over the paired samples, the paired test,
    the Holm-adjusted p-value and the verdict. ``worse_by`` > 0 is a move in the bad
    direction."""

    benchmark: str
    engines: str
    data: str
    parameter: str
    metric: str
    kind: str
    direction: str
    baseline: float
    candidate: float
    unpaired: int
    test: PairedTest
    p_holm: float
    significant: bool
    regressed: bool

    @property
    def where(self) -> str:
        """``benchmark · engines · data · parameter``, as its :attr:`RecordPair.where`."""
        return _where(self.benchmark, self.engines, self.data, self.parameter)

    @property
    def worse_by(self) -> float:
        return -self.test.delta if self.direction == "higher" else self.test.delta

    @property
    def verdict(self) -> str:
        if self.regressed:
            return "REGRESSED"
        if not self.significant:
            return "n.s."
        return "worse, within tolerance" if self.worse_by > 0 else "improved"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(test=self.test.test, n=self.test.n, delta=self.test.delta,
                    p_value=self.test.p_value, ci_low=self.test.ci_low,
                    ci_high=self.test.ci_high, worse_by=self.worse_by, verdict=self.verdict)
        return data


@dataclass(frozen=True)
class SampleChange:
    """A sample that got worse: on which metric most (``worse_by``, in the metric's units, a
    proportion's outcome counting 0 or 1), and both runs' outputs."""

    where: str
    sample_id: str
    metric: str
    baseline_score: float
    candidate_score: float
    worse_by: float
    baseline_text: str
    candidate_text: str
    baseline_error: str | None = None
    candidate_error: str | None = None


@dataclass
class AbReport:
    """Everything ``evalsuite ab`` shows."""

    baseline: RunResults
    candidate: RunResults
    comparisons: list[MetricComparison]
    worst: list[SampleChange]
    pairs: list[RecordPair]
    alpha: float
    tolerance: float
    sources: tuple[str, str] = ("", "")
    series: dict[int, list[tuple[str, float, float]]] = field(default_factory=dict)
    """Per comparison index: (sample id, baseline score, candidate score), for the plots."""
    warnings: list[str] = field(default_factory=list)
    """What makes the comparison less than like with like (:func:`comparison_warnings`)."""

    @property
    def regressions(self) -> list[MetricComparison]:
        return [c for c in self.comparisons if c.regressed]

    @property
    def paired_samples(self) -> int:
        """The samples paired over all record pairs: per pair, the most any metric paired."""
        sizes: dict[str, int] = {}
        for index, comparison in enumerate(self.comparisons):
            where = comparison.where
            sizes[where] = max(sizes.get(where, 0), len(self.series[index]))
        return sum(sizes.values())

    def by_evidence(self) -> list[int]:
        """Indices of :attr:`comparisons`, the smallest adjusted p first; of equal ones, the
        largest move in the bad direction first."""
        return sorted(range(len(self.comparisons)), key=lambda i: (
            self.comparisons[i].p_holm, -self.comparisons[i].worse_by))

    def changed(self, index: int) -> bool:
        """Whether comparison ``index`` moved: its mean difference, or a paired sample's score."""
        return self.comparisons[index].test.delta != 0 or any(
            b != c for _, b, c in self.series[index])


def pair_records(
    baseline: Sequence[BenchmarkRecord], candidate: Sequence[BenchmarkRecord]
) -> list[RecordPair]:
    """Records of the same benchmark x data x parameter x engine label; then, across engine
    labels, the one record left on each side of a benchmark x data x parameter."""
    by_key = {record.key: record for record in baseline}
    pairs = []
    left_base: dict[tuple[str, str, str], list[BenchmarkRecord]] = {}
    left_cand: dict[tuple[str, str, str], list[BenchmarkRecord]] = {}
    for record in candidate:
        match = by_key.pop(record.key, None)
        if match is not None:
            pairs.append(RecordPair(match, record))
        else:
            left_cand.setdefault(_slot(record), []).append(record)
    for record in by_key.values():
        left_base.setdefault(_slot(record), []).append(record)
    for slot, records in left_cand.items():
        others = left_base.get(slot, [])
        if len(records) == 1 and len(others) == 1:
            pairs.append(RecordPair(others[0], records[0]))
    return sorted(pairs, key=lambda pair: pair.candidate.key)


def _slot(record: BenchmarkRecord) -> tuple[str, str, str]:
    return record.benchmark, record.data, record.parameter


def compare_runs(
    baseline: RunResults,
    candidate: RunResults,
    *,
    alpha: float = ALPHA,
    tolerance: float = 0.0,
    mean_test: str = "bootstrap",
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    worst: int = WORST_SAMPLES,
) -> AbReport:
    """Paired tests of every metric both runs measured on common samples, Holm-adjusted
    together, and the ``worst`` samples that got worse most. NothingPairedError when the runs
    share no sample of any record pair."""
    if mean_test not in MEAN_TESTS:
        raise ValueError(f"mean_test must be one of {MEAN_TESTS}, got {mean_test!r}")
    pairs = pair_records(baseline.records, candidate.records)
    warnings = comparison_warnings(baseline, candidate, pairs)
    measured: list[tuple[RecordPair, str, PairedTest, list[tuple[str, float, float]], int]] = []
    for pair in pairs:
        samples = _samples_by_id(pair.baseline), _samples_by_id(pair.candidate)
        for metric in _comparable_metrics(pair):
            kind = pair.candidate.metrics[metric].kind
            values, unpaired = _paired_scores(*samples, metric, proportion=kind == "proportion")
            if not values:
                continue
            base = [b for _, b, _ in values]
            cand = [c for _, _, c in values]
            if kind == "proportion":
                test = mcnemar_exact([bool(v) for v in base], [bool(v) for v in cand])
            elif mean_test == "wilcoxon":
                test = wilcoxon_signed_rank(base, cand)
            elif len(base) <= SIGN_FLIP_MAX_PAIRS:
                test = sign_flip_exact(base, cand)
            else:
                test = paired_bootstrap(base, cand, resamples=resamples, seed=seed)
            measured.append((pair, metric, test, values, unpaired))
    if not measured:
        raise NothingPairedError(
            f"the runs share no sample to compare: {len(pairs)} benchmark x data x parameter "
            f"pair(s) (of {len(baseline.records)} baseline and {len(candidate.records)} "
            "candidate records) with common sample ids and metrics; compare runs of the same "
            "benchmarks on the same data" + "".join(f"; {warning}" for warning in warnings)
        )
    adjusted = holm_adjust([test.p_value for _, _, test, _, _ in measured])
    report = AbReport(baseline, candidate, [], [], pairs, alpha, tolerance, warnings=warnings)
    for index, ((pair, metric, test, values, unpaired), p_holm) in enumerate(
        zip(measured, adjusted, strict=True)
    ):
        summary = pair.candidate.metrics[metric]
        direction = str(summary.direction)
        worse_by = -test.delta if direction == "higher" else test.delta
        significant = p_holm < alpha
        report.comparisons.append(MetricComparison(
            benchmark=pair.candidate.benchmark, engines=pair.engines, data=pair.candidate.data,
            parameter=pair.candidate.parameter, metric=metric, kind=summary.kind,
            direction=direction, baseline=_mean([b for _, b, _ in values]),
            candidate=_mean([c for _, _, c in values]), unpaired=unpaired, test=test,
            p_holm=p_holm, significant=significant,
            regressed=significant and worse_by > tolerance + 1e-12,
        ))
        report.series[index] = values
    report.worst = _worst_samples(report, worst)
    return report


def comparison_warnings(
    baseline: RunResults, candidate: RunResults, pairs: Sequence[RecordPair]
) -> list[str]:
    """What makes the two runs less than like with like: a record pair whose two sides ran
    different versions of one peer model's profile (or the same version with another prompt or
    decoding: a profile edited without a new version), and records of a benchmark x parameter
    that ran on different data in the two runs (they are not paired, so not compared)."""
    warnings = []
    seen = set()
    for pair in pairs:
        base = profile_of(baseline.metadata.engine_details.get(pair.baseline.engine))
        cand = profile_of(candidate.metadata.engine_details.get(pair.candidate.engine))
        engines = (pair.baseline.engine, pair.candidate.engine)
        if base is None or cand is None or engines in seen:
            continue
        if str(base["name"]).lower() != str(cand["name"]).lower():
            continue  # two models compared: what ab is for
        seen.add(engines)
        if base.get("version") != cand.get("version"):
            warnings.append(
                f"{pair.engines}: baseline ran {profile_text(base)}, candidate "
                f"{profile_text(cand)}: two profile versions of one model, a difference may "
                "come from the profile's prompt, decoding or image preparation"
            )
        elif any(base.get(key) != cand.get(key) for key in _PROFILE_FIELDS):
            differ = " and ".join(word for key, word in _PROFILE_FIELDS.items()
                                  if base.get(key) != cand.get(key))
            warnings.append(
                f"{pair.engines}: both ran {profile_text(base)} but not the same {differ}: the "
                "profile changed without a new version"
            )
    paired = {id(record) for pair in pairs for record in (pair.baseline, pair.candidate)}
    left: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
    for side, run in enumerate((baseline, candidate)):
        for record in run.records:
            if id(record) not in paired:
                left.setdefault((record.benchmark, record.parameter), (set(), set()))[side].add(
                    record.data)
    by_benchmark: dict[str, tuple[set[str], set[str], int]] = {}
    for (benchmark, _), (base_data, cand_data) in sorted(left.items()):
        if base_data and cand_data and base_data != cand_data:
            were = by_benchmark.get(benchmark, (set(), set(), 0))
            by_benchmark[benchmark] = (were[0] | base_data, were[1] | cand_data, were[2] + 1)
    for benchmark, (base_data, cand_data, count) in by_benchmark.items():
        warnings.append(
            f"{benchmark}: baseline ran on {', '.join(sorted(base_data))}, candidate on "
            f"{', '.join(sorted(cand_data))}: different data, {count} setting(s) not compared"
        )
    return warnings


_PROFILE_FIELDS = {"prompt_sha256": "prompt", "decoding": "decoding",
                   "image_preparation": "image preparation", "pdf_rendering": "PDF rendering",
                   "pipeline": "further calls", "converter": "converter"}
"""What else than its version tells a profile's runs apart, by its key in the settings."""


def _comparable_metrics(pair: RecordPair) -> list[str]:
    """Metrics of both records with a better direction, per-group aggregates left out."""
    base, cand = pair.baseline.metrics, pair.candidate.metrics
    return [
        name for name, summary in cand.items()
        if name in base and summary.direction is not None and "[" not in name
    ]


def _paired_scores(
    base: dict[str, SampleRecord],
    cand: dict[str, SampleRecord],
    metric: str,
    *,
    proportion: bool,
) -> tuple[list[tuple[str, float, float]], int]:
    """(sample id, baseline score, candidate score) of the samples both runs (their samples by
    id) scored on ``metric``, in id order, and how many sample ids only one run has."""
    values = []
    for sample_id in sorted(base.keys() & cand.keys()):
        b, c = base[sample_id].scores.get(metric), cand[sample_id].scores.get(metric)
        if b is None or c is None:
            continue
        if proportion:
            values.append((sample_id, float(bool(b)), float(bool(c))))
        else:
            values.append((sample_id, float(b), float(c)))
    return values, len(base.keys() ^ cand.keys())


def _samples_by_id(record: BenchmarkRecord) -> dict[str, SampleRecord]:
    samples: dict[str, SampleRecord] = {}
    for sample in record.samples:
        if sample.sample_id in samples:
            raise ValueError(
                f"{record.benchmark}/{record.engine}/{record.data}/{record.parameter}: sample id "
                f"{sample.sample_id!r} appears twice; samples cannot be paired"
            )
        samples[sample.sample_id] = sample
    return samples


def _worst_samples(report: AbReport, count: int) -> list[SampleChange]:
    """Per paired sample, its largest move in a bad direction over the compared metrics;
    the ``count`` largest (only samples that got worse)."""
    worst: dict[tuple[str, str], tuple[float, str, float, float]] = {}
    for index, comparison in enumerate(report.comparisons):
        where = comparison.where
        sign = -1.0 if comparison.direction == "higher" else 1.0
        for sample_id, base, cand in report.series[index]:
            worse_by = sign * (cand - base)
            key = (where, sample_id)
            if worse_by > 0 and worse_by > worst.get(key, (0.0,))[0]:
                worst[key] = (worse_by, comparison.metric, base, cand)
    ranked = sorted(worst.items(), key=lambda item: (-item[1][0], item[0]))[:count]
    pairs = {pair.where: pair for pair in report.pairs}
    changes = []
    for (where, sample_id), (worse_by, metric, base, cand) in ranked:
        pair = pairs[where]
        before = _samples_by_id(pair.baseline)[sample_id]
        after = _samples_by_id(pair.candidate)[sample_id]
        changes.append(SampleChange(
            where, sample_id, metric, base, cand, worse_by, before.prediction or "",
            after.prediction or "", before.error, after.error,
        ))
    return changes


def _where(benchmark: str, engines: str, data: str, parameter: str) -> str:
    return " · ".join((benchmark, engines, data, parameter))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)
