"""CI driver (``.ci/run``): runs the make targets in order, times each, counts its tests, and
prints one table at the end; the table is also written as JSON to
``$EVALSUITE_CACHE/ci-last.json`` (default ``~/.cache/evalsuite``).

JSON: ``{"commit", "date", "total_s", "targets": [{"name", "seconds", "passed", "failed",
"skipped"}]}``; ``failed`` counts pytest's failures and errors. CI fails when a target fails, a
pytest target passed no test, or no test ran at all.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "envs"))
from environment import cache_root  # noqa: E402  (envs/environment.py: one cache folder)

TARGETS = ("test-all", "bench", "test-vllm", "test-vllm-cpu")
"""The make targets CI runs, in order (``test-all``: make test, test-e2e and test-cdm in one
pytest session)."""
BACKGROUND = {"test-vllm": "vllm-env", "test-vllm-cpu": "vllm-cpu-env"}
"""Target -> the environment build it waits for. The builds are mostly download and disk: they
start with CI, beside the CPU-bound targets."""
LOG_TAIL = 60

SUMMARY = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [0-9.]+s")
"""pytest's closing line: ``14490 passed, 3 skipped, 2 deselected in 643.21s (0:10:43)``."""
COUNT = re.compile(r"(\d+) ([a-z]+)")


@dataclass
class TargetTiming:
    """One make target's wall time and the tests its pytest sessions counted."""

    name: str
    seconds: float
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    status: int = 0


def count_tests(output: str) -> tuple[int, int, int, int]:
    """(passed, failed, skipped, sessions) summed over every pytest closing line of ``output``;
    failed includes errors."""
    passed = failed = skipped = sessions = 0
    for line in output.splitlines():
        match = SUMMARY.match(line.strip())
        if not match:
            continue
        sessions += 1
        for number, word in COUNT.findall(match.group(1)):
            if word == "passed":
                passed += int(number)
            elif word in ("failed", "error", "errors"):
                failed += int(number)
            elif word == "skipped":
                skipped += int(number)
    return passed, failed, skipped, sessions


@dataclass
class Build:
    """A make target running in the background, its output in ``log``."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    start: float
    ended: float = 0.0
    """When the build ended, noted by :attr:`watcher`: its row times the build, not the wait."""
    watcher: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self.watcher = threading.Thread(target=self._watch, daemon=True)
        self.watcher.start()

    def _watch(self) -> None:
        self.process.wait()
        self.ended = time.monotonic()

    def wait(self) -> TargetTiming:
        """Wait for the build; on failure print the tail of its log."""
        self.watcher.join()
        status = self.process.returncode
        seconds = self.ended - self.start
        if status:
            tail = self.log.read_text(errors="replace").splitlines()[-LOG_TAIL:]
            print(f"CI: make {self.name} (background) failed with status {status}; its log ends:")
            print("\n".join(tail))
        return TargetTiming(f"{self.name} (background)", round(seconds, 1), status=status)


def start_build(name: str, log_dir: Path) -> Build:
    log = log_dir / f"{name}.log"
    with log.open("wb") as kept:
        process = subprocess.Popen(["make", "--no-print-directory", name], cwd=ROOT,
                                   stdout=kept, stderr=subprocess.STDOUT, start_new_session=True)
    return Build(name, process, log, time.monotonic())


def run_target(name: str, log_dir: Path) -> TargetTiming:
    """``make NAME``, its output shown as it comes and kept in ``log_dir``."""
    log = log_dir / f"{name}.log"
    start = time.monotonic()
    with log.open("w") as kept, subprocess.Popen(
        ["make", "--no-print-directory", name], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, bufsize=1,
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            sys.stdout.write(line)
            kept.write(line)
    seconds = time.monotonic() - start
    passed, failed, skipped, sessions = count_tests(log.read_text(errors="replace"))
    status = process.returncode
    if status == 0 and sessions and not passed:
        print(f"CI: make {name} passed no test")
        status = 1
    return TargetTiming(name, round(seconds, 1), passed, failed, skipped, status)


def table(timings: list[TargetTiming], total_s: float) -> str:
    """The timing table as text."""
    rows = [("target", "seconds", "passed", "failed", "skipped")]
    rows += [(t.name + ("" if t.status == 0 else " (FAILED)"), f"{t.seconds:.0f}",
              str(t.passed), str(t.failed), str(t.skipped)) for t in timings]
    rows.append(("total", f"{total_s:.0f}", *(str(sum(getattr(t, k) for t in timings))
                                              for k in ("passed", "failed", "skipped"))))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def commit_id() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() or "unknown"


def write_record(timings: list[TargetTiming], total_s: float) -> Path:
    """Write ci-last.json atomically (a temporary file renamed over the old one)."""
    folder = cache_root()
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "commit": commit_id(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "total_s": round(total_s, 1),
        "targets": [{k: v for k, v in asdict(t).items() if k != "status"} for t in timings],
    }
    path = folder / "ci-last.json"
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        json.dump(record, out, indent=1)
        out.write("\n")
    os.replace(out.name, path)
    return path


def main() -> int:
    start = time.monotonic()
    timings: list[TargetTiming] = []
    with tempfile.TemporaryDirectory(prefix="evalsuite-ci-") as logs:
        builds = {target: start_build(build, Path(logs)) for target, build in BACKGROUND.items()}
        try:
            for name in TARGETS:
                if name in builds:
                    built = builds.pop(name).wait()
                    timings.append(built)
                    if built.status:
                        break
                timing = run_target(name, Path(logs))
                timings.append(timing)
                if timing.status:
                    break
        finally:
            for build in builds.values():  # CI stopped early: its builds' whole process groups
                with contextlib.suppress(ProcessLookupError):  # a build that had ended
                    os.killpg(build.process.pid, signal.SIGTERM)
                build.process.wait()
    total_s = time.monotonic() - start
    print("\nCI timing (wall seconds; tests as pytest counted them)")
    print(table(timings, total_s))
    print(f"written to {write_record(timings, total_s)}")
    failed = [t for t in timings if t.status]
    if failed:
        print(f"CI: make {failed[0].name} failed with status {failed[0].status}")
        return failed[0].status
    if not sum(t.passed for t in timings):
        print("CI: no test ran")
        return 1
    print("CI: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
