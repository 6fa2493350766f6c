"""The recordings format (one JSON object per line) and :class:`RecordingEngine`, which writes it.

A line holds the request's identifying key and the engine's result::

    {"experiment": ..., "document": ..., "mode": ..., "render_config": ..., "condition": ...,
     "question_id": ..., "prompt": ..., "output": ..., "vision_tokens": ..., "output_tokens": ...,
     "ground_truth_tokens": ..., "latency_s": ..., <other key fields>, "sample_id": ...,
     "error": ..., "settings": {...}, "boxes": [[x1, y1, x2, y2], ...] | null}

The first twelve fields are those of the recorded DeepSeek-OCR study
(``deepseek_ocr_recordings/recordings.jsonl``), which has only these. Every field that is not a
result field (:data:`RESULT_FIELDS`) nor ``sample_id`` is part of the key. ``vision_tokens`` is
an int (the engine's own count), null, or ``{"nominal", "valid", "raw", "tiles"}`` for a
:class:`evalsuite.tokens.VisionTokens`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

from evalsuite.engines.base import Engine, InferenceRequest, InferenceResult

STUDY_KEY_FIELDS = (
    "experiment",
    "document",
    "mode",
    "render_config",
    "condition",
    "question_id",
    "prompt",
)
"""Key fields of the recorded study, written first (null where a request has none)."""

RESULT_FIELDS = (
    "output",
    "vision_tokens",
    "output_tokens",
    "ground_truth_tokens",
    "latency_s",
    "error",
    "settings",
    "boxes",
)
"""Fields that hold what the engine produced; never part of the key."""

INFO_FIELDS = ("sample_id",)
"""Fields kept for people reading a recording; not part of the key."""

_VISION_TOKEN_FIELDS = ("nominal", "valid", "raw", "tiles")


def encode_record(request: InferenceRequest, result: InferenceResult) -> dict[str, Any]:
    """The recording line (as a dict, in the documented field order) of one request's result."""
    key = request.replay_key()
    check_key(key)
    record: dict[str, Any] = {name: key.get(name) for name in STUDY_KEY_FIELDS}
    record.update(
        output=result.text,
        vision_tokens=_encode_vision_tokens(result.vision_tokens),
        output_tokens=result.output_tokens,
        ground_truth_tokens=None,
        latency_s=result.latency_s,
    )
    record.update({name: key[name] for name in sorted(key) if name not in STUDY_KEY_FIELDS})
    record.update(
        sample_id=request.sample_id,
        error=result.error,
        settings=dict(result.settings),
        boxes=None if result.boxes is None else [list(box) for box in result.boxes],
    )
    return record


def decode_result(record: Mapping[str, Any]) -> InferenceResult:
    """The :class:`InferenceResult` stored in one recording line (inverse of encode_record)."""
    boxes = record.get("boxes")
    return InferenceResult(
        text=record["output"],
        vision_tokens=_decode_vision_tokens(record.get("vision_tokens")),
        output_tokens=record.get("output_tokens"),
        latency_s=record.get("latency_s") or 0.0,
        error=record.get("error"),
        settings=dict(record.get("settings") or {}),
        boxes=None if boxes is None else [tuple(box) for box in boxes],
    )


def check_key(key: Mapping[str, Any]) -> None:
    """Raise ValueError/TypeError unless ``key`` can be stored and looked up in a recording."""
    for name, value in key.items():
        if not isinstance(name, str):
            raise TypeError(f"request.key field names must be str, got {name!r}")
        if name in RESULT_FIELDS or name in INFO_FIELDS:
            raise ValueError(f"request.key field {name!r} is reserved for the recorded result")
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise TypeError(
                f"request.key[{name!r}] must be str, int, float, bool or None, "
                f"got {type(value).__name__}"
            )
    if not any(value is not None for name, value in key.items() if name not in ("mode", "prompt")):
        raise ValueError(
            "request.key is empty: a recording needs fields that identify the sample "
            "(e.g. experiment and document)"
        )


class RecordingEngine:
    """Wraps a live engine and appends each of its results to a JSONL recording.

    Lines are appended whole under an inter-process lock (``PATH.lock``), one ``write`` per
    batch, flushed and fsynced, so concurrent recorders never interleave. A file whose last line
    is incomplete (an interrupted write) is refused rather than appended to.
    """

    def __init__(self, engine: Engine, path: str | os.PathLike[str]) -> None:
        self.engine = engine
        self.name = engine.name
        self.kind = engine.kind
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(f"recording path {str(self.path)!r} is a directory")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(f"{self.path}.lock")
        with self._lock:
            _require_complete_last_line(self.path)

    def infer(self, request: InferenceRequest) -> InferenceResult:
        return self.infer_batch([request])[0]

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        for request in requests:
            check_key(request.replay_key())
        results = self.engine.infer_batch(requests)
        lines = "".join(
            json.dumps(encode_record(request, result), ensure_ascii=False, default=str) + "\n"
            for request, result in zip(requests, results, strict=True)
        )
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())
        return results


def _require_complete_last_line(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) != b"\n":
            raise ValueError(
                f"recording {str(path)!r} ends with an incomplete line (an interrupted write?); "
                "remove that line or record into a new file"
            )


def _encode_vision_tokens(value: Any) -> Any:
    if value is None or isinstance(value, int):
        return value
    if dataclasses.is_dataclass(value) or hasattr(value, "_asdict"):
        return {name: getattr(value, name) for name in _VISION_TOKEN_FIELDS}
    raise TypeError(
        f"result.vision_tokens must be None, int or VisionTokens, got {type(value).__name__}"
    )


def _decode_vision_tokens(value: Any) -> Any:
    if isinstance(value, Mapping):
        from evalsuite.tokens import VisionTokens

        return VisionTokens(**{name: value[name] for name in _VISION_TOKEN_FIELDS})
    return value
