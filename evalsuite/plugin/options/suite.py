"""The parsed form of the benchmark options, :class:`SuiteOptions`, with the defaults its
fields start from; :func:`evalsuite.plugin.options.parse_options` builds it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.images import DEFAULT_MAX_IMAGE_PIXELS

SERVED_MODEL_DEFAULT = "deepseek-ocr"
PAGES_DPI_DEFAULT = 144
"""--pages-dpi: PDF pages rendered at 144 dpi are 1224 x 1584 px for US Letter, about the
1024 px side of DeepSeek-OCR's base mode."""


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
