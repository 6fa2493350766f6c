"""Run ``evalsuite serve`` in a subprocess: start it, wait for its ready line, stop it."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError

READY_LINE = re.compile(r"^evalsuite serve: .* on (?P<api_base>http://\S+/v1) \(max batch \d+\)$")


class ServeProcessError(EvalsuiteError, RuntimeError):
    """``evalsuite serve`` exited or stayed silent instead of becoming ready."""


@dataclass
class ServeProcess:
    """A running ``evalsuite serve``: its ``api_base`` and the process."""

    api_base: str
    process: subprocess.Popen[bytes]

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then wait (SIGKILL after ``timeout_s``); the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@contextlib.contextmanager
def serve_subprocess(
    engine: str,
    *,
    engine_options: Mapping[str, Any] | None = None,
    max_batch: int = 32,
    batch_wait_ms: float | None = None,
    mode: str | None = None,
    startup_timeout_s: float = 120.0,
) -> Iterator[ServeProcess]:
    """``evalsuite serve --engine ENGINE --port 0 ...`` (as ``python -m evalsuite.serving``) for
    the duration of the block.

    Raises :class:`ServeProcessError` with the server's stderr when it does not print its ready
    line within ``startup_timeout_s``. The server is stopped (SIGTERM) on leaving the block.
    """
    command = [
        sys.executable, "-m", "evalsuite.serving", "--engine", engine, "--port", "0",
        "--max-batch", str(max_batch),
    ]  # fmt: skip
    if batch_wait_ms is not None:
        command += ["--batch-wait-ms", str(batch_wait_ms)]
    if mode is not None:
        command += ["--mode", mode]
    for key, value in (engine_options or {}).items():
        command += ["--engine-option", f"{key}={json.dumps(value)}"]
    with tempfile.TemporaryDirectory(prefix="evalsuite-serve-") as folder:
        stdout_path, stderr_path = Path(folder) / "stdout", Path(folder) / "stderr"
        with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
            process = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        served = ServeProcess(
            _wait_until_ready(process, stdout_path, stderr_path, startup_timeout_s), process
        )
        try:
            yield served
        finally:
            served.stop()


def _wait_until_ready(
    process: subprocess.Popen[bytes], stdout: Path, stderr: Path, timeout_s: float
) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in stdout.read_text(errors="replace").splitlines():
            match = READY_LINE.match(line)
            if match:
                return match["api_base"]
        if process.poll() is not None:
            break
        time.sleep(0.05)
    else:
        process.kill()
        process.wait()
    tail = stderr.read_text(errors="replace").strip().splitlines()[-20:]
    raise ServeProcessError(
        f"evalsuite serve (exit status {process.returncode}) did not become ready within "
        f"{timeout_s:g} s:\n" + "\n".join(tail)
    )
