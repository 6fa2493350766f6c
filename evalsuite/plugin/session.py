"""Per-process state of a benchmark session, created when the first benchmark test asks for it
(unit-test sessions never create one): the run id and folder, engines (created once, a failed
creation remembered), loaded data, the result cache, and the records to write at the end."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from evalsuite.benchmarks import DataSource
from evalsuite.engines import create_engine
from evalsuite.engines.base import Engine
from evalsuite.engines.replay import STUDY_RECORDINGS
from evalsuite.errors import EngineUnavailableError, EvalsuiteError
from evalsuite.golden import GoldenStore
from evalsuite.models import RateLimits, TokenPrices, model_profile
from evalsuite.plugin.options import SuiteOptions, parse_options, request_identity
from evalsuite.plugin.server import SERVED_ENGINES, ServerStartError
from evalsuite.records.metadata import ENDPOINT_COUNTS, new_run_id
from evalsuite.records.model import BenchmarkRecord
from evalsuite.request_cache import CACHE_FILE, SharedResultCache

SESSION_KEY = pytest.StashKey["BenchSession"]()
OPTIONS_KEY = pytest.StashKey[SuiteOptions]()
RUN_ID_KEY = pytest.StashKey[str]()
WORKER_RUN_ID = "evalsuite_run_id"
WORKER_SERVER = "evalsuite_server"
DEEPSEEK_ENGINES = ("deepseek-ocr", "deepseek-ocr-2")
@dataclass
class BenchSession:
    """What one pytest process (an xdist worker, or the only process) holds for the run."""

    options: SuiteOptions
    run_id: str
    worker_id: str = "master"
    root: Path = Path(".")
    """The pytest root: the checkout whose commit the cache's identity names."""
    records: list[BenchmarkRecord] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    data_sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    engine_details: dict[str, dict[str, Any]] = field(default_factory=dict)
    _engines: dict[str, Engine | EvalsuiteError] = field(default_factory=dict)
    _endpoint_counts: dict[str, Callable[[], dict[str, dict[str, int]]]] = field(
        default_factory=dict
    )
    _data: dict[tuple[str, str], Any] = field(default_factory=dict)

    @property
    def run_dir(self) -> Path:
        return self.options.report_dir / self.run_id

    @cached_property
    def cache(self) -> SharedResultCache:
        """The run's request cache, shared by every process of the run (xdist workers): a
        request reaches the engine once per run, as in a serial run. With ``--resume`` it
        takes over the answers of the run resumed."""
        return SharedResultCache(
            self.run_dir / CACHE_FILE,
            identity=request_identity(self.options, self.root),
            resume_from=self.options.resume,
        )

    def close_cache(self) -> None:
        """Close this process's connection to the request cache, if it opened one."""
        if "cache" in self.__dict__:
            self.cache.close()

    @property
    def golden(self) -> GoldenStore:
        return GoldenStore(self.options.golden_dir)

    def engine(self, name: str) -> Engine:
        """The engine called ``name``, created once per process; a failed creation is
        remembered and raised again, so a missing model is reported once, not loaded per test."""
        if name not in self._engines:
            try:
                self._engines[name] = self._create(name)
            except EvalsuiteError as exc:
                self._engines[name] = exc
            except (TypeError, ValueError) as exc:
                self._engines[name] = EngineUnavailableError(f"{name}: {exc}")
        engine = self._engines[name]
        if isinstance(engine, EvalsuiteError):
            raise engine
        return engine

    def label(self, name: str) -> str:
        """The label engine ``name``'s results are keyed on: ``--engine-label``, else the
        engine's own (a served engine: its model, e.g. ``deepseek-ocr``), else its name."""
        if name in self.options.engine_labels:
            return self.options.engine_labels[name]
        return getattr(self.engine(name), "default_label", None) or name

    def data(
        self, benchmark: str, source: DataSource, location: Path, identity: str | None = None
    ) -> Any:
        """``source``'s data, loaded once per process; its identity (``identity``, the one
        the run's records carry, else the source's own) is noted for the run."""
        key = (benchmark, source.name)
        if key not in self._data:
            identity = identity or source.identity(location)
            self.data_sources[f"{benchmark}/{identity}"] = {
                "benchmark": benchmark,
                "source": source.name,
                "revision": identity,
                "path": str(location),
                "fixtures": source.is_fixture,
            }
            self._data[key] = source.loader(location)
        return self._data[key]

    def _create(self, name: str) -> Engine:
        options: dict[str, Any] = {}
        if name in DEEPSEEK_ENGINES:
            options["device"] = self._cuda_device()
            path = self.options.model_path if name == "deepseek-ocr" else self.options.model_path_v2
            if path:
                options["model_path"] = path
        if name == "replay":
            options["recordings"] = self._recordings()
        if name in SERVED_ENGINES:
            options.update(self._served_options(name))
        if self.options.batch_size is not None and name.startswith(
            ("deepseek-ocr-2", "tiny-deepseek-ocr-2")
        ):
            options["batch_size"] = self.options.batch_size
        engine = create_engine(name, **options)
        label = self.options.engine_labels.get(name) or getattr(engine, "default_label", name)
        details = getattr(engine, "server_info", None) or getattr(engine, "identity", None)
        self.engine_details[label] = {
            "engine": name,
            **{k: str(v) for k, v in options.items()},
            **(details() if details else {}),
        }
        if name in SERVED_ENGINES and self.options.server_weights is not None:
            self.engine_details[label]["weights"] = self.options.server_weights
        counts = getattr(engine, "endpoint_counts", None)
        if counts is not None:
            self._endpoint_counts[label] = counts
        if self.options.record is not None and name != "replay":
            from evalsuite.engines.recording import RecordingEngine

            engine = RecordingEngine(engine, self.options.record)
        return engine

    def engine_details_now(self) -> dict[str, dict[str, Any]]:
        """:attr:`engine_details` with each served engine's requests per server so far."""
        return {
            label: {**details, ENDPOINT_COUNTS: self._endpoint_counts[label]()}
            if label in self._endpoint_counts else details
            for label, details in self.engine_details.items()
        }

    def _served_options(self, name: str) -> dict[str, Any]:
        """A served engine's server (--api-base, or the one this run started) and model: the
        DeepSeek family for ``vllm`` and when named (--served-model), a peer's profile."""
        if self.options.server_error is not None:
            raise ServerStartError(self.options.server_error)
        if not self.options.api_bases:
            raise EngineUnavailableError(
                "a served engine needs a model server: pass --api-base URL (a running "
                "OpenAI-compatible server), or --gpu / --server-command so the run starts one"
            )
        options: dict[str, Any] = {"api_base": list(self.options.api_bases)}
        if self.options.served_model_given or name == "vllm":
            options["model_family"] = self.options.served_model
        if self.options.model is not None:
            options["model_profile"] = self.options.model
            if self.options.served_model_name is not None:
                options["model"] = self.options.served_model_name
            if self.options.prompt is not None:
                options["prompt"] = self.options.prompt
            if self.options.decoding:
                options["decoding"] = dict(self.options.decoding)
        if self.options.api_key_env is not None:
            options["api_key_env"] = self.options.api_key_env
        if self.options.concurrency is not None:
            options["concurrency"] = self.options.concurrency
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
        profile_limits = (model_profile(self.options.model).rate_limits
                          if self.options.model is not None else None) or RateLimits()
        for name in ("requests_per_minute", "tokens_per_minute"):
            limit = getattr(self.options, name) or getattr(profile_limits, name)
            if limit is not None:  # each worker process keeps its share of the run's limit
                options[name] = limit / workers
        if self.options.token_prices is not None:
            options["token_prices"] = TokenPrices(*self.options.token_prices,
                                                  source="--token-prices")
        if self.options.max_new_tokens is not None:
            options["max_tokens"] = self.options.max_new_tokens
        return options

    def _recordings(self) -> list[Path] | None:
        if self.options.recordings:
            return list(self.options.recordings)
        if os.environ.get("EVALSUITE_RECORDINGS", "").strip():
            return None  # the replay engine reads the variable itself
        data_dir = self.options.data_dir
        if data_dir is not None and (data_dir / STUDY_RECORDINGS).is_file():
            return [data_dir / STUDY_RECORDINGS]
        raise EngineUnavailableError(
            "the replay engine needs recordings: pass --recordings PATH, set "
            "EVALSUITE_RECORDINGS, or point --data-dir at a folder holding "
            f"{STUDY_RECORDINGS}"
        )

    def _cuda_device(self) -> str:
        """``cuda:N``, N the xdist worker number modulo the visible devices (one per worker)."""
        try:
            import torch
        except ImportError:
            return "cuda"
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            return "cuda"  # the engine names the missing device
        number = int(self.worker_id[2:]) if self.worker_id.startswith("gw") else 0
        return f"cuda:{number % count}"


def bench_session(config: pytest.Config) -> BenchSession:
    """This process's session, created on first use."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        options = config.stash.get(OPTIONS_KEY, None) or parse_options(config)
        worker = getattr(config, "workerinput", None)
        worker_id = worker["workerid"] if worker else "master"
        run_id = config.stash.get(RUN_ID_KEY, None) or new_run_id()
        config.stash[RUN_ID_KEY] = run_id
        session = BenchSession(options, run_id, worker_id, root=config.rootpath)
        config.stash[SESSION_KEY] = session
    return session
