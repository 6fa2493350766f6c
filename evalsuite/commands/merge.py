"""``evalsuite merge RUN…``: join the runs of ``pytest benches --shard K/N`` (one per machine)
into the run one machine would have written, gate it against the goldens, and write it with
the history like any run.

Each RUN is a results.json path, a run folder or a run id under ``--report-dir``. The merge
refuses records that are not shards, shards of different counts, a shard given twice and a
missing one. Exit status: 0 when every gated metric passes, 1 when one regressed or has no
golden (as the pytest run would have failed), 2 when the runs cannot be merged.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from evalsuite.commands.ab import resolve_run
from evalsuite.errors import EvalsuiteError
from evalsuite.golden import GoldenStore, gate_record
from evalsuite.records import finalize_run
from evalsuite.records.metadata import merge_engine_details, new_run_id, utc_timestamp
from evalsuite.records.results import read_results
from evalsuite.reports.summary import summary_lines
from evalsuite.shards import merge_shards
from evalsuite.textformat import echo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="a shard run: results.json path, run folder or run id")
    parser.add_argument("--report-dir", type=Path, default=Path("reports"),
                        help="where run ids are found and the merged run is written "
                        "(default: %(default)s)")
    parser.add_argument("--golden-dir", type=Path, default=Path("golden"),
                        help="golden files to gate against (default: %(default)s)")
    parser.add_argument("--run-name", default=None, help="a name for the merged run")


def run(args: argparse.Namespace) -> int:
    try:
        shard_runs = [read_results(resolve_run(reference, args.report_dir))
                      for reference in args.runs]
        merged = merge_shards(shard_runs)
    except (EvalsuiteError, OSError, ValueError) as error:
        echo(f"evalsuite merge: {error}", file=sys.stderr)
        return 2
    store = GoldenStore(args.golden_dir)
    failed = False
    for item in merged:
        results = gate_record(item.golden_file, item.record, item.gated,
                              store.load(item.golden_file), group_of=item.group_of,
                              required_groups=item.required_groups)
        item.record.params["gates"] = {result.metric: result.to_dict() for result in results}
        failed |= any(result.failed for result in results)
    first = shard_runs[0].metadata
    metadata = dataclasses.replace(
        first,
        run_id=new_run_id(),
        created_utc=utc_timestamp(None),
        run_name=args.run_name,
        engines=sorted({e for r in shard_runs for e in r.metadata.engines}),
        modes=sorted({m for r in shard_runs for m in r.metadata.modes}),
        engine_details=merge_engine_details(*(r.metadata.engine_details for r in shard_runs)),
        data_sources={k: v for r in shard_runs for k, v in r.metadata.data_sources.items()},
        model_calls=sum(r.metadata.model_calls or 0 for r in shard_runs),
        duration_s=max((r.metadata.duration_s or 0.0) for r in shard_runs),
        command=" ".join(["evalsuite", "merge", *args.runs]),
        extra={**first.extra, "merged_from": [r.metadata.run_id for r in shard_runs]},
        interrupted=any(r.metadata.interrupted for r in shard_runs),
    )
    written = finalize_run(args.report_dir / metadata.run_id, metadata,
                           [item.record for item in merged],
                           history_path=args.report_dir / "history.jsonl")
    for line in summary_lines(read_results(written)):
        echo(line)
    echo(f"results: {written.resolve()}")
    return 1 if failed else 0
