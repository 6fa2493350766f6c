"""Reading page images: one place that refuses what must not reach a decoder or an engine.

:func:`open_image` turns every bad image into an :class:`~evalsuite.errors.ImageInputError`
whose one-line message names the file and the problem: an empty file, a file that is not an
image, a truncated or corrupt one, or one above the pixel limit. The limit is checked from the
header, before any pixel is decoded, so a 30,000 × 30,000 PNG of a few kilobytes is refused
without allocating its 2.7 GB of pixels.

The limit is :data:`DEFAULT_MAX_IMAGE_PIXELS` (100 MP) unless a front end sets another one for
the process (:func:`set_max_image_pixels`, from ``--max-image-pixels``).
"""

from __future__ import annotations

import argparse
import io
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from evalsuite.errors import ImageInputError
from evalsuite.textformat import significant

if TYPE_CHECKING:  # Pillow is imported where an image is opened: the CLIs start without it
    from PIL import Image

DEFAULT_MAX_IMAGE_PIXELS = 100_000_000
"""Pixels (width × height) an image may have by default: 100 MP, 11 times an A4 page at 300 dpi
(2480 × 3508 = 8.7 MP) and above an A3 page at 600 dpi (7016 × 9921 = 69.6 MP); 300 MB as RGB."""

LIMIT_OPTION = "--max-image-pixels"
"""The command-line option that sets the limit, named in the messages."""
LIMIT_ENV = "EVALSUITE_MAX_IMAGE_PIXELS"
"""The environment variable that sets a command's default limit: a benchmark run sets it for a
server it starts (``evalsuite serve``), which so holds images to the run's limit."""
LIMIT_HELP = (
    f"refuse a page image of more than N pixels, width x height (default "
    f"{DEFAULT_MAX_IMAGE_PIXELS:_}; an A4 page at 300 dpi has 8_699_840)"
)
"""The option's help text, alike in every front end."""

_max_image_pixels = DEFAULT_MAX_IMAGE_PIXELS
# Pillow's own decompression-bomb check (Image.MAX_IMAGE_PIXELS) would refuse a large image at
# open time without telling its size; it is lifted under this lock only while a header is parsed
# (no pixel is decoded then; a Pillow open in another thread in those microseconds goes
# unchecked too), so that the limit checked is this module's, with the size in its message.
_pil_check_lock = threading.Lock()

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF", "it is a PDF document"),
    (b"PK\x03\x04", "it is a ZIP archive"),
    (b"\x1f\x8b", "it is a gzip file"),
    (b"\x89PNG\r\n\x1a\n", "it starts like a PNG file, but its header is broken"),
    (b"\xff\xd8\xff", "it starts like a JPEG file, but its header is broken"),
    (b"GIF8", "it starts like a GIF file, but its header is broken"),
)
"""Leading bytes that say what a file Pillow cannot open looks like."""


def max_image_pixels() -> int:
    """The pixel limit :func:`open_image` applies when given none."""
    return _max_image_pixels


def set_max_image_pixels(limit: int) -> int:
    """Make ``limit`` (pixels, >= 1) the process's default limit; returns the previous one.

    ValueError for a limit that is not a whole number >= 1.
    """
    global _max_image_pixels
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"{LIMIT_OPTION}: expected a whole number of pixels >= 1, got {limit!r}")
    previous, _max_image_pixels = _max_image_pixels, limit
    return previous


def parse_max_image_pixels(text: str) -> int:
    """A limit as written on a command line: a whole number of pixels >= 1 (``120000000``,
    ``120_000_000``, ``1.2e8``). ValueError quoting ``text`` otherwise."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        value = 0.0
    if not value.is_integer() or value < 1:
        raise ValueError(f"{text!r}: expected a whole number of pixels >= 1")
    return int(value)


def add_max_image_pixels_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--max-image-pixels N`` to a command (``args.max_image_pixels``, an int); its
    default is ``$EVALSUITE_MAX_IMAGE_PIXELS`` when set, else :data:`DEFAULT_MAX_IMAGE_PIXELS`.

    ValueError naming the variable when it is set to something that is not a limit.
    """
    default = DEFAULT_MAX_IMAGE_PIXELS
    inherited = os.environ.get(LIMIT_ENV)
    if inherited:
        try:
            default = parse_max_image_pixels(inherited)
        except ValueError as exc:
            raise ValueError(f"${LIMIT_ENV}: {exc}") from None
    parser.add_argument(
        LIMIT_OPTION,
        type=max_image_pixels_argument,
        default=default,
        metavar="N",
        help=f"{LIMIT_HELP}; ${LIMIT_ENV} sets the default",
    )


def max_image_pixels_argument(text: str) -> int:
    """:func:`parse_max_image_pixels` as an argparse ``type`` (its message, verbatim)."""
    try:
        return parse_max_image_pixels(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def format_megapixels(pixels: int) -> str:
    """``pixels`` in megapixels (10^6 pixels), 4 significant digits: ``900 MP``, ``8.7 MP``."""
    return f"{significant(pixels / 1e6)} MP"


def open_image(
    source: str | Path | bytes, *, max_pixels: int | None = None, what: str | None = None,
    load: bool = True,
) -> Image.Image:
    """The image in ``source`` (a file, or a file's bytes), decoded unless ``load`` is False.

    ``max_pixels``: the most pixels (width × height) it may have; None: :func:`max_image_pixels`.
    ``what`` names the image in messages (default: the path; ``image`` for bytes). With
    ``load=False`` only the header is read (size, mode, info) and the caller closes the image.
    Raises :class:`ImageInputError`, one line: missing or empty file, not an image, truncated
    or corrupt, or larger than the limit.
    """
    from PIL import Image, UnidentifiedImageError

    name = what or (str(source) if isinstance(source, (str, Path)) else "image")
    limit = max_image_pixels() if max_pixels is None else max_pixels
    data = _read(source, name)
    if not data:
        raise ImageInputError(f"{name}: the file is empty (0 bytes), not an image")
    try:
        with _pil_check_lock:
            pil_limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
            try:
                image = Image.open(io.BytesIO(data))
            finally:
                Image.MAX_IMAGE_PIXELS = pil_limit
    except UnidentifiedImageError:
        looks = _looks_like(data)
        raise ImageInputError(f"{name}: not an image Pillow can read ({looks})") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise _corrupt(name, exc) from None
    width, height = image.size
    if width * height > limit:
        image.close()
        raise ImageInputError(
            f"{name}: {width}×{height} = {format_megapixels(width * height)} exceeds the limit of "
            f"{format_megapixels(limit)}; raise it with {LIMIT_OPTION}"
        )
    if load:
        try:
            image.load()
        except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
            image.close()
            raise _corrupt(name, exc) from None
    return image


def _read(source: str | Path | bytes, name: str) -> bytes:
    if isinstance(source, bytes):
        return source
    if not isinstance(source, (str, Path)):
        raise TypeError(f"image source must be a path or bytes, got {type(source).__name__}")
    try:
        return Path(source).read_bytes()
    except FileNotFoundError:
        raise ImageInputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ImageInputError(f"{name}: a directory, not an image file") from None
    except OSError as exc:
        raise ImageInputError(f"{name}: cannot read the file ({exc.strerror})") from None


def _looks_like(data: bytes) -> str:
    """What ``data`` looks like, from its first bytes: a known signature, text, or neither."""
    for signature, description in _SIGNATURES:
        if data.startswith(signature):
            return description
    head = data[:512]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = head[: exc.start].decode("utf-8") if exc.start > len(head) - 4 else ""
    if text and all(char.isprintable() or char in "\t\r\n" for char in text):
        start = " ".join(text.split())[:30]
        return f"it looks like text: {start!r}"
    return f"{len(data)} bytes of unknown binary data"


def _corrupt(name: str, exc: BaseException) -> ImageInputError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return ImageInputError(f"{name}: truncated or corrupt image ({reason})")
