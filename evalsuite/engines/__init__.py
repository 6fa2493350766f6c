"""Engines: one module per engine, all behind the protocol in :mod:`evalsuite.engines.base`."""

from evalsuite.engines.base import (
    Engine,
    EngineBase,
    InferenceRequest,
    InferenceResult,
    available_engines,
    create_engine,
    engine_kind,
    register_engine,
    supported_modes,
)

BUILTIN_ENGINE_MODULES = (
    "evalsuite.engines.deepseek_ocr",
    "evalsuite.engines.deepseek_ocr2",
    "evalsuite.engines.tiny_deepseek_ocr2",
    "evalsuite.engines.tesseract",
    "evalsuite.engines.replay",
    "evalsuite.engines.served",
)

__all__ = [
    "BUILTIN_ENGINE_MODULES",
    "Engine",
    "EngineBase",
    "InferenceRequest",
    "InferenceResult",
    "available_engines",
    "create_engine",
    "engine_kind",
    "register_engine",
    "supported_modes",
]
