"""The benchmark options of the pytest plugin: their declaration, their parsed form
(:class:`SuiteOptions`) and their validation, which turns every bad value into a usage error
before any test runs or any file is written."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalsuite import __version__
from evalsuite.datasets import DATA_ENV
from evalsuite.engines import engine_kind, supported_modes
from evalsuite.engines.base import OCR_MODE
from evalsuite.engines.served import MODEL_FAMILIES, api_base_urls, served_modes
from evalsuite.errors import UnknownEngineError
from evalsuite.images import (
    DEFAULT_MAX_IMAGE_PIXELS,
    LIMIT_HELP,
    LIMIT_OPTION,
    parse_max_image_pixels,
)
from evalsuite.metrics.omnidocbench.evaluation import OFFICIAL_VERSION as OMNIDOCBENCH_VERSIONS
from evalsuite.models import UnknownModelError, available_models, model_profile
from evalsuite.plugin.server import SERVED_ENGINES, SERVED_MODELS, model_argument, plan_server
from evalsuite.records.metadata import git_label
from evalsuite.records.results import RESULTS_FILE
from evalsuite.request_cache import CACHE_FILE, ResumeError, check_resumable

SERVED_MODEL_DEFAULT = "deepseek-ocr"

AUTO = "auto"
PAGES_DPI_DEFAULT = 144
"""--pages-dpi: PDF pages rendered at 144 dpi are 1224 x 1584 px for US Letter, about the
1024 px side of DeepSeek-OCR's base mode."""
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+:-]{0,99}")
"""What an engine label or a run name may be (it becomes part of file names and keys)."""
INI_BENCHMARKS = "evalsuite_benchmarks"
"""ini option: modules that declare more benchmarks (a user's own), imported at start-up."""


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalsuite", "evalsuite benchmarks")
    group.addoption(
        "--gpu", action="store_true", help="run the GPU engines of each benchmark (gpu_engines)"
    )
    group.addoption(
        "--engine",
        default=AUTO,
        help="engine name(s), comma-separated, or package.module:factory; 'auto': each "
        "benchmark's GPU engines with --gpu, else its CPU engines",
    )
    group.addoption(
        "--engine-label",
        action="append",
        default=[],
        metavar="[ENGINE=]LABEL",
        help="name an engine's results (goldens and history key on it), e.g. "
        "deepseek-ocr@ft-2026-11-20; repeat as ENGINE=LABEL for several engines",
    )
    group.addoption(
        "--model-path", default=None,
        help="local DeepSeek-OCR (v1) weights folder; with --gpu --model NAME, that model's",
    )
    group.addoption(
        "--model-path-v2", default=None, help="local DeepSeek-OCR-2 weights folder"
    )
    group.addoption(
        "--vllm",
        default=None,
        metavar="PATH",
        help="the vllm executable --gpu starts (default $EVALSUITE_VLLM, else "
        ".venv-vllm/bin/vllm, else vllm on PATH); the server command adapts to the platform "
        "it reports (CPU: V1 runner)",
    )
    group.addoption(
        "--max-new-tokens",
        default=None,
        metavar="N",
        help="cap the tokens a served engine generates per request (smoke runs: random "
        "weights never end a text)",
    )
    group.addoption(
        "--api-base",
        action="append",
        default=[],
        metavar="URL",
        help="a running OpenAI-compatible server (e.g. http://host:8000/v1) for the served "
        "engines (vllm, openai); repeat it for several servers of one model (one per GPU or "
        "node), which share the requests; without it, --gpu starts one (see --server-command)",
    )
    group.addoption(
        "--server-command",
        default=None,
        metavar="CMD",
        help="command that starts the model server, with {port} (and optionally {model}, "
        "{name}, {python}); default: vllm serve with the DeepSeek-OCR recipe's flags",
    )
    group.addoption(
        "--served-model",
        default=None,
        help=f"the model the served engines run: {', '.join(SERVED_MODELS)} (default "
        f"{SERVED_MODEL_DEFAULT}); its weights come from --model-path / --model-path-v2",
    )
    group.addoption(
        "--model",
        default=None,
        metavar="NAME",
        help="the model profile the served engines run, any case: "
        f"{', '.join(available_models())} (its prompts, decoding, image rule and answer "
        "conversion; docs/models.md); deepseek-ocr and deepseek-ocr-2 are --served-model's",
    )
    group.addoption(
        "--served-model-name",
        default=None,
        metavar="ID",
        help="with --model: the model id the server serves it under (default: the first of the "
        "profile's Hugging Face ids that the server lists)",
    )
    group.addoption(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="the environment variable holding the served engines' API key (default "
        "$OPENAI_API_KEY); a key is never taken on the command line nor recorded",
    )
    group.addoption(
        "--prompt",
        default=None,
        metavar="TEXT",
        help="with --model: replace the profile's prompt text for an experiment (results get "
        "their own golden series)",
    )
    group.addoption(
        "--decoding",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --model: set a decoding field of every request (VALUE read as JSON, else "
        "text), e.g. temperature=0; repeatable; results get their own golden series",
    )
    group.addoption(
        "--requests-per-minute",
        default=None,
        metavar="N",
        help="hold the served engines' requests to N a minute, shared among pytest's workers "
        "(default: an API model's profile's limit, else none)",
    )
    group.addoption(
        "--tokens-per-minute",
        default=None,
        metavar="N",
        help="hold the served engines' tokens (prompt + completion) to N a minute (default: an "
        "API model's profile's limit, else none)",
    )
    group.addoption(
        "--token-prices",
        default=None,
        metavar="IN,OUT",
        help="US dollars per million prompt and completion tokens, for the run's cost in "
        "results.json and the summary (default: an API model's profile's list prices)",
    )
    group.addoption(
        "--server-timeout",
        default="1800",
        metavar="SECONDS",
        help="how long to wait for a started server's /health (default 1800)",
    )
    group.addoption(
        "--concurrency",
        default=None,
        help="requests a served engine keeps in flight per server (default 64)",
    )
    group.addoption("--modes", default=None, help="modes, e.g. tiny,small,base (per-bench default)")
    group.addoption(
        "--data-dir", default=None, help=f"benchmark data folder (default ${DATA_ENV})"
    )
    group.addoption("--max-samples", default=None, help="cap samples per benchmark test")
    group.addoption(LIMIT_OPTION, default=None, metavar="N", help=LIMIT_HELP)
    group.addoption("--batch-size", default=None, help="requests per engine batch (default: the "
                    "engine's own preference)")
    group.addoption("--update-golden", action="store_true", help="rewrite the goldens that ran")
    group.addoption(
        "--golden-tolerance",
        default=None,
        help="with --update-golden: set this tolerance on the entries written (default: keep "
        "each entry's, or the metric's default for a new one)",
    )
    group.addoption("--golden-dir", default=None, help="golden files (default <rootdir>/golden)")
    group.addoption("--record", default=None, help="append every live engine output to this JSONL")
    group.addoption(
        "--recordings",
        action="append",
        default=[],
        metavar="PATH",
        help="recordings the replay engine serves (repeatable; default $EVALSUITE_RECORDINGS, "
        "then <data dir>/deepseek_ocr_recordings/recordings.jsonl)",
    )
    group.addoption(
        "--report-dir", default=None, help="where runs are kept (default <rootdir>/reports)"
    )
    group.addoption("--run-name", default=None, help="a name for this run (history, A/B)")
    group.addoption(
        "--resume",
        default=None,
        metavar="RUN",
        help="finish a run that died part-way (a run id in --report-dir, or its folder): reuse "
        "every request it answered, run the rest, write one complete run (same options)",
    )
    group.addoption("--num-articles", default=None, help="QuALITY: articles to use")
    group.addoption(
        "--omnidocbench-version",
        default=None,
        metavar="V[,V]",
        help="OmniDocBench: the official evaluation version(s) to score by, e.g. 1.5 or 1.0,1.5 "
        "(default: the data's release; every version for a set that is no release)",
    )
    group.addoption(
        "--questions-per-article", default=None, help="QuALITY: questions per article"
    )
    group.addoption(
        "--repeats",
        default=None,
        metavar="N",
        help="olmOCR-bench: convert each page N times, as its --repeats does; a test passes when "
        "more than half of its repeats pass (default 1; results form their own golden series)",
    )
    group.addoption(
        "--pages-dir",
        default=None,
        metavar="DIR",
        help="pages: your own page images (PNG/JPEG) and PDFs, with <stem>.md or <stem>.txt "
        "ground truth beside each",
    )
    group.addoption(
        "--pages-dpi",
        default=str(PAGES_DPI_DEFAULT),
        help=f"pages: resolution PDF pages are rendered at (default {PAGES_DPI_DEFAULT})",
    )
    group.addoption(
        "--shard",
        default=None,
        metavar="K/N",
        help="run the K-th of N deterministic parts of every benchmark's samples (one machine "
        "of N); nothing is gated until `evalsuite merge` joins the N runs",
    )
    group.addoption(
        "--pages-strict",
        action="store_true",
        help="pages: a ground-truth file without a page file of its name is an error "
        "(default: a note in the summary)",
    )
    group.addoption(
        "--dataset-name",
        default=None,
        help="pages: the name of the --pages-dir dataset; its goldens are "
        "golden/pages-<name>.json (default: the folder's name)",
    )
    parser.addini(
        INI_BENCHMARKS,
        type="linelist",
        default=[],
        help="modules declaring benchmarks beyond the built-in ones (imported at start-up)",
    )


@dataclass(frozen=True)
class SuiteOptions:
    """The command-line options, parsed and checked."""

    gpu: bool = False
    engines: tuple[str, ...] | None = None
    engine_labels: dict[str, str] = field(default_factory=dict)
    model_path: str | None = None
    model_path_v2: str | None = None
    api_bases: tuple[str, ...] = ()
    """--api-base, in the order given: the servers a served engine spreads its requests over."""
    server_command: str | None = None
    served_model: str = SERVED_MODEL_DEFAULT
    served_model_given: bool = False
    """Whether --served-model (or --model with a DeepSeek model) named the served model; without
    it ``--engine openai`` sends a stock server nothing DeepSeek-only."""
    model: str | None = None
    """--model: a peer's profile name as registered (None: none, or a DeepSeek model, which
    sets ``served_model``)."""
    served_model_name: str | None = None
    api_key_env: str | None = None
    prompt: str | None = None
    decoding: dict[str, Any] = field(default_factory=dict)
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    token_prices: tuple[float, float] | None = None
    """--token-prices: US dollars per million prompt and completion tokens."""
    server_timeout_s: float = 1800.0
    concurrency: int | None = None
    server_error: str | None = None
    vllm: str | None = None
    """--vllm: the vllm executable to start."""
    max_new_tokens: int | None = None
    server_weights: str | None = None
    """``random`` when the run's started server serves random weights (a folder without weight
    files), ``checkpoint`` when it serves the folder's; None: no server started by this run."""
    modes: tuple[str, ...] | None = None
    data_dir: Path | None = None
    max_samples: int | None = None
    batch_size: int | None = None
    max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
    update_golden: bool = False
    golden_tolerance: float | None = None
    golden_dir: Path = Path("golden")
    record: Path | None = None
    recordings: tuple[Path, ...] = ()
    report_dir: Path = Path("reports")
    run_name: str | None = None
    resume: Path | None = None
    """--resume: the folder of the run that died, whose answers this run reuses."""
    num_articles: int | None = None
    omnidocbench_versions: tuple[str, ...] | None = None
    """--omnidocbench-version: the OmniDocBench evaluation versions to score by (None: the
    benchmark's default)."""
    questions_per_article: int | None = None
    repeats: int = 1
    """--repeats: olmOCR-bench's conversions per page."""
    pages_dir: Path | None = None
    pages_dpi: float = PAGES_DPI_DEFAULT
    pages_strict: bool = False
    shard: tuple[int, int] | None = None
    """(K, N): this run takes the samples at positions i with i % N == K - 1."""
    dataset_name: str | None = None
    seed: int = 0

    @property
    def explicit_engines(self) -> bool:
        """Whether the user named engines (then an engine that cannot run is an error)."""
        return self.engines is not None

    @property
    def asked(self) -> bool:
        """Whether the user asked for something specific that must run: --gpu or --engine."""
        return self.gpu or self.explicit_engines

    def engines_to_run(self, gpu_engines: tuple[str, ...], cpu_engines: tuple[str, ...]
                       ) -> tuple[str, ...]:
        """The engines named by --engine, else ``gpu_engines`` with --gpu, else ``cpu_engines``."""
        if self.engines is not None:
            return self.engines
        return gpu_engines if self.gpu else cpu_engines

    @property
    def option_dirs(self) -> dict[str, Path]:
        """The data folders given on the command line, by option (data sources' ``option``)."""
        return {"--pages-dir": self.pages_dir} if self.pages_dir is not None else {}

    def checkpoint_folder(self) -> Path | None:
        """The local weights folder given (``--model-path``, else ``--model-path-v2``), whose
        tokenizer then counts the run's text tokens; None for none or a hub id, and for a peer
        (--model), whose runs count with DeepSeek-OCR's tokenizer so that every model's text is
        binned alike."""
        if self.model is not None:
            return None
        for given in (self.model_path, self.model_path_v2):
            if given is not None and Path(given).expanduser().is_dir():
                return Path(given).expanduser()
        return None

    def served_model_path(self) -> str | None:
        """The weights option that belongs to ``--served-model``."""
        return self.model_path if self.served_model == "deepseek-ocr" else self.model_path_v2


def parse_options(config: pytest.Config, gpu_engines: Sequence[str] = ()) -> SuiteOptions:
    """The options of ``config``; a bad value raises ``pytest.UsageError`` naming it and the
    valid values (pytest then exits with its usage-error status before running anything).
    ``gpu_engines``: the engines ``--gpu`` runs without ``--engine``, whose modes ``--modes``
    must name."""
    option = config.getoption
    root = config.rootpath
    engines = _names(option("--engine"))
    engines = None if engines in (None, (AUTO,)) else engines
    model, served_model, served_model_given = _model(option("--model"), option("--served-model"))
    if model is not None and engines is None:
        engines = ("openai",)  # a peer runs behind any OpenAI-compatible server
    options = SuiteOptions(
        gpu=bool(option("--gpu")),
        engines=engines,
        engine_labels=_labels(option("--engine-label"), engines),
        model_path=option("--model-path"),
        model_path_v2=option("--model-path-v2"),
        api_bases=_api_bases(option("--api-base")) or _provider(model),
        server_command=option("--server-command"),
        served_model=served_model,
        served_model_given=served_model_given,
        model=model,
        served_model_name=option("--served-model-name"),
        api_key_env=_api_key_env(option("--api-key-env")),
        prompt=option("--prompt"),
        decoding=_decoding(option("--decoding")),
        requests_per_minute=_rate(option("--requests-per-minute"), "--requests-per-minute"),
        tokens_per_minute=_rate(option("--tokens-per-minute"), "--tokens-per-minute"),
        token_prices=_token_prices(option("--token-prices")),
        server_timeout_s=_seconds(option("--server-timeout"), "--server-timeout"),
        concurrency=_count(option("--concurrency"), "--concurrency"),
        vllm=option("--vllm"),
        max_new_tokens=_count(option("--max-new-tokens"), "--max-new-tokens"),
        modes=_names(option("--modes")),
        data_dir=_data_dir(option("--data-dir")),
        max_samples=_count(option("--max-samples"), "--max-samples"),
        batch_size=_count(option("--batch-size"), "--batch-size"),
        max_image_pixels=_max_image_pixels(option(LIMIT_OPTION)),
        update_golden=bool(option("--update-golden")),
        golden_tolerance=_tolerance(option("--golden-tolerance")),
        golden_dir=_path(option("--golden-dir"), root / "golden"),
        record=Path(option("--record")) if option("--record") else None,
        recordings=tuple(Path(p) for p in option("--recordings")),
        report_dir=_path(option("--report-dir"), root / "reports"),
        run_name=_run_name(option("--run-name")),
        resume=_resume_dir(option("--resume"), _path(option("--report-dir"), root / "reports")),
        num_articles=_count(option("--num-articles"), "--num-articles"),
        omnidocbench_versions=_omnidocbench_versions(option("--omnidocbench-version")),
        questions_per_article=_count(
            option("--questions-per-article"), "--questions-per-article"
        ),
        repeats=_count(option("--repeats"), "--repeats") or 1,
        pages_dir=_pages_dir(option("--pages-dir")),
        pages_dpi=_dpi(option("--pages-dpi")),
        pages_strict=bool(option("--pages-strict")),
        shard=_shard(option("--shard")),
        dataset_name=_dataset_name(option("--dataset-name"), option("--pages-dir")),
    )
    _check_engines(options, gpu_engines)
    _check_model(options)
    if options.shard is not None and options.update_golden:
        raise pytest.UsageError(
            "--shard and --update-golden exclude each other: a shard is part of the samples; "
            "merge the shards (evalsuite merge), then set goldens from the merged run or a "
            "whole run"
        )
    if options.server_command is not None:
        if options.api_bases:
            raise pytest.UsageError("--server-command and --api-base exclude each other")
        try:
            plan_server(options.server_command, options.served_model, None, 1.0)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    for path in options.recordings:
        if not path.is_file():
            raise pytest.UsageError(f"--recordings {path}: no such file")
    if options.resume is not None and getattr(config, "workerinput", None) is None:
        try:  # the controller checks; its workers take its word (it may have resumed by now)
            check_resumable(options.resume, request_identity(options, root))
        except ResumeError as exc:
            raise pytest.UsageError(str(exc)) from None
    return options


def request_identity(options: SuiteOptions, root: Path) -> dict[str, Any]:
    """What decides the answers to a run's requests beyond the requests themselves (which the
    cache keys hold), by the option that sets it: a ``--resume`` must match the run resumed.
    The server's URL is not part of it (a resumed night runs on another node)."""
    return {
        "--gpu": options.gpu,
        "--engine": ",".join(options.engines or (AUTO,)),
        "--engine-label": options.engine_labels,
        "--served-model": options.served_model,
        "--model": options.model,
        "--served-model-name": options.served_model_name,
        "--prompt": options.prompt,
        "--decoding": options.decoding,
        "weights": {
            "deepseek-ocr": model_argument("deepseek-ocr", options.model_path),
            "deepseek-ocr-2": model_argument("deepseek-ocr-2", options.model_path_v2),
        },
        "--server-command": options.server_command,
        "--recordings": [str(path) for path in options.recordings],
        "--batch-size": options.batch_size,
        "--max-new-tokens": options.max_new_tokens,
        "evalsuite": f"{__version__} at {git_label(root)}",
    }


def _resume_dir(value: str | None, report_dir: Path) -> Path | None:
    """The folder of the run ``--resume`` names: a run id in the report folder, or a path."""
    if value is None:
        return None
    for candidate in (report_dir / value, Path(value).expanduser()):
        if candidate.is_dir():
            return candidate.resolve()
    unfinished = sorted(
        path.parent.name for path in report_dir.glob(f"*/{CACHE_FILE}")
        if not (path.parent / RESULTS_FILE).exists()
    )
    listed = ", ".join(unfinished[-5:]) if unfinished else "none"
    raise pytest.UsageError(
        f"--resume {value}: no run {value!r} in {report_dir} and no folder of that path; runs "
        f"there that did not finish (newest last): {listed}"
    )


def _check_engines(options: SuiteOptions, gpu_engines: Sequence[str]) -> None:
    for name in options.engines or (tuple(gpu_engines) if options.gpu else ()):
        try:
            kind = engine_kind(name)
        except UnknownEngineError as exc:
            raise pytest.UsageError(f"--engine: {exc}") from None
        if options.modes is None or kind == "ocr":
            continue
        valid = engine_modes(name, options)
        wrong = [mode for mode in options.modes if mode not in valid]
        if wrong:
            raise pytest.UsageError(
                f"--modes: {', '.join(wrong)} not a mode of engine {name!r}; "
                f"its modes: {', '.join(valid)}"
            )
    if options.modes is not None and options.engines is None and not options.gpu:
        known = set(supported_modes("deepseek-ocr")) | set(supported_modes("deepseek-ocr-2"))
        wrong = [mode for mode in options.modes if mode not in known]
        if wrong:
            raise pytest.UsageError(
                f"--modes: unknown mode(s) {', '.join(wrong)}; DeepSeek-OCR modes: "
                f"{', '.join(supported_modes('deepseek-ocr'))}; DeepSeek-OCR-2 modes: "
                f"{', '.join(supported_modes('deepseek-ocr-2'))}"
            )


def engine_modes(name: str, options: SuiteOptions) -> tuple[str, ...]:
    """The modes engine ``name`` can run; a served engine (``vllm``, ``openai``): a peer
    model's one mode (``native``), else the modes of the ``--served-model`` family (the vLLM
    plugin serves each of them)."""
    if name in SERVED_ENGINES:
        if options.model is not None:
            return (OCR_MODE,)
        if name == "openai" and options.api_bases:  # evalsuite serve: its engine's modes
            reported = served_modes(options.api_bases[0])
            if reported:
                return reported
            if reported is None and not options.served_model_given:  # a stock server
                return (OCR_MODE,)
        modes = MODEL_FAMILIES[options.served_model].modes
        if modes is not None:
            return modes
    return supported_modes(name)


def _model(value: str | None, given: str | None) -> tuple[str | None, str, bool]:
    """(peer profile name, served model, whether a served model was named) for --model and
    --served-model: a DeepSeek model named by --model becomes the served model (one of them,
    not both differently)."""
    served_model = _choice(given or SERVED_MODEL_DEFAULT, "--served-model", tuple(SERVED_MODELS))
    if value is None:
        return None, served_model, given is not None
    try:
        profile = model_profile(value)
    except UnknownModelError as exc:
        raise pytest.UsageError(f"--model: {exc}") from None
    if profile.family is None:
        return profile.name, served_model, given is not None
    if given is not None and served_model != profile.family:
        raise pytest.UsageError(
            f"--model {value} and --served-model {served_model} name different models; give one"
        )
    return None, profile.family, True


def _check_model(options: SuiteOptions) -> None:
    """Usage errors for settings that need a peer --model, and for what it cannot do yet."""
    needs_model = {"--served-model-name": options.served_model_name, "--prompt": options.prompt,
                   "--decoding": options.decoding or None}
    for name, value in needs_model.items():
        if value is not None and options.model is None:
            raise pytest.UsageError(
                f"{name} needs --model NAME, a peer's profile ({', '.join(available_models())})"
            )
    if options.model is None:
        return
    profile = model_profile(options.model)
    if profile.unavailable is not None:
        raise pytest.UsageError(f"--model {options.model}: {profile.unavailable}")
    wrong = [name for name in options.engines or () if name not in SERVED_ENGINES]
    if wrong:
        raise pytest.UsageError(
            f"--model {options.model} runs on the served engines ({', '.join(SERVED_ENGINES)}), "
            f"not {', '.join(wrong)}"
        )
    at_provider = profile.api_base is not None and profile.api_base in options.api_bases
    if at_provider and options.api_key_env is None and \
            not os.environ.get(profile.api_key_env or "", "").strip():
        raise pytest.UsageError(
            f"--model {profile.name} needs its API key at {profile.api_base}: set "
            f"{profile.api_key_env}, or name the variable that holds it with --api-key-env VAR"
        )
    if options.server_command is not None:
        raise pytest.UsageError(
            f"--model {profile.name} and --server-command exclude each other: --server-command "
            "starts DeepSeek's server; use --gpu (the authors' vLLM command) or --api-base URL"
        )
    if not (options.api_bases or options.gpu):
        flags = " ".join(shlex.quote(flag) for flag in profile.vllm_flags)
        raise pytest.UsageError(
            f"--model {profile.name} needs a server of it: --api-base URL (one running), or --gpu "
            f"to start one as its authors do: vllm serve {profile.hf_ids[0]} {flags} "
            "(weights: --model-path, else the Hugging Face cache)"
        )


def _provider(model: str | None) -> tuple[str, ...]:
    """An API model's provider endpoint, the server when no --api-base is given."""
    api_base = model_profile(model).api_base if model is not None else None
    return () if api_base is None else (api_base,)


def _rate(value: str | None, name: str) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0 or number == float("inf"):
        raise pytest.UsageError(f"{name} {value!r}: expected a number > 0")
    return number


def _token_prices(value: str | None) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        prices = tuple(float(part) for part in value.split(","))
    except ValueError:
        prices = ()
    if len(prices) != 2 or not all(0 <= price < float("inf") for price in prices):
        raise pytest.UsageError(
            f"--token-prices {value!r}: expected IN,OUT, US dollars per million prompt and "
            "completion tokens, e.g. 2.5,10"
        )
    return prices[0], prices[1]


def _api_key_env(value: str | None) -> str | None:
    if value is None:
        return None
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise pytest.UsageError(
            f"--api-key-env {value!r}: expected an environment variable's name (the key itself "
            "never goes on the command line)"
        )
    if not os.environ.get(value, "").strip():
        raise pytest.UsageError(f"--api-key-env {value}: the variable is not set")
    return value


def _decoding(values: Sequence[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for item in values:
        key, equals, text = item.partition("=")
        if not equals or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise pytest.UsageError(f"--decoding {item!r}: expected KEY=VALUE, e.g. temperature=0")
        if key in ("model", "messages"):
            raise pytest.UsageError(f"--decoding {item!r}: {key} is not a decoding field")
        try:
            fields[key] = json.loads(text)
        except ValueError:
            fields[key] = text
    return fields


def _shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise pytest.UsageError(f"--shard {value!r}: expected K/N with 1 <= K <= N, e.g. 1/4")
    return int(index), int(count)


def _api_bases(values: Sequence[str]) -> tuple[str, ...]:
    if not values:
        return ()
    try:
        return api_base_urls(values)
    except ValueError as exc:
        raise pytest.UsageError(f"--api-base {exc}") from None


def _choice(value: str, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise pytest.UsageError(f"{name} {value!r}: choose one of {', '.join(choices)}")
    return value


def _seconds(value: str, name: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise pytest.UsageError(f"{name} {value!r}: expected seconds > 0") from None
    if not number > 0:
        raise pytest.UsageError(f"{name} {value!r}: expected seconds > 0")
    return number


def _dpi(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not 18 <= number <= 1200:
        raise pytest.UsageError(f"--pages-dpi {value!r}: expected dots per inch, 18 to 1200")
    return number


def _omnidocbench_versions(value: str | None) -> tuple[str, ...] | None:
    """``1.0,v1.5`` -> ("1.0", "1.5"), each one the suite scores."""
    names = _names(value)
    if names is None:
        return None
    versions = tuple(dict.fromkeys(name.removeprefix("v") for name in names))
    for version in versions:
        _choice(version, "--omnidocbench-version", tuple(OMNIDOCBENCH_VERSIONS))
    return versions


def _names(value: str | None) -> tuple[str, ...] | None:
    if not value:
        return None
    return tuple(v.strip() for v in value.split(",") if v.strip()) or None


def _labels(values: list[str], engines: tuple[str, ...] | None) -> dict[str, str]:
    labels: dict[str, str] = {}
    for value in values:
        engine, sep, label = value.rpartition("=")
        if not sep:
            if engines is None or len(engines) != 1:
                raise pytest.UsageError(
                    f"--engine-label {value}: with several (or auto) engines, write ENGINE=LABEL"
                )
            engine, label = engines[0], value
        elif engines is not None and engine not in engines:
            raise pytest.UsageError(
                f"--engine-label {value}: {engine!r} is not an engine of this run "
                f"(--engine {','.join(engines)})"
            )
        if not LABEL_PATTERN.fullmatch(label):
            raise pytest.UsageError(
                f"--engine-label {value}: a label is letters, digits and . _ @ + : - "
                "(at most 100 characters)"
            )
        labels[engine] = label
    return labels


def _data_dir(value: str | None) -> Path | None:
    explicit = value is not None
    raw = value if explicit else os.environ.get(DATA_ENV)
    if not raw:
        return None
    return _readable_dir(Path(raw).expanduser(), "--data-dir" if explicit else f"${DATA_ENV}")


def _pages_dir(value: str | None) -> Path | None:
    if value is None:
        return None
    return _readable_dir(Path(value).expanduser().resolve(), "--pages-dir")


def _readable_dir(path: Path, where: str) -> Path:
    """``path`` when it is a folder this process can list; a usage error naming ``where``."""
    if not path.is_dir():
        raise pytest.UsageError(f"{where} {path}: not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise pytest.UsageError(f"{where} {path}: not readable")
    return path


def _dataset_name(value: str | None, pages_dir: str | None) -> str | None:
    """--dataset-name, else the --pages-dir folder's name; it names a golden file."""
    if value is None:
        if pages_dir is None:
            return None
        value = Path(pages_dir).expanduser().resolve().name
        where = f"the name of --pages-dir {pages_dir} ({value!r})"
    else:
        where = f"--dataset-name {value!r}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", value):
        raise pytest.UsageError(
            f"{where}: a dataset name is letters, digits and . _ - (at most 100 characters); "
            "pass --dataset-name NAME"
        )
    return value


def _count(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise pytest.UsageError(f"{name} {value!r}: expected a whole number >= 1") from None
    if number < 1:
        raise pytest.UsageError(f"{name} {value!r}: expected a whole number >= 1")
    return number


def _max_image_pixels(value: str | None) -> int:
    if value is None:
        return DEFAULT_MAX_IMAGE_PIXELS
    try:
        return parse_max_image_pixels(value)
    except ValueError as exc:
        raise pytest.UsageError(f"{LIMIT_OPTION} {exc}") from None


def _tolerance(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise pytest.UsageError(f"--golden-tolerance {value!r}: expected a number >= 0") from None
    if not number >= 0:
        raise pytest.UsageError(f"--golden-tolerance {value!r}: expected a number >= 0")
    return number


def _run_name(value: str | None) -> str | None:
    if value is not None and not LABEL_PATTERN.fullmatch(value):
        raise pytest.UsageError(
            f"--run-name {value!r}: letters, digits and . _ @ + : - (at most 100 characters)"
        )
    return value


def _path(value: str | None, default: Path) -> Path:
    return Path(value).expanduser() if value else default
