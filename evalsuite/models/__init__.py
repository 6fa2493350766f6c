"""The registry of model profiles: what each OCR model's own code sends for a page and how its
answer becomes the markdown the scorers read.

A profile (:class:`ModelProfile`) is declared once, in ``evalsuite/models/<name>.py``, with the
citation of every setting; the served engines (``--model NAME``), the command line and the docs
read it here. A request names its task kind (:data:`TASKS`) and the profile answers it with its
own prompt, message layout, decoding and image rule; a profile that has no prompt for a task
refuses it (:class:`UnsupportedTaskError`). DeepSeek-OCR's profiles keep the benchmarks' own
prompts (:mod:`evalsuite.prompts`) and DeepSeek's resolution modes.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from PIL import Image

from evalsuite.errors import EvalsuiteError

PAGE_MARKDOWN = "page_markdown"
PLAIN_TEXT = "plain_text"
LINE_TEXT = "line_text"
QUESTION_ANSWERING = "qa"
CONTINUATION = "continuation"
TEXT_BOXES = "text_boxes"
TASKS = (PAGE_MARKDOWN, PLAIN_TEXT, LINE_TEXT, QUESTION_ANSWERING, CONTINUATION, TEXT_BOXES)
"""Task kinds: a whole page to markdown, a page to plain text, one text line, a question about
a text, continuing a text, the page's text lines with their boxes."""

BUILTIN_MODEL_MODULES = (
    "evalsuite.models.api_models",
    "evalsuite.models.chandra",
    "evalsuite.models.deepseek_ocr",
    "evalsuite.models.dots_ocr",
    "evalsuite.models.got_ocr2",
    "evalsuite.models.mineru",
    "evalsuite.models.nanonets",
    "evalsuite.models.olmocr",
    "evalsuite.models.paddleocr_vl",
    "evalsuite.models.qwen_vl",
)


class UnknownModelError(EvalsuiteError, ValueError):
    """A model name no profile has."""


class UnsupportedTaskError(EvalsuiteError, ValueError):
    """A task kind a profile has no prompt for."""


class CallError(EvalsuiteError):
    """One call of a profile's pipeline got no usable completion (HTTP error, bad body)."""


@dataclass(frozen=True)
class TaskPrompt:
    """One task's message: the user text (``prefix`` + ``text``), an optional system message,
    and whether the image part comes before the text part."""

    text: str
    image_first: bool = True
    system: str | None = None
    prefix: str = ""

    @property
    def user_text(self) -> str:
        return self.prefix + self.text


@dataclass(frozen=True)
class Completion:
    """A server's answer to one call: the message text, why generation stopped and ``usage``."""

    text: str
    finish_reason: str | None
    usage: Mapping[str, Any]


@dataclass
class Answer:
    """What a profile makes of a page: ``text`` for the scorers, ``raw`` the model's last answer,
    ``calls`` the completions it took, ``details`` what the conversion noted (settings)."""

    text: str
    raw: str
    calls: int = 1
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RateLimits:
    """A provider's limits on one client: requests and tokens (prompt plus completion) per
    minute; None: no limit."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")


@dataclass(frozen=True)
class TokenPrices:
    """What a provider charges, in US dollars per million prompt (input) and completion
    (output) tokens, and where the figures come from."""

    input_usd_per_million: float
    output_usd_per_million: float
    source: str = "given"

    def __post_init__(self) -> None:
        if not (self.input_usd_per_million >= 0 and self.output_usd_per_million >= 0):
            raise ValueError(
                f"token prices must be >= 0, got {self.input_usd_per_million!r}, "
                f"{self.output_usd_per_million!r}")

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        """``(prompt · input + completion · output) / 10⁶`` dollars."""
        return (prompt_tokens * self.input_usd_per_million
                + completion_tokens * self.output_usd_per_million) / 1e6


@dataclass(frozen=True)
class PdfRendering:
    """How a model's own runner rasterises a PDF page: at ``dpi(width_pt, height_pt)`` dots per
    inch for a page of that size in points (1/72 inch), then ``prepare`` (None: the rendering is
    sent as it is; a runner that also resizes what it rendered gives that step here), ``rule``
    in words for the settings and docs."""

    rule: str
    dpi: Callable[[float, float], float]
    prepare: Callable[[Image.Image], Image.Image] | None = None


class Complete(Protocol):
    """Sends one call: an image (the prepared page, or a part of it), the decoding fields of
    this call and, for a pipeline whose calls ask different things (a layout, then each block),
    the message of this call instead of the task's; raises :class:`CallError` when the server
    gave no usable completion."""

    def __call__(self, image: Image.Image, decoding: Mapping[str, Any],
                 prompt: TaskPrompt | None = None) -> Awaitable[Completion]: ...


Pipeline = Callable[["ModelProfile", str, Image.Image, Image.Image, Complete], Awaitable[Answer]]
"""A profile's way to its :class:`Answer` for a task kind, given the page as loaded (upright,
RGB) and as its image rule prepared it for sending."""


@dataclass(frozen=True)
class ModelProfile:
    """One model as its authors run it.

    ``name`` is what ``--model`` takes (any case); ``version`` goes up with any change of a
    setting, so results of another version form another golden series. ``hf_ids``: the
    checkpoints (the first is sent as the model id unless the server serves another of them);
    ``sources``: setting -> where it comes from (repository, commit, path, function).
    ``family``: ``deepseek-ocr`` or ``deepseek-ocr-2`` for DeepSeek's models, whose engines keep
    DeepSeek's modes and prompts; None for a peer, which runs in one mode (``native``) with
    ``tasks``' prompts, ``decoding`` (fields exactly as its runner sends them), the page made by
    ``prepare_image`` and the answer made by ``pipeline``.
    """

    name: str
    version: int
    hf_ids: tuple[str, ...]
    sources: Mapping[str, str]
    tasks: Mapping[str, TaskPrompt] = field(default_factory=dict)
    decoding: Mapping[str, Any] = field(default_factory=dict)
    max_tokens_field: str = "max_tokens"
    """The decoding field that caps the answer's length (``--max-new-tokens`` sets it)."""
    vllm_flags: tuple[str, ...] = ()
    """How the authors start vLLM for it, after ``vllm serve MODEL``."""
    image_rule: str = "the page as given"
    prepare_image: Callable[[Image.Image], Image.Image] | None = None
    """What the runner does to a page image (a file: OmniDocBench's pages)."""
    pdf_rendering: PdfRendering | None = None
    """How the runner rasterises a PDF page (olmOCR-bench's pages); None: the benchmark's own
    rendering, then ``prepare_image`` as for an image."""
    converter: str = "none"
    pipeline: Pipeline | None = None
    pipeline_settings: Mapping[str, Any] = field(default_factory=dict)
    """What a pipeline's further calls send (MinerU's per-block prompts and decoding), as JSON
    values: part of :meth:`settings`, so a change of them is a change of the profile."""
    family: str | None = None
    settings_from: str = ""
    """In a few words, whose code the settings come from (README's table)."""
    runs_here: str = ""
    left_out: str = "—"
    """What of the authors' runner the profile does not do, and why (README's table)."""
    unavailable: str | None = None
    """Why no served engine can run the model (None: they can)."""
    api_base: str | None = None
    """An API model's provider endpoint (its OpenAI-compatible ``/v1`` URL); None: self-served."""
    api_key_env: str | None = None
    """The environment variable that holds an API model's key by the provider's convention."""
    rate_limits: RateLimits | None = None
    """The provider's limits the engine keeps to (per run: shared among pytest's workers)."""
    token_prices: TokenPrices | None = None
    """Not part of :meth:`settings`: a price changes the cost, not the answers."""

    def task(self, kind: str | None) -> TaskPrompt:
        """The prompt of task ``kind``; UnsupportedTaskError naming the tasks it has."""
        if kind not in self.tasks:
            have = ", ".join(self.tasks) or "none"
            raise UnsupportedTaskError(
                f"model {self.name!r} has no prompt for task {kind!r} (its tasks: {have}); "
                "run it on benchmarks of those tasks"
            )
        return self.tasks[kind]

    def settings(self, kind: str | None = None) -> dict[str, Any]:
        """What identifies this profile in a result's settings: name, version, the prompt's
        SHA-256 (of ``kind``'s message, or of every task's), decoding, image and PDF-page rules,
        converter, a pipeline's further calls."""
        prompts = {kind: self.tasks[kind]} if kind in self.tasks else dict(self.tasks)
        encoded = json.dumps(
            {task: [p.system, p.prefix, p.text, p.image_first] for task, p in prompts.items()},
            sort_keys=True,
        ).encode()
        settings = {
            "name": self.name,
            "version": self.version,
            "prompt_sha256": hashlib.sha256(encoded).hexdigest(),
            "decoding": dict(self.decoding),
            "image_preparation": self.image_rule,
            "converter": self.converter,
        }
        if self.pdf_rendering is not None:
            settings["pdf_rendering"] = self.pdf_rendering.rule
        if self.pipeline_settings:
            settings["pipeline"] = json.loads(json.dumps(self.pipeline_settings, sort_keys=True))
        return settings


_REGISTRY: dict[str, ModelProfile] = {}


def register_model(profile: ModelProfile) -> ModelProfile:
    """Add ``profile`` under its name (case-insensitive); ValueError for a name taken."""
    key = profile.name.lower()
    if key in _REGISTRY and _REGISTRY[key] is not profile:
        raise ValueError(f"model name {profile.name!r} is already registered")
    _REGISTRY[key] = profile
    return profile


def available_models() -> list[str]:
    """The profiles' names, sorted case-insensitively."""
    _load_builtin_models()
    return sorted((p.name for p in _REGISTRY.values()), key=str.lower)


def model_profile(name: str) -> ModelProfile:
    """The profile called ``name`` (any case); UnknownModelError naming the known ones."""
    _load_builtin_models()
    try:
        return _REGISTRY[name.lower()]
    except KeyError:
        raise UnknownModelError(
            f"unknown model {name!r}; choose one of: {', '.join(available_models())}"
        ) from None


def _load_builtin_models() -> None:
    for module in BUILTIN_MODEL_MODULES:
        importlib.import_module(module)


async def single_call(
    profile: ModelProfile, task: str, original: Image.Image, page: Image.Image,
    complete: Complete,
) -> Answer:
    """The default pipeline: one call with the profile's decoding, the answer as the page."""
    completion = await complete(page, profile.decoding)
    return Answer(completion.text, completion.text)
