"""``reports/<run-id>/results.json``: what one benchmark run produced, in the suite's own schema.

Layout (documented field by field in ``schema/results.schema.json``)::

    {"schema_version": 2,
     "run": {run metadata: id, name, UTC time, git commit, engines and their details, data
             sources, versions, device, seed, command, duration, model calls},
     "records": [{"benchmark", "engine", "parameter", "data", "params",
                  "metrics": {name: {"value", "n", "ci_low", "ci_high", "kind", "direction"}},
                  "samples": [{"sample_id", "scores", "error", "prediction" | "prediction_path",
                               "reference" | "reference_path", "details"}]}]}

A prediction or reference longer than ``text_limit`` characters is written to a side file under
``<run-dir>/samples/`` and replaced by its path relative to the run folder.

Under pytest-xdist every worker writes its records to ``<run-dir>/parts/<worker>.json``
(:func:`write_part`); the controller then calls :func:`finalize_run`, which merges the parts with
its own records, writes ``results.json``, appends the run to ``history.jsonl`` and removes the
parts (see :mod:`evalsuite.records`). Every file is replaced atomically.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.records.atomic import atomic_write_text
from evalsuite.records.metadata import RunMetadata
from evalsuite.records.model import (
    SCHEMA_VERSION,
    BenchmarkRecord,
    merge_records,
    require_records,
)

RESULTS_FILE = "results.json"
PARTS_DIR = "parts"
SAMPLES_DIR = "samples"
TEXT_LIMIT = 4000
"""Characters of a prediction or reference kept inline in results.json; longer go to a file."""

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]{0,99}$")
_TEXT_FIELDS = ("prediction", "reference")


@dataclass
class RunResults:
    """A parsed results.json: the run's metadata and its records (texts loaded from side files)."""

    metadata: RunMetadata
    records: list[BenchmarkRecord]


def results_path(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / RESULTS_FILE


def part_path(run_dir: str | os.PathLike[str], worker_id: str) -> Path:
    """Where an xdist worker (``gw0``, ...; ``master`` for a serial run) keeps its records."""
    return Path(run_dir) / PARTS_DIR / f"{_safe_name(worker_id)}.json"


def write_part(
    run_dir: str | os.PathLike[str],
    worker_id: str,
    records: Iterable[BenchmarkRecord],
    info: Mapping[str, Any] | None = None,
) -> Path:
    """Write one worker's records (texts inline) and what it learnt about the run (``info``:
    engine details, data sources) to ``parts/<worker>.json``, atomically."""
    records = require_records(records)
    payload = {
        "schema_version": SCHEMA_VERSION,
        "worker": worker_id,
        "info": dict(info or {}),
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


def read_part_info(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The ``info`` of every ``parts/*.json`` of a run, in worker-name order."""
    return [
        dict(_load_json(path).get("info") or {})
        for path in sorted((Path(run_dir) / PARTS_DIR).glob("*.json"))
    ]


def remove_parts(run_dir: str | os.PathLike[str]) -> None:
    """Delete ``parts/`` once its records are in results.json."""
    parts = Path(run_dir) / PARTS_DIR
    for path in parts.glob("*.json"):
        path.unlink(missing_ok=True)
    if parts.is_dir() and not any(parts.iterdir()):
        parts.rmdir()


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


def _record_payload(record: BenchmarkRecord, run_dir: Path, text_limit: int) -> dict[str, Any]:
    payload = record.to_dict()
    folder = Path(SAMPLES_DIR).joinpath(
        *(_safe_name(part) for part in record.key)
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
