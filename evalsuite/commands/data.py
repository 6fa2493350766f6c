"""``evalsuite data``: ``fetch NAME`` downloads a benchmark's public data into the data folder in
the layout its loader reads; ``list`` shows, per benchmark and data source, what is present,
from where, its revision and size, and which sources the benches will run on."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalsuite.benchmarks import Benchmark, DataSource, all_benchmarks, load_declarations
from evalsuite.datasets import DATA_ENV, data_root
from evalsuite.datasets.fetch import fetch
from evalsuite.textformat import format_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    load_declarations()
    names = sorted(b.name for b in all_benchmarks())
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    get = actions.add_parser("fetch", help="download a benchmark's public data")
    get.add_argument("name", choices=names, help="benchmark whose data to download")
    get.add_argument("--data-dir", default=None, help=f"destination (default ${DATA_ENV})")
    get.add_argument("--max-rows", type=int, default=None, help="keep only the first N rows")
    show = actions.add_parser("list", help="show what data each benchmark has and will use")
    show.add_argument("--data-dir", default=None, help=f"data folder (default ${DATA_ENV})")


def run(args: argparse.Namespace) -> int:
    root = data_root(args.data_dir)
    if args.action == "list":
        print(list_text(all_benchmarks(), root))
        return 0
    if root is None:
        print(f"evalsuite data: pass --data-dir or set {DATA_ENV}", file=sys.stderr)
        return 2
    benchmark = next(b for b in all_benchmarks() if b.name == args.name)
    fetchable = [source for source in benchmark.sources if source.fetch is not None]
    if not fetchable:
        where = "; ".join(f"{s.folder}: {s.description}" for s in benchmark.sources if s.folder)
        if not where:
            print(f"evalsuite data: {benchmark.name} runs on its own fixtures only; there is "
                  "nothing to fetch", file=sys.stderr)
            return 2
        print(f"evalsuite data: {benchmark.name} has no public download; put it under "
              f"{root} as {where}", file=sys.stderr)
        return 2
    for source in fetchable:
        destination = root / str(source.folder)
        try:
            fetch(source.fetch, destination, max_rows=args.max_rows)
        except Exception as exc:  # network and hub failures: one line, not a traceback
            print(f"evalsuite data: fetching {source.name} failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            return 1
        print(f"{benchmark.name}/{source.name}: written to {destination} "
              f"({_size(destination)})")
    return 0


def list_text(benchmarks: list[Benchmark], root: Path | None) -> str:
    """A table: benchmark, source, present, used by the benches, revision, size, location."""
    rows = []
    for benchmark in benchmarks:
        for source in benchmark.sources:
            location = source.locate(root)
            rows.append([
                benchmark.name,
                source.name,
                "yes" if location else "no",
                "fixtures" if source.is_fixture else ("real" if location else "—"),
                source.identity(location) if location else _pinned(source),
                _size(location) if location else "—",
                str(location) if location else _where(source, root),
            ])
    headers = ["benchmark", "source", "present", "used", "revision", "size", "location"]
    note = f"data folder: {root}" if root else f"no data folder (--data-dir or ${DATA_ENV})"
    return note + "\n" + format_table(headers, rows, align="lllllrl")


def _pinned(source: DataSource) -> str:
    return f"fetch pins {source.fetch.revision[:12]}" if source.fetch else "—"


def _where(source: DataSource, root: Path | None) -> str:
    target = (root / str(source.folder)) if root else Path("<data dir>") / str(source.folder)
    how = "evalsuite data fetch" if source.fetch else "put it there"
    return f"{target} ({how})"


def _size(path: Path) -> str:
    total = path.stat().st_size if path.is_file() else sum(
        p.stat().st_size for p in path.rglob("*") if p.is_file()
    )
    for unit in ("B", "KB", "MB", "GB"):
        if total < 1024 or unit == "GB":
            return f"{total:.0f} {unit}" if unit == "B" else f"{total:.1f} {unit}"
        total /= 1024
    return f"{total:.1f} GB"
