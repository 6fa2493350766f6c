"""evalsuite's pytest plugin: benchmark options, markers from the benchmark registry, the
engine x mode x data-source parametrization of bench tests, the ``bench`` fixture, and the run
records written at the end. Registered through the ``pytest11`` entry point, so any session of
an environment with evalsuite installed has it (``-p evalsuite.pytest_plugin`` loads it where
plugin autoloading is off). Sessions that run no benchmark test create no run.

Layout, after pytest-regressions: this module holds the hooks; the fixture lives in
:mod:`evalsuite.plugin.bench`, options in :mod:`evalsuite.plugin.options`, per-process state in
:mod:`evalsuite.plugin.session`, the end of the run in :mod:`evalsuite.plugin.reporting`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark.expression import Expression  # the parser behind -m

from evalsuite.benchmarks import Benchmark, load_declarations
from evalsuite.engines import engine_kind
from evalsuite.engines.base import OCR_MODE
from evalsuite.errors import EvalsuiteError
from evalsuite.golden import GoldenStore
from evalsuite.images import set_max_image_pixels
from evalsuite.models import model_profile
from evalsuite.plugin.bench import bench
from evalsuite.plugin.options import (
    INI_BENCHMARKS,
    SuiteOptions,
    add_options,
    engine_modes,
    parse_options,
)
from evalsuite.plugin.reporting import GOLDEN_BEFORE_KEY, finish_session, terminal_summary
from evalsuite.plugin.server import (
    INSTALL_HINT,
    SERVED_ENGINES,
    ServerPlan,
    ServerStartError,
    plan_peer_server,
    plan_server,
    start_server,
    vllm_environment,
    vllm_executable,
)
from evalsuite.plugin.session import OPTIONS_KEY, RUN_ID_KEY, WORKER_RUN_ID, WORKER_SERVER
from evalsuite.records.metadata import new_run_id
from evalsuite.textformat import terminal_text
from evalsuite.tokens import count_with_checkpoint

__all__ = ["bench"]
GPU_MARKER = "gpu: a GPU engine's parametrization (selected by --gpu)"
VLM_MARKER = (
    "needs_vlm: the test asks the engine questions about a page, so OCR-only engines are not "
    "parametrized for it"
)
RUN_DIR_KEY = pytest.StashKey[Path]()
PYTEST_MARKERS = {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings"}


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    try:
        benchmarks = load_declarations(config.getini(INI_BENCHMARKS))
    except EvalsuiteError as exc:
        raise pytest.UsageError(str(exc)) from None
    for benchmark in benchmarks:
        config.addinivalue_line("markers", f"{benchmark.name}: {benchmark.description}")
    config.addinivalue_line("markers", GPU_MARKER)
    config.addinivalue_line("markers", VLM_MARKER)
    gpu_engines = tuple(dict.fromkeys(e for b in benchmarks for e in b.gpu_engines))
    config.stash[OPTIONS_KEY] = parse_options(config, gpu_engines)
    # Every image the run's engines read is held to --max-image-pixels; restored at the end.
    previous_limit = set_max_image_pixels(config.stash[OPTIONS_KEY].max_image_pixels)
    config.add_cleanup(lambda: set_max_image_pixels(previous_limit))
    # The weights' own tokenizer counts text tokens (bins, ratios, truncation) when given.
    try:
        previous_counter = count_with_checkpoint(config.stash[OPTIONS_KEY].checkpoint_folder())
    except EvalsuiteError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.add_cleanup(lambda: count_with_checkpoint(previous_counter))
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        if WORKER_RUN_ID in worker:
            config.stash[RUN_ID_KEY] = worker[WORKER_RUN_ID]
        if WORKER_SERVER in worker:  # the controller's server, shared by every worker
            config.stash[OPTIONS_KEY] = replace(config.stash[OPTIONS_KEY], **worker[WORKER_SERVER])
        return
    if _runs_benchmarks(config, benchmarks):
        run_id = config.stash[RUN_ID_KEY] = new_run_id()
        run_dir = config.stash[OPTIONS_KEY].report_dir / run_id
        if not config.getoption("json_report", default=False):
            config.option.json_report = True
            config.option.json_report_file = str(run_dir / "report.json")
            config.option.json_report_indent = 1
        config.stash[RUN_DIR_KEY] = run_dir


def _provide_server(config: pytest.Config, benchmarks: list[Benchmark], run_dir: Path) -> None:
    """Start the run's model server when a served engine will run and no --api-base was given
    (see :mod:`evalsuite.plugin.server`); its URL, or why it failed, goes into the options that
    the workers also receive."""
    options: SuiteOptions = config.stash[OPTIONS_KEY]
    served = {
        name
        for b in benchmarks
        for name in options.engines_to_run(b.gpu_engines, b.cpu_engines)
        if name in SERVED_ENGINES
    }
    if not served or options.api_bases:
        return
    if not (options.gpu or options.server_command):
        return  # the engine then says it needs --api-base
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    try:
        plan = _server_plan(config, options, reporter)
        if reporter is not None:
            reporter.write_line(
                terminal_text(f"evalsuite: starting the model server: {plan.command}"))
        server = start_server(plan, run_dir / "server.log")
    except ServerStartError as exc:
        if reporter is not None:
            reporter.write_line(terminal_text(f"evalsuite: {exc}\n{exc.log_tail}"), red=True)
        config.stash[OPTIONS_KEY] = replace(options, server_error=str(exc))
        return
    config.add_cleanup(server.stop)
    if reporter is not None:
        reporter.write_line(f"evalsuite: model server ready at {server.api_base}")
    config.stash[OPTIONS_KEY] = replace(
        options, api_bases=(server.api_base,), server_weights=plan.weights
    )


def _server_plan(config: pytest.Config, options: SuiteOptions, reporter: Any) -> ServerPlan:
    """--server-command as given; for a peer (--model) a stock vLLM with its authors' flags;
    else vLLM with evalsuite's plugin, which DeepSeek's modes need."""
    if options.server_command is not None:
        return plan_server(options.server_command, options.served_model,
                           options.served_model_path(), options.server_timeout_s)
    executable = options.vllm or vllm_executable(config.rootpath)
    if options.model is not None:
        return plan_peer_server(model_profile(options.model), options.model_path,
                                options.server_timeout_s, vllm=executable)
    environment = vllm_environment(executable)
    if not environment.plugin:
        raise ServerStartError(
            f"{environment.describe()}: the suite needs its vLLM plugin there for "
            f"DeepSeek's modes and preprocessing; {INSTALL_HINT}"
        )
    if reporter is not None:
        reporter.write_line(f"evalsuite: {environment.describe()}")
    return plan_server(None, options.served_model, options.served_model_path(),
                       options.server_timeout_s, vllm=environment.executable,
                       platform=environment.platform)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # Before xdist starts its workers, which receive the server's URL (pytest_configure_node).
    config = session.config
    benchmarks = load_declarations(config.getini(INI_BENCHMARKS))
    check_mark_expression(config)
    check_option_sources(config, benchmarks)
    run_dir = config.stash.get(RUN_DIR_KEY, None)
    if run_dir is not None and not config.getoption("collectonly"):
        options: SuiteOptions = config.stash[OPTIONS_KEY]
        if options.update_golden:
            try:  # a malformed golden file stops the run before anything is rewritten
                config.stash[GOLDEN_BEFORE_KEY] = GoldenStore(options.golden_dir).snapshot()
            except EvalsuiteError as exc:
                raise pytest.UsageError(str(exc)) from None
        _provide_server(config, benchmarks, run_dir)


def check_mark_expression(config: pytest.Config) -> None:
    """An ``-m`` expression naming a marker nobody registered is a usage error (it would
    silently select nothing); the message lists the benchmark markers."""
    expression = config.getoption("markexpr", default="") or ""
    if not expression:
        return
    registered = {
        line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")
    }
    words = {
        word
        for word in expression.replace("(", " ").replace(")", " ").split()
        if word not in ("and", "or", "not")
    }
    unknown = sorted(words - registered - PYTEST_MARKERS)
    if unknown:
        from evalsuite.benchmarks import all_benchmarks

        names = ", ".join(b.name for b in all_benchmarks())
        raise pytest.UsageError(
            f"-m {expression!r}: unknown marker(s) {', '.join(unknown)}; benchmark markers: "
            f"{names}"
        )


def check_option_sources(config: pytest.Config, benchmarks: list[Benchmark]) -> None:
    """A benchmark whose data only comes from a folder option (``pages``: ``--pages-dir``),
    selected by ``-m`` or by its test file while that option is missing, is a usage error: it
    would otherwise select nothing and pass."""
    options: SuiteOptions = config.stash[OPTIONS_KEY]
    expression = config.getoption("markexpr", default="") or ""
    files = {Path(str(arg).split("::")[0]).name for arg in config.args}
    for benchmark in benchmarks:
        reason = _missing_own_data(benchmark, options)
        if reason is None:
            continue
        by_marker = bool(expression) and _selects_by_marker(expression, benchmark.name)
        if by_marker or f"test_{benchmark.name}.py" in files:
            raise pytest.UsageError(f"{reason} (see pytest --help)")


def _missing_own_data(benchmark: Benchmark, options: SuiteOptions) -> str | None:
    """Why ``benchmark`` cannot run: its data comes only from folder options (``pages``:
    ``--pages-dir``) and none was given; None when it can run or needs no such option."""
    needed = sorted({source.option for source in benchmark.sources if source.option})
    if not needed or benchmark.available_sources(options.data_dir, options.option_dirs):
        return None
    wanted = " ".join(f"{option} DIR" for option in needed)
    return f"{benchmark.name} runs on your own data: pass {wanted}"


def _selects_by_marker(expression: str, marker: str) -> bool:
    """Whether ``-m expression`` selects a test because it carries ``marker``: true for a test
    with only that marker, false for one without it (``not slow`` selects the pages test, but
    not because of its marker)."""
    compiled = Expression.compile(expression)
    with_marker = compiled.evaluate(lambda name, **_: name == marker)
    without = compiled.evaluate(lambda name, **_: False)
    return with_marker and not without


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist (``node`` a WorkerController): every worker writes under the controller's run id."""
    config = node.config
    if RUN_ID_KEY not in config.stash:
        config.stash[RUN_ID_KEY] = new_run_id()
    node.workerinput[WORKER_RUN_ID] = config.stash[RUN_ID_KEY]
    options: SuiteOptions = config.stash[OPTIONS_KEY]
    node.workerinput[WORKER_SERVER] = {
        "api_bases": options.api_bases,
        "server_error": options.server_error,
        "server_weights": options.server_weights,
    }


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "bench" not in metafunc.fixturenames:
        return
    benchmark = getattr(metafunc.module, "BENCHMARK", None)
    if not isinstance(benchmark, Benchmark):
        raise pytest.UsageError(
            f"{metafunc.module.__name__} uses the bench fixture but declares no BENCHMARK "
            "(the evalsuite.benchmarks.Benchmark it runs)"
        )
    options: SuiteOptions = metafunc.config.stash[OPTIONS_KEY]
    vlm_only = benchmark.needs_vlm or metafunc.definition.get_closest_marker("needs_vlm")
    params = []
    for engine, mode in engine_params(benchmark, options):
        if vlm_only and engine_kind(engine) == "ocr":
            continue
        marks = [getattr(pytest.mark, benchmark.name)]
        if options.gpu and engine in benchmark.gpu_engines:
            marks.append(pytest.mark.gpu)
        for source, _ in benchmark.available_sources(options.data_dir, options.option_dirs):
            test_id = f"{engine}-{mode}-{source.name}"
            params.append(pytest.param(engine, mode, source.name, marks=marks, id=test_id))
    reason = _missing_own_data(benchmark, options)
    if not params and reason is not None:  # e.g. pages without --pages-dir: say what runs it
        params.append(pytest.param(None, None, None, marks=pytest.mark.skip(reason=reason),
                                   id="no-data"))
    metafunc.parametrize(("engine_name", "mode", "data_source"), params)


def engine_params(benchmark: Benchmark, options: SuiteOptions) -> list[tuple[str, str]]:
    """(engine, mode) pairs to run: an OCR-only engine gets its one mode, a VLM each mode asked
    for (``--modes``, else the benchmark's defaults it supports, else its first mode)."""
    engines = options.engines_to_run(benchmark.gpu_engines, benchmark.cpu_engines)
    pairs = []
    for name in engines:
        if engine_kind(name) == "ocr":
            pairs.append((name, OCR_MODE))
            continue
        valid = engine_modes(name, options)
        modes = options.modes or tuple(m for m in benchmark.default_modes if m in valid)
        pairs.extend((name, mode) for mode in modes or valid[:1])
    return pairs


def pytest_sessionfinish(session: pytest.Session) -> None:
    finish_session(session)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    terminal_summary(terminalreporter, config)


def _runs_benchmarks(config: pytest.Config, benchmarks: list[Benchmark]) -> bool:
    """Whether the session's paths hold a bench module (``test_<benchmark>.py`` of a registered
    benchmark, in a given folder or one level below it): then it is a benchmark run and gets a
    run folder with pytest-json-report's report. A ``--collect-only`` session runs nothing and
    gets none."""
    if config.option.collectonly:
        return False
    names = {f"test_{b.name}.py" for b in benchmarks}
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        path = path if path.is_absolute() else config.invocation_params.dir / path
        if path.is_file() and path.name in names:
            return True
        if path.is_dir():
            folders = [path, *(p for p in path.iterdir() if p.is_dir())]
            if any((folder / name).is_file() for folder in folders for name in names):
                return True
    return False
