"""Commands the plugin prints for the user to run, built from the user's own invocation (its
interpreter, options, plugins and paths) so that pasting them in the same shell works."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest


def rerun_command(config: pytest.Config, nodeid: str, extra: Sequence[str] = ()) -> str:
    """The invocation that ran ``nodeid``, selecting only it, with ``extra`` appended.

    The user's options are kept as given; the positional test paths are replaced by the test's
    own path, written relative to the directory pytest was started in.
    """
    params = config.invocation_params
    positional = {str(arg) for arg in config.args}
    kept = [str(arg) for arg in params.args if str(arg) not in positional]
    path, sep, rest = nodeid.partition("::")
    target = os.path.relpath(config.rootpath / path, params.dir) + sep + rest
    return shlex.join([_python(), "-m", "pytest", *kept, target, *extra])


def evalsuite_command(*args: str | Path) -> str:
    """``evalsuite ARGS`` run with the interpreter of this session (the same installation)."""
    return shlex.join([_python(), "-m", "evalsuite", *(str(arg) for arg in args)])


def _python() -> str:
    return sys.executable or "python"
