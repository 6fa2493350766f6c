"""Served-model options: the model the served engines run (--served-model, or a peer's profile
by --model) and what goes with a peer (its served id, API key, prompt, decoding fields, rate
limits and token prices), with the checks of what a peer needs."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from collections.abc import Sequence
from typing import Any

import pytest

from evalsuite.models import UnknownModelError, available_models, model_profile
from evalsuite.plugin.options.suite import SERVED_MODEL_DEFAULT, SuiteOptions
from evalsuite.plugin.options.values import parse_choice, parse_number
from evalsuite.plugin.server import SERVED_ENGINES, SERVED_MODELS


def add_served_model_options(group: pytest.OptionGroup) -> None:
    """Declare the served-model options in ``group``."""
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


def parse_served_model_options(config: pytest.Config) -> dict[str, Any]:
    """The :class:`SuiteOptions` fields of the served-model options."""
    option = config.getoption
    model, served_model, served_model_given = _model(option("--model"), option("--served-model"))
    return {
        "served_model": served_model,
        "served_model_given": served_model_given,
        "model": model,
        "served_model_name": option("--served-model-name"),
        "api_key_env": _api_key_env(option("--api-key-env")),
        "prompt": option("--prompt"),
        "decoding": _decoding(option("--decoding")),
        "requests_per_minute": _rate(option("--requests-per-minute"), "--requests-per-minute"),
        "tokens_per_minute": _rate(option("--tokens-per-minute"), "--tokens-per-minute"),
        "token_prices": _token_prices(option("--token-prices")),
    }


def _model(value: str | None, given: str | None) -> tuple[str | None, str, bool]:
    """(peer profile name, served model, whether a served model was named) for --model and
    --served-model: a DeepSeek model named by --model becomes the served model (one of them,
    not both differently)."""
    served_model = parse_choice(
        given or SERVED_MODEL_DEFAULT, "--served-model", tuple(SERVED_MODELS)
    )
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


def provider_bases(model: str | None) -> tuple[str, ...]:
    """An API model's provider endpoint, the server when no --api-base is given."""
    api_base = model_profile(model).api_base if model is not None else None
    return () if api_base is None else (api_base,)


def _rate(value: str | None, name: str) -> float | None:
    if value is None:
        return None
    return parse_number(value, name, "a number > 0", lambda number: 0 < number < math.inf, float)


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
