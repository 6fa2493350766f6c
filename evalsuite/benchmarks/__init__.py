"""The benchmark registry: every benchmark is declared once, in a module of its own.

A declaration module (``evalsuite/benchmarks/fox.py``, or a user's own module) builds a
:class:`Benchmark` and passes it to :func:`register`; it also holds the benchmark's metric specs,
sample builders and scorers. Everything that needs a benchmark's name reads it here: the pytest
markers, ``evalsuite data fetch`` and ``data list``, the dashboard's order, the docs table.

Declarations are found in three places (:func:`load_declarations`): the built-in modules in
:data:`BUILTIN_DECLARATIONS`, the ``evalsuite.benchmarks`` entry-point group of installed
packages, and module names given by the caller (the pytest plugin's ``evalsuite_benchmarks``
ini option). A benchmark is then run by a thin pytest module, ``test_<name>.py``, whose
``BENCHMARK`` names the declaration (see docs/add_a_benchmark.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata as package_metadata
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evalsuite.datasets import data_identity
from evalsuite.datasets.fetch import FetchSpec
from evalsuite.engines.base import DOCUMENT_EVALUATION_NGRAM, AntiRepetition
from evalsuite.errors import UnknownBenchmarkError
from evalsuite.models import PAGE_MARKDOWN, TASKS
from evalsuite.runner import MetricSpec, with_output_health

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES_DIR = REPO_ROOT / "tests" / "fixtures"
"""The project's own small data, committed with it; every built-in benchmark runs on it."""
ENTRY_POINT_GROUP = "evalsuite.benchmarks"
BUILTIN_DECLARATIONS = (
    "evalsuite.benchmarks.fox",
    "evalsuite.benchmarks.render_configs",
    "evalsuite.benchmarks.quality",
    "evalsuite.benchmarks.finewiki",
    "evalsuite.benchmarks.surya_detection",
    "evalsuite.benchmarks.surya_recognition",
    "evalsuite.benchmarks.finix",
    "evalsuite.benchmarks.olmocr_bench",
    "evalsuite.benchmarks.omnidocbench",
    "evalsuite.benchmarks.pages",
)


@dataclass(frozen=True)
class DataSource:
    """One set of samples a benchmark runs on: the project's own fixtures (``fixtures`` is an
    absolute folder), real data under the data folder (``folder``, relative to it, present
    when every path of ``requires`` exists inside it), or the user's own folder named by a
    command-line option (``option``, e.g. ``--pages-dir``; present when the option is given).
    ``loader`` reads the located folder (or file) into what the benchmark's sample builders take
    (a list of pages, a study, ...).

    ``fetch`` says how ``evalsuite data fetch`` downloads it; None when it cannot be fetched
    (the description then says where a user puts it). ``version`` names the data's own release
    (e.g. OmniDocBench's v1.0 by its page count), which then identifies the data in golden keys
    instead of the downloaded revision.
    """

    name: str
    description: str
    loader: Callable[[Path], Any]
    fixtures: Path | None = None
    folder: str | None = None
    requires: tuple[str, ...] = ()
    fetch: FetchSpec | None = None
    option: str | None = None
    version: Callable[[Path], str] | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.fixtures, self.folder, self.option)) != 1:
            raise ValueError(
                f"data source {self.name!r}: give exactly one of fixtures, folder, option"
            )

    @property
    def is_fixture(self) -> bool:
        return self.fixtures is not None

    def locate(
        self, data_dir: Path | None, option_dirs: Mapping[str, Path] | None = None
    ) -> Path | None:
        """Where this source's files are, or None when it is absent. ``option_dirs``: the
        folders given on the command line, by option (``{"--pages-dir": Path(...)}``)."""
        if self.fixtures is not None:
            return self.fixtures
        if self.option is not None:
            return (option_dirs or {}).get(self.option)
        if data_dir is None or self.folder is None:
            return None
        folder = data_dir / self.folder
        if not folder.exists() or not all((folder / part).exists() for part in self.requires):
            return None
        return folder

    def identity(self, location: Path, name: str | None = None) -> str:
        """The data part of golden keys: the source name for fixtures (versioned with the
        project), else ``name@revision`` (see :func:`evalsuite.datasets.data_identity`);
        ``name`` replaces the source's name (a user's folder: the dataset name they chose);
        ``name@version`` for a source that declares its ``version``."""
        if self.is_fixture:
            return self.name
        revision = self.version(location) if self.version else data_identity(location)
        return f"{name or self.name}@{revision}"


@dataclass(frozen=True)
class Benchmark:
    """A benchmark's declaration.

    ``description`` is its pytest marker's help text; ``cpu_engines`` run by default without
    ``--gpu``, ``gpu_engines`` with it; ``default_modes`` apply to engines that have modes;
    ``needs_vlm`` marks question answering that OCR-only engines cannot do; ``order`` places it
    on the dashboard; ``sample_caps`` limits the samples per engine by default (``--max-samples``
    overrides); ``metrics`` are its metric specs (direction, range), which reports read;
    ``anti_repetition`` is the n-gram setting served engines send with its requests (default:
    the one DeepSeek evaluated pages with; questions and continuation use the vLLM recipe's);
    ``task`` the task kind of its requests (:data:`evalsuite.models.TASKS`) where a request
    names none, which a model profile answers with its own prompt.
    """

    name: str
    title: str
    description: str
    sources: tuple[DataSource, ...]
    cpu_engines: tuple[str, ...]
    gpu_engines: tuple[str, ...] = ("vllm",)
    default_modes: tuple[str, ...] = ("small",)
    needs_vlm: bool = False
    order: int = 100
    sample_caps: Mapping[str, int] = field(
        default_factory=lambda: MappingProxyType({"tiny-deepseek-ocr-2": 4})
    )
    metrics: tuple[MetricSpec, ...] = ()
    anti_repetition: AntiRepetition = DOCUMENT_EVALUATION_NGRAM
    task: str = PAGE_MARKDOWN

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"benchmark {self.name!r}: task {self.task!r} is not one of {TASKS}")
        if not self.name.isidentifier():
            raise ValueError(f"benchmark name {self.name!r} must be a Python identifier")
        names = [source.name for source in self.sources]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"benchmark {self.name!r} needs data sources with distinct names")

    def metric_spec(self, name: str) -> MetricSpec | None:
        """The spec of metric ``name`` (the output-health shares included); None if undeclared."""
        return next((m for m in with_output_health(self.metrics) if m.name == name), None)

    def source(self, name: str) -> DataSource:
        for source in self.sources:
            if source.name == name:
                return source
        known = ", ".join(s.name for s in self.sources)
        raise UnknownBenchmarkError(f"{self.name} has no data source {name!r}; it has {known}")

    def available_sources(
        self, data_dir: Path | None, option_dirs: Mapping[str, Path] | None = None
    ) -> list[tuple[DataSource, Path]]:
        """The sources present here, each with its folder, in declaration order."""
        found = []
        for source in self.sources:
            location = source.locate(data_dir, option_dirs)
            if location is not None:
                found.append((source, location))
        return found


_REGISTRY: dict[str, Benchmark] = {}


def register(benchmark: Benchmark) -> Benchmark:
    """Add ``benchmark`` to the registry (again with the same declaration is a no-op)."""
    existing = _REGISTRY.get(benchmark.name)
    if existing is not None and existing != benchmark:
        raise ValueError(f"benchmark {benchmark.name!r} is already declared differently")
    _REGISTRY[benchmark.name] = benchmark
    return benchmark


def load_declarations(modules: Iterable[str] = ()) -> list[Benchmark]:
    """Import the built-in declarations, those of the ``evalsuite.benchmarks`` entry points and
    ``modules``; returns every registered benchmark (see :func:`all_benchmarks`)."""
    for name in BUILTIN_DECLARATIONS:
        importlib.import_module(name)
    for entry_point in package_metadata.entry_points(group=ENTRY_POINT_GROUP):
        entry_point.load()
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UnknownBenchmarkError(
                f"cannot import benchmark declaration module {name!r}: {exc}"
            ) from exc
    return all_benchmarks()


def all_benchmarks() -> list[Benchmark]:
    """Registered benchmarks in dashboard order (then by name)."""
    return sorted(_REGISTRY.values(), key=lambda b: (b.order, b.name))


def get_benchmark(name: str) -> Benchmark:
    """The benchmark registered as ``name``; unknown names list the registered ones."""
    if not _REGISTRY:
        load_declarations()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(b.name for b in all_benchmarks())
        raise UnknownBenchmarkError(f"unknown benchmark {name!r}; choose one of: {known}") from None
