"""The programs each CDM version runs and the error when some are absent.

v1.6 typesets with pdflatex; v1.5 with xelatex and tokenizes with Node.js (the KaTeX normaliser,
located by ``v1_5.katex``); both rasterise with Ghostscript.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from evalsuite.errors import ToolUnavailableError

INSTALL_COMMAND = (
    "sudo make cdm-toolchain (in the evalsuite checkout; Debian packages listed in "
    "envs/cdm/apt-packages.txt)"
)
CACHE_ENV = "EVALSUITE_CDM_CACHE"
DEFAULT_VERSION = "1.6"
REQUIRED_PROGRAMS: dict[str, tuple[str, ...]] = {
    "1.5": ("xelatex", "gs", "node"),
    "1.6": ("pdflatex", "gs"),
}


class CdmToolchainUnavailableError(ToolUnavailableError):
    """CDM was asked for but a program its version runs is not on PATH."""


@functools.cache
def program_paths(version: str = DEFAULT_VERSION) -> dict[str, str]:
    """Path of each program CDM ``version`` runs; CdmToolchainUnavailableError naming the absent
    ones and the install command."""
    found = {name: shutil.which(name) for name in REQUIRED_PROGRAMS[version]}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise CdmToolchainUnavailableError(
            f"CDM v{version} needs {' and '.join(missing)} on PATH; install with: {INSTALL_COMMAND}"
        )
    return {name: path for name, path in found.items() if path is not None}


@functools.cache
def toolchain_fingerprint() -> str:
    """First version line of pdflatex and of Ghostscript: part of every rendering's cache key."""
    paths = program_paths()
    lines = []
    for name, flag in (("pdflatex", "--version"), ("gs", "--version")):
        out = subprocess.run(
            [paths[name], flag], capture_output=True, text=True, check=False, timeout=30
        )
        lines.append((out.stdout.strip().splitlines() or [""])[0])
    return " | ".join(lines)


def default_cache_dir() -> Path:
    """Where renderings are kept between runs: ``$EVALSUITE_CDM_CACHE``, else
    ``$XDG_CACHE_HOME/evalsuite/cdm`` (``~/.cache/evalsuite/cdm``)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(cache_home) / "evalsuite" / "cdm"
