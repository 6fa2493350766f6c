"""Engine and server options: which engines run (--gpu, --engine, --engine-label), the weights
they load, and the model server they use (--api-base, or the one --gpu starts), with the checks
of engine modes and of --server-command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from evalsuite.engines import engine_kind, supported_modes
from evalsuite.engines.base import OCR_MODE
from evalsuite.engines.served import MODEL_FAMILIES, api_base_urls, served_modes
from evalsuite.errors import UnknownEngineError
from evalsuite.plugin.options.served_model import provider_bases
from evalsuite.plugin.options.suite import SuiteOptions
from evalsuite.plugin.options.values import (
    LABEL_PATTERN,
    parse_count,
    parse_names,
    parse_number,
)
from evalsuite.plugin.server import SERVED_ENGINES, plan_server

AUTO = "auto"


def add_engine_options(group: pytest.OptionGroup) -> None:
    """Declare the engine and server options in ``group``."""
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


def parse_engine_options(config: pytest.Config, model: str | None) -> dict[str, Any]:
    """The :class:`SuiteOptions` fields of the engine and server options; ``model``, the peer
    ``--model`` (or None), runs on the ``openai`` engine at its provider unless told otherwise."""
    option = config.getoption
    engines = parse_names(option("--engine"))
    engines = None if engines in (None, (AUTO,)) else engines
    if model is not None and engines is None:
        engines = ("openai",)  # a peer runs behind any OpenAI-compatible server
    return {
        "gpu": bool(option("--gpu")),
        "engines": engines,
        "engine_labels": _labels(option("--engine-label"), engines),
        "model_path": option("--model-path"),
        "model_path_v2": option("--model-path-v2"),
        "api_bases": _api_bases(option("--api-base")) or provider_bases(model),
        "server_command": option("--server-command"),
        "server_timeout_s": parse_number(
            option("--server-timeout"), "--server-timeout", "seconds > 0",
            lambda number: number > 0, float,
        ),
        "concurrency": parse_count(option("--concurrency"), "--concurrency"),
        "vllm": option("--vllm"),
        "max_new_tokens": parse_count(option("--max-new-tokens"), "--max-new-tokens"),
    }


def check_engines(options: SuiteOptions, gpu_engines: Sequence[str]) -> None:
    """Usage errors for an engine that does not exist and for --modes that the engines to run
    (those named, else ``gpu_engines`` with --gpu, else DeepSeek-OCR's) do not have."""
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


def check_server_command(options: SuiteOptions) -> None:
    """Usage errors for a --server-command beside --api-base, or one that cannot be planned."""
    if options.server_command is None:
        return
    if options.api_bases:
        raise pytest.UsageError("--server-command and --api-base exclude each other")
    try:
        plan_server(options.server_command, options.served_model, None, 1.0)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


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


def _api_bases(values: Sequence[str]) -> tuple[str, ...]:
    if not values:
        return ()
    try:
        return api_base_urls(values)
    except ValueError as exc:
        raise pytest.UsageError(f"--api-base {exc}") from None
