"""Downloads of public benchmark data into the data folder, in the layout the loaders read.

A :class:`FetchSpec` (declared on a benchmark's data source, see :mod:`evalsuite.benchmarks`)
names a public repository, the revision it is pinned to, and what to take from it:

- :class:`HubFiles`: files of a Hugging Face dataset repository (zips unpacked), placed relative
  to one of its folders;
- :class:`HubRows`: rows of a Hugging Face dataset subset and split, streamed (never the whole
  set) and written as one Parquet file;
- :class:`GitHubFiles`: files of a GitHub repository at a commit.

:func:`fetch` downloads into a staging folder beside the destination with a manifest
(:data:`FETCH_MANIFEST`) recording the source, revision, files, bytes and rows, and renames the
files into place, the manifest last, only when every download succeeded. The revision becomes
the data's identity in run records and golden keys (:func:`evalsuite.datasets.data_identity`).
Honours ``HF_HUB_OFFLINE``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalsuite.datasets import FETCH_MANIFEST
from evalsuite.errors import DatasetFormatError, DatasetNotFoundError

COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


@dataclass(frozen=True)
class FetchSpec:
    """A public repository (``owner/name``) at ``revision``: a 40-digit commit sha (pinned), or
    a branch such as ``main`` (unpinned: what it downloads may change)."""

    repo_id: str
    revision: str

    @property
    def pinned(self) -> bool:
        return COMMIT_SHA.fullmatch(self.revision) is not None

    @property
    def origin(self) -> str:
        """Where the files come from, as a person would look it up."""
        raise NotImplementedError

    def download(self, staging: Path, max_rows: int | None) -> None:
        """Write this source's files into the empty folder ``staging``."""
        raise NotImplementedError


@dataclass(frozen=True)
class HubFiles(FetchSpec):
    """Files of a Hugging Face dataset repository matching ``patterns`` (fnmatch, as
    ``huggingface_hub.snapshot_download``'s ``allow_patterns``), placed relative to
    ``subfolder``; zip archives among them are unpacked and removed."""

    patterns: tuple[str, ...] = ()
    subfolder: str = ""

    @property
    def origin(self) -> str:
        tree = f"https://huggingface.co/datasets/{self.repo_id}/tree/{self.revision}"
        return f"{tree}/{self.subfolder}" if self.subfolder else tree

    def download(self, staging: Path, max_rows: int | None) -> None:
        from huggingface_hub import snapshot_download

        snapshot = staging / ".snapshot"
        snapshot_download(
            self.repo_id,
            repo_type="dataset",
            revision=self.revision,
            allow_patterns=list(self.patterns),
            local_dir=str(snapshot),
        )
        base = snapshot / self.subfolder if self.subfolder else snapshot
        found = [p for p in base.rglob("*") if p.is_file() and ".cache" not in p.parts]
        if not found:
            raise DatasetNotFoundError(
                f"{self.origin}: no files match {', '.join(self.patterns)}"
            )
        for path in found:
            target = staging / path.relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".zip":
                with zipfile.ZipFile(path) as archive:
                    archive.extractall(target.parent)
            else:
                shutil.move(path, target)
        shutil.rmtree(snapshot)


@dataclass(frozen=True)
class HubRows(FetchSpec):
    """The first ``max_rows`` rows (``default_max_rows`` when not given; None: all) of a Hugging
    Face dataset's ``config`` (subset, e.g. a language) and ``split``, streamed and written to
    ``filename`` as Parquet with the dataset's own columns."""

    config: str | None = None
    split: str = "train"
    default_max_rows: int | None = None
    filename: str = "train.parquet"

    @property
    def origin(self) -> str:
        subset = f" subset {self.config}" if self.config else ""
        return (
            f"https://huggingface.co/datasets/{self.repo_id}{subset} split {self.split} "
            f"@ {self.revision}"
        )

    def download(self, staging: Path, max_rows: int | None) -> None:
        import datasets

        stream = datasets.load_dataset(
            self.repo_id, self.config, split=self.split, revision=self.revision, streaming=True
        )
        if max_rows is not None:
            stream = stream.take(max_rows)
        rows = list(stream)
        if not rows:
            raise DatasetNotFoundError(f"{self.origin}: no rows")
        table = datasets.Dataset.from_list(rows, features=stream.features)
        table.to_parquet(str(staging / self.filename))


@dataclass(frozen=True)
class GitHubFiles(FetchSpec):
    """Files (``paths`` in the repository) of a GitHub repository at ``revision``, each written
    under its file name (folders are not kept)."""

    paths: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        return f"https://github.com/{self.repo_id}/tree/{self.revision}"

    def url(self, path: str) -> str:
        return f"https://github.com/{self.repo_id}/raw/{self.revision}/{path}"

    def download(self, staging: Path, max_rows: int | None) -> None:
        for path in self.paths:
            download_url(self.url(path), staging / Path(path).name)


def download_url(url: str, target: Path) -> None:
    """Save the body of ``url`` (redirects followed) as ``target``."""
    with urllib.request.urlopen(url, timeout=60) as response, target.open("wb") as out:
        shutil.copyfileobj(response, out)


@dataclass(frozen=True)
class FetchResult:
    """What one fetch wrote: the folder, its files, bytes and rows per tabular file."""

    destination: Path
    files: int
    size_bytes: int
    rows: dict[str, int]


def fetch(spec: FetchSpec, destination: Path, *, max_rows: int | None = None) -> FetchResult:
    """Download ``spec`` into ``destination`` and write its manifest; ``max_rows`` applies to
    :class:`HubRows` only.

    Files already in ``destination`` that the download does not bring are kept (e.g. a file a
    user placed there); a failed download leaves ``destination`` as it was."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise DatasetNotFoundError(
            f"HF_HUB_OFFLINE=1: cannot download {spec.repo_id}; unset it to fetch"
        )
    if isinstance(spec, HubRows):
        max_rows = spec.default_max_rows if max_rows is None else max_rows
    else:
        max_rows = None  # files are taken whole
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        spec.download(staging, max_rows)
        written = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
        result = FetchResult(
            destination,
            len(written),
            sum((staging / p).stat().st_size for p in written),
            {p.as_posix(): n for p in written if (n := count_rows(staging / p)) is not None},
        )
        manifest = {
            "repo_id": spec.repo_id,
            "revision": spec.revision,
            "pinned": spec.pinned,
            "origin": spec.origin,
            "kind": type(spec).__name__,
            "max_rows": max_rows,
            "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "files": result.files,
            "size_bytes": result.size_bytes,
            "rows": result.rows,
        }
        (staging / FETCH_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
        destination.mkdir(exist_ok=True)
        for relative in [*written, Path(FETCH_MANIFEST)]:  # renames; the manifest last
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The fetch manifest of ``folder``, or None when it was not written by a fetch."""
    path = folder / FETCH_MANIFEST
    if not folder.is_dir() or not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(f"{path} is not a valid fetch manifest: {exc}") from exc
    if not isinstance(manifest, dict) or "revision" not in manifest:
        raise DatasetFormatError(f"{path} is not a valid fetch manifest: it names no revision")
    return manifest


def count_rows(path: Path) -> int | None:
    """Records in a tabular file: Parquet rows, the length of a JSON list, or the non-empty
    lines of a JSON-lines file; None for other files (images, plain text)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as parquet

        return parquet.read_metadata(path).num_rows
    if path.suffix in IMAGE_SUFFIXES or path.suffix in (".md", ".txt", ".zip"):
        return None
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        return len(data) if isinstance(data, list) else None
    with path.open("rb") as stream:
        first = stream.readline().lstrip()
        if not first.startswith(b"{"):
            return None
        return 1 + sum(1 for line in stream if line.strip())
