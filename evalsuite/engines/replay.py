"""``replay``: serves recorded engine outputs from JSONL recordings (see
:mod:`evalsuite.engines.recording` for the format).

Lookup. A request's key is ``request.replay_key()``: its ``key`` fields plus ``mode`` and
``prompt``. Fields whose value is None count as absent, on both sides.

1. Identity: every key field except ``prompt`` must be equal, and the two sets of fields must
   be the same. The recorded DeepSeek-OCR study is found with
   ``key={"experiment": "compression", "document": D}`` (modes tiny/small/base) and
   ``key={"experiment": "context_qa", "document": D, "render_config": R or None,
   "condition": "text" | "vision", "question_id": i}`` (mode small).
2. Prompt: among the recordings of that identity, one whose prompt equals the request's prompt
   wins. Otherwise a recording whose prompt was not recorded (null) or is contained in the
   request's prompt matches (the study kept only the question, not its prompt template); the
   longest such recorded prompt wins.
3. Otherwise :class:`~evalsuite.errors.MissingRecordingError` names the key and the files.

Files are read in order and lines in order; a later line with the same identity and prompt
replaces an earlier one, so appending a new run to a recording supersedes the old outputs.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.engines.base import EngineBase, InferenceRequest, InferenceResult, register_engine
from evalsuite.engines.recording import INFO_FIELDS, RESULT_FIELDS, decode_result
from evalsuite.errors import DatasetFormatError, EngineUnavailableError, MissingRecordingError

RECORDINGS_ENV = "EVALSUITE_RECORDINGS"
DATA_ENV = "EVALSUITE_DATA"
STUDY_RECORDINGS = Path("deepseek_ocr_recordings") / "recordings.jsonl"
"""The recorded DeepSeek-OCR study, relative to ``$EVALSUITE_DATA``."""

Identity = tuple[tuple[str, Any], ...]
RecordingsOption = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


@dataclass(frozen=True)
class Recording:
    """One recorded line: its prompt (None if not recorded), the stored result, and where."""

    prompt: str | None
    record: Mapping[str, Any]
    source: str


def recordings_paths(recordings: RecordingsOption = None) -> list[Path]:
    """Where the recordings come from: ``recordings`` (one path or several), else
    ``$EVALSUITE_RECORDINGS`` (paths separated by ``os.pathsep``), else
    ``$EVALSUITE_DATA/deepseek_ocr_recordings/recordings.jsonl``."""
    if recordings is not None:
        items = [recordings] if isinstance(recordings, (str, os.PathLike)) else list(recordings)
        if not items:
            raise ValueError("recordings must name at least one file")
        return [Path(item) for item in items]
    from_env = os.environ.get(RECORDINGS_ENV, "")
    if from_env.strip():
        return [Path(item) for item in from_env.split(os.pathsep) if item.strip()]
    data_dir = os.environ.get(DATA_ENV, "")
    if data_dir.strip():
        return [Path(data_dir) / STUDY_RECORDINGS]
    raise EngineUnavailableError(
        "the replay engine needs recordings: pass recordings=PATH (--recordings PATH), set "
        f"{RECORDINGS_ENV}=PATH, or set {DATA_ENV} to a folder holding {STUDY_RECORDINGS}"
    )


def identity_of(key: Mapping[str, Any]) -> Identity:
    """The part of a replay key that must match exactly: all non-None fields except the prompt."""
    return tuple(
        sorted(
            (
                (name, value)
                for name, value in key.items()
                if name != "prompt" and value is not None
            ),
            key=lambda item: item[0],
        )
    )


def load_recordings(paths: Sequence[Path]) -> dict[Identity, dict[str | None, Recording]]:
    """Index every line of ``paths`` by identity, then by recorded prompt (later lines win)."""
    index: dict[Identity, dict[str | None, Recording]] = {}
    for path in paths:
        for source, record in _read_lines(path):
            key = {
                name: value
                for name, value in record.items()
                if name not in RESULT_FIELDS and name not in INFO_FIELDS
            }
            prompt = key.get("prompt")
            index.setdefault(identity_of(key), {})[prompt] = Recording(prompt, record, source)
    return index


@register_engine("replay")
class ReplayEngine(EngineBase):
    """Returns the recorded result of each request; a request without one raises
    :class:`MissingRecordingError` (never an empty output)."""

    name = "replay"
    kind = "vlm"

    def __init__(self, *, recordings: RecordingsOption = None) -> None:
        self.sources = recordings_paths(recordings)
        for path in self.sources:
            if not path.is_file():
                raise EngineUnavailableError(f"recordings file {str(path)!r} does not exist")
        self._index = load_recordings(self.sources)

    def __len__(self) -> int:
        return sum(len(by_prompt) for by_prompt in self._index.values())

    def find(self, request: InferenceRequest) -> Recording:
        """The recording that serves ``request`` (rules in the module docstring)."""
        key = request.replay_key()
        by_prompt = self._index.get(identity_of(key), {})
        if request.prompt in by_prompt:
            return by_prompt[request.prompt]
        loose = [
            recording
            for prompt, recording in by_prompt.items()
            if prompt is None or prompt in request.prompt
        ]
        if loose:
            return max(loose, key=_specificity)
        recorded = sorted(repr(prompt) for prompt in by_prompt)
        raise MissingRecordingError(
            f"no recording for key {_describe(key)}"
            + (f" (recorded prompts for this key: {', '.join(recorded)})" if recorded else "")
            + f" in {', '.join(str(path) for path in self.sources)}"
        )

    def infer(self, request: InferenceRequest) -> InferenceResult:
        return decode_result(self.find(request).record)


def _read_lines(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(path:line, record)`` for every line; an incomplete last line is skipped with a warning."""
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(f"recordings file {str(path)!r} is not UTF-8: {exc}") from None
    lines = raw.split("\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        source = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # the file does not end with a newline: a cut-off write
                warnings.warn(
                    f"{source}: incomplete last line ignored (an interrupted write?): {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
                continue
            raise DatasetFormatError(f"{source}: not a JSON object: {exc}") from None
        records.append((source, _checked_record(record, source)))
    return records


def _checked_record(record: Any, source: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise DatasetFormatError(f"{source}: expected a JSON object, got {type(record).__name__}")
    if not isinstance(record.get("output"), str):
        raise DatasetFormatError(f"{source}: field 'output' must be a string")
    if not isinstance(record.get("mode"), str):
        raise DatasetFormatError(f"{source}: field 'mode' must be a string")
    if record.get("prompt") is not None and not isinstance(record["prompt"], str):
        raise DatasetFormatError(f"{source}: field 'prompt' must be a string or null")
    for name in ("output_tokens", "ground_truth_tokens"):
        value = record.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise DatasetFormatError(f"{source}: field {name!r} must be an integer or null")
    for name, value in record.items():
        if name not in RESULT_FIELDS and isinstance(value, (list, dict)):
            raise DatasetFormatError(f"{source}: key field {name!r} must be a scalar")
    return record


def _specificity(recording: Recording) -> int:
    """Longer recorded prompts are more specific; an unrecorded prompt is the least."""
    return -1 if recording.prompt is None else len(recording.prompt)


def _describe(key: Mapping[str, Any]) -> str:
    parts = []
    for name, value in sorted(key.items()):
        if value is None:
            continue
        if name == "prompt" and len(value) > 80:
            value = value[:77] + "..."
        parts.append(f"{name}={value!r}")
    return "{" + ", ".join(parts) + "}"
