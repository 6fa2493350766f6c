"""Cheaper PNG writing for Ghostscript: a preloaded shim that sets zlib level 1 and no row filter
on every PNG libpng writes for it (png_fast_write.c).

PNG is lossless, so the decoded pixels are those of Ghostscript's default PNG writer; only the
encoding (about 80 % of pngalpha's time on a mostly white 200 dpi page) gets cheaper. The shim is
compiled once with the C compiler and libpng headers; without them, or where Ghostscript does
not link libpng dynamically, Ghostscript runs unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from evalsuite.metrics.cdm.common.toolchain import default_cache_dir

SOURCE = Path(__file__).with_name("png_fast_write.c")


@functools.cache
def shim_path() -> Path | None:
    """The compiled shim (built into the rendering cache's folder on first use); None where it
    cannot be built."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    source = SOURCE.read_bytes()
    target = default_cache_dir() / f"png_fast_write-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".so")
        os.close(fd)
    except OSError:  # no writable cache: Ghostscript runs unchanged
        return None
    try:
        built = subprocess.run(
            [compiler, "-O2", "-shared", "-fPIC", "-o", tmp, str(SOURCE), "-ldl", "-lpng16"],
            capture_output=True, check=False, timeout=60,
        )
        if built.returncode != 0:
            return None
        os.replace(tmp, target)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


def ghostscript_env() -> dict[str, str] | None:
    """Environment for a Ghostscript process with the shim preloaded (None: run it as is)."""
    shim = shim_path()
    if shim is None:
        return None
    preload = " ".join(filter(None, [str(shim), os.environ.get("LD_PRELOAD")]))
    return {**os.environ, "LD_PRELOAD": preload, "PNGFAST_LEVEL": "1"}
