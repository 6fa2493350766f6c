"""``evalsuite data fetch NAME``: download the public benchmark data into the data folder, in the
layout the loaders read. Uses huggingface_hub / datasets and honours ``HF_HUB_OFFLINE``."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from evalsuite.datasets import DATA_ENV, data_root


@dataclass(frozen=True)
class Source:
    """Where a benchmark's public data lives and where it goes under the data folder."""

    repo_id: str
    repo_type: str
    target: str
    filename: str | None = None  # one file of the repo (e.g. a zip); None: the whole dataset
    unzip: bool = False


SOURCES: dict[str, Source] = {
    "fox": Source("ucaslcl/Fox_benchmark_data", "dataset", "fox", "focus_benchmark_test.zip", True),
    "quality": Source("emozilla/quality", "dataset", "quality"),
    "finewiki": Source("HuggingFaceFW/finewiki", "dataset", "finewiki"),
    "surya_detection": Source("vikp/doclaynet_bench", "dataset", "surya_detection"),
    "surya_recognition": Source("vikp/rec_bench", "dataset", "surya_recognition"),
}


def target_dir(name: str, root: Path) -> Path:
    """The folder ``name`` is fetched into; unknown names list the valid ones."""
    if name not in SOURCES:
        raise ValueError(f"unknown dataset {name!r}; choose one of: {', '.join(sorted(SOURCES))}")
    return root / SOURCES[name].target


def fetch(name: str, root: Path, *, max_rows: int | None = None) -> Path:
    """Download ``name`` under ``root``; returns the folder written."""
    source = SOURCES[name]
    destination = target_dir(name, root)
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise RuntimeError(f"HF_HUB_OFFLINE=1: cannot download {source.repo_id}; unset it to fetch")
    destination.mkdir(parents=True, exist_ok=True)
    if source.filename is not None:
        import zipfile

        from huggingface_hub import hf_hub_download

        path = hf_hub_download(source.repo_id, source.filename, repo_type=source.repo_type)
        if source.unzip:
            with zipfile.ZipFile(path) as archive:
                archive.extractall(destination)
        return destination
    import datasets

    split = "test" if name.startswith("surya") else "train"
    table = datasets.load_dataset(source.repo_id, split=split)
    if max_rows is not None:
        table = table.select(range(min(max_rows, len(table))))
    table.to_parquet(str(destination / "data.parquet"))
    return destination


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    get = actions.add_parser("fetch", help="download a benchmark's public data")
    get.add_argument("name", choices=sorted(SOURCES), help="benchmark data to download")
    get.add_argument("--data-dir", default=None, help=f"destination (default ${DATA_ENV})")
    get.add_argument("--max-rows", type=int, default=None, help="keep only the first N rows")


def run(args: argparse.Namespace) -> int:
    root = data_root(args.data_dir)
    if root is None:
        print(f"error: pass --data-dir or set {DATA_ENV}", file=sys.stderr)
        return 2
    try:
        written = fetch(args.name, root, max_rows=args.max_rows)
    except Exception as exc:  # network and hub failures: one line, not a traceback
        print(f"error: fetching {args.name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"{args.name}: data written to {written}")
    return 0
