"""Downloads of public benchmark data into the data folder, in the layout the loaders read.

A :class:`FetchSpec` (declared on a benchmark's data source, see :mod:`evalsuite.benchmarks`)
names the repository, the revision it is pinned to, and what to take from it; :func:`fetch`
writes the files and a manifest (:data:`evalsuite.datasets.FETCH_MANIFEST`) recording the
revision, which becomes part of the data's identity in run records and golden keys. Uses
huggingface_hub / datasets and honours ``HF_HUB_OFFLINE``.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from evalsuite.datasets import FETCH_MANIFEST
from evalsuite.errors import DatasetNotFoundError


@dataclass(frozen=True)
class FetchSpec:
    """Where a data source's public files live: a Hugging Face repository at ``revision``;
    ``filename`` one file of it (a zip is unpacked when ``unzip``), else the dataset's
    ``split`` saved as Parquet."""

    repo_id: str
    revision: str
    repo_type: str = "dataset"
    filename: str | None = None
    unzip: bool = False
    split: str = "train"


def fetch(spec: FetchSpec, destination: Path, *, max_rows: int | None = None) -> Path:
    """Download ``spec`` into ``destination`` and write its manifest; returns the folder."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise DatasetNotFoundError(
            f"HF_HUB_OFFLINE=1: cannot download {spec.repo_id}; unset it to fetch"
        )
    destination.mkdir(parents=True, exist_ok=True)
    if spec.filename is not None:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(
            spec.repo_id, spec.filename, repo_type=spec.repo_type, revision=spec.revision
        )
        if spec.unzip:
            with zipfile.ZipFile(path) as archive:
                archive.extractall(destination)
    else:
        import datasets

        table = datasets.load_dataset(spec.repo_id, split=spec.split, revision=spec.revision)
        if max_rows is not None:
            table = table.select(range(min(max_rows, len(table))))
        table.to_parquet(str(destination / "data.parquet"))
    manifest = {**asdict(spec), "max_rows": max_rows}
    (destination / FETCH_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    return destination
