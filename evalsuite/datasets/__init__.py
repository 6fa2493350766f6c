"""Dataset loaders, one module per benchmark, each reading its dataset in the published layout.

Where data lives: an explicit ``--data-dir``, else ``$EVALSUITE_DATA``; the project's own small
fixtures under ``tests/fixtures/`` are always available.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evalsuite.errors import DatasetFormatError, DatasetNotFoundError

DATA_ENV = "EVALSUITE_DATA"


def data_root(explicit: str | Path | None = None) -> Path | None:
    """The external data directory: ``explicit``, else ``$EVALSUITE_DATA``, else None."""
    value = explicit or os.environ.get(DATA_ENV)
    return Path(value).expanduser() if value else None


def require_path(path: Path, benchmark: str) -> Path:
    """Return ``path`` if it exists; otherwise raise naming it and the fetch command."""
    if not path.exists():
        raise DatasetNotFoundError(
            f"{benchmark} data not found at {path}; download it with "
            f"`evalsuite data fetch {benchmark}` or point --data-dir / ${DATA_ENV} at it"
        )
    return path


def load_table(path: Path, benchmark: str, columns: tuple[str, ...]) -> Any:
    """A ``datasets.Dataset`` from a Parquet file, a folder of Parquet files, or a
    ``save_to_disk`` folder; raises naming ``path`` when a required column is missing."""
    import datasets

    require_path(path, benchmark)
    if path.is_dir() and (path / "dataset_info.json").exists():
        table = datasets.load_from_disk(str(path))
    else:
        files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
        if not files:
            raise DatasetFormatError(f"{path} holds no .parquet files")
        table = datasets.Dataset.from_parquet([str(f) for f in files])
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise DatasetFormatError(f"{path} lacks columns {missing} (has {table.column_names})")
    return table
