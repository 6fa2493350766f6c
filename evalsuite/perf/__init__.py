"""A tiny speed-check framework: fast implementations timed against the baselines they replace.

Each ``PerfCase`` pairs a library function with the straightforward algorithm it replaces
(kept small in this package and marked BASELINE). The runner times both in the same process,
reports median seconds and the speed-up ratio, and fails a case whose ratio is below its
requirement or whose results differ from the baseline's. A baseline that lives in another
Python environment (a reference package that cannot be installed beside evalsuite) is an
:class:`ExternalBaseline`: it times itself there and reports its times and results. ``python -m
evalsuite.perf`` runs the cases of every module in ``evalsuite.perf.__main__.CASE_MODULES``.
"""

from __future__ import annotations

import importlib
import operator
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from evalsuite.errors import ToolUnavailableError
from evalsuite.textformat import format_table

Clock = Callable[[], float]

# Per side and case: at least one run, then more while under the run cap and the time budget.
BASELINE_MAX_RUNS, BASELINE_BUDGET_S = 3, 6.0
FAST_MAX_RUNS, FAST_BUDGET_S = 25, 1.0


class BaselineUnavailableError(ToolUnavailableError, RuntimeError):
    """An external baseline cannot run here; the message says how to make it available."""


@dataclass(frozen=True)
class ExternalBaseline:
    """A baseline timed elsewhere: ``measure(max_runs, budget_s)`` returns the median seconds
    per call and the results of every call, or raises :class:`BaselineUnavailableError`."""

    measure: Callable[[int, float], tuple[float, list[Any]]]


@dataclass(frozen=True)
class PerfCase:
    """One speed check. Both sides take no argument and must not cache across calls.

    ``baseline``: a callable timed in this process, or an :class:`ExternalBaseline`.
    ``required_ratio``: median baseline time / median fast time must reach it.
    ``same(baseline_result, fast_result)``: whether two results count as identical.
    """

    name: str
    baseline: Callable[[], Any] | ExternalBaseline
    fast: Callable[[], Any]
    required_ratio: float
    same: Callable[[Any, Any], bool] = operator.eq


@dataclass(frozen=True)
class PerfResult:
    """Median seconds of both sides of a case and whether every result matched the baseline's;
    ``unavailable`` says why the baseline could not run (then nothing was timed)."""

    name: str
    baseline_s: float
    fast_s: float
    required_ratio: float
    identical: bool
    unavailable: str = ""

    @property
    def ratio(self) -> float:
        return self.baseline_s / self.fast_s if self.fast_s > 0 else float("inf")

    @property
    def passed(self) -> bool:
        return not self.unavailable and self.identical and self.ratio >= self.required_ratio


def time_runs(
    fn: Callable[[], Any], *, max_runs: int, budget_s: float, clock: Clock = time.perf_counter
) -> tuple[float, list[Any]]:
    """Median seconds per call of ``fn`` and the results of every call.

    Calls ``fn`` once, then again while fewer than ``max_runs`` calls were made and their total
    time is under ``budget_s``.
    """
    durations: list[float] = []
    results: list[Any] = []
    while not durations or (len(durations) < max_runs and sum(durations) < budget_s):
        start = clock()
        results.append(fn())
        durations.append(clock() - start)
    return statistics.median(durations), results


def run_case(case: PerfCase, *, clock: Clock = time.perf_counter) -> PerfResult:
    """Time the baseline, then the fast side, and compare every result with the baseline's first."""
    if isinstance(case.baseline, ExternalBaseline):
        try:
            baseline_s, baseline_results = case.baseline.measure(
                BASELINE_MAX_RUNS, BASELINE_BUDGET_S
            )
        except BaselineUnavailableError as error:
            return PerfResult(case.name, 0.0, 0.0, case.required_ratio, False, str(error))
    else:
        baseline_s, baseline_results = time_runs(
            case.baseline, max_runs=BASELINE_MAX_RUNS, budget_s=BASELINE_BUDGET_S, clock=clock
        )
    fast_s, fast_results = time_runs(
        case.fast, max_runs=FAST_MAX_RUNS, budget_s=FAST_BUDGET_S, clock=clock
    )
    reference = baseline_results[0]
    identical = all(case.same(reference, result) for result in baseline_results[1:] + fast_results)
    return PerfResult(case.name, baseline_s, fast_s, case.required_ratio, identical)


def collect_cases(module_names: Iterable[str]) -> tuple[list[PerfCase], list[str]]:
    """The ``CASES`` of each named module, and the names of the modules that do not exist.

    Only a module that is itself absent counts as not available; any other import error
    (including a missing module that it imports) propagates.
    """
    cases: list[PerfCase] = []
    unavailable: list[str] = []
    for name in module_names:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
            unavailable.append(name)
            continue
        cases.extend(module.CASES)
    return cases, unavailable


def _cpu_model() -> str:
    """platform.processor(), else the first "model name" of /proc/cpuinfo, else ""."""
    if platform.processor():
        return platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            models = (line.split(":", 1)[1] for line in cpuinfo if line.startswith("model name"))
            return next(models, "").strip()
    except OSError:
        return ""


def machine_description() -> str:
    """CPU model, CPU count, OS, architecture and Python version."""
    return (
        f"{_cpu_model() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"
    )


def format_seconds(seconds: float) -> str:
    """Seconds in a readable unit: ``2.31 s``, ``4.20 ms``, ``812 µs``."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


PERF_HEADERS = ("case", "baseline", "fast", "ratio", "required", "result")


def perf_cells(result: PerfResult) -> tuple[str, ...]:
    """One table row: name, medians, ratio, requirement, verdict."""
    if result.unavailable:
        return (result.name, "-", "-", "-", f">={result.required_ratio:g}x",
                "FAIL (baseline unavailable)")
    if not result.identical:
        verdict = "FAIL (results differ)"
    elif result.ratio < result.required_ratio:
        verdict = "FAIL (too slow)"
    else:
        verdict = "ok"
    return (
        result.name,
        format_seconds(result.baseline_s),
        format_seconds(result.fast_s),
        f"{result.ratio:,.0f}x",
        f">={result.required_ratio:g}x",
        verdict,
    )


def run(
    cases: Sequence[PerfCase],
    unavailable: Sequence[str],
    *,
    out: TextIO,
    clock: Clock = time.perf_counter,
) -> int:
    """Print a line as each case finishes, then the table; 0 when every case passed, else 1."""
    print(f"evalsuite perf on {machine_description()}", file=out)
    results = []
    for case in cases:
        results.append(run_case(case, clock=clock))
        print(f"  timed {case.name}", file=out, flush=True)
    print("median time per call; ratio = baseline / fast", file=out)
    rows = [perf_cells(result) for result in results]
    print(format_table(PERF_HEADERS, rows, align="lrrrrl"), file=out)
    for name in unavailable:
        print(f"{name}: not available (module does not exist)", file=out)
    for result in results:
        if result.unavailable:
            print(f"{result.name}: {result.unavailable}", file=out)
    failed = [result.name for result in results if not result.passed]
    print(f"{len(results) - len(failed)}/{len(results)} cases passed", file=out)
    return 1 if failed else 0
