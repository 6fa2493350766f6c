"""How ``--model`` and ``--served-model`` resolve together (``options._model``)."""

from __future__ import annotations

import pytest

from evalsuite.plugin.options import _model


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
