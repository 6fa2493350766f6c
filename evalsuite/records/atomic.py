"""Atomic file replacement: readers see the old file or the new one, never a half-written one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

TEMPORARY = ".tmp"


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder + os.replace.

    Creates missing parent folders; the file gets the permissions a plain ``open`` would give it
    (0666 less the umask), not mkstemp's private 0600. Returns the path written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMPORARY)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """``text`` as UTF-8 (newlines as written) with :func:`atomic_write_bytes`."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike[str], data: Any, *, indent: int | None = 2) -> Path:
    """``data`` as JSON (UTF-8, no NaN or infinity) written with :func:`atomic_write_text`."""
    text = json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"
    return atomic_write_text(path, text)


def remove_stale_temporaries(path: str | os.PathLike[str]) -> None:
    """Delete temporary files a killed writer of ``path`` left behind.

    Call it only while holding the lock every writer of ``path`` takes: then no temporary file of
    ``path`` belongs to a live writer.
    """
    target = Path(path)
    for stale in target.parent.glob(f".{target.name}.*{TEMPORARY}"):
        stale.unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
