"""olmOCR-2's answer (YAML front matter, then the page) as its pipeline reads it, and an answer
in olmOCR-bench's JSON schema as its API runners read it (:func:`json_page_response`,
:func:`json_natural_text`).

As olmocr 0.4.27's ``try_single_page`` does with ``FrontMatterParser(PageResponse)``
(olmocr/train/front_matter.py): the answer must start with exactly ``---\\n``; the front matter runs
to the first ``\\n---`` found from index 4, the page text is what follows those four characters,
stripped. The front matter, loaded with PyYAML's ``safe_load`` (YAML 1.1: ``yes``/``no`` are
booleans), must be a mapping holding exactly primary_language, is_rotation_valid,
rotation_correction, is_table and is_diagram: an int field given as a string goes through
``int()``, a bool field given as a string is ``lower() == "true"``, primary_language (Optional[str])
is None for a boolean or a falsy value; then rotation_correction must be 0, 90, 180 or 270 and every
field of its type (``PageResponse.__post_init__``). Anything else fails the attempt, which the
pipeline retries (:class:`~evalsuite.models.convert.ConversionError` here). The page is
``natural_text``: the text, None when empty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from evalsuite.models.convert import ConversionError

FRONT_MATTER_FIELDS = (
    "primary_language", "is_rotation_valid", "rotation_correction", "is_table", "is_diagram")
ROTATIONS = frozenset({0, 90, 180, 270})
_OPENING = "---\n"
_CLOSING = "\n---"


@dataclass(frozen=True)
class PageResponse:
    """olmOCR's page answer: the front matter's fields and the page text (None: no text)."""

    primary_language: str | None
    is_rotation_valid: bool
    rotation_correction: int
    is_table: bool
    is_diagram: bool
    natural_text: str | None


def split_front_matter(answer: str) -> tuple[Any, str]:
    """(front matter as YAML loads it, page text); ({}, the stripped answer) without a front
    matter or where the YAML does not parse (``_extract_front_matter_and_text``)."""
    if answer.startswith(_OPENING):
        end = answer.find(_CLOSING, len(_OPENING))
        if end != -1:
            try:
                loaded = yaml.safe_load(answer[len(_OPENING):end])
            except yaml.YAMLError:
                return {}, answer.strip()
            except (ValueError, TypeError, RecursionError) as exc:  # escapes the official code too
                raise ConversionError(f"the front matter does not load: {exc}") from exc
            return loaded or {}, answer[end + len(_CLOSING):].strip()
    return {}, answer.strip()


def _field_value(name: str, value: Any) -> Any:
    """``_parse_front_matter``'s conversion of one field's value."""
    if name == "rotation_correction" and isinstance(value, str):
        try:
            return int(value)
        except ValueError as exc:
            raise ConversionError(f"rotation_correction {value!r} is not an integer") from exc
    if name in ("is_rotation_valid", "is_table", "is_diagram") and isinstance(value, str):
        return value.lower() == "true"
    if name == "primary_language":
        if isinstance(value, bool):
            return None
        return value or None
    return value


def page_response(answer: str) -> PageResponse:
    """The answer's :class:`PageResponse`; ConversionError where olmOCR's parser fails."""
    front, text = split_front_matter(answer)
    if not isinstance(front, dict):
        raise ConversionError(f"the front matter is a YAML {type(front).__name__}, not a mapping")
    values = {}
    for name in FRONT_MATTER_FIELDS:
        if name not in front:
            raise ConversionError(f"Missing required field {name!r} in front matter")
        values[name] = _field_value(name, front[name])
    extra = set(front) - set(FRONT_MATTER_FIELDS)
    if extra:
        raise ConversionError(f"Unexpected fields in front matter: {sorted(map(str, extra))}")
    rotation = values["rotation_correction"]
    try:
        allowed = rotation in ROTATIONS
    except TypeError:
        allowed = False
    if not allowed or not isinstance(rotation, int):
        raise ConversionError(f"rotation_correction {rotation!r} is not one of 0, 90, 180, 270")
    if not isinstance(values["primary_language"], (str, type(None))):
        raise ConversionError("primary_language must be a string or null")
    for name in ("is_rotation_valid", "is_table", "is_diagram"):
        if not isinstance(values[name], bool):
            raise ConversionError(f"{name} must be true or false, got {values[name]!r}")
    return PageResponse(**values, natural_text=text or None)


def json_page_response(content: str) -> PageResponse:
    """An answer in olmOCR-bench's JSON schema read as its ``run_chatgpt`` and ``run_server``
    read it: ``PageResponse(**json.loads(content))`` (olmocr 0.4.27
    olmocr/prompts/prompts.py), so exactly the six fields, rotation_correction one of 0, 90,
    180, 270 (checked first), then each field of its type: primary_language and natural_text
    a string or null, the others booleans and an integer. ConversionError naming the official
    exception otherwise."""
    data = _json_answer(content)
    if not isinstance(data, dict):
        raise ConversionError(
            f"TypeError: PageResponse() argument after ** must be a mapping, not "
            f"{type(data).__name__}")
    fields = (*FRONT_MATTER_FIELDS, "natural_text")
    missing = [name for name in fields if name not in data]
    if missing:
        raise ConversionError(f"TypeError: the answer lacks {', '.join(missing)}")
    extra = sorted(set(data) - set(fields))
    if extra:
        raise ConversionError(f"TypeError: unexpected fields in the answer: {', '.join(extra)}")
    try:
        allowed = data["rotation_correction"] in ROTATIONS
    except TypeError:  # unhashable: olmocr's set test raises as well
        allowed = False
    if not allowed:
        raise ConversionError("ValueError: rotation_correction must be one of [0, 90, 180, 270].")
    types = {"primary_language": (str, type(None)), "is_rotation_valid": bool,
             "rotation_correction": int, "is_table": bool, "is_diagram": bool,
             "natural_text": (str, type(None))}
    for name, kind in types.items():
        if not isinstance(data[name], kind):
            raise ConversionError(f"TypeError: {name} has the wrong type ({data[name]!r})")
    return PageResponse(**data)


def json_natural_text(content: str) -> str | None:
    """An answer in olmOCR-bench's JSON schema read as its ``run_gemini`` reads it:
    ``json.loads(content)["natural_text"]``, nothing else checked. Deliberate deviation: a
    natural_text that is neither text nor null fails (olmocr would write its repr)."""
    data = _json_answer(content)
    if not isinstance(data, dict):
        raise ConversionError(f"TypeError: the answer is a JSON {type(data).__name__}, not an "
                              "object")
    if "natural_text" not in data:
        raise ConversionError("KeyError: the answer has no 'natural_text'")
    text = data["natural_text"]
    if not isinstance(text, (str, type(None))):
        raise ConversionError(f"natural_text is a JSON {type(text).__name__}, not text or null")
    return text


def _json_answer(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError as exc:
        raise ConversionError(f"JSONDecodeError: {exc}") from None
