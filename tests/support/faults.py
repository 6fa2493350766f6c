"""What the fault battery's bench runs share: their subprocess environment and runner,
and two engines, named on the command line as ``tests.support.faults:NAME``.

Both engines answer every page with a fixed sentence and the sample's id.
``EVALSUITE_FAULT_SAMPLE`` names a sample id that raises; ``EVALSUITE_FAULT_MARKER`` (a path) is
created when a page is being read, and ``EVALSUITE_FAULT_SLEEP`` (seconds) then holds every page
that long, so a test can signal a run in the middle of it.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalsuite.engines import EngineBase, InferenceRequest, InferenceResult
from tests.support.subprocess_runs import child_env, run_pytest

ANSWER = "The quick brown fox jumps over the lazy dog."
FIXED_TEXT = "tests.support.faults:FixedTextEngine"
RAW_BATCH = "tests.support.faults:RawBatchEngine"


def bench_env(**faults: str) -> dict[str, str]:
    """The environment of a bench subprocess: this one's, without xdist's worker marker,
    a data folder (the project's fixtures only) or a recordings folder, plus ``faults``
    (EVALSUITE_FAULT_*)."""
    return child_env(
        recordings=False,
        **{f"EVALSUITE_FAULT_{name.upper()}": value for name, value in faults.items()},
    )


def run_benches(
    *args: str | Path, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``pytest benches`` with ``args`` to its end (environment: ``bench_env()`` unless
    given); stdout and stderr captured."""
    return run_pytest(*args, env=env or bench_env(), timeout=timeout)


class SampleFault(RuntimeError):
    """The failure the fault battery injects into one sample."""


def _answer(request: InferenceRequest) -> InferenceResult:
    if request.sample_id == os.environ.get("EVALSUITE_FAULT_SAMPLE"):
        raise SampleFault(f"injected fault on {request.sample_id}")
    marker = os.environ.get("EVALSUITE_FAULT_MARKER")
    if marker:
        Path(marker).touch()
        time.sleep(float(os.environ.get("EVALSUITE_FAULT_SLEEP", "0")))
    return InferenceResult(text=f"{ANSWER} {request.sample_id}")


class FixedTextEngine(EngineBase):
    """An OCR engine built on EngineBase (which records a raising sample as failed)."""

    name = "fixed-text"
    kind = "ocr"

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        return _answer(request)


class RawBatchEngine:
    """An engine with only ``infer_batch``, which lets the injected fault escape the batch."""

    name = "raw-batch"
    kind = "ocr"

    def infer(self, request: InferenceRequest) -> InferenceResult:
        return _answer(request)

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        return [_answer(request) for request in requests]
