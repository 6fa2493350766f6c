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
  and the side fails), beside each caller's time limit;
* where the kernel has Landlock (Linux 5.13+), a file-system sandbox (:func:`confinement`):
  the process and its children may read and run only the system and TeX trees and the few files
  the caller names, and read and write only the run's folder; TCP (ABI 4+) is refused. kpathsea's
  modes govern ``\\input`` and ``\\openin``, but TeX's primitives that open files directly
  (pdfTeX's ``\\pdfobj file`` and ``\\pdfmapfile``, XeTeX's ``\\XeTeXpicfile``, a font given by
  path) bypass them; the sandbox stops those too. Ghostscript, which reads the PDF TeX wrote,
  runs in the same sandbox beside its own ``-dSAFER``. Where Landlock is missing the kpathsea
  limits still hold and :func:`landlock_abi` is 0 (the suite's tests of the sandbox then fail).

LaTeXML (OmniDocBench's LaTeX tables) has no such modes: it is started with a binding of the
suite's own preloaded (``confined_latexml.ltxml``): a file it finds for the document must
resolve (links followed) below the run's folder, the TeX tree or LaTeXML's installation; a name
with a ``..`` component or a leading ``-`` (which kpsewhich would take as an option) is refused
before any lookup, and no source is read from a URL.

The other programs that read a model's output: CDM v1.5's normaliser (Node.js) gets the formula
on its standard input, as data to KaTeX's parser, which reaches no file or network API, under a
time limit; olmOCR-bench's equations are rendered by KaTeX in Chromium on an ``about:blank`` page
taken offline (``evalsuite.render.katex``).

Set through the environment, the command line and the kernel's per-process sandbox only: no
system file is read differently or changed.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from evalsuite.errors import EvalsuiteError

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


# Landlock's system calls (the same numbers on every architecture) and its constants, from
# <linux/landlock.h>.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1, 1 << 1, 1 << 2, 1 << 3
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
"""Every file-system right the kernel's ABI knows (ABI 2 adds REFER, 3 TRUNCATE, 5 IOCTL_DEV)."""
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_FILE_ONLY_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | (1 << 14) | (1 << 15)
"""The rights a rule on a file (not a folder) may carry: execute, write, read, truncate, ioctl."""

SYSTEM_READS = (
    "/usr", "/etc/texmf", "/etc/fonts", "/etc/ld.so.cache", "/etc/papersize",
    "/etc/ghostscript", "/etc/localtime", "/var/lib/texmf", "/var/lib/ghostscript",
    "/var/cache/fontconfig",
)
"""What every confined run may read (and run): programs, libraries, the TeX tree and its
configuration, fonts and their caches, Ghostscript's resources. Missing ones are left out."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom")
"""Devices a confined run may open for reading and writing."""


SANDBOXED_PROGRAMS = ("pdflatex", "xelatex", "xdvipdfmx", "kpsewhich", "gs")
"""Programs whose installation folders (found on PATH, links followed) every confined run may
read and run, wherever they are installed (``/usr/local/texlive``, ``/opt``, ...)."""


@functools.cache
def program_roots() -> tuple[str, ...]:
    """The folder above each :data:`SANDBOXED_PROGRAMS` binary's folder: ``/usr`` for
    ``/usr/bin/gs``, TeX Live's ``bin`` for its ``bin/ARCH/pdflatex``."""
    found = (shutil.which(name) for name in SANDBOXED_PROGRAMS)
    return tuple(sorted({str(Path(path).resolve().parent.parent) for path in found if path}))


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing or disabled."""
    try:
        version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0),
                                  ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (AttributeError, OSError):
        return 0
    return max(int(version), 0)


class ConfinementError(EvalsuiteError, OSError):
    """The kernel refused a Landlock call it had announced (the sandbox could not be built)."""


def _fs_rights(abi: int) -> int:
    return _FS_RIGHTS_BY_ABI[max(known for known in _FS_RIGHTS_BY_ABI if known <= abi)]


def _add_rule(ruleset: int, path: str, rights: int) -> None:
    """Allow ``rights`` below ``path`` (a file gets only the file rights); missing paths are
    skipped."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_ONLY_RIGHTS
        rule = _PathBeneathAttr(rights, fd)
        if _libc().syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            errno = ctypes.get_errno()
            raise ConfinementError(errno, f"landlock_add_rule({path}): {os.strerror(errno)}")
    finally:
        os.close(fd)


def _ruleset(work: Path, reads: Iterable[str | Path], writes: Iterable[str | Path], abi: int
             ) -> int:
    """A Landlock ruleset (its file descriptor): everything below ``work`` and ``writes``,
    reading and running :data:`SYSTEM_READS`, the TeX tree and ``reads``, the devices; no TCP."""
    every = _fs_rights(abi)
    attr = _RulesetAttr(every, _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 4 else ctypes.sizeof(ctypes.c_uint64)
    ruleset = _libc().syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        errno = ctypes.get_errno()
        raise ConfinementError(errno, f"landlock_create_ruleset: {os.strerror(errno)}")
    try:
        for path in (*SYSTEM_READS, *program_roots(), *tex_tree_roots(), *map(str, reads)):
            _add_rule(ruleset, path, _EXECUTE | _READ_FILE | _READ_DIR)
        for path in DEVICES:
            _add_rule(ruleset, path, _READ_FILE | _WRITE_FILE)
        for path in (str(work), *map(str, writes)):
            _add_rule(ruleset, path, every)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


@contextlib.contextmanager
def confinement(
    work: Path,
    reads: Iterable[str | Path] = (),
    writes: Iterable[str | Path] = (),
    max_bytes: int = TEX_FILE_LIMIT_BYTES,
    env: Mapping[str, str] | None = None,
) -> Iterator[Callable[[], None]]:
    """A ``preexec_fn`` for a program run on untrusted input in ``work``: files it writes capped
    at ``max_bytes`` and, where the kernel has Landlock, reading and running limited to the
    system trees (:data:`SYSTEM_READS`, :func:`program_roots`, the TeX tree), ``reads`` and the
    libraries the ``LD_PRELOAD`` of ``env`` (the child's environment, default ours) names,
    writing to ``work`` and ``writes``, no TCP; inherited by its children and irrevocable. The
    ruleset is built here, in the parent; the child only applies it."""
    limit = file_size_limit(max_bytes)
    abi = landlock_abi()
    if abi == 0:
        yield limit
        return
    preloaded = (os.environ if env is None else env).get("LD_PRELOAD", "").replace(":", " ")
    ruleset = _ruleset(work, [*reads, *preloaded.split()], writes, abi)
    syscall = _libc().syscall
    prctl = _libc().prctl

    def apply() -> None:
        limit()
        if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or syscall(_RESTRICT_SELF, ruleset, 0):
            # Popen raises SubprocessError in the parent: never run the program unconfined
            raise ConfinementError(ctypes.get_errno(), "landlock_restrict_self failed")

    try:
        yield apply
    finally:
        os.close(ruleset)
