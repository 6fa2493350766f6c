"""The end of a benchmark session: workers hand their records to the controller through
``parts/``; the controller writes results.json and the history line, prints the summary, and
fails a run the user asked for (``--gpu`` or ``--engine``) that gated nothing."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalsuite.engines.weights import file_sha256
from evalsuite.golden import GoldenFile, GoldenStore, diff_snapshots
from evalsuite.plugin.session import (
    OPTIONS_KEY,
    RUN_ID_KEY,
    SESSION_KEY,
    BenchSession,
)
from evalsuite.records import finalize_run
from evalsuite.records.metadata import (
    collect_metadata,
    invocation_command,
    merge_engine_details,
    run_started,
)
from evalsuite.records.model import BenchmarkRecord
from evalsuite.records.results import (
    PARTS_DIR,
    read_part_info,
    read_parts,
    read_results,
    write_part,
)
from evalsuite.reports.summary import gated_count, summary_lines
from evalsuite.request_cache import remove_cache, remove_stale_caches, resume_summary
from evalsuite.textformat import terminal_text
from evalsuite.tokens import default_count_method

RESULTS_KEY = pytest.StashKey[Path]()
NOTHING_GATED_KEY = pytest.StashKey[str]()
GOLDEN_BEFORE_KEY = pytest.StashKey[dict[str, GoldenFile]]()
"""The golden files when an --update-golden run started, to print what it changed."""


def finish_session(session: pytest.Session) -> None:
    """Write this process's share of the run (a worker) or the whole run (the controller)."""
    config = session.config
    bench: BenchSession | None = config.stash.get(SESSION_KEY, None)
    if bench is not None:
        bench.close_cache()
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        if bench is not None and bench.records:
            info = {"engine_details": bench.engine_details_now(),
                    "data_sources": bench.data_sources}
            write_part(bench.run_dir, bench.worker_id, bench.records, info)
        return
    run_id = config.stash.get(RUN_ID_KEY, None)
    if bench is None and run_id is None:
        return
    if bench is None:
        from evalsuite.plugin.session import bench_session

        bench = bench_session(config)
    if not bench.records and not (bench.run_dir / PARTS_DIR).is_dir():
        if bench.options.resume is None:  # resuming, it holds the answers taken over: keep
            remove_cache(bench.run_dir)  # a test that failed before its record left it
        if bench.run_dir.is_dir() and not any(bench.run_dir.iterdir()):
            bench.run_dir.rmdir()
        if bench.options.asked and not config.getoption("collectonly"):
            _fail_unmeasured(session, bench)
        return
    part_info = read_part_info(bench.run_dir)
    engine_details = merge_engine_details(
        bench.engine_details_now(), *(info.get("engine_details", {}) for info in part_info)
    )
    data_sources = dict(bench.data_sources)
    for info in part_info:
        data_sources.update(info.get("data_sources", {}))
    options = bench.options
    all_records = [*read_parts(bench.run_dir), *bench.records]
    model_calls = sum(int(record.params.get("model_calls", 0)) for record in all_records)
    modes = _modes_by_engine(all_records)
    for label, details in engine_details.items():
        details["modes"] = modes.get(label, [])
    extra: dict[str, object] = {"data_dir": str(options.data_dir) if options.data_dir else None}
    if options.record is not None and options.record.is_file():
        extra["recorded_to"] = {
            "path": str(options.record.resolve()),
            "sha256": file_sha256(options.record),
        }
    resumed = resume_summary(bench.run_dir)
    if resumed is not None:
        extra["resumed"] = resumed
    # The run started when the controller made its id (pytest_configure), not when this
    # process's session object was made: under xdist that is only now, at the end.
    started = run_started(bench.run_id) or datetime.fromtimestamp(bench.started, UTC)
    metadata = collect_metadata(
        bench.run_id,
        run_name=options.run_name,
        engines=sorted(engine_details),
        engine_details=engine_details,
        modes=sorted({mode for engine_modes in modes.values() for mode in engine_modes}),
        data_sources=data_sources,
        seed=options.seed,
        repo_dir=config.rootpath,
        command=invocation_command(sys.argv[0], config.invocation_params.args),
        created=started,
        duration_s=round(time.time() - started.timestamp(), 3),
        model_calls=model_calls,
        token_counter=default_count_method(),
        extra=extra,
    )
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        metadata = dataclasses.replace(metadata, interrupted=True)
    history = None if options.shard else options.report_dir / "history.jsonl"  # a part only
    written = finalize_run(bench.run_dir, metadata, bench.records, history_path=history)
    remove_cache(bench.run_dir)
    remove_stale_caches(options.report_dir)  # of runs that died and were not resumed
    config.stash[RESULTS_KEY] = written
    if (options.asked and not options.update_golden and not options.shard
            and gated_count(read_results(written)) == 0):
        _fail_unmeasured(session, bench)


def _modes_by_engine(records: list[BenchmarkRecord]) -> dict[str, list[str]]:
    """The resolution modes each engine label ran in (the records' ``mode`` parameter)."""
    modes: dict[str, set[str]] = {}
    for record in records:
        mode = record.params.get("mode")
        if mode is not None:
            modes.setdefault(record.engine, set()).add(str(mode))
    return {label: sorted(found) for label, found in modes.items()}


def _fail_unmeasured(session: pytest.Session, bench: BenchSession) -> None:
    """Fail a run the user asked for (--gpu, --engine) that gated no metric; an interrupted
    run (Ctrl-C) keeps its own exit status and message."""
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        return
    options = bench.options
    what = "--gpu" if options.gpu else "--engine " + ",".join(options.engines or ())
    if options.model is not None:
        what += f" --model {options.model}"
    session.config.stash[NOTHING_GATED_KEY] = (
        f"evalsuite: the run asked for {what} but gated no metric (every test skipped, "
        "errored or had no golden entry); failing it so that it is not taken for a pass"
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    written = config.stash.get(RESULTS_KEY, None)
    records = None
    if written is not None:
        width = shutil.get_terminal_size((120, 24)).columns
        results = read_results(written)
        terminalreporter.section("evalsuite summary")
        for line in summary_lines(results, width=width):
            terminalreporter.write_line(terminal_text(line))
        terminalreporter.write_line(terminal_text(f"results: {written.resolve()}"))
        records = {(r.engine, r.data, r.parameter) for r in results.records}
    before = config.stash.get(GOLDEN_BEFORE_KEY, None)
    if before is not None:
        options = config.stash[OPTIONS_KEY]
        # this run's entries only: a run beside it may update the same folder
        changes = diff_snapshots(before, GoldenStore(options.golden_dir).snapshot(), records)
        terminalreporter.section("golden updates")
        for line in changes or [f"no golden entry changed in {options.golden_dir}"]:
            terminalreporter.write_line(terminal_text(line))
    nothing = config.stash.get(NOTHING_GATED_KEY, None)
    if nothing:
        terminalreporter.write_line(terminal_text(nothing), red=True, bold=True)
