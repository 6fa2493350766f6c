"""Numbers and texts as people read them in the terminal and on the pages: 4 significant digits,
short quotes, control characters made visible. Full precision and the texts as they are stay in
the JSON files."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import TextIO

MISSING = "—"
SIGNIFICANT_DIGITS = 4


def significant(
    value: float | int | bool | None, digits: int = SIGNIFICANT_DIGITS, *, signed: bool = False
) -> str:
    """``value`` rounded to ``digits`` significant digits, without exponent for |value| in
    [1e-4, 1e6), trailing zeros dropped (``0.9``, ``12.35``, ``1234``); ``—`` for None.

    Integers print whole (a count of 12,345 reads ``12345``); booleans as ``yes``/``no``.
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:+d}" if signed else str(value)
    if not math.isfinite(value):
        return str(value)
    sign = "+" if signed and value >= 0 else ""
    if value == 0:
        return f"{sign}0"
    magnitude = math.floor(math.log10(abs(value)))
    if -4 <= magnitude < 6:
        decimals = max(0, digits - 1 - magnitude)
        text = f"{value:.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return sign + text
    return f"{value:{'+' if signed else ''}.{digits - 1}e}"


SPARK_LEVELS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None]) -> str:
    """One block character per value, its height the value's place between the smallest and
    the largest of ``values`` (eight levels: ``▁`` lowest, ``█`` highest); a space for None,
    the middle level for all when they are equal."""
    known = [value for value in values if value is not None and math.isfinite(value)]
    if not known:
        return " " * len(values)
    low, span = min(known), max(known) - min(known)
    top = len(SPARK_LEVELS) - 1
    return "".join(
        " " if value is None or not math.isfinite(value)
        else SPARK_LEVELS[top // 2 if span == 0 else round((value - low) / span * top)]
        for value in values
    )


CONTROL_CODES: tuple[int, ...] = (*range(0x00, 0x20), *range(0x7F, 0xA0))
"""The C0 controls (U+0000–U+001F), DEL and the C1 controls (U+0080–U+009F): what a terminal
interprets (ESC starts cursor moves, screen clears, title changes, OSC-8 links; C1 CSI and OSC
do the same in one character)."""


def _escapes(kept: str) -> dict[int, str]:
    return {code: f"\\x{code:02x}" for code in CONTROL_CODES if chr(code) not in kept}


TERMINAL_ESCAPES = _escapes("\n\t")
"""Control code -> its visible escape, for texts printed as they are (lines and tabs kept)."""
QUOTE_ESCAPES = _escapes("\t\n\v\f\r")
"""The same for one-line quotes, which fold layout whitespace (tab, LF, VT, FF, CR) to spaces."""


def terminal_text(text: str) -> str:
    """``text`` safe to print to a terminal: every control character (:data:`CONTROL_CODES`)
    but newline and tab written as its visible escape ``\\xNN`` (ESC as ``\\x1b``, BEL as
    ``\\x07``), so that a model's answer, a ground truth or a file name can neither move the
    cursor nor clear the screen, retitle the window or plant a link. Everything else is kept;
    idempotent. JSON and HTML outputs do not use it: they escape by their own rules."""
    return text.translate(TERMINAL_ESCAPES)


def echo(text: str, file: TextIO | None = None, *, flush: bool = False) -> None:
    """Print ``text`` (a command's message, table or summary) through :func:`terminal_text` to
    ``file`` (default: standard output)."""
    print(terminal_text(text), file=sys.stdout if file is None else file, flush=flush)


def shorten(text: str | None, limit: int = 80) -> str:
    """``text`` on one line (whitespace runs as one space, other control characters escaped as
    in :func:`terminal_text`), cut to ``limit`` characters with ``…``; ``—`` for None."""
    if text is None:
        return MISSING
    flat = " ".join(text.translate(QUOTE_ESCAPES).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, align: str, indent: str = ""
) -> str:
    """Columns padded to their widest cell, two spaces apart; ``align`` holds ``l`` or ``r`` per
    column. Trailing spaces are stripped; control characters in cells are escaped
    (:func:`terminal_text`) before the widths are measured."""
    if len(align) != len(headers) or any(a not in "lr" for a in align):
        raise ValueError(f"align must give l or r for each of {len(headers)} columns: {align!r}")
    for index, row in enumerate(rows):
        if len(row) != len(headers):
            raise ValueError(f"rows[{index}] has {len(row)} cells, expected {len(headers)}")
    headers = [terminal_text(cell) for cell in headers]
    rows = [[terminal_text(cell) for cell in row] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.ljust(width) if side == "l" else cell.rjust(width)
            for cell, width, side in zip(cells, widths, align, strict=True)
        )
        return (indent + "  ".join(padded)).rstrip()

    return "\n".join([line(headers), *(line(row) for row in rows)])
