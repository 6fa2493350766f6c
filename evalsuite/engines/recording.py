"""The recordings format (one JSON object per line) and :class:`RecordingEngine`, which writes it.

A line holds the request's identifying key, the content hashes of its input, and the engine's
result::

    {"experiment": ..., "document": ..., "mode": ..., "render_config": ..., "condition": ...,
     "question_id": ..., "prompt": ..., "output": ..., "vision_tokens": ..., "output_tokens": ...,
     "ground_truth_tokens": ..., "latency_s": ..., <other key fields>, "sample_id": ...,
     "image_sha256": ..., "prompt_sha256": ..., "error": ..., "settings": {...},
     "boxes": [[x1, y1, x2, y2], ...] | null}

The first twelve fields are those of the recorded DeepSeek-OCR study
(``deepseek_ocr_recordings/recordings.jsonl``), which has only these (no sample id, no hashes:
the replay engine serves it by its explicit study rule). Every field that is not a result field
(:data:`RESULT_FIELDS`) nor a hash (:data:`HASH_FIELDS`) is part of the key, ``sample_id``
included. ``image_sha256`` is :attr:`InferenceRequest.image_sha256`; ``prompt_sha256`` the
SHA-256 of the prompt's UTF-8 bytes. ``vision_tokens`` is an int (the engine's own count),
null, or ``{"nominal", "valid", "raw", "tiles"}`` for a :class:`evalsuite.tokens.VisionTokens`.
"""

from __future__ import annotations

import dataclasses
import hashlib
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

HASH_FIELDS = ("image_sha256", "prompt_sha256")
"""Content hashes of the request's input: compared by replay, never part of the key."""
RESERVED_KEY_FIELDS = (*RESULT_FIELDS, *HASH_FIELDS, "sample_id", "mode", "prompt")
"""Names a request's ``key`` cannot use: the request and the recording fill them."""

_VISION_TOKEN_FIELDS = ("nominal", "valid", "raw", "tiles")


def encode_record(request: InferenceRequest, result: InferenceResult) -> dict[str, Any]:
    """The recording line (as a dict, in the documented field order) of one request's result."""
    check_key(request.key)
    key = request.replay_key()
    record: dict[str, Any] = {name: key.get(name) for name in STUDY_KEY_FIELDS}
    record.update(
        output=result.text,
        vision_tokens=_encode_vision_tokens(result.vision_tokens),
        output_tokens=result.output_tokens,
        ground_truth_tokens=None,
        latency_s=result.latency_s,
    )
    record.update(
        {
            name: key[name]
            for name in sorted(key)
            if name not in STUDY_KEY_FIELDS and name not in HASH_FIELDS
        }
    )
    record.update(
        image_sha256=request.image_sha256,
        prompt_sha256=hashlib.sha256(request.prompt.encode("utf-8")).hexdigest(),
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
    """Raise ValueError/TypeError unless a request's ``key`` can be stored in a recording and
    looked up again: string names other than :data:`RESERVED_KEY_FIELDS`, scalar values."""
    for name, value in key.items():
        if not isinstance(name, str):
            raise TypeError(f"request.key field names must be str, got {name!r}")
        if name in RESERVED_KEY_FIELDS:
            raise ValueError(
                f"request.key field {name!r} is reserved (the request or its recording sets it)"
            )
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise TypeError(
                f"request.key[{name!r}] must be str, int, float, bool or None, "
                f"got {type(value).__name__}"
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
            check_key(request.key)
        results = self.engine.infer_batch(requests)
        self.record_reused(list(zip(requests, results, strict=True)))
        return results

    def record_reused(
        self, pairs: Sequence[tuple[InferenceRequest, InferenceResult]]
    ) -> None:
        """Append a line per (request, result): also for requests the runner answered from
        its cache (an identical request under another key), so that replay finds every key."""
        for request, _ in pairs:
            check_key(request.key)
        lines = "".join(
            json.dumps(encode_record(request, result), ensure_ascii=False, default=str) + "\n"
            for request, result in pairs
        )
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())


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
