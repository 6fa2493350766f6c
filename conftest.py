"""The pytest front end of evalsuite, in one place: options, engine/mode parametrization,
fixtures, the GPU skip, JSON reports and the end-of-session report writing.

Markers are registered in pyproject.toml (so ``--strict-markers`` passes).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from evalsuite.suite import (
    GPU_ENGINES,
    REPO_ROOT,
    Bench,
    Suite,
    SuiteOptions,
    cuda_device_count,
    engine_params,
)

SUITE_KEY = pytest.StashKey[Suite]()
RUN_ID_KEY = "evalsuite_run_id"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalsuite", "evalsuite benchmarks")
    group.addoption("--gpu", action="store_true", help="run GPU benchmarks (skip without CUDA)")
    group.addoption(
        "--engine",
        default="auto",
        help="engine name(s), comma-separated; 'auto': deepseek-ocr with --gpu, else the CPU "
        "engines that can serve each benchmark",
    )
    group.addoption("--model-path", default=None, help="local DeepSeek-OCR weights folder")
    group.addoption("--modes", default=None, help="modes, e.g. tiny,small,base (per-bench default)")
    group.addoption(
        "--data-dir", default=None, help="benchmark data folder (default $EVALSUITE_DATA)"
    )
    group.addoption("--max-samples", type=int, default=None, help="cap samples per benchmark test")
    group.addoption("--update-golden", action="store_true", help="rewrite the goldens that ran")
    group.addoption(
        "--golden-dir", default=str(REPO_ROOT / "golden"), help="folder of the golden files"
    )
    group.addoption("--record", default=None, help="append every live engine output to this JSONL")
    group.addoption("--report-dir", default=str(REPO_ROOT / "reports"), help="where runs are kept")
    group.addoption("--num-articles", type=int, default=None, help="QuALITY: articles to use")
    group.addoption(
        "--questions-per-article", type=int, default=None, help="QuALITY: questions per article"
    )


def _runs_benches(config: pytest.Config) -> bool:
    benches = (REPO_ROOT / "benches").resolve()
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == benches or benches in path.parents:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    options = SuiteOptions.from_pytest(config)
    worker_input = getattr(config, "workerinput", None)
    worker_id = worker_input["workerid"] if worker_input else "master"
    suite = Suite(options, worker_id)
    config.stash[SUITE_KEY] = suite
    if worker_input is not None:
        config.evalsuite_run_id = worker_input[RUN_ID_KEY]
        suite.run_dir = options.report_dir / config.evalsuite_run_id
        return
    from evalsuite.golden import snapshot
    from evalsuite.reports.results import new_run_id

    config.evalsuite_run_id = new_run_id()
    config.evalsuite_golden_before = snapshot(suite.golden) if options.update_golden else None
    run_dir = suite.run_dir = options.report_dir / config.evalsuite_run_id
    if _runs_benches(config) and not config.getoption("json_report", default=False):
        # pytest-json-report, on by default for benchmark runs
        config.option.json_report = True
        config.option.json_report_file = str(run_dir / "report.json")
        config.option.json_report_indent = 1
        run_dir.mkdir(parents=True, exist_ok=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # xdist hook: share one run id with every worker
    node.workerinput[RUN_ID_KEY] = node.config.evalsuite_run_id


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engine_name" not in metafunc.fixturenames:
        return
    spec = metafunc.module.BENCHMARK
    options = metafunc.config.stash[SUITE_KEY].options
    params = []
    for engine, mode in engine_params(spec, options):
        marks = [pytest.mark.gpu] if engine in GPU_ENGINES else []
        params.append(pytest.param(engine, mode, marks=marks, id=f"{engine}-{mode}"))
    metafunc.parametrize(("engine_name", "mode"), params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu = config.getoption("--gpu")
    devices = cuda_device_count() if gpu else 0
    for item in items:
        if "gpu" not in item.keywords:
            continue
        if not gpu:
            item.add_marker(pytest.mark.skip(reason="GPU benchmark: run with --gpu"))
        elif devices == 0:
            item.add_marker(pytest.mark.skip(reason="--gpu given but no CUDA device is visible"))


@pytest.fixture(scope="session")
def suite(pytestconfig: pytest.Config) -> Suite:
    return pytestconfig.stash[SUITE_KEY]


@pytest.fixture
def bench(suite: Suite, request: pytest.FixtureRequest, engine_name: str, mode: str) -> Bench:
    """The benchmark test's engine, resolved once per process; skips or fails with the reason."""
    from evalsuite.errors import EngineUnavailableError

    spec = request.module.BENCHMARK
    current = Bench(suite, spec, engine_name, mode, request.node.nodeid)
    if spec.needs_vlm:
        current.require_vlm()
    try:
        current.engine  # noqa: B018 - create (or re-raise the remembered failure) now
    except EngineUnavailableError as exc:
        if suite.options.engines == ("auto",):
            pytest.skip(f"{engine_name} unavailable: {exc}")
        pytest.fail(f"{engine_name} unavailable: {exc}", pytrace=False)
    return current


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    suite = config.stash.get(SUITE_KEY, None)
    if suite is None:
        return
    from evalsuite.reports import results

    run_dir = suite.options.report_dir / config.evalsuite_run_id
    if suite.worker_id != "master":
        if suite.records:
            results.write_part(run_dir, suite.worker_id, suite.records)
        return
    if not suite.records and not (run_dir / "parts").is_dir():
        return
    metadata = results.collect_metadata(
        config.evalsuite_run_id,
        engines=sorted({r.engine for r in suite.records} | set(_part_engines(run_dir))),
        modes=list(suite.options.modes or ()),
        seed=suite.options.seed,
        repo_dir=REPO_ROOT,
        command=sys.argv,
    )
    written = results.finalize_run(
        run_dir,
        metadata,
        suite.records,
        history_path=suite.options.report_dir / "history.jsonl",
    )
    config.evalsuite_results_path = written


def _part_engines(run_dir: Path) -> list[str]:
    from evalsuite.reports.results import read_parts

    return [r.engine for r in read_parts(run_dir)] if (run_dir / "parts").is_dir() else []


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    written = getattr(config, "evalsuite_results_path", None)
    if written is not None:
        from evalsuite.reports.summary import summary_lines

        terminalreporter.section("evalsuite summary")
        for line in summary_lines(written):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"results: {os.path.relpath(written)}")
    before = getattr(config, "evalsuite_golden_before", None)
    if before is not None:
        from evalsuite.golden import diff_snapshots, snapshot

        lines = diff_snapshots(before, snapshot(config.stash[SUITE_KEY].golden))
        terminalreporter.section("golden updates")
        for line in lines or ["no golden value changed"]:
            terminalreporter.write_line(line)
