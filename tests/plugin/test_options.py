"""How ``--model`` and ``--served-model`` resolve together (``options._model``), and the checks
of the options that go with ``--model`` (``_check_model``, the rate and price options)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from evalsuite.plugin.options import SuiteOptions, _check_model, _model, _rate, _token_prices


@pytest.mark.parametrize(
    ("model", "served", "expected"),
    [
        (None, None, (None, "deepseek-ocr", False)),
        (None, "deepseek-ocr-2", (None, "deepseek-ocr-2", True)),
        ("DeepSeek-OCR-2", None, (None, "deepseek-ocr-2", True)),
        ("deepseek-ocr", "deepseek-ocr", (None, "deepseek-ocr", True)),
        ("dots.ocr", None, ("dots.ocr", "deepseek-ocr", False)),
    ],
)
def test_model_and_served_model_resolve_to_one_model(
    model: str | None, served: str | None, expected: tuple[str | None, str, bool]
) -> None:
    assert _model(model, served) == expected


@pytest.mark.parametrize(
    ("model", "served"),
    [("deepseek-ocr", "deepseek-ocr-2"), ("deepseek-ocr-2", "deepseek-ocr")],
)
def test_two_different_deepseek_models_are_refused(model: str, served: str) -> None:
    with pytest.raises(pytest.UsageError, match="name different models"):
        _model(model, served)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": "dots.ocr", "server_command": "vllm serve x --port {port}"},
         "--model dots.ocr and --server-command exclude each other"),
        ({"model": "dots.ocr"}, "--api-base URL (one running), or --gpu to start one"),
        ({"model": "Gemini-2.5-Flash",
          "api_bases": ("https://generativelanguage.googleapis.com/v1beta/openai",)},
         "needs its API key at https://generativelanguage.googleapis.com/v1beta/openai: set "
         "GEMINI_API_KEY"),
    ],
)
def test_model_option_conflicts_are_usage_errors(
    changes: dict[str, object], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-provider")  # never taken for Gemini
    options = SuiteOptions(engines=("openai",), **changes)  # type: ignore[arg-type]
    with pytest.raises(pytest.UsageError, match=re.escape(message)):
        _check_model(options)


def test_a_peer_with_gpu_or_another_endpoint_needs_no_provider_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    _check_model(SuiteOptions(engines=("openai",), model="dots.ocr", gpu=True))
    _check_model(SuiteOptions(engines=("openai",), model="Gemini-2.5-Flash",
                              api_bases=("http://127.0.0.1:4000/v1",)))  # e.g. a proxy


@pytest.mark.parametrize(
    ("function", "value", "message"),
    [
        (_rate, "0", "--requests-per-minute '0': expected a number > 0"),
        (_rate, "inf", "expected a number > 0"),
        (_rate, "many", "expected a number > 0"),
        (_token_prices, "2.5", "expected IN,OUT"),
        (_token_prices, "2.5,-1", "expected IN,OUT"),
        (_token_prices, "a,b", "expected IN,OUT"),
    ],
)
def test_rate_and_price_options_refuse_bad_values(function: Any, value: str, message: str) -> None:
    with pytest.raises(pytest.UsageError, match=re.escape(message)):
        function(value, "--requests-per-minute") if function is _rate else function(value)


def test_rate_and_price_options_read_good_values() -> None:
    assert _rate("120", "--requests-per-minute") == 120.0 and _rate(None, "x") is None
    assert _token_prices("2.5,10") == (2.5, 10.0) and _token_prices(None) is None
