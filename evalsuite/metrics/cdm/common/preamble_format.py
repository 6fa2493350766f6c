"""A pdflatex format with a template's preamble already loaded (mylatexformat), built once per
template and paper into the rendering cache's folder.

A document whose preamble is the dumped one compiles with ``-fmt=<format>``: TeX skips its
preamble and starts from the state dumped at ``\\begin{document}``, so loading the class and
packages (about a quarter of a one-formula run) is paid once. Without mylatexformat, or where
the format cannot be built, pdflatex runs with its own format as before.

A published format is never replaced: a confined run is granted reading the file that was at
its path when its sandbox was built (Landlock rules hold inodes), so a second build renamed
over it while the run starts would make the run's format unreadable and its formula fail.
Builds in one process are serialised; across processes the first format published wins.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from evalsuite.metrics.cdm.common.toolchain import (
    default_cache_dir,
    program_paths,
    toolchain_fingerprint,
)

_BUILDING = threading.Lock()


@functools.cache
def format_for(preamble: str) -> str | None:
    """``-fmt`` argument (path without ``.fmt``) of a format holding ``preamble`` (the document
    up to and including ``\\begin{document}``); None where it cannot be built."""
    with _BUILDING:
        return _built(program_paths()["pdflatex"], preamble, format_path(preamble))


def format_path(preamble: str) -> Path:
    """Where the format of ``preamble`` is kept: the rendering cache's folder, named by the
    toolchain and the preamble."""
    key = hashlib.sha256(f"{toolchain_fingerprint()}\n{preamble}".encode()).hexdigest()[:20]
    return default_cache_dir() / f"cdm-preamble-{key}.fmt"


def _built(pdflatex: str, preamble: str, target: Path) -> str | None:
    """``target`` (without ``.fmt``), built from ``preamble`` and published unless a format is
    already there; None where it cannot be built."""
    if target.is_file():
        return str(target.with_suffix(""))
    with tempfile.TemporaryDirectory(prefix="cdm_fmt_") as tmp:
        work = Path(tmp)
        (work / "pre.tex").write_text(preamble + "\\end{document}\n", encoding="utf-8")
        try:
            built = subprocess.run(
                [pdflatex, "-ini", "-interaction=nonstopmode", "-jobname=fmt", "&pdflatex",
                 "mylatexformat.ltx", "pre.tex"],
                cwd=work, capture_output=True, check=False, timeout=120,
            )
            if built.returncode != 0 or not (work / "fmt.fmt").is_file():
                return None
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, partial = tempfile.mkstemp(dir=target.parent, suffix=".fmt.tmp")
            os.close(fd)
            shutil.copyfile(work / "fmt.fmt", partial)
            try:
                with contextlib.suppress(FileExistsError):  # unlike a rename, never replaces
                    os.link(partial, target)
            finally:
                os.unlink(partial)
        except (OSError, subprocess.TimeoutExpired):  # no writable cache: the plain preamble
            return None
    return str(target.with_suffix(""))


def format_of(document: str) -> str | None:
    """:func:`format_for` of a document's preamble (up to and including its
    ``\\begin{document}`` line)."""
    begin = "\\begin{document}\n"
    return format_for(document[: document.index(begin) + len(begin)])


def format_arguments(document: str) -> list[str]:
    """``[-fmt=...]`` for a document (its preamble's format), or [] where there is none."""
    found = format_of(document)
    return [f"-fmt={found}"] if found else []
