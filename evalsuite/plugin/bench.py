"""The ``bench`` fixture: one benchmark test's engine, mode and data, and how to run, record and
gate them. Parametrization (engine x mode x data source) is done by the plugin's
``pytest_generate_tests``; the gate and golden logic live in :mod:`evalsuite.golden`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

from evalsuite.benchmarks import Benchmark, DataSource
from evalsuite.benchmarks.scoring import TEXT
from evalsuite.engines.base import Engine, InferenceRequest
from evalsuite.errors import (
    EngineUnavailableError,
    EvalsuiteError,
    MissingRecordingError,
)
from evalsuite.golden import (
    GateResult,
    GoldenEntry,
    GoldenFile,
    entries_from_record,
    gate_record,
    subset_data,
    tolerance_rule,
)
from evalsuite.models import UnsupportedTaskError
from evalsuite.plugin.hints import evalsuite_command, rerun_command
from evalsuite.plugin.options import SuiteOptions
from evalsuite.plugin.session import BenchSession, bench_session
from evalsuite.prompts import TEXT_CONDITION_MODE
from evalsuite.records.metadata import git_label
from evalsuite.records.model import BenchmarkRecord, SampleRecord
from evalsuite.runner import (
    MetricSpec,
    Sample,
    Scorer,
    aggregate_by,
    run_benchmark,
    with_output_health,
)
from evalsuite.shards import shard_params, shard_positions
from evalsuite.textformat import terminal_text
from evalsuite.tokens import MODES


@dataclass
class Bench:
    """One benchmark test: its engine, mode and data source, and how to run and gate them."""

    session: BenchSession
    benchmark: Benchmark
    engine_name: str
    mode: str
    source: DataSource
    location: Path
    request: pytest.FixtureRequest

    @property
    def options(self) -> SuiteOptions:
        return self.session.options

    @property
    def label(self) -> str:
        """The engine's label: what records, goldens and history key on."""
        return self.session.label(self.engine_name)

    @property
    def engine(self) -> Engine:
        return self.session.engine(self.engine_name)

    def condition_mode(self, condition: str) -> str:
        """The mode of a context-QA condition's requests: in a DeepSeek-OCR mode, the text
        condition's blank image goes in :data:`~evalsuite.prompts.TEXT_CONDITION_MODE`, as the
        study sent it, where the engine has that mode (DeepSeek-OCR, replay, vLLM with
        evalsuite's plugin); otherwise, and for the vision condition, the test's mode."""
        if (
            condition == TEXT
            and self.mode in MODES
            and TEXT_CONDITION_MODE in getattr(self.engine, "supported_modes", ())
        ):
            return TEXT_CONDITION_MODE
        return self.mode

    @cached_property
    def data(self) -> Any:
        """The data source's content, as its loader returns it; a file the loader cannot read
        fails the test with the loader's one-line message (naming the file)."""
        return _or_fail_in_one_line(
            lambda: self.session.data(self.benchmark.name, self.source, self.location,
                                      self.data_id),
            f"{self.benchmark.name} data source {self.source.name}: ",
        )

    @cached_property
    def data_id(self) -> str:
        """The data part of golden keys; a folder given by option is named by --dataset-name."""
        name = self.options.dataset_name if self.source.option is not None else None
        return self.source.identity(self.location, name)

    @property
    def golden_name(self) -> str:
        """The golden file's name: ``<benchmark>``, or ``<benchmark>-<dataset name>`` for a
        folder given by option (each user dataset gates against its own file)."""
        if self.source.option is not None and self.options.dataset_name:
            return f"{self.benchmark.name}-{self.options.dataset_name}"
        return self.benchmark.name

    def artifact_dir(self, kind: str) -> Path:
        """``<run dir>/<kind>/<label>-<mode>-<source>``: where a test keeps files of this run
        (e.g. finix's predicted pages)."""
        return self.session.run_dir / kind / f"{self.label}-{self.mode}-{self.source.name}"

    def limit(self, samples: Sequence[Sample]) -> list[Sample]:
        """``samples`` capped by ``--max-samples``, else by the benchmark's cap for the engine."""
        cap = self.options.max_samples or self.benchmark.sample_caps.get(self.engine_name)
        return list(samples if cap is None else samples[:cap])

    def evaluate(
        self,
        samples: Sequence[Sample],
        scorer: Scorer,
        specs: Sequence[MetricSpec],
        *,
        parameter: str | None = None,
        params: Mapping[str, Any] | None = None,
        group_by: Callable[[SampleRecord], str] | None = None,
        required_groups: Sequence[str] = (),
    ) -> BenchmarkRecord:
        """Run all samples (in the engine's batches), record, and gate (or update the
        goldens); returns the record.

        ``parameter`` names what else varies (default ``mode=<mode>``). With ``group_by`` the
        gated specs are also aggregated per group as ``metric[group]``; those are gated only
        where a golden entry exists (e.g. the paper's values per token bin of the real Fox set),
        except the metrics named in ``required_groups``, gated (and written by
        ``--update-golden``) in every group (e.g. olmOCR-bench's per-file scores).
        """
        available = len(samples)
        samples = [self._keyed(sample) for sample in self.limit(samples)]
        self._check_tasks(samples)
        if not samples:
            pytest.skip(f"{self.benchmark.name}: data source {self.source.name} has no samples")
        data = subset_data(self.data_id, len(samples), available)
        shard = self.options.shard
        whole = samples
        if shard is not None:
            requests = [(s.request.sample_id, s.request.mode, s.request.prompt) for s in whole]
            positions = shard_positions(requests, *shard)
            samples = [whole[i] for i in positions]
        self._require_recordings(samples)
        record = run_benchmark(
            self.engine,
            samples,
            scorer,
            specs,
            benchmark=self.benchmark.name,
            engine_label=self.label,
            data=data,
            parameter=parameter or f"mode={self.mode}",
            params={"mode": self.mode, "engine": self.engine_name, **dict(params or {})},
            batch_size=self.options.batch_size,
            cache=self.session.cache,
        )
        if shard is not None:  # gated only once `evalsuite merge` joins every shard
            record.params["shard"] = shard_params(
                shard, {whole[i].sample_id: i for i in positions}, len(whole), specs,
                self.golden_name,
                None if group_by is None else {s.sample_id: group_by(s) for s in record.samples},
                required_groups,
            )
            self.session.records.append(record)
            return record
        gated = [
            spec for spec in with_output_health(specs) if spec.gate and spec.name in record.metrics
        ]
        if group_by is not None:
            record.metrics.update(aggregate_by(record.samples, group_by, gated))
        golden = self._golden_file()
        results = gate_record(
            self.golden_name, record, [spec.name for spec in gated], golden, group_of=group_by,
            required_groups=required_groups,
        )
        if self.options.update_golden:
            written = self._update(record, gated, [result.metric for result in results])
            results = [
                replace(result, status="golden set", entry=written[result.metric],
                        comparison=None)
                if result.metric in written else result
                for result in results
            ]
        record.params["gates"] = {result.metric: result.to_dict() for result in results}
        self.session.records.append(record)
        if not self.options.update_golden:
            self._fail_on(record, results, gated)
        return record

    def _check_tasks(self, samples: Sequence[Sample]) -> None:
        """Fail the test at once when the engine's model profile has no prompt for a task of
        ``samples`` (rather than failing every sample)."""
        profile = getattr(self.engine, "profile", None)
        if profile is None:
            return
        for task in sorted({sample.request.task for sample in samples}, key=str):
            try:
                profile.task(task)
            except UnsupportedTaskError as exc:
                _fail(f"{self.benchmark.name}: {exc}")

    def _golden_file(self) -> GoldenFile:
        """This test's golden file; a malformed one fails the test with one line naming the
        file and the entry."""
        return _or_fail_in_one_line(lambda: self.session.golden.load(self.golden_name))

    def _keyed(self, sample: Sample) -> Sample:
        """``sample`` with the data source in its request's key (two sources may number their
        samples alike, ``0/line000``, and a recording of one must not be served for the other)
        and the benchmark's anti-repetition setting and task kind (where the request names
        none); the same for its extra requests (a document's further pages, repeats)."""

        def keyed(request: InferenceRequest) -> InferenceRequest:
            return replace(
                request, key={**request.key, "data": self.data_id},
                anti_repetition=self.benchmark.anti_repetition,
                task=request.task or self.benchmark.task,
            )

        return replace(sample, request=keyed(sample.request),
                       extra_requests=tuple(map(keyed, sample.extra_requests)))

    def _update(
        self, record: BenchmarkRecord, gated: Sequence[MetricSpec], names: Sequence[str]
    ) -> dict[str, GoldenEntry]:
        """Write the measured entries of ``names``; returns the golden entry of each metric
        set (the stored one where the measurement equals it), by metric."""
        store = self.session.golden
        tolerance = self._tolerance_rule(gated, override=self.options.golden_tolerance)
        store.update(
            self.golden_name,
            entries_from_record(
                record,
                names,
                tolerance=tolerance,
                existing=store.load(self.golden_name),
                commit=git_label(self.request.config.rootpath),
            ),
        )
        stored = store.load(self.golden_name).entries
        key = (record.engine, record.data, record.parameter)
        return {name: stored[(*key, name)] for name in names if (*key, name) in stored}

    def _fail_on(
        self, record: BenchmarkRecord, results: Sequence[GateResult], gated: Sequence[MetricSpec]
    ) -> None:
        messages = [result.message for result in results if result.status in ("regressed",
                                                                               "no samples")]
        missing = [result.metric for result in results if result.status == "no golden"]
        if missing:
            messages.append(self._missing_message(record, missing, gated))
        if messages:
            _fail("\n\n".join(messages))

    def _missing_message(
        self, record: BenchmarkRecord, missing: Sequence[str], gated: Sequence[MetricSpec]
    ) -> str:
        """Write the obtained entries beside the golden file and say how to accept them."""
        store = self.session.golden
        obtained = store.write_obtained(
            self.golden_name,
            entries_from_record(
                record,
                missing,
                tolerance=self._tolerance_rule(gated),
                existing=store.load(self.golden_name),
                commit=git_label(self.request.config.rootpath),
            ),
        )
        where = f"{self.golden_name} [{record.engine} data={record.data} {record.parameter}]"
        if record.data != self.data_id and any(
            (entry.engine, entry.data, entry.parameter)
            == (record.engine, self.data_id, record.parameter)
            for entry in store.load(self.golden_name).entries.values()
        ):
            where += (
                f"\nGolden entries exist for the whole of {self.data_id}; this run measured a "
                "part of it (--max-samples or the engine's sample cap), which is gated only "
                "against goldens set on the same part, never against the whole set's."
            )
        accept = evalsuite_command(
            "golden", "accept", self.golden_name, "--golden-dir", store.directory
        )
        rerun = rerun_command(self.request.config, self.request.node.nodeid, ["--update-golden"])
        return (
            f"{where}: no golden entry for {', '.join(missing)}.\n"
            f"The measured values were written to {obtained}; accept them with\n"
            f"    {accept}\n"
            f"or measure again and write the goldens with\n    {rerun}"
        )

    def _tolerance_rule(
        self, gated: Sequence[MetricSpec], *, override: float | None = None
    ) -> Callable[[str, GoldenEntry | None], float]:
        return tolerance_rule(
            {spec.name: spec.tolerance for spec in gated},
            exact=getattr(self.engine, "deterministic", False),
            override=override,
        )

    def _require_recordings(self, samples: Sequence[Sample]) -> None:
        """Under replay, skip a test none of whose samples was recorded (samples without a
        recording in a partly recorded test fail, each with its reason)."""
        find = getattr(self.engine, "find", None)
        if find is None:
            return
        reasons = []
        for sample in samples:
            if sample.error is not None:  # fails on its own, recorded or not
                continue
            try:
                find(sample.request)
                return
            except MissingRecordingError as exc:
                reasons.append(str(exc))
        if reasons:
            pytest.skip(terminal_text(
                f"replay has no recording for any sample of this test; first: {reasons[0]}"
            ))


T = TypeVar("T")


def _fail(message: str) -> NoReturn:
    """Fail the test with ``message`` and no traceback; its control characters (a model's
    answer, a file name) are escaped (:func:`~evalsuite.textformat.terminal_text`)."""
    pytest.fail(terminal_text(message), pytrace=False)


def _or_fail_in_one_line(load: Callable[[], T], prefix: str = "") -> T:
    """``load()``, or the test failed with ``prefix`` and the evalsuite error's one-line message
    (a malformed golden or data file names itself; no traceback)."""
    try:
        return load()
    except EvalsuiteError as exc:
        failure = f"{prefix}{exc}"
    _fail(failure)  # outside the except block: no chained traceback


@pytest.fixture
def bench(
    request: pytest.FixtureRequest, engine_name: str, mode: str, data_source: str
) -> Bench:
    """The benchmark test's engine (created once per process), mode and data. An engine that
    cannot run skips the test when the user asked for nothing specific, and errors it when the
    user asked for it (``--engine`` or ``--gpu``): a requested run never passes by skipping."""
    session = bench_session(request.config)
    benchmark: Benchmark = request.module.BENCHMARK
    source = benchmark.source(data_source)
    location = source.locate(session.options.data_dir, session.options.option_dirs)
    if location is None:
        _fail(f"data source {data_source} of {benchmark.name} is gone")
    current = Bench(session, benchmark, engine_name, mode, source, location, request)
    problem = None
    try:
        current.engine  # noqa: B018 - create (or re-raise the remembered failure) now
    except EngineUnavailableError as exc:
        problem = f"{engine_name} unavailable: {exc}"
        if not session.options.asked:
            pytest.skip(terminal_text(problem))
    except EvalsuiteError as exc:
        problem = f"{engine_name}: {exc}"
    if problem is not None:  # outside the except block: one line, no chained traceback
        _fail(problem)
    return current
