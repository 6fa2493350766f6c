"""``evalsuite data``: ``fetch NAME`` downloads a benchmark's public data into the data folder in
the layout its loader reads, and prints what it wrote (files, size, rows); ``list`` shows, per
benchmark and data source, what is present, from where, its revision and size, and which sources
the benches will run on."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import textwrap
from pathlib import Path

from evalsuite.benchmarks import Benchmark, DataSource, all_benchmarks, load_declarations
from evalsuite.datasets import DATA_ENV, data_root
from evalsuite.datasets.fetch import FetchResult, FetchSpec, HubRows, fetch, read_manifest
from evalsuite.errors import EvalsuiteError
from evalsuite.textformat import echo, format_table, shorten


def add_arguments(parser: argparse.ArgumentParser) -> None:
    load_declarations()
    names = sorted(b.name for b in all_benchmarks())
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    get = actions.add_parser("fetch", help="download a benchmark's public data")
    get.add_argument("name", choices=names, help="benchmark whose data to download")
    get.add_argument("--data-dir", default=None, help=f"destination (default ${DATA_ENV})")
    get.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="rows to stream from a row-wise dataset (default: its own, e.g. 300 FineWiki "
        "articles; the Surya sets in full)",
    )
    get.add_argument(
        "--language", default=None, help="subset of a per-language dataset (FineWiki: en, de, ...)"
    )
    get.add_argument(
        "--revision", default=None,
        help="a commit (or branch) of the source repository instead of the declared one, e.g. "
        "the commit of an older release of the data",
    )
    show = actions.add_parser("list", help="show what data each benchmark has and will use")
    show.add_argument("--data-dir", default=None, help=f"data folder (default ${DATA_ENV})")


def run(args: argparse.Namespace) -> int:
    root = data_root(args.data_dir)
    if args.action == "list":
        echo(list_text(all_benchmarks(), root, shutil.get_terminal_size((100, 24)).columns))
        return 0
    if root is None:
        echo(f"evalsuite data: pass --data-dir or set {DATA_ENV}", file=sys.stderr)
        return 2
    if args.max_rows is not None and args.max_rows < 1:
        echo("evalsuite data: --max-rows must be at least 1", file=sys.stderr)
        return 2
    benchmark = next(b for b in all_benchmarks() if b.name == args.name)
    fetchable = [source for source in benchmark.sources if source.fetch is not None]
    if not fetchable:
        where = "; ".join(f"{s.folder}: {s.description}" for s in benchmark.sources if s.folder)
        if not where:
            echo(f"evalsuite data: {benchmark.name} runs on its own fixtures only; there is "
                 "nothing to fetch", file=sys.stderr)
            return 2
        echo(f"evalsuite data: {benchmark.name} has no public download; put it under "
             f"{root} as {where}", file=sys.stderr)
        return 2
    if args.language is not None and not any(
        isinstance(s.fetch, HubRows) and s.fetch.config for s in fetchable
    ):
        echo(f"evalsuite data: {benchmark.name}'s data has no language subsets; drop --language",
             file=sys.stderr)
        return 2
    for source in fetchable:
        spec = source.fetch
        if args.language is not None and isinstance(spec, HubRows) and spec.config:
            spec = dataclasses.replace(spec, config=args.language)
        if args.revision is not None:
            spec = dataclasses.replace(spec, revision=args.revision)
        try:
            result = fetch(spec, root / str(source.folder), max_rows=args.max_rows)
        except Exception as exc:  # network and hub failures: one line, not a traceback
            echo(f"evalsuite data: fetching {source.name} from {spec.origin} failed: "
                 f"{type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        echo(_fetched_text(spec, benchmark, source, result))
        if source.locate(root) is None:
            echo(f"evalsuite data: {source.name}: the download lacks "
                 f"{', '.join(source.requires)}, which the benches read", file=sys.stderr)
            return 1
        try:
            source.identity(result.destination)
        except EvalsuiteError as exc:
            echo(f"evalsuite data: {source.name}: {exc}", file=sys.stderr)
            return 1
    return 0


def _fetched_text(
    spec: FetchSpec, benchmark: Benchmark, source: DataSource, result: FetchResult
) -> str:
    rows = ", ".join(f"{name} {count:,} rows" for name, count in sorted(result.rows.items()))
    return (
        f"{benchmark.name}/{source.name}: {result.files} files, {size_text(result.size_bytes)}"
        f"{'; ' + rows if rows else ''}\n"
        f"  from {spec.origin}, revision {_revision_text(spec.revision, spec.pinned)}\n"
        f"  written to {result.destination}"
    )


def list_text(benchmarks: list[Benchmark], root: Path | None, width: int = 100) -> str:
    """A table: benchmark, source, present, used by the benches, revision, size, from where,
    location; when that is wider than ``width``, where from and the location go on lines of
    their own under each row."""
    rows = []
    for benchmark in benchmarks:
        for source in benchmark.sources:
            location = source.locate(root)
            rows.append([
                benchmark.name,
                source.name,
                "yes" if location else "no",
                "fixtures" if source.is_fixture else ("real" if location else "—"),
                _revision(source, location),
                size_text(_bytes(location)) if location else "—",
                _origin(source, location),
                str(location) if location else _where(source, root),
            ])
    headers = ["benchmark", "source", "present", "used", "revision", "size", "from", "location"]
    note = f"data folder: {root}" if root else f"no data folder (--data-dir or ${DATA_ENV})"
    table = format_table(headers, rows, align="lllllrll")
    if max(len(line) for line in table.splitlines()) <= width:
        return note + "\n" + table
    # too wide: where from and where to on lines of their own under each row
    lines = format_table(headers[:6], [row[:6] for row in rows], align="lllllr").splitlines()
    out = [note, lines[0]]
    for line, row in zip(lines[1:], rows, strict=True):
        out.append(line)
        out.extend(textwrap.wrap(f"from {row[6]} · at {row[7]}", width,
                                 initial_indent="    ", subsequent_indent="      "))
    return "\n".join(out)


def _revision_text(revision: str, pinned: bool) -> str:
    return revision[:12] if pinned else f"{revision} (unpinned)"


def _revision(source: DataSource, location: Path | None) -> str:
    if location is None:
        if source.fetch is None:
            return "—"
        return f"fetch: {_revision_text(source.fetch.revision, source.fetch.pinned)}"
    manifest = read_manifest(location)
    if manifest is not None:
        return _revision_text(str(manifest["revision"]), bool(manifest.get("pinned", True)))
    return shorten(source.identity(location).partition("@")[2] or "project", 24)


def _origin(source: DataSource, location: Path | None) -> str:
    if source.is_fixture:
        return "project fixtures"
    manifest = read_manifest(location) if location else None
    if manifest is not None:
        return str(manifest.get("origin") or manifest.get("repo_id"))
    if location is not None:
        return "placed by hand (no fetch manifest)"
    return source.fetch.origin if source.fetch else source.description


def _where(source: DataSource, root: Path | None) -> str:
    if source.folder is None:
        return f"given with {source.option}" if source.option else "—"
    target = (root / source.folder) if root else Path("<data dir>") / source.folder
    how = "evalsuite data fetch" if source.fetch else "put it there"
    return f"{target} ({how})"


def _bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def size_text(total: float) -> str:
    """Bytes for people: ``512 B``, ``4.9 KB``, ``1.2 GB`` (powers of 1024)."""
    if total < 1024:
        return f"{total:.0f} B"
    for unit in ("KB", "MB"):
        total /= 1024
        if total < 1024:
            return f"{total:.1f} {unit}"
    return f"{total / 1024:.1f} GB"
