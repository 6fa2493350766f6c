"""Value parsers that several option groups share: counts, comma lists, choices, folders and
labels; each bad value is a ``pytest.UsageError`` naming the option and what it expects."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+:-]{0,99}")
"""What an engine label or a run name may be (it becomes part of file names and keys)."""
Number = TypeVar("Number", int, float)


def parse_number(
    value: str, name: str, expected: str, valid: Callable[[Number], bool],
    kind: Callable[[str], Number],
) -> Number:
    """Option ``name``'s ``value`` read by ``kind`` (``int``, ``float``) when ``valid`` holds for
    it; else a usage error saying it ``expected`` (e.g. "a number >= 0")."""
    try:
        number = kind(value)
    except ValueError:
        raise pytest.UsageError(f"{name} {value!r}: expected {expected}") from None
    if not valid(number):
        raise pytest.UsageError(f"{name} {value!r}: expected {expected}")
    return number


def parse_count(value: str | None, name: str) -> int | None:
    """Option ``name``'s whole number >= 1; None when it is not given."""
    if value is None:
        return None
    return parse_number(value, name, "a whole number >= 1", lambda number: number >= 1, int)


def parse_names(value: str | None) -> tuple[str, ...] | None:
    """``a, b,,c`` -> ("a", "b", "c"); None for nothing given or only commas."""
    if not value:
        return None
    return tuple(v.strip() for v in value.split(",") if v.strip()) or None


def parse_choice(value: str, name: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; a usage error listing them otherwise."""
    if value not in choices:
        raise pytest.UsageError(f"{name} {value!r}: choose one of {', '.join(choices)}")
    return value


def readable_dir(path: Path, where: str) -> Path:
    """``path`` when it is a folder this process can list; a usage error naming ``where``."""
    if not path.is_dir():
        raise pytest.UsageError(f"{where} {path}: not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise pytest.UsageError(f"{where} {path}: not readable")
    return path
