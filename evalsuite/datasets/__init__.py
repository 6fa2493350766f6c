"""Dataset loaders, one module per benchmark, each reading its dataset in the published layout.

Where data lives: an explicit ``--data-dir``, else ``$EVALSUITE_DATA``; the project's own small
fixtures under ``tests/fixtures/`` are always available. Which folder a benchmark reads is
declared in its :class:`evalsuite.benchmarks.DataSource`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import DatasetFormatError, DatasetNotFoundError
from evalsuite.textfiles import found, read_text

DATA_ENV = "EVALSUITE_DATA"
FETCH_MANIFEST = ".evalsuite-fetch.json"
"""Written by ``evalsuite data fetch`` into each folder it fills: source, revision, files."""
DIGEST_CHARS = 12


def data_root(explicit: str | Path | None = None) -> Path | None:
    """The external data directory: ``explicit``, else ``$EVALSUITE_DATA``, else None."""
    value = explicit or os.environ.get(DATA_ENV)
    return Path(value).expanduser() if value else None


def require_path(path: Path, benchmark: str) -> Path:
    """Return ``path`` if it exists; otherwise raise naming it (``evalsuite data list`` shows
    what each benchmark reads and how to get it)."""
    if not path.exists():
        raise DatasetNotFoundError(
            f"{benchmark} data not found at {path}; `evalsuite data list` shows what each "
            f"benchmark reads from the data folder (--data-dir or ${DATA_ENV})"
        )
    return path


def data_identity(folder: Path) -> str:
    """The revision of the data in ``folder``: the one ``evalsuite data fetch`` recorded in its
    manifest, else ``sha256:`` and the first 12 hex digits of a digest over every file's
    relative path and bytes (so two folders with the same files have the same identity)."""
    return _identity(folder.resolve())


@functools.lru_cache(maxsize=64)
def _identity(folder: Path) -> str:
    from evalsuite.datasets.fetch import read_manifest

    manifest = read_manifest(folder)
    if manifest is not None:
        return str(manifest["revision"])
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else [folder]
    for path in files:
        relative = path.name if path == folder else path.relative_to(folder).as_posix()
        digest.update(relative.encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda handle=handle: handle.read(1 << 20), b""):
                digest.update(block)
    return f"sha256:{digest.hexdigest()[:DIGEST_CHARS]}"


def read_json(path: Path, expected: type, shape: str) -> Any:
    """The JSON document in ``path``; DatasetFormatError naming the file when it is not a file,
    not UTF-8 (:func:`~evalsuite.textfiles.read_text`), not valid JSON, or not an instance of
    ``expected`` (``shape`` describes what was expected, and the message what was found)."""
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, expected):
        raise DatasetFormatError(f"{path}: expected {shape}, found {found(data)}")
    return data


def json_line(line: str, where: str) -> Any:
    """One line of a JSON-lines file; DatasetFormatError naming ``where`` when it is not JSON."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(f"{where}: not a JSON line: {exc}") from exc


@dataclass(frozen=True)
class Schema:
    """A published record layout: where it is published (``name``) and the columns (top-level
    fields) a loader reads from each record."""

    name: str
    columns: tuple[str, ...]

    def check(self, present: Iterable[str], where: str) -> None:
        """Raise :class:`DatasetFormatError` naming ``where`` (a file, maybe with a record), the
        first column of this schema it lacks, and the schema, when one is missing."""
        have = list(present)
        missing = [column for column in self.columns if column not in have]
        if missing:
            raise DatasetFormatError(
                f"{where}: missing column {missing[0]!r}; expected the {self.name} schema "
                f"(columns {', '.join(self.columns)}), found {', '.join(map(str, have)) or 'none'}"
            )

    def check_record(self, record: object, where: str) -> Mapping[str, Any]:
        """``record`` when it is an object holding this schema's columns; else the error."""
        if not isinstance(record, Mapping):
            raise DatasetFormatError(
                f"{where}: expected an object with columns {', '.join(self.columns)} "
                f"({self.name}), found {type(record).__name__}"
            )
        self.check(record, where)
        return record


def load_table(path: Path, benchmark: str, schema: Schema) -> Any:
    """A ``datasets.Dataset`` from a Parquet file, a folder of Parquet files, or a
    ``save_to_disk`` folder; raises naming the file when a column of ``schema`` is missing."""
    import datasets

    require_path(path, benchmark)
    if path.is_dir() and (path / "dataset_info.json").exists():
        table = datasets.load_from_disk(str(path))
        schema.check(table.column_names, str(path))
        return table
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    if not files:
        raise DatasetFormatError(f"{path} holds no .parquet files ({schema.name})")
    import pyarrow
    import pyarrow.parquet as parquet

    for file in files:
        try:
            names = parquet.read_schema(file).names
        except pyarrow.ArrowException as exc:
            raise DatasetFormatError(f"{file}: not a readable Parquet file ({exc})") from None
        schema.check(names, str(file))
    return datasets.Dataset.from_parquet([str(f) for f in files])
