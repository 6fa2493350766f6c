"""``evalsuite ab BASELINE CANDIDATE``: is the candidate worse than the baseline on the same
samples, by more than chance explains?

Both runs are results.json files (given as a path, a run folder, a run id under
``--report-dir``, or a ``--run-name``). Records are paired by benchmark x data x parameter and
engine label; records left over are paired across engines when each run has exactly one for a
benchmark x data x parameter (model A vs model B). Within a pair, samples are paired by id.

Every metric with a better direction gets a paired test on the samples both runs scored
(:mod:`evalsuite.stats_paired`): McNemar's exact test for a proportion; for a mean, the exact
sign-flip test of the mean difference up to 16 pairs and a paired bootstrap of it beyond (or,
with ``--mean-test wilcoxon``, the Wilcoxon signed-rank test). The p-values of all tests are
Holm-adjusted together, so "significant" holds for the whole family at ``--alpha``. A metric
regressed when its adjusted p-value is below alpha and it moved in its bad direction by more
than ``--tolerance``. Weighted means are compared per sample, unweighted; per-group aggregates
(``metric[group]``) are left out.

Output: a terminal table (or ``--json``), the samples that got worse most with a word-level
diff of their two outputs, and with ``--html`` a page in the dashboard's style with a paired
plot (candidate vs baseline per sample) per changed metric. ``--fail-on-regression`` exits 1
when any metric regressed. The header names each engine's peer model profile and version (from
the runs' engine details) and warns when the comparison is not like with like: the two sides of
a pair ran different versions of one model's profile, or a benchmark ran on different data in
the two runs (those records are not paired).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from evalsuite.errors import NothingPairedError, RunNotFoundError
from evalsuite.records.atomic import atomic_write_text
from evalsuite.records.history import read_history
from evalsuite.records.metadata import require_run_id
from evalsuite.records.model import BenchmarkRecord, SampleRecord
from evalsuite.records.results import RESULTS_FILE, RunResults, read_results
from evalsuite.reports.charts import PALETTE, Chart, ChartPoint, ChartSeries, slug
from evalsuite.reports.geometry import MUTED
from evalsuite.reports.html import (
    Cell,
    Column,
    DrillItem,
    drilldown,
    legend,
    ranked_table,
    render_page,
)
from evalsuite.reports.series import profile_of, profile_text
from evalsuite.reports.svg import render_svg
from evalsuite.reports.wordalign import UNMATCHED, align_words
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
from evalsuite.textformat import echo, format_table, shorten, significant

ALPHA = 0.05
WORST_SAMPLES = 10
MEAN_TESTS = ("bootstrap", "wilcoxon")
PAIRED_CHARTS = 12
"""Most paired plots on the HTML page: the changed metrics with the smallest adjusted p."""
DIFF_WORDS = 100
"""Characters of each side's unmatched words shown per sample in the terminal."""


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("baseline", metavar="BASELINE",
                        help="run id, run name (--run-name; the newest run of that name) or a "
                        "results.json path / run folder")
    parser.add_argument("candidate", metavar="CANDIDATE", help="the run to judge, as BASELINE")
    parser.add_argument("--report-dir", type=Path, default=Path("reports"),
                        help="where run ids and names are looked up (default reports/)")
    parser.add_argument("--alpha", type=float, default=ALPHA,
                        help=f"family-wise significance level, Holm-adjusted (default {ALPHA})")
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="a significant drop counts as a regression only beyond this much, "
                        "in the metric's units (default 0)")
    parser.add_argument("--mean-test", choices=MEAN_TESTS, default="bootstrap",
                        help="paired test of a mean: the mean difference, by exact sign "
                        f"flips up to {SIGN_FLIP_MAX_PAIRS} pairs and bootstrap beyond "
                        "(default), or Wilcoxon signed-rank")
    parser.add_argument("--resamples", type=int, default=BOOTSTRAP_RESAMPLES,
                        help=f"bootstrap resamples (default {BOOTSTRAP_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=BOOTSTRAP_SEED,
                        help=f"bootstrap random seed (default {BOOTSTRAP_SEED})")
    parser.add_argument("--worst", type=int, default=WORST_SAMPLES,
                        help=f"samples that got worse most to list (default {WORST_SAMPLES})")
    parser.add_argument("--all", action="store_true",
                        help="list unchanged metrics too (default: only those that moved)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--html", type=Path, metavar="PATH",
                        help="write an HTML page with paired plots and the worst samples' diffs")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a metric dropped significantly beyond --tolerance")


def run(args: argparse.Namespace) -> int:
    problem = _argument_problem(args)
    if problem:
        echo(f"evalsuite ab: {problem}", file=sys.stderr)
        return 2
    try:
        paths = [resolve_run(ref, args.report_dir) for ref in (args.baseline, args.candidate)]
        runs = [read_results(path) for path in paths]
        report = compare_runs(
            runs[0], runs[1], alpha=args.alpha, tolerance=args.tolerance,
            mean_test=args.mean_test, resamples=args.resamples, seed=args.seed,
            worst=args.worst,
        )
    except (RunNotFoundError, NothingPairedError, ValueError, OSError) as error:
        echo(f"evalsuite ab: {error}", file=sys.stderr)
        return 2
    report.sources = (str(paths[0]), str(paths[1]))
    if args.json:
        print(json.dumps(report_json(report), ensure_ascii=False, indent=1))
    else:
        echo(render_text(report, show_all=args.all))
    if args.html:
        written = atomic_write_text(args.html, render_html(report))
        echo(f"html: {written}", file=sys.stderr if args.json else sys.stdout)
    return 1 if args.fail_on_regression and report.regressions else 0


def _argument_problem(args: argparse.Namespace) -> str | None:
    if not 0 < args.alpha < 1:
        return f"--alpha must lie between 0 and 1, got {args.alpha}"
    if args.tolerance < 0:
        return f"--tolerance must be >= 0, got {args.tolerance}"
    if args.resamples < 1:
        return f"--resamples must be >= 1, got {args.resamples}"
    if args.worst < 0:
        return f"--worst must be >= 0, got {args.worst}"
    return None


def resolve_run(reference: str, report_dir: str | Path) -> Path:
    """The results.json that ``reference`` names: a results.json path or run folder, a run id
    under ``report_dir``, or a run name in ``report_dir/history.jsonl`` (the newest run of that
    name). RunNotFoundError lists close matches otherwise."""
    report_dir = Path(report_dir)
    given = Path(reference)
    for path in (given, given / RESULTS_FILE):
        if path.is_file():
            return path
    try:
        by_id = report_dir / require_run_id(reference) / RESULTS_FILE
    except (TypeError, ValueError):
        by_id = None
    if by_id is not None and by_id.is_file():
        return by_id
    history = report_dir / "history.jsonl"
    entries = read_history(history) if history.is_file() else []
    named = [e for e in entries if e.metadata.run_name == reference and e.results_path]
    if named:
        newest = max(named, key=lambda entry: entry.metadata.created_utc)
        path = history.parent / str(newest.results_path)
        if path.is_file():
            return path
        raise RunNotFoundError(f"run {reference!r} ({newest.metadata.run_id}): {path} is gone")
    known = sorted({p.parent.name for p in report_dir.glob(f"*/{RESULTS_FILE}")}
                   | {e.metadata.run_name for e in entries if e.metadata.run_name})
    close = difflib.get_close_matches(reference, known, n=5, cutoff=0.5)
    hint = (f"close matches: {', '.join(close)}" if close
            else f"{len(known)} runs known there" + (f", e.g. {', '.join(known[-3:])}"
                                                      if known else ""))
    raise RunNotFoundError(
        f"no run {reference!r}: not a results.json path or run folder, nor a run id under "
        f"{report_dir}, nor a run name in {history}; {hint}"
    )


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


def _run_line(results: RunResults, role: str) -> str:
    meta = results.metadata
    name = f"{meta.run_name} ({meta.run_id})" if meta.run_name else meta.run_id
    commit = (meta.git_commit or "unknown")[:8] + ("-dirty" if meta.git_dirty else "")
    engines = []
    for engine in meta.engines:
        profile = profile_of(meta.engine_details.get(engine))
        engines.append(engine if profile is None else f"{engine} ({profile_text(profile)})")
    return f"{role + ':':<10} {name}, commit {commit}, engines {', '.join(engines) or '—'}"


def render_text(report: AbReport, *, show_all: bool = False) -> str:
    """Both runs, the metrics that moved (all with ``show_all``), the verdict and the samples
    that got worse most, each with the words only one of its two outputs has."""
    samples = sum(_pair_sizes(report))
    lines = [
        _run_line(report.baseline, "baseline"),
        _run_line(report.candidate, "candidate"),
        f"{len(report.pairs)} record pair(s), {samples} paired samples, "
        f"{len(report.comparisons)} tests Holm-adjusted at alpha {significant(report.alpha)}, "
        f"tolerance {significant(report.tolerance)}",
        *(f"warning: {warning}" for warning in report.warnings),
        "",
    ]
    shown = [c for c in report.comparisons if show_all or c.test.delta != 0 or c.significant]
    headers = ["benchmark", "engine", "data", "parameter", "metric", "n", "baseline",
               "candidate", "delta", "test", "p", "p Holm", "verdict"]
    rows = [
        [c.benchmark, c.engines, c.data, c.parameter, c.metric, str(c.test.n),
         significant(c.baseline), significant(c.candidate),
         significant(c.test.delta, signed=True), c.test.test, significant(c.test.p_value),
         significant(c.p_holm), c.verdict]
        for c in shown
    ]
    if rows:
        lines.append(format_table(headers, rows, align="lllllrrrrlrrl"))
    hidden = len(report.comparisons) - len(shown)
    if hidden:
        lines.append(
            f"{hidden} metric(s) with the same value in both runs, not shown (--all shows them)"
        )
    lines.append("")
    regressions = report.regressions
    if regressions:
        lines.append(f"{len(regressions)} significant regression(s): " + "; ".join(
            f"{c.benchmark} {c.metric} ({c.parameter}) {significant(c.test.delta, signed=True)}"
            for c in regressions))
    else:
        lines.append("no significant regression")
    if report.worst:
        lines += ["", f"samples that got worse most ({len(report.worst)}):"]
        for rank, change in enumerate(report.worst, start=1):
            lines.append(f"{rank:>3}. {change.sample_id} · {change.where}")
            lines.append(
                f"     {change.metric} {significant(change.baseline_score)} → "
                f"{significant(change.candidate_score)}"
            )
            lines += [f"     {line}" for line in _diff_lines(change)]
    return "\n".join(lines)


def _pair_sizes(report: AbReport) -> list[int]:
    sizes: dict[str, int] = {}
    for index, comparison in enumerate(report.comparisons):
        where = comparison.where
        sizes[where] = max(sizes.get(where, 0), len(report.series[index]))
    return list(sizes.values())


def _diff_lines(change: SampleChange) -> list[str]:
    """The words only the baseline's output has and those only the candidate's has."""
    lines = []
    for role, error in (("baseline", change.baseline_error),
                        ("candidate", change.candidate_error)):
        if error:
            lines.append(f"{role} failed: {shorten(error, DIFF_WORDS)}")
    if change.baseline_text == change.candidate_text:
        return [*lines, "outputs identical"]
    cand_segments, base_segments = align_words(change.candidate_text, change.baseline_text)
    for role, segments in (("- baseline only", base_segments),
                           ("+ candidate only", cand_segments)):
        words = " ".join(s.text for s in segments if s.match == UNMATCHED)
        lines.append(f"{role}: {shorten(words, DIFF_WORDS) if words else '(nothing)'}")
    return lines


def report_json(report: AbReport) -> dict[str, Any]:
    """The comparison as JSON: both runs' metadata, every test, the worst samples."""
    return {
        "baseline": {"results": report.sources[0], **report.baseline.metadata.to_dict()},
        "candidate": {"results": report.sources[1], **report.candidate.metadata.to_dict()},
        "alpha": report.alpha,
        "tolerance": report.tolerance,
        "correction": "holm",
        "warnings": report.warnings,
        "comparisons": [c.to_dict() for c in report.comparisons],
        "regressions": len(report.regressions),
        "worst_samples": [asdict(change) for change in report.worst],
    }


def render_html(report: AbReport) -> str:
    """A page in the dashboard's style: the tests, paired plots of the metrics that moved, and
    the worst samples' two outputs side by side."""
    columns = [
        Column("where", "benchmark · engine · data · parameter", numeric=False),
        Column("metric", "metric", numeric=False),
        Column("n", "n"),
        Column("baseline", "baseline"),
        Column("candidate", "candidate"),
        Column("delta", "delta"),
        Column("p", "p", title="two-sided p-value of the paired test"),
        Column("p_holm", "p Holm", title="Holm-adjusted over every test of the page"),
        Column("verdict", "verdict", numeric=False),
    ]
    ordered = sorted(range(len(report.comparisons)),
                     key=lambda i: (report.comparisons[i].p_holm, -report.comparisons[i].worse_by))
    rows = []
    for index in ordered:
        c = report.comparisons[index]
        rows.append({
            "where": Cell(c.where, c.where), "metric": Cell(c.metric, c.metric),
            "n": Cell(str(c.test.n), c.test.n), "baseline": Cell.number(c.baseline),
            "candidate": Cell.number(c.candidate),
            "delta": Cell(significant(c.test.delta, signed=True), c.test.delta, c.test.test),
            "p": Cell.number(c.test.p_value), "p_holm": Cell.number(c.p_holm),
            "verdict": Cell(c.verdict, c.verdict),
        })
    caption = (f"{len(report.comparisons)} paired tests, Holm-adjusted at alpha "
               f"{significant(report.alpha)}; regressed: significant and worse by more than "
               f"{significant(report.tolerance)}")
    charts = [
        _paired_chart(report, index) for index in ordered
        if report.comparisons[index].test.delta != 0
        or any(b != c for _, b, c in report.series[index])
    ][:PAIRED_CHARTS]
    items = [_drill_item(rank, change) for rank, change in enumerate(report.worst, start=1)]
    body = [
        *(f'<div class="status bad">⚠ {escape(warning)}</div>' for warning in report.warnings),
        '<section id="tests"><h2>Paired tests</h2>',
        ranked_table("ab-tests", columns, rows, caption, unranked=len(rows)),
        '</section><section id="paired"><h2>Candidate vs baseline, per sample</h2>',
        '<div class="charts">' + "".join(charts) + "</div>" if charts
        else "<p>No sample changed its score.</p>",
        '</section><section id="worst"><h2>Samples that got worse most</h2>',
        drilldown("ab-worst", items, titles=("Baseline output", "Candidate output"))
        if items else "<p>No sample got worse.</p>",
        "</section>",
    ]
    verdict = (f"{len(report.regressions)} significant regression(s)" if report.regressions
               else "no significant regression")
    subtitle = (f"{_run_line(report.baseline, 'baseline')} · "
                f"{_run_line(report.candidate, 'candidate')} · {verdict}")
    nav = [("tests", "tests"), ("paired", "paired plots"), ("worst", "worst samples")]
    return render_page("A/B comparison", subtitle, nav, "".join(body))


def _paired_chart(report: AbReport, index: int) -> str:
    """Each paired sample as a dot at (baseline, candidate), ringed when it moved, with the
    diagonal y = x on which unchanged samples lie."""
    comparison = report.comparisons[index]
    values = report.series[index]
    sign = 1.0 if comparison.direction == "higher" else -1.0
    dots = []
    for sample_id, base, cand in values:
        moved = sign * (cand - base)
        flag = "regressed" if moved < 0 else "improved" if moved > 0 else None
        point = ChartPoint(base, cand, label=f"baseline {significant(base)} → candidate "
                           f"{significant(cand)}", flag=flag)
        dots.append(ChartSeries(sample_id, (point,), color=PALETTE[0]))
    low = min(min(b, c) for _, b, c in values)
    high = max(max(b, c) for _, b, c in values)
    diagonal = ChartSeries("y = x (unchanged)", (ChartPoint(low, low), ChartPoint(high, high)),
                           color=MUTED)
    title = f"{comparison.metric} · {comparison.where}"
    chart = Chart(kind="curve", chart_id=slug("ab", str(index), comparison.metric), title=title,
                  x_label=f"baseline {comparison.metric}",
                  y_label=f"candidate {comparison.metric}", series=(diagonal, *dots))
    note = (f"{comparison.test.test}, p Holm {significant(comparison.p_holm)}; "
            f"{comparison.direction} is better")
    keys = legend(
        [ChartSeries("sample", (), color=PALETTE[0])],
        '<span class="key"><i class="ring bad"></i>worse</span>'
        '<span class="key"><i class="ring good"></i>better</span>',
    )
    return (
        f'<figure class="card chart-card"><figcaption><b>{escape(title)}</b>'
        f'<span class="note">{escape(note)}</span></figcaption>{render_svg(chart)}{keys}</figure>'
    )


def _drill_item(rank: int, change: SampleChange) -> DrillItem:
    cand_segments, base_segments = align_words(change.candidate_text, change.baseline_text)
    label = (f"{rank}. {change.sample_id} — {change.metric} {significant(change.baseline_score)}"
             f" → {significant(change.candidate_score)}")
    error = "; ".join(
        f"{role} failed: {error}" for role, error in
        (("baseline", change.baseline_error), ("candidate", change.candidate_error)) if error
    ) or None
    change_of_score = {f"{change.metric} change": change.candidate_score - change.baseline_score}
    return DrillItem(label, change.where, base_segments, cand_segments, change_of_score, error)
