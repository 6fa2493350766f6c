"""``reports/history.jsonl``: one JSON line per run (metadata + aggregates, no samples).

Writers add a run under a file lock (``history.jsonl.lock``) by writing the old lines plus the
new one to a temporary file and renaming it over the history, so parallel workers and
simultaneous runs never interleave and a writer killed at any moment leaves either the old file
or the new one; the next writer deletes the temporary file a killed one left. (An in-place
append is not enough: the kernel may end a large ``write`` early when the process is killed,
leaving half a line.) A line that is not a run record (one cut short
by an older writer, or edited by hand) and one written by a newer evalsuite (a higher
``schema_version``) are skipped on reading with a :class:`HistoryWarning` naming the line; the
next append starts on a fresh line so it stays readable. Line layout:
``schema/history.schema.json``.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from evalsuite.records.atomic import atomic_write_bytes, remove_stale_temporaries
from evalsuite.records.metadata import RunMetadata
from evalsuite.records.model import SCHEMA_VERSION, BenchmarkRecord, merge_records

DEFAULT_HISTORY = Path("reports") / "history.jsonl"
LOCK_TIMEOUT_S = 120.0


class HistoryWarning(UserWarning):
    """A history line could not be read and was skipped."""


@dataclass
class HistoryEntry:
    """One run as history keeps it. ``records`` carry aggregates only (no samples);
    ``results_path`` locates the run's results.json relative to the history file."""

    metadata: RunMetadata
    records: list[BenchmarkRecord]
    results_path: str | None = None


def history_line(
    metadata: RunMetadata, records: Iterable[BenchmarkRecord], results_path: str | None = None
) -> str:
    """The JSON line (with its newline) for one run; samples are left out."""
    if not isinstance(metadata, RunMetadata):
        raise TypeError(f"metadata must be RunMetadata, got {type(metadata).__name__}")
    aggregates = []
    for record in merge_records(records):
        data = record.to_dict()
        del data["samples"]
        aggregates.append(data)
    payload = {
        "schema_version": SCHEMA_VERSION,
        "run": metadata.to_dict(),
        "results_path": results_path,
        "records": aggregates,
    }
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as error:
        raise ValueError(f"records of run {metadata.run_id} hold a non-finite number") from error
    return text + "\n"


def append_history(
    path: str | os.PathLike[str],
    metadata: RunMetadata,
    records: Iterable[BenchmarkRecord],
    *,
    results_path: str | None = None,
    timeout: float = LOCK_TIMEOUT_S,
) -> None:
    """Append one run to the history file, creating it (and its folder) when missing."""
    line = history_line(metadata, records, results_path).encode("utf-8")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{target}.lock", timeout=timeout):
        earlier = target.read_bytes() if target.exists() else b""
        if earlier and not earlier.endswith(b"\n"):
            earlier += b"\n"
        atomic_write_bytes(target, earlier + line)
        remove_stale_temporaries(target)


def read_history(path: str | os.PathLike[str]) -> list[HistoryEntry]:
    """Every readable run in file order; corrupt or truncated lines are skipped with a warning.

    Raises FileNotFoundError naming the file when it does not exist.
    """
    target = Path(path)
    if not target.is_file():
        raise FileNotFoundError(
            f"no run history at {target}; a benchmark run (make bench, or pytest benches) "
            "writes it"
        )
    entries = []
    with target.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entries.append(parse_history_line(line))
            except ValueError as error:
                cut = "" if line.endswith("\n") else " (truncated: no newline at its end)"
                warnings.warn(
                    f"{target}:{number}: skipping unreadable run record{cut}: {error}",
                    HistoryWarning,
                    stacklevel=2,
                )
    return entries


def parse_history_line(line: str) -> HistoryEntry:
    """Parse one history line; ValueError when it is not a complete, well-formed record."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error.msg} at column {error.colno})") from error
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise ValueError(
            f"schema_version {version} is newer than this evalsuite reads ({SCHEMA_VERSION}); "
            "upgrade evalsuite to read it"
        )
    if version != SCHEMA_VERSION:
        raise ValueError(f"unsupported schema_version {version!r}")
    raw_records = data.get("records")
    if not isinstance(raw_records, list):
        raise ValueError("'records' must be a list")
    try:
        metadata = RunMetadata.from_dict(data.get("run"))
        records = [BenchmarkRecord.from_dict(_without_samples(item)) for item in raw_records]
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"malformed run record ({error!r})") from error
    for record in records:
        for name, summary in record.metrics.items():
            if not _is_number(summary.value, allow_none=True) or not _is_count(summary.n):
                raise ValueError(f"metric {name!r} of {record.benchmark}: malformed value or n")
    results_path = data.get("results_path")
    return HistoryEntry(metadata, records, results_path if isinstance(results_path, str) else None)


def _without_samples(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise TypeError(f"a record must be an object, got {type(item).__name__}")
    return {key: value for key, value in item.items() if key != "samples"}


def _is_number(value: Any, *, allow_none: bool) -> bool:
    if value is None:
        return allow_none
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
