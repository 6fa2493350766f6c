"""Where the real DeepSeek engines find their weights, and the one error raised when they can't run.

Resolution order: the engine's ``model_path`` option (``--model-path``), then the engine's
environment variable, then the local Hugging Face cache. evalsuite never downloads weights:
the cache is read with ``local_files_only=True``, so ``HF_HUB_OFFLINE`` changes nothing here.

:func:`import_cause` reads an ImportError for what it says is wrong (a package that is not
installed, or a name an installed package lacks), so the engines can name the real cause.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EngineUnavailableError


@dataclass(frozen=True)
class WeightsSource:
    """Where one engine's checkpoint may come from."""

    engine: str
    repo_id: str
    env_var: str


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache folder, read from the environment at call time."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME")
    if not home:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
        home = os.path.join(xdg, "huggingface")
    return Path(home).expanduser() / "hub"


def weight_files(folder: Path) -> list[Path]:
    """The weight files of checkpoint ``folder``: its ``*.safetensors`` and ``*.bin``, by name."""
    return sorted([*folder.glob("*.safetensors"), *folder.glob("*.bin")])


def checkpoint_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable checkpoint folder (None when it looks complete)."""
    if not path.is_dir():
        return f"{str(path)!r} is not a directory"
    if not (path / "config.json").is_file():
        return f"{str(path)!r} has no config.json"
    if not weight_files(path):
        return f"{str(path)!r} has no *.safetensors or *.bin weight files"
    return None


def locate_weights(source: WeightsSource, model_path: str | os.PathLike[str] | None) -> Path:
    """The checkpoint folder for ``source``; EngineUnavailableError says what to set when none."""
    if model_path is not None:
        return _checked(Path(model_path).expanduser(), "model_path / --model-path")
    from_env = os.environ.get(source.env_var)
    if from_env:
        return _checked(Path(from_env).expanduser(), source.env_var)
    cached = _cached_snapshot(source.repo_id)
    if cached is not None and checkpoint_problem(cached) is None:
        return cached
    raise EngineUnavailableError(
        f"no weights for {source.repo_id}: pass --model-path DIR (engine option model_path), "
        f"or set {source.env_var}=DIR, or put the checkpoint in the Hugging Face cache "
        f"({hf_hub_cache()}, set by HF_HOME or HF_HUB_CACHE), e.g. with "
        f"`hf download {source.repo_id}` on a machine with network access"
    )


IDENTITY_FILES = (
    "config.json",
    "generation_config.json",
    "preprocessor_config.json",
    "processor_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)
"""Small files of a checkpoint that name what it is, hashed with its ``*.index.json`` files."""
FINGERPRINT_BLOCKS = 16
FINGERPRINT_BLOCK_BYTES = 1 << 16


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes, read in blocks."""
    with Path(path).open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def checkpoint_identity(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What identifies the checkpoint in folder ``path``, for run records.

    ``config_sha256``: SHA-256 over the name and bytes of each of :data:`IDENTITY_FILES` present
    and of every ``*.index.json`` (sorted by name). A fine-tune usually keeps all of those, so
    ``weights_fingerprint`` adds the weights themselves without reading gigabytes: SHA-256 over
    each ``*.safetensors`` / ``*.bin`` file's name, size and 16 blocks of 64 KiB at evenly
    spaced offsets (first and last block included).
    """
    folder = Path(path)
    if not folder.is_dir():  # a model loaded elsewhere
        return {"weights_path": str(path)}
    config = hashlib.sha256()
    named = [folder / name for name in IDENTITY_FILES] + sorted(folder.glob("*.index.json"))
    for file in sorted(f for f in named if f.is_file()):
        config.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    weights = hashlib.sha256()
    files = weight_files(folder)
    for file in files:
        size = file.stat().st_size
        weights.update(f"{file.name}\0{size}\0".encode())
        last = max(0, size - FINGERPRINT_BLOCK_BYTES)
        with file.open("rb") as handle:
            for index in range(FINGERPRINT_BLOCKS):
                handle.seek(last * index // (FINGERPRINT_BLOCKS - 1))
                weights.update(handle.read(FINGERPRINT_BLOCK_BYTES))
    return {
        "weights_path": str(folder.resolve()),
        "config_sha256": config.hexdigest(),
        "weights_fingerprint": weights.hexdigest() if files else None,
        "weight_files": len(files),
        "tokenizer": str(folder.resolve()),
    }


def cuda_problem(device: str) -> str | None:
    """Why ``device`` cannot be used (None when it can); only CUDA devices are checked."""
    if not device.startswith("cuda"):
        return None
    import torch

    if not torch.cuda.is_available():
        return (
            f"device {device!r} needs a CUDA GPU and torch {torch.__version__} sees none "
            "(run on a machine with an NVIDIA GPU and a CUDA build of torch, "
            "https://pytorch.org/get-started/locally/)"
        )
    return None


def require_runnable(
    source: WeightsSource,
    model_path: str | os.PathLike[str] | None,
    device: str,
    *,
    environment_problem: str | None = None,
) -> Path:
    """The checkpoint folder, after checking the environment, weights and device together.

    ``environment_problem`` is what the engine found missing from the Python environment, if
    anything. Every problem found goes into one EngineUnavailableError, so a user fixes them in
    one go.
    """
    problems = [environment_problem] if environment_problem else []
    location: Path | None = None
    try:
        location = locate_weights(source, model_path)
    except EngineUnavailableError as exc:
        problems.append(str(exc))
    device_issue = cuda_problem(device)
    if device_issue:
        problems.append(device_issue)
    if problems or location is None:
        raise EngineUnavailableError(
            f"engine {source.engine!r} cannot run here: " + "; and ".join(problems)
        )
    return location


# What transformers' check of a remote-code file's imports raises (dynamic_module_utils.py).
_MISSING_PACKAGES = re.compile(
    r"requires the following packages that were not found in your environment: ([^.]+)\."
)
_CANNOT_IMPORT_NAME = re.compile(r"cannot import name '([^']+)'")
# pip's name where it differs from the import name
PIP_NAMES = {"flash_attn": "flash-attn"}


@dataclass(frozen=True)
class ImportCause:
    """What an ImportError says is wrong.

    ``missing``: top-level modules that are not installed. ``absent``: a module or name
    (``package.module.Name``) that an installed package lacks, i.e. a version problem of
    ``package``. Both empty when the error says neither.
    """

    missing: tuple[str, ...] = ()
    absent: str | None = None

    @property
    def package(self) -> str | None:
        """The installed package that lacks :attr:`absent`."""
        return self.absent.partition(".")[0] if self.absent else None


def import_cause(exc: ImportError) -> ImportCause:
    """Read ``exc`` (its ``name`` and message) for the module or name it could not import."""
    listed = _MISSING_PACKAGES.search(str(exc))
    if listed:
        return ImportCause(missing=tuple(name.strip() for name in listed.group(1).split(",")))
    if not exc.name:
        return ImportCause()
    top = exc.name.partition(".")[0]
    name = _CANNOT_IMPORT_NAME.search(str(exc))
    if name:  # ``from module import Name``: the module imported, the name is not in it
        return ImportCause(absent=f"{exc.name}.{name.group(1)}")
    if isinstance(exc, ModuleNotFoundError):
        if top == exc.name or importlib.util.find_spec(top) is None:
            return ImportCause(missing=(top,))
        return ImportCause(absent=exc.name)  # an installed package lacks this submodule
    return ImportCause()


def pip_install(modules: Sequence[str]) -> str:
    """The pip command that installs the packages providing ``modules``."""
    return "pip install " + " ".join(PIP_NAMES.get(module, module) for module in modules)


def _checked(path: Path, given_by: str) -> Path:
    problem = checkpoint_problem(path)
    if problem:
        raise EngineUnavailableError(f"{given_by} points to an unusable checkpoint: {problem}")
    return path


def _cached_snapshot(repo_id: str) -> Path | None:
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(repo_id, cache_dir=hf_hub_cache(), local_files_only=True)
    except (OSError, ValueError):  # LocalEntryNotFoundError is an OSError; bad ids a ValueError
        return None
    return Path(folder)
