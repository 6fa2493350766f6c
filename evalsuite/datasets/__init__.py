"""Dataset loaders, one module per benchmark, each reading its dataset in the published layout.

Where data lives: an explicit ``--data-dir``, else ``$EVALSUITE_DATA``; the project's own small
fixtures under ``tests/fixtures/`` are always available.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalsuite.errors import DatasetNotFoundError

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
