"""``reports/<run-id>/results.json``: what one benchmark run produced, in the suite's own schema.

Layout (documented field by field in ``schema/results.schema.json``)::

    {"schema_version": 1,
     "run": {run metadata: id, UTC time, git commit, engines, versions, device, seed, command},
     "records": [{"benchmark", "engine", "parameter", "params",
                  "metrics": {name: {"value", "n", "ci_low", "ci_high", "kind", "direction"}},
                  "samples": [{"sample_id", "scores", "error", "prediction" | "prediction_path",
                               "reference" | "reference_path", "details"}]}]}

A prediction or reference longer than ``text_limit`` characters is written to a side file under
``<run-dir>/samples/`` and replaced by its path relative to the run folder.

Under pytest-xdist every worker writes its records to ``<run-dir>/parts/<worker>.json``
(:func:`write_part`); the controller then calls :func:`finalize_run`, which merges the parts with
its own records, writes ``results.json``, appends the run to ``history.jsonl`` and removes the
parts. Every file is replaced atomically.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import secrets
import shlex
import subprocess
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

from evalsuite.reports.atomic import atomic_write_text
from evalsuite.reports.model import BenchmarkRecord, SampleRecord

SCHEMA_VERSION = 1
RESULTS_FILE = "results.json"
PARTS_DIR = "parts"
SAMPLES_DIR = "samples"
TEXT_LIMIT = 4000
"""Characters of a prediction or reference kept inline in results.json; longer go to a file."""

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]{0,99}$")
_TEXT_FIELDS = ("prediction", "reference")
_VERSIONED_PACKAGES = ("torch", "transformers")


@dataclass
class RunMetadata:
    """Who, what, where and when of one run. ``created_utc`` is ISO 8601 with a ``Z`` suffix."""

    run_id: str
    created_utc: str
    git_commit: str | None = None
    git_dirty: bool | None = None
    engines: list[str] = field(default_factory=list)
    model_revisions: dict[str, str | None] = field(default_factory=dict)
    modes: list[str] = field(default_factory=list)
    versions: dict[str, str | None] = field(default_factory=dict)
    device: str | None = None
    seed: int | None = None
    command: str | None = None
    duration_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

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


@dataclass
class RunResults:
    """A parsed results.json: the run's metadata and its records (texts loaded from side files)."""

    metadata: RunMetadata
    records: list[BenchmarkRecord]


def new_run_id(now: datetime | None = None) -> str:
    """A sortable, unique run id: UTC start time plus 6 random hex digits, e.g.
    ``20251122T035012Z-3fa9c1``."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


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


def package_versions() -> dict[str, str | None]:
    """Versions of Python, evalsuite, torch and transformers (read without importing them)."""
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
    engines: Sequence[str] = (),
    model_revisions: Mapping[str, str | None] | None = None,
    modes: Sequence[str] = (),
    seed: int | None = None,
    device: str | None = None,
    command: Sequence[str] | str | None = None,
    repo_dir: str | os.PathLike[str] | None = None,
    created: datetime | None = None,
    extra: Mapping[str, Any] | None = None,
) -> RunMetadata:
    """Gather a run's metadata; what is not given is detected (git, versions, device, argv)."""
    if isinstance(engines, str) or isinstance(modes, str):
        raise TypeError("engines and modes must be sequences of names, not a single str")
    commit, dirty = git_state(repo_dir)
    argv = sys.argv if command is None else command
    return RunMetadata(
        run_id=require_run_id(run_id if run_id is not None else new_run_id(created)),
        created_utc=utc_timestamp(created),
        git_commit=commit,
        git_dirty=dirty,
        engines=list(engines),
        model_revisions=dict(model_revisions or {}),
        modes=list(modes),
        versions=package_versions(),
        device=device if device is not None else detect_device(),
        seed=seed,
        command=argv if isinstance(argv, str) else shlex.join(argv),
        extra=dict(extra or {}),
    )


def results_path(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / RESULTS_FILE


def part_path(run_dir: str | os.PathLike[str], worker_id: str) -> Path:
    """Where an xdist worker (``gw0``, ...; ``master`` for a serial run) keeps its records."""
    return Path(run_dir) / PARTS_DIR / f"{_safe_name(worker_id)}.json"


def write_part(
    run_dir: str | os.PathLike[str], worker_id: str, records: Iterable[BenchmarkRecord]
) -> Path:
    """Write one worker's records (texts inline) to ``parts/<worker>.json``, atomically."""
    records = _require_records(records)
    payload = {
        "schema_version": SCHEMA_VERSION,
        "worker": worker_id,
        "records": [record.to_dict() for record in records],
    }
    return atomic_write_text(part_path(run_dir, worker_id), _dump(payload, "records"))


def read_parts(run_dir: str | os.PathLike[str]) -> list[BenchmarkRecord]:
    """All records of every ``parts/*.json`` of a run, in worker-name order (not yet merged)."""
    records: list[BenchmarkRecord] = []
    for path in sorted((Path(run_dir) / PARTS_DIR).glob("*.json")):
        data = _load_json(path)
        records.extend(_records_from(data.get("records"), path))
    return records


def remove_parts(run_dir: str | os.PathLike[str]) -> None:
    """Delete ``parts/`` once its records are in results.json."""
    parts = Path(run_dir) / PARTS_DIR
    for path in parts.glob("*.json"):
        path.unlink(missing_ok=True)
    if parts.is_dir() and not any(parts.iterdir()):
        parts.rmdir()


def merge_records(records: Iterable[BenchmarkRecord]) -> list[BenchmarkRecord]:
    """Join records of the same benchmark x engine x parameter and sort them by that key.

    Records sharing a key (one test's samples spread over workers) are joined: samples
    concatenated and sorted by id, metrics and params united. A metric reported twice with
    different values raises ValueError, since its aggregate cannot be rebuilt here.
    """
    merged: dict[tuple[str, str, str], BenchmarkRecord] = {}
    for record in _require_records(records):
        key = (record.benchmark, record.engine, record.parameter)
        if key not in merged:
            merged[key] = BenchmarkRecord(
                record.benchmark, record.engine, record.parameter,
                dict(record.metrics), list(record.samples), dict(record.params),
            )
            continue
        into = merged[key]
        for name, summary in record.metrics.items():
            if name in into.metrics and into.metrics[name] != summary:
                raise ValueError(
                    f"records: metric {name!r} of {'/'.join(key)} was reported twice with "
                    "different values; aggregate it once, over all samples"
                )
            into.metrics[name] = summary
        into.samples.extend(record.samples)
        into.params.update(record.params)
    for record in merged.values():
        record.samples.sort(key=lambda sample: sample.sample_id)
    return [merged[key] for key in sorted(merged)]


def write_results(
    run_dir: str | os.PathLike[str],
    metadata: RunMetadata,
    records: Iterable[BenchmarkRecord],
    *,
    text_limit: int = TEXT_LIMIT,
) -> Path:
    """Write ``<run_dir>/results.json`` (and side files for long texts) atomically; return its path.

    Records are merged and sorted (:func:`merge_records`), so a parallel run writes the same file
    as a serial one. Non-finite numbers raise ValueError naming where they are.
    """
    if not isinstance(metadata, RunMetadata):
        raise TypeError(f"metadata must be RunMetadata, got {type(metadata).__name__}")
    if isinstance(text_limit, bool) or not isinstance(text_limit, int) or text_limit < 0:
        raise ValueError(f"text_limit must be a non-negative int, got {text_limit!r}")
    run_dir = Path(run_dir)
    merged = merge_records(records)
    payload = {
        "schema_version": SCHEMA_VERSION,
        "run": metadata.to_dict(),
        "records": [_record_payload(record, run_dir, text_limit) for record in merged],
    }
    return atomic_write_text(results_path(run_dir), _dump(payload, "results"))


def read_results(path: str | os.PathLike[str]) -> RunResults:
    """Parse a results.json (or the run folder holding it); side-file texts are read back.

    A side file that is gone leaves its text None, with a warning.
    """
    path = Path(path)
    if path.is_dir():
        path = results_path(path)
    data = _load_json(path)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path}: unsupported schema_version {data.get('schema_version')!r}")
    for sample_list in (r.get("samples", []) for r in data.get("records") or []):
        for sample in sample_list:
            _inline_side_files(sample, path.parent)
    return RunResults(
        metadata=RunMetadata.from_dict(data.get("run") or {}),
        records=_records_from(data.get("records"), path),
    )


def finalize_run(
    run_dir: str | os.PathLike[str],
    metadata: RunMetadata,
    records: Iterable[BenchmarkRecord] = (),
    *,
    history_path: str | os.PathLike[str] | None = None,
    text_limit: int = TEXT_LIMIT,
) -> Path:
    """End of session (the xdist controller, or the only process): merge ``parts/`` with
    ``records``, write results.json, append the run to ``history_path`` when given, remove the
    parts. Returns the results.json path."""
    from evalsuite.reports.history import append_history

    run_dir = Path(run_dir)
    merged = merge_records([*read_parts(run_dir), *records])
    written = write_results(run_dir, metadata, merged, text_limit=text_limit)
    if history_path is not None:
        relative = os.path.relpath(written, Path(history_path).parent)
        append_history(history_path, metadata, merged, results_path=Path(relative).as_posix())
    remove_parts(run_dir)
    return written


def _record_payload(record: BenchmarkRecord, run_dir: Path, text_limit: int) -> dict[str, Any]:
    payload = record.to_dict()
    folder = Path(SAMPLES_DIR).joinpath(
        *(_safe_name(part) for part in (record.benchmark, record.engine, record.parameter))
    )
    for sample in payload["samples"]:
        for name in _TEXT_FIELDS:
            text = sample.get(name)
            if isinstance(text, str) and len(text) > text_limit:
                relative = folder / f"{_safe_name(sample['sample_id'])}.{name}.txt"
                atomic_write_text(run_dir / relative, text)
                sample[name] = None
                sample[f"{name}_path"] = relative.as_posix()
    return payload


def _inline_side_files(sample: dict[str, Any], run_dir: Path) -> None:
    for name in _TEXT_FIELDS:
        relative = sample.pop(f"{name}_path", None)
        if relative is None:
            continue
        side_file = run_dir / relative
        try:
            sample[name] = side_file.read_text(encoding="utf-8")
        except OSError as error:
            warnings.warn(f"{side_file}: cannot read the {name} text ({error})", stacklevel=3)


def _records_from(raw: Any, source: Path) -> list[BenchmarkRecord]:
    if not isinstance(raw, list):
        raise ValueError(f"{source}: 'records' must be a list, got {type(raw).__name__}")
    try:
        return [BenchmarkRecord.from_dict(item) for item in raw]
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{source}: malformed record ({error})") from error


def _require_records(records: Iterable[BenchmarkRecord]) -> list[BenchmarkRecord]:
    if isinstance(records, BenchmarkRecord):
        raise TypeError("records must be an iterable of BenchmarkRecord, got one record")
    records = list(records)
    for index, record in enumerate(records):
        if not isinstance(record, BenchmarkRecord):
            raise TypeError(
                f"records[{index}] must be BenchmarkRecord, got {type(record).__name__}"
            )
        for sample_index, sample in enumerate(record.samples):
            if not isinstance(sample, SampleRecord):
                raise TypeError(
                    f"records[{index}].samples[{sample_index}] must be SampleRecord, "
                    f"got {type(sample).__name__}"
                )
    return records


def _dump(payload: Any, name: str) -> str:
    _require_finite(payload, name)
    return json.dumps(payload, ensure_ascii=False, indent=1, allow_nan=False) + "\n"


def _require_finite(value: Any, where: str) -> None:
    """JSON has no NaN or infinity: name the first place holding one."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} is {value!r}; results hold finite numbers or null")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _require_finite(item, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _require_finite(item, f"{where}[{index}]")


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from error
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _safe_name(name: str) -> str:
    """``name`` if it is a safe file name, else a sanitised form plus a hash keeping it unique."""
    if _SAFE_NAME.match(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9._=+-]+", "_", name).strip("._")[:80] or "x"
    return f"{cleaned}-{hashlib.sha1(name.encode('utf-8')).hexdigest()[:8]}"
