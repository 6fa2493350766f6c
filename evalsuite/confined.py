"""The limits of the external programs that read a model's output (formulas, tables).

A prediction is untrusted input: TeX given ``\\input{/etc/passwd}``, ``\\openin`` or
``\\openout`` of any path would read or write it with the distribution's defaults (Debian's
``openin_any = a``). Every TeX run on a formula therefore gets:

* ``-no-shell-escape`` (``\\write18`` never runs a command) and ``shell_escape = f``;
* kpathsea's paranoid modes, ``openin_any = openout_any = p``: no absolute path, no ``..``
  component and no dot file, for reading as for writing, except below ``TEXMFOUTPUT``, which is
  the run's own folder; the TeX installation's files are still found through its search paths;
* a private ``TEXMFVAR`` inside the run's folder (no user cache written or read);
* a limit on the size of any file the run writes (``RLIMIT_FSIZE``; past it the run is killed
  and the side fails), beside each caller's time limit.

LaTeXML (OmniDocBench's LaTeX tables) has no such modes: it is started with a binding of the
suite's own preloaded (``confined_latexml.ltxml``): a file it finds for the document must
resolve (links followed) below the run's folder, the TeX tree or LaTeXML's installation; a name
with a ``..`` component or a leading ``-`` (which kpsewhich would take as an option) is refused
before any lookup, and no source is read from a URL.

Set through the environment and the command line only: no system file is read differently or
changed.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

TEX_ARGUMENTS = ("-no-shell-escape",)
"""Command-line arguments every TeX run on untrusted input gets."""
TEX_FILE_LIMIT_BYTES = 64 * 2**20
"""Largest file a TeX run may write: a formula's PDF and log are a few hundred kilobytes."""


def tex_environment(work: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default this process's environment) with TeX confined to the run folder
    ``work``: paranoid reading and writing, no shell escape, ``TEXMFOUTPUT`` and a private
    ``TEXMFVAR`` there."""
    environment = dict(os.environ if base is None else base)
    environment.update(
        openin_any="p",
        openout_any="p",
        shell_escape="f",
        TEXMFOUTPUT=str(work),
        TEXMFVAR=str(work / ".texmf-var"),
    )
    return environment


LATEXML_BINDING = Path(__file__).with_name("confined_latexml.ltxml")
"""The LaTeXML binding that confines a run's file lookups (see the module's docstring)."""


@functools.cache
def tex_tree_roots() -> tuple[str, ...]:
    """The folders of kpathsea's ``TEXMF`` (the TeX installation, system and user trees); empty
    where kpsewhich is missing."""
    kpsewhich = shutil.which("kpsewhich")
    if kpsewhich is None:
        return ()
    try:
        found = subprocess.run([kpsewhich, "-var-value=TEXMF"], capture_output=True, text=True,
                               timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    parts = (part.strip().lstrip("!") for part in found.strip().strip("{}").split(","))
    return tuple(part for part in (p.strip("{}") for p in parts) if part.startswith("/"))


def latexml_arguments() -> list[str]:
    """The latexmlc arguments of a confined run: the suite's binding, preloaded."""
    return [f"--preload={LATEXML_BINDING}"]


def latexml_environment(work: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """:func:`tex_environment` of ``work`` with the binding's roots: ``work`` and the TeX tree
    (:func:`tex_tree_roots`)."""
    environment = tex_environment(work, base)
    environment["EVALSUITE_LATEXML_ROOTS"] = ":".join([str(work), *tex_tree_roots()])
    return environment


def file_size_limit(max_bytes: int = TEX_FILE_LIMIT_BYTES) -> Callable[[], None]:
    """A ``preexec_fn`` that caps every file the child writes at ``max_bytes`` (the child gets
    SIGXFSZ past it)."""
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return apply
