"""``replay``: serves recorded engine outputs from JSONL recordings (see
:mod:`evalsuite.engines.recording` for the format). A recording is served only for the input it
was made from; a request without one fails with :class:`~evalsuite.errors.MissingRecordingError`
(a failed sample, never an empty output).

Lookup of a request (its :meth:`~evalsuite.engines.base.InferenceRequest.replay_key`):

1. Exact rule, for lines written by ``--record`` (they carry ``sample_id`` and
   ``image_sha256``): the key fields, the sample id and the mode must equal the line's; then the
   line's image hash and prompt must equal the request's. When they do not, the line is refused
   and the error says which of the two differs (another page, or another prompt).
2. Study rule, for the recorded DeepSeek-OCR study (lines without ``sample_id``, as in
   ``deepseek_ocr_recordings/recordings.jsonl``), and only for requests whose key has an
   ``experiment``: the study's key fields (experiment, document, mode, render_config,
   condition, question_id; null counts as absent on both sides) must be equal, and the line's
   prompt must be null or contained in the request's prompt (the study kept the question, not
   its prompt template); the longest contained prompt wins. The study recorded neither sample
   ids nor images, so those are not compared; its keys name the document and question, so a
   line is never served for another page or question. A study line of the text condition is
   keyed by the mode its blank image was processed in
   (:data:`evalsuite.prompts.TEXT_CONDITION_MODE`), not by the experiment's mode that its
   ``mode`` field records.
3. Otherwise :class:`~evalsuite.errors.MissingRecordingError` names the key and the files.

Files are read in order and lines in order; a later line with the same key replaces an earlier
one, so appending a new run to a recording supersedes the old outputs.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.datasets import DATA_ENV
from evalsuite.engines.base import (
    OCR_MODE,
    EngineBase,
    InferenceRequest,
    InferenceResult,
    register_engine,
)
from evalsuite.engines.deepseek_ocr2 import OCR2_MODES
from evalsuite.engines.recording import (
    HASH_FIELDS,
    RESULT_FIELDS,
    STUDY_KEY_FIELDS,
    decode_result,
)
from evalsuite.engines.weights import file_sha256
from evalsuite.errors import DatasetFormatError, EngineUnavailableError, MissingRecordingError
from evalsuite.prompts import TEXT_CONDITION_MODE
from evalsuite.textformat import shorten
from evalsuite.tokens import MODES

RECORDINGS_ENV = "EVALSUITE_RECORDINGS"
STUDY_RECORDINGS = Path("deepseek_ocr_recordings") / "recordings.jsonl"
"""The recorded DeepSeek-OCR study, relative to ``$EVALSUITE_DATA``."""
STUDY_IDENTITY = tuple(name for name in STUDY_KEY_FIELDS if name != "prompt")
TEXT_CONDITION = "text"

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


def identity_of(key: Mapping[str, Any], fields: tuple[str, ...] | None = None) -> Identity:
    """The part of a replay key that must match exactly: the non-None fields (only ``fields``
    when given) other than the prompt and the content hashes, sorted by name."""
    return tuple(
        sorted(
            (name, value)
            for name, value in key.items()
            if name != "prompt"
            and name not in HASH_FIELDS
            and value is not None
            and (fields is None or name in fields)
        )
    )


@dataclass
class RecordingIndex:
    """Recordings by identity: ``exact`` (lines written by --record) and ``study`` (lines of the
    recorded study, by study identity then recorded prompt)."""

    exact: dict[Identity, Recording]
    study: dict[Identity, dict[str | None, Recording]]

    def __len__(self) -> int:
        return len(self.exact) + sum(len(by_prompt) for by_prompt in self.study.values())


def load_recordings(paths: Sequence[Path]) -> RecordingIndex:
    """Index every line of ``paths`` (later lines win)."""
    index = RecordingIndex({}, {})
    for path in paths:
        for source, record in _read_lines(path):
            key = {name: value for name, value in record.items() if name not in RESULT_FIELDS}
            prompt = key.get("prompt")
            recording = Recording(prompt, record, source)
            if "sample_id" in record:
                index.exact[identity_of(key)] = recording
            else:
                if key.get("condition") == TEXT_CONDITION:
                    key["mode"] = TEXT_CONDITION_MODE
                study = identity_of(key, STUDY_IDENTITY)
                index.study.setdefault(study, {})[prompt] = recording
    return index


@register_engine("replay")
class ReplayEngine(EngineBase):
    """Returns the recorded result of each request; a request without one fails with
    :class:`MissingRecordingError` (never an empty output).

    Its outputs depend on the request's key, not only on the image and prompt
    (``keyed_outputs``), and are exactly reproducible (``deterministic``). It serves the
    recordings of any engine, so it accepts the modes of all of them (``supported_modes``).
    """

    name = "replay"
    kind = "vlm"
    supported_modes: tuple[str, ...] = (*MODES, *OCR2_MODES, OCR_MODE)
    keyed_outputs = True
    deterministic = True
    times_calls = False  # a recording without a latency replays as 0.0, not the lookup's time

    def __init__(self, *, recordings: RecordingsOption = None) -> None:
        self.sources = recordings_paths(recordings)
        for path in self.sources:
            if not path.is_file():
                raise EngineUnavailableError(f"recordings file {str(path)!r} does not exist")
        self._index = load_recordings(self.sources)

    def identity(self) -> dict[str, Any]:
        """The recordings files replayed and the SHA-256 of each, for run records."""
        return {
            "recordings": [
                {"path": str(path.resolve()), "sha256": file_sha256(path)} for path in self.sources
            ]
        }

    def __len__(self) -> int:
        return len(self._index)

    def find(self, request: InferenceRequest) -> Recording:
        """The recording that serves ``request`` (rules in the module docstring)."""
        key = request.replay_key()
        files = ", ".join(str(path) for path in self.sources)
        exact = self._index.exact.get(identity_of(key))
        if exact is not None:
            recorded, current = exact.record.get("image_sha256"), key["image_sha256"]
            if recorded != current:
                raise MissingRecordingError(
                    f"the recording of {_describe(key)} ({exact.source}) was made from another "
                    f"image (sha256 {_short(recorded)}, this one {_short(current)})"
                )
            if exact.prompt != request.prompt:
                raise MissingRecordingError(
                    f"the recording of {_describe(key)} ({exact.source}) was made with another "
                    f"prompt ({_quote(exact.prompt)}, this one {_quote(request.prompt)})"
                )
            return exact
        if request.key.get("experiment") is not None:
            by_prompt = self._index.study.get(identity_of(key, STUDY_IDENTITY), {})
            if request.prompt in by_prompt:
                return by_prompt[request.prompt]
            loose = [
                recording
                for prompt, recording in by_prompt.items()
                if prompt is None or prompt in request.prompt
            ]
            if loose:
                return max(loose, key=_specificity)
            if by_prompt:
                recorded = ", ".join(sorted(_quote(prompt) for prompt in by_prompt))
                raise MissingRecordingError(
                    f"no recording for key {_describe(key)}: the study recorded this key with "
                    f"other prompts ({recorded}) in {files}"
                )
        raise MissingRecordingError(f"no recording for key {_describe(key)} in {files}")

    def _infer(self, request: InferenceRequest) -> InferenceResult:
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
    """The key's identifying fields (no prompt, no hashes), for messages."""
    return "{" + ", ".join(f"{name}={value!r}" for name, value in identity_of(key)) + "}"


def _short(digest: str | None) -> str:
    return "none" if digest is None else digest[:12]


def _quote(prompt: str | None) -> str:
    return "null" if prompt is None else repr(shorten(prompt, 60))
