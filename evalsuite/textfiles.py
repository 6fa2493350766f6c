"""Reading the files a scorer is handed (predictions, ground truths, test files): one-line
errors that name the file and say what it is instead (a folder, a link loop, not UTF-8, too
long), and one size limit for every scorer's predictions."""

from __future__ import annotations

import errno
import stat
from pathlib import Path
from typing import Any

from evalsuite.errors import DatasetFormatError

MAX_PREDICTION_CHARS = 10_000_000
"""The longest prediction (characters) any scorer reads: FinixDocBench's ``MAX_TOTAL_LENGTH``,
there a failed page. Elsewhere (OmniDocBench, olmOCR-bench, a benchmark run) the official code
has no limit; a 50 MB page took OmniDocBench's matching minutes and gigabytes, so a longer one is
refused (``evalsuite score``) or a failed sample (a run) here: a deliberate deviation."""
UTF8_MAX_BYTES_PER_CHAR = 4


def file_problem(path: Path) -> str | None:
    """What ``path`` is when it is not a regular file to read (``a folder``, ``a symbolic
    link loop``, ``a broken symbolic link``, ``missing``, ...); None for a regular file."""
    try:
        mode = path.stat().st_mode  # follows links
    except FileNotFoundError:
        return "a broken symbolic link" if path.is_symlink() else "missing"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        return f"unreadable ({exc.strerror})"
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if not stat.S_ISREG(mode):
        return "not a regular file (a FIFO, socket or device)"
    return None


def read_text(path: Path, what: str = "file", *, max_chars: int | None = None) -> str:
    """The UTF-8 text of the file ``path``; DatasetFormatError naming ``what`` and the file when
    it is not a regular file (:func:`file_problem`), not UTF-8, or over ``max_chars``
    characters (bytes are checked first, so that a huge file is not read)."""
    problem = file_problem(path)
    if problem is not None:
        raise DatasetFormatError(f"{what} {path} is {problem}")
    if max_chars is not None and path.stat().st_size > UTF8_MAX_BYTES_PER_CHAR * max_chars:
        raise DatasetFormatError(f"{what} {path} has {path.stat().st_size:_} bytes, over the "
                                 f"limit of {max_chars:_} characters")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(f"{what} {path} is not UTF-8 text ({exc.reason} at byte "
                                 f"{exc.start}); save it as UTF-8") from None
    if max_chars is not None and len(text) > max_chars:
        raise DatasetFormatError(f"{what} {path} has {len(text):_} characters, over the limit "
                                 f"of {max_chars:_}")
    return text


def read_prediction(path: Path) -> str:
    """A prediction file's text, at most :data:`MAX_PREDICTION_CHARS` (:func:`read_text`)."""
    return read_text(path, "prediction", max_chars=MAX_PREDICTION_CHARS)


def found(value: Any) -> str:
    """A JSON value as an error message names it: ``a string ('oops')``, ``a number (3)``,
    ``null``, ``true``, ``an object``, ``a list of 2 items``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:39] + "…"
        return f"a string ({shown!r})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    return f"a {type(value).__name__}"


def expected(mapping: Any, name: str, kind: type | tuple[type, ...], shape: str) -> str | None:
    """Why ``mapping[name]`` is not ``shape`` (an instance of ``kind``): ``NAME (SHAPE) is
    missing``, or ``NAME must be SHAPE, found ...``; None when it is."""
    if not isinstance(mapping, dict) or name not in mapping:
        return f"{name} ({shape}) is missing"
    value = mapping[name]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        return f"{name} must be {shape}, found {found(value)}"
    return None
