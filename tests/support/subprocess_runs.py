"""Running pytest and evalsuite in subprocesses, as users run them, from this repository's root.

Every child is a session of its own: xdist's worker marker is dropped from its environment, and
so is ``EVALSUITE_DATA`` unless asked for (the benches then read the project's fixtures only).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.support.paths import REPOSITORY as REPO

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="tesseract binary absent (apt-get install tesseract-ocr)",
)


def child_env(*, data: bool = False, recordings: bool = True, **values: str) -> dict[str, str]:
    """This process's environment for a child run, unbuffered, without ``PYTEST_XDIST_WORKER``,
    without ``EVALSUITE_DATA`` unless ``data`` and ``EVALSUITE_RECORDINGS`` unless
    ``recordings``; ``values`` set on top."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    if not data:
        env.pop("EVALSUITE_DATA", None)
    if not recordings:
        env.pop("EVALSUITE_RECORDINGS", None)
    env.update(values)
    return env


def pytest_command(*args: str | Path) -> list[str]:
    """``python -m pytest ARGS``, in file order (no random-order plugin)."""
    # no random order; no hypothesis plugin (~1 s) and no anyio plugin (its import of trio,
    # ~0.15 s): a child runs benches, which use neither
    return [sys.executable, "-m", "pytest", *map(str, args), "-p", "no:randomly",
            "-p", "no:hypothesispytest", "-p", "no:anyio"]


def run_pytest(
    *args: str | Path, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``pytest ARGS`` in the repository, to its end (environment: ``child_env()`` unless
    given); stdout and stderr captured."""
    return subprocess.run(
        pytest_command(*args), cwd=REPO, env=dict(env or child_env()), capture_output=True,
        text=True, timeout=timeout,
    )


def run_evalsuite(
    *args: str | Path | int, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """The ``evalsuite`` command with ``args`` in the repository, to its end (environment: this
    process's unless given); stdout and stderr captured."""
    return subprocess.run(
        [sys.executable, "-m", "evalsuite", *map(str, args)], cwd=REPO,
        env=None if env is None else dict(env), capture_output=True, text=True, timeout=timeout,
    )
