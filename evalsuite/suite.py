"""The bridge between pytest and the library: suite options, engine resolution, and the per-test
``Bench`` that runs an engine over samples, records the outcome and applies the golden gate.

``conftest.py`` declares the options, markers and fixtures in one place and builds these objects;
benchmark modules in ``benches/`` only compose them.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from evalsuite.datasets import data_root
from evalsuite.engines import create_engine, engine_kind
from evalsuite.engines.base import Engine
from evalsuite.errors import EngineUnavailableError
from evalsuite.golden import GoldenStore, check_metric
from evalsuite.reports.model import BenchmarkRecord, SampleRecord
from evalsuite.runner import (
    MetricSpec,
    ResultCache,
    Sample,
    Scorer,
    aggregate_by,
    run_benchmark,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES_DIR = REPO_ROOT / "tests" / "fixtures"
GOLDEN_DIR = REPO_ROOT / "golden"
GPU_ENGINES = ("deepseek-ocr", "deepseek-ocr-2")
# Engines whose outputs are bit-for-bit reproducible: their goldens are set with tolerance 0,
# so any change of a mean score fails the gate (they pin the code path, not model quality).
EXACT_ENGINES = ("tiny-deepseek-ocr-2", "replay")
VLM_HINT = "deepseek-ocr, deepseek-ocr-2, tiny-deepseek-ocr-2 or replay"
OCR_MODE = "native"  # the single "mode" of an OCR-only engine, which has no vision tokens


@dataclass(frozen=True)
class BenchmarkSpec:
    """What a benchmark module declares about itself (as ``BENCHMARK`` at module level)."""

    name: str
    title: str
    needs_vlm: bool = False
    cpu_engines: tuple[str, ...] = ("tesseract", "tiny-deepseek-ocr-2")
    gpu_engines: tuple[str, ...] = ("deepseek-ocr",)
    default_modes: tuple[str, ...] = ("small",)
    # Default sample caps per engine (``--max-samples`` overrides): the tiny random model pins
    # the code path, which a few samples do as well as all of them, at a second per page.
    sample_caps: tuple[tuple[str, int], ...] = (("tiny-deepseek-ocr-2", 4),)

    def sample_cap(self, engine: str) -> int | None:
        return dict(self.sample_caps).get(engine)


@dataclass
class SuiteOptions:
    """The command-line options of the pytest front end, parsed."""

    gpu: bool = False
    engines: tuple[str, ...] = ("auto",)
    model_path: str | None = None
    modes: tuple[str, ...] | None = None
    data_dir: Path | None = None
    max_samples: int | None = None
    update_golden: bool = False
    record: Path | None = None
    report_dir: Path = REPO_ROOT / "reports"
    golden_dir: Path = GOLDEN_DIR
    num_articles: int | None = None
    questions_per_article: int | None = None
    seed: int = 0

    @classmethod
    def from_pytest(cls, config: pytest.Config) -> SuiteOptions:
        option = config.getoption

        def names(value: str | None) -> tuple[str, ...] | None:
            return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None

        return cls(
            gpu=bool(option("--gpu")),
            engines=names(option("--engine")) or ("auto",),
            model_path=option("--model-path"),
            modes=names(option("--modes")),
            data_dir=data_root(option("--data-dir")),
            max_samples=option("--max-samples"),
            update_golden=bool(option("--update-golden")),
            record=Path(option("--record")) if option("--record") else None,
            report_dir=Path(option("--report-dir")),
            golden_dir=Path(option("--golden-dir")),
            num_articles=option("--num-articles"),
            questions_per_article=option("--questions-per-article"),
        )


def cuda_device_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def engine_params(spec: BenchmarkSpec, options: SuiteOptions) -> list[tuple[str, str]]:
    """(engine, mode) pairs to run: OCR-only engines get one pair, VLMs one per mode."""
    if options.engines == ("auto",):
        engines = spec.gpu_engines if options.gpu else spec.cpu_engines
    else:
        engines = options.engines
    modes = options.modes or spec.default_modes
    pairs = []
    for name in engines:
        if engine_kind(name) == "ocr":
            pairs.append((name, OCR_MODE))
        else:
            pairs.extend((name, mode) for mode in modes)
    return pairs


@dataclass
class Suite:
    """Session state of one pytest process (an xdist worker or the only process)."""

    options: SuiteOptions
    worker_id: str = "master"
    records: list[BenchmarkRecord] = field(default_factory=list)
    cache: ResultCache = field(default_factory=ResultCache)
    run_dir: Path | None = None
    _engines: dict[str, Engine | EngineUnavailableError] = field(default_factory=dict)
    _renders: dict[tuple[str, Any, bool], Any] = field(default_factory=dict)

    @cached_property
    def golden(self) -> GoldenStore:
        return GoldenStore(self.options.golden_dir)

    def data_path(self, *parts: str) -> Path | None:
        """``<data dir>/parts`` when a data dir is set and that path exists, else None."""
        root = self.options.data_dir
        if root is None:
            return None
        path = root.joinpath(*parts)
        return path if path.exists() else None

    @staticmethod
    def fixture_path(*parts: str) -> Path:
        return FIXTURES_DIR.joinpath(*parts)

    def render_text(self, text: str, config: Any, *, single_page: bool = False) -> Any:
        """``render.render_text``, cached by content (text hash, config) for this session."""
        from evalsuite.render import render_text

        key = (hashlib.sha256(text.encode()).hexdigest(), config, single_page)
        if key not in self._renders:
            self._renders[key] = render_text(text, config, single_page=single_page)
        return self._renders[key]

    def limit(self, items: Sequence[Any], cap: int | None = None) -> list[Any]:
        """The first ``--max-samples`` items, else the first ``cap``, else all."""
        cap = self.options.max_samples or cap
        return list(items if cap is None else items[:cap])

    def engine(self, name: str) -> Engine:
        """The engine called ``name``, created once per process; a failed creation is remembered
        and raised again, so a missing model is reported once, not loaded per test."""
        if name not in self._engines:
            try:
                self._engines[name] = self._create(name)
            except EngineUnavailableError as exc:
                self._engines[name] = exc
        engine = self._engines[name]
        if isinstance(engine, EngineUnavailableError):
            raise engine
        return engine

    def _create(self, name: str) -> Engine:
        options: dict[str, Any] = {}
        if name in GPU_ENGINES:
            count = cuda_device_count()
            if count == 0:
                raise EngineUnavailableError(f"{name} needs a CUDA GPU and none is visible")
            worker_number = int(self.worker_id[2:]) if self.worker_id.startswith("gw") else 0
            options["device"] = f"cuda:{worker_number % count}"
            if self.options.model_path:
                options["model_path"] = self.options.model_path
        if name == "replay":
            recordings = self.data_path("deepseek_ocr_recordings", "recordings.jsonl")
            if recordings is not None and not os.environ.get("EVALSUITE_RECORDINGS"):
                options["recordings"] = recordings
        engine = create_engine(name, **options)
        if self.options.record is not None and name != "replay":
            from evalsuite.engines.recording import RecordingEngine

            engine = RecordingEngine(engine, self.options.record)
        return engine


@dataclass
class Bench:
    """One benchmark test: its engine and mode, and how to run, record and gate it."""

    suite: Suite
    spec: BenchmarkSpec
    engine_name: str
    mode: str
    nodeid: str

    @property
    def engine(self) -> Engine:
        return self.suite.engine(self.engine_name)

    def limit(self, items: Sequence[Any]) -> list[Any]:
        """``items`` capped by ``--max-samples`` or this benchmark's cap for the engine."""
        return self.suite.limit(items, self.spec.sample_cap(self.engine_name))

    @property
    def is_ocr_only(self) -> bool:
        return engine_kind(self.engine_name) == "ocr"

    def require_vlm(self) -> None:
        """Skip when the engine only does OCR: the test asks questions about a page."""
        if self.is_ocr_only:
            pytest.skip(
                f"{self.engine_name} is OCR-only; {self.spec.title} QA needs a VLM engine "
                f"({VLM_HINT})"
            )

    def require_recordings(self, samples: Sequence[Sample]) -> None:
        """Under the replay engine, skip when the first sample has no recording (with its key)."""
        from evalsuite.engines.replay import ReplayEngine
        from evalsuite.errors import MissingRecordingError

        engine = self.engine
        if samples and isinstance(engine, ReplayEngine):
            try:
                engine.find(samples[0].request)
            except MissingRecordingError as exc:
                pytest.skip(f"replay has no recordings for this benchmark: {exc}")

    def evaluate(
        self,
        samples: Sequence[Sample],
        scorer: Scorer,
        specs: Sequence[MetricSpec],
        *,
        parameter: str | None = None,
        params: Mapping[str, Any] | None = None,
        batch_size: int = 1,
        group_by: Callable[[SampleRecord], str] | None = None,
    ) -> BenchmarkRecord:
        """Run, record, and gate (or update the goldens); returns the record.

        With ``group_by``, the gated specs are also aggregated per group as ``metric[group]``;
        those are gated only where a golden entry exists (e.g. paper values per token bin).
        """
        if not samples:
            pytest.skip(f"{self.spec.name}: no samples to run")
        record = run_benchmark(
            self.engine,
            samples,
            scorer,
            specs,
            benchmark=self.spec.name,
            engine_name=self.engine_name,
            parameter=self._parameter(parameter),
            params={"mode": self.mode, **dict(params or {})},
            batch_size=batch_size,
            cache=self.suite.cache,
        )
        gated = [s for s in _all_specs(record, specs) if s.gate]
        grouped: list[MetricSpec] = []
        if group_by is not None:
            record.metrics.update(aggregate_by(record.samples, group_by, gated))
            golden = self.suite.golden.load(record.benchmark).entries
            grouped = [
                replace(spec, name=name)
                for name in record.metrics
                for spec in gated
                if name.startswith(f"{spec.name}[")
                and (record.engine, record.parameter, name) in golden
            ]
        self.suite.records.append(record)
        self._gate(record, [*gated, *grouped])
        return record

    def _parameter(self, parameter: str | None) -> str:
        """The golden key's parameter; runs on the project's fixtures alone are keyed apart,
        since their sample set (and so every golden value) differs from a run with real data."""
        base = parameter or f"mode={self.mode}"
        return base if self.suite.options.data_dir is not None else f"{base},data=fixtures"

    def _gate(self, record: BenchmarkRecord, specs: Sequence[MetricSpec]) -> None:
        if self.suite.options.update_golden:
            from evalsuite.reports.results import git_state

            commit, dirty = git_state(REPO_ROOT)
            self.suite.golden.update(
                record.benchmark,
                [(record.engine, record.parameter, s.name, record.metrics[s.name]) for s in specs],
                tolerance={
                    s.name: 0.0 if self.engine_name in EXACT_ENGINES else s.tolerance
                    for s in specs
                },
                commit=(commit or "unknown") + ("-dirty" if dirty else ""),
            )
            return
        golden = self.suite.golden.load(record.benchmark)
        command = (
            f"pytest {shlex.quote(self.nodeid)} --engine {self.engine_name} --update-golden"
        )
        failures = []
        for spec in specs:
            outcome = check_metric(
                golden.entries.get((record.engine, record.parameter, spec.name)),
                record.metrics[spec.name],
                benchmark=record.benchmark,
                engine=record.engine,
                parameter=record.parameter,
                metric=spec.name,
                samples=record.samples,
                update_command=command,
            )
            if not outcome.passed:
                failures.append(outcome.message)
        if failures:
            pytest.fail("\n\n".join(failures), pytrace=False)


def _all_specs(record: BenchmarkRecord, specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    from evalsuite.runner import OUTPUT_HEALTH

    names = {s.name for s in specs}
    return [*specs, *(s for s in OUTPUT_HEALTH if s.name not in names and s.name in record.metrics)]
