"""Speed cases: CDM v1.6 (``cdm_scores``) against OmniDocBench v1.6's own CDM on 200 pairs.

The official code is not on PyPI: it runs from a checkout of OmniDocBench at commit 9dc1dec
(``$EVALSUITE_OMNIDOCBENCH_V16_SRC``, else ``$EVALSUITE_REFSRC/OmniDocBench-9dc1dec``) in a
Python with its dependencies (``$EVALSUITE_CDM_OFFICIAL_PYTHON``, else
``$EVALSUITE_REFENV/cdm-v16/bin/python``; tests/fixtures/README.md builds both), timed there by
``cdm_official_timer.py`` with a process pool of as many workers as the suite uses. It runs
once; both rows compare against that run:

* cold: the suite with an empty rendering cache;
* warm: the suite with the ground-truth renderings already cached (what a second model's run on
  the same benchmark finds); the official code has no such cache.

The pairs are the 177 of ``tests/fixtures/cdm/cdm_v16_cases.json.gz`` (made by the official
code) and 23 more built from its first pairs; F1 must be identical on every pair.
"""

from __future__ import annotations

import atexit
import functools
import gzip
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.cdm import cdm_scores, ensure_toolchain
from evalsuite.perf import BaselineUnavailableError, ExternalBaseline, PerfCase

PAIR_COUNT = 200
SOURCE_VARIABLE = "EVALSUITE_OMNIDOCBENCH_V16_SRC"
PYTHON_VARIABLE = "EVALSUITE_CDM_OFFICIAL_PYTHON"
# Where neither is set: the layout of tests/fixtures/README.md, under these two folders.
REFSRC_VARIABLE, REFSRC_NAME = "EVALSUITE_REFSRC", "OmniDocBench-9dc1dec"
REFENV_VARIABLE, REFENV_NAME = "EVALSUITE_REFENV", "cdm-v16/bin/python"
CASES_FILE = Path(__file__).resolve().parents[2] / "tests/fixtures/cdm/cdm_v16_cases.json.gz"
TIMER_SCRIPT = Path(__file__).with_name("cdm_official_timer.py")
HOW_TO_GET = (
    f"set {SOURCE_VARIABLE} to a checkout of github.com/opendatalab/OmniDocBench at 9dc1dec and "
    f"{PYTHON_VARIABLE} to a Python with numpy, pillow, scipy and pylatexenc==2.10, or "
    f"{REFSRC_VARIABLE} and {REFENV_VARIABLE} to the folders of tests/fixtures/README.md "
    "(ImageMagick 6's convert and the CDM toolchain on PATH)"
)


def configured_path(variable: str, root_variable: str, name: str) -> Path | None:
    """``$variable``, else ``$root_variable/name``; None where neither is set."""
    if os.environ.get(variable):
        return Path(os.environ[variable])
    if os.environ.get(root_variable):
        return Path(os.environ[root_variable], name)
    return None


def perf_pairs() -> list[tuple[str, str]]:
    """The 200 (gt, pred) pairs: the committed official cases, then ``+ \\omega`` appended to
    both sides of the first ones."""
    with gzip.open(CASES_FILE, "rt", encoding="utf-8") as handle:
        cases = json.load(handle)["cases"]
    pairs = [(case["gt"], case["pred"]) for case in cases]
    extra = [(gt + r" + \omega", pred + r" + \omega") for gt, pred in pairs]
    return (pairs + extra)[:PAIR_COUNT]


def workers() -> int:
    """Workers on both sides: one per CPU."""
    return os.cpu_count() or 1


@functools.cache
def official_run() -> tuple[float, list[float]]:
    """Seconds and F1 of the official CDM on :func:`perf_pairs` (run once per process)."""
    source = configured_path(SOURCE_VARIABLE, REFSRC_VARIABLE, REFSRC_NAME)
    python = configured_path(PYTHON_VARIABLE, REFENV_VARIABLE, REFENV_NAME)
    if source is None or python is None:
        raise BaselineUnavailableError(f"official CDM v1.6 not configured: {HOW_TO_GET}")
    if not (source / "src/metrics/cdm_metric.py").is_file() or not python.is_file():
        raise BaselineUnavailableError(
            f"official CDM v1.6 not found (tree {source}, Python {python}): {HOW_TO_GET}"
        )
    try:
        ensure_toolchain("1.6")
    except EvalsuiteError as error:
        raise BaselineUnavailableError(str(error)) from None
    if shutil.which("convert") is None:
        raise BaselineUnavailableError(f"ImageMagick's convert is not on PATH: {HOW_TO_GET}")
    job = {"official": str(source), "pairs": perf_pairs(), "workers": workers()}
    completed = subprocess.run(
        [str(python), str(TIMER_SCRIPT)], input=json.dumps(job), capture_output=True, text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise BaselineUnavailableError(
            f"the official CDM failed in {python}: {completed.stderr.strip()[-300:]}"
        )
    timed = json.loads(completed.stdout)
    return timed["seconds"], timed["f1"]


@functools.cache
def ground_truth_cache() -> Path:
    """A rendering cache holding the ground-truth side of every pair (kept for the process)."""
    cache = Path(tempfile.mkdtemp(prefix="evalsuite_perf_cdm_gt_"))
    atexit.register(shutil.rmtree, cache, True)
    cdm_scores([(gt, gt) for gt, _ in perf_pairs()], workers=workers(), cache_dir=cache)
    return cache


def suite_f1(cache_from: Path | None) -> list[float]:
    """F1 of every pair by ``cdm_scores``, starting from a copy of ``cache_from`` (or empty)."""
    with tempfile.TemporaryDirectory(prefix="evalsuite_perf_cdm_") as tmp:
        cache = Path(tmp, "cache")
        if cache_from is not None:
            shutil.copytree(cache_from, cache)
        scores = cdm_scores(perf_pairs(), workers=workers(), cache_dir=cache)
    return [score.F1_score for score in scores]


def official_baseline(*, prepare_warm: bool) -> ExternalBaseline:
    """The official run as a baseline (once per process); ``prepare_warm`` also fills the
    ground-truth cache, untimed, before the suite's warm side runs."""

    def measure(_max_runs: int, _budget_s: float) -> tuple[float, list[Any]]:
        seconds, f1 = official_run()
        if prepare_warm:
            ground_truth_cache()
        return seconds, [f1]

    return ExternalBaseline(measure)


CASES = [
    PerfCase(
        name=f"cdm v1.6, {PAIR_COUNT} pairs, cold cache, vs OmniDocBench's CDM",
        baseline=official_baseline(prepare_warm=False),
        fast=lambda: suite_f1(None),
        required_ratio=5,
    ),
    PerfCase(
        name=f"cdm v1.6, {PAIR_COUNT} pairs, ground truth cached, vs OmniDocBench's CDM",
        baseline=official_baseline(prepare_warm=True),
        fast=lambda: suite_f1(ground_truth_cache()),
        required_ratio=10,
    ),
]
