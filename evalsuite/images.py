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
import functools
import io
import os
import struct
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from evalsuite.errors import ImageInputError
from evalsuite.textformat import significant

if TYPE_CHECKING:  # Pillow and numpy are imported where used: the CLIs start without them
    import numpy as np
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


PNG_COMPRESS_LEVEL = 2
"""zlib level of the PNGs :func:`lossless_png` writes: on pages 2 takes less time than 1 (which
writes twice the bytes) and as little as 3."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_GREY_PALETTE = bytes(level for value in range(256) for level in (value, value, value))
_PALETTE_COLORS = 256
_INDEXED = 3
"""PNG color type of palette images."""
_HASH_BITS = 10
_HASH_SLOTS = 1 << _HASH_BITS
"""Slots of the table that finds a color's index: 4 x :data:`_PALETTE_COLORS`."""
_GOLDEN_RATIO_32 = 0x9E3779B1
"""2^32 / golden ratio, odd: Knuth's multiplicative hash."""


def lossless_png(page: Image.Image) -> bytes:
    """PNG bytes that decode to exactly the pixels of ``page`` (an RGB or L image), written
    fast: decoded and converted to RGB, the PNG has the bytes of ``page.convert("RGB")``.

    Pillow filters RGB and grey rows (it tries every PNG filter on each), which takes most of
    the time of writing a page. So an L page is written as an 8-bit palette PNG of its grey
    levels (index i is grey i), and an RGB page of at most 256 colors (rendered text:
    background, ink and their anti-aliasing; any grey page) as a palette PNG of its colors, in
    one compiled pass over its pixels (:func:`_index_colors`), both with unfiltered rows
    (:data:`PNG_COMPRESS_LEVEL`); any other page as Pillow writes RGB. ValueError for another
    mode and for an empty image.
    """
    if page.width == 0 or page.height == 0:
        raise ValueError(f"cannot write an empty image ({page.width}x{page.height}) as a PNG")
    if page.mode == "L":
        return _indexed_png(_grey_rows(page), page.size, _GREY_PALETTE)
    if page.mode != "RGB":
        raise ValueError(f"lossless_png takes an RGB or L image, got mode {page.mode!r}")
    indexed = _palette_rows(page)
    if indexed is None:
        return _pillow_png(page)
    rows, palette = indexed
    return _indexed_png(rows, page.size, palette)


def _grey_rows(page: Image.Image) -> np.ndarray:
    """An L page's grey levels, a row at a time, each row after its filter-type byte 0 (none)."""
    import numpy as np

    width, height = page.size
    rows = np.zeros((height, width + 1), np.uint8)
    rows[:, 1:] = np.frombuffer(page.tobytes(), np.uint8).reshape(height, width)
    return rows


def _palette_rows(page: Image.Image) -> tuple[np.ndarray, bytes] | None:
    """An RGB page's rows of indices into its colors, laid out as :func:`_grey_rows` lays
    grey levels out, and its palette (3 bytes a color); None when it has more than
    :data:`_PALETTE_COLORS` colors."""
    import numpy as np

    width, height = page.size
    rows = np.empty((height, width + 1), np.uint8)
    colors = np.empty((_PALETTE_COLORS, 3), np.uint8)
    slots = np.full(_HASH_SLOTS, -1, np.int64)
    count = _compiled_index_colors()(_rgb_pixels(page), rows, colors, slots)
    return None if count < 0 else (rows, colors[:count].tobytes())


def _rgb_pixels(page: Image.Image) -> np.ndarray:
    """An RGB page's pixels, height x width x bytes a pixel, red, green and blue first: a view
    of Pillow's own memory (4 bytes a pixel), exported through Arrow, where Pillow can export
    it (Pillow >= 11.2, rows in one block of memory: images up to 16 MB), else a copy (3)."""
    import numpy as np

    width, height = page.size
    if hasattr(page, "__arrow_c_array__"):
        import pyarrow

        try:
            pixels = pyarrow.array(page).buffers()[-1]
        except ValueError:  # "Image rows are not contiguous in memory."
            pass
        else:
            return np.frombuffer(pixels, np.uint8).reshape(height, width, -1)
    return np.frombuffer(page.tobytes(), np.uint8).reshape(height, width, 3)


@functools.cache
def _compiled_index_colors() -> Callable[..., int]:
    """:func:`_index_colors` compiled by numba (imported here: it takes 0.2 s to import, which
    every evalsuite command would pay), cached on disk beside this module: a process's first
    page takes about 0.6 s more, to import numba and pyarrow and load the machine code."""
    import numba

    return numba.njit(cache=True, nogil=True)(_index_colors)


def _index_colors(
    pixels: np.ndarray, rows: np.ndarray, colors: np.ndarray, slots: np.ndarray
) -> int:
    """Write each pixel's index into the colors of ``pixels`` (from :func:`_rgb_pixels`) to
    ``rows`` (height x (width + 1) bytes, each row after its filter-type byte 0) and the colors,
    in the order they first appear, to ``colors`` (256 x 3 bytes); return how many there are,
    or -1 once a 257th appears.

    ``slots`` (:data:`_HASH_SLOTS` integers, all -1: empty) is a hash table where a color of
    24-bit key k and index i is ``k << 8 | i``, found by linear probing from Knuth's
    multiplicative hash of k; it is looked up only where a pixel's color differs from the one
    before it, since most of a page is runs of its background.
    """
    height, width = pixels.shape[0], pixels.shape[1]
    count = 0
    previous = -1  # no color's key
    index = 0
    for y in range(height):
        rows[y, 0] = 0
        for x in range(width):
            red, green, blue = pixels[y, x, 0], pixels[y, x, 1], pixels[y, x, 2]
            key = int(red) | int(green) << 8 | int(blue) << 16
            if key != previous:
                slot = (key * _GOLDEN_RATIO_32 & 0xFFFFFFFF) >> (32 - _HASH_BITS)
                while slots[slot] >= 0 and slots[slot] >> 8 != key:
                    slot = (slot + 1) & (_HASH_SLOTS - 1)
                if slots[slot] < 0:
                    if count == _PALETTE_COLORS:
                        return -1
                    slots[slot] = key << 8 | count
                    colors[count, 0], colors[count, 1], colors[count, 2] = red, green, blue
                    count += 1
                index = slots[slot] & 0xFF
                previous = key
            rows[y, x + 1] = index
    return count


def _pillow_png(page: Image.Image) -> bytes:
    buffer = io.BytesIO()
    page.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buffer.getvalue()


def _indexed_png(rows: np.ndarray, size: tuple[int, int], palette: bytes) -> bytes:
    """An 8-bit palette PNG of ``rows`` (a buffer: each row its filter-type byte, then an index
    per pixel) and ``palette`` (3 bytes a color)."""
    width, height = size
    chunks = (
        (b"IHDR", struct.pack(">IIBBBBB", width, height, 8, _INDEXED, 0, 0, 0)),
        (b"PLTE", palette),
        (b"IDAT", zlib.compress(rows, PNG_COMPRESS_LEVEL)),
        (b"IEND", b""),
    )
    return PNG_SIGNATURE + b"".join(
        struct.pack(">I", len(data)) + kind + data
        + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))
        for kind, data in chunks
    )
