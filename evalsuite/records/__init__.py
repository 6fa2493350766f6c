"""Run records: the data model, ``results.json`` per run, ``history.jsonl`` across runs, atomic
writes and git state. Everything above (golden, runner, the pytest plugin, reports) builds on
this package; it imports nothing of theirs."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from evalsuite.records.history import append_history
from evalsuite.records.metadata import RunMetadata
from evalsuite.records.model import BenchmarkRecord, merge_records
from evalsuite.records.results import TEXT_LIMIT, read_parts, remove_parts, write_results


def finalize_run(
    run_dir: str | os.PathLike[str],
    metadata: RunMetadata,
    records: Iterable[BenchmarkRecord] = (),
    *,
    history_path: str | os.PathLike[str] | None = None,
    text_limit: int = TEXT_LIMIT,
) -> Path:
    """End of a session (the xdist controller, or the only process): merge ``parts/`` with
    ``records``, write results.json, append the run to ``history_path`` when given, remove the
    parts. Returns the results.json path."""
    run_dir = Path(run_dir)
    merged = merge_records([*read_parts(run_dir), *records])
    written = write_results(run_dir, metadata, merged, text_limit=text_limit)
    if history_path is not None:
        relative = os.path.relpath(written, Path(history_path).parent)
        append_history(history_path, metadata, merged, results_path=Path(relative).as_posix())
    remove_parts(run_dir)
    return written
