"""A pytest plugin for the gate tests: registers ``degraded-tesseract``, the tesseract engine with
every third word of its output dropped (load with ``-p tests.support.degraded_engine``)."""

from __future__ import annotations

from evalsuite.engines import EngineBase, InferenceRequest, InferenceResult, register_engine
from evalsuite.engines.tesseract import TesseractEngine


def drop_every_third_word(text: str) -> str:
    return " ".join(word for index, word in enumerate(text.split(), 1) if index % 3)


@register_engine("degraded-tesseract")
class DegradedTesseract(EngineBase):
    name = "degraded-tesseract"
    kind = "ocr"

    def __init__(self) -> None:
        self.inner = TesseractEngine()

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        result = self.inner.infer(request)
        result.text = drop_every_third_word(result.text)
        return result
