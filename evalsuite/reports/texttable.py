"""Plain-text tables and number formats for the terminal views (trend, compare)."""

from __future__ import annotations

from collections.abc import Sequence

MISSING = "—"


def decimals_for(*values: float | None) -> int:
    """Decimals that suit the largest magnitude: 4 below 100, 2 below 10,000, else 0."""
    magnitude = max((abs(v) for v in values if v is not None), default=0.0)
    return 4 if magnitude < 100 else 2 if magnitude < 10_000 else 0


def format_number(
    value: float | None, *, signed: bool = False, decimals: int | None = None
) -> str:
    """``value`` with ``decimals`` (default: :func:`decimals_for` the value); ``—`` for None."""
    if value is None:
        return MISSING
    places = decimals_for(value) if decimals is None else decimals
    return f"{value:{'+' if signed else ''}.{places}f}"


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, align: str, indent: str = ""
) -> str:
    """Columns padded to their widest cell, two spaces apart; ``align`` holds ``l`` or ``r`` per
    column. Trailing spaces are stripped."""
    if len(align) != len(headers) or any(a not in "lr" for a in align):
        raise ValueError(f"align must give l or r for each of {len(headers)} columns: {align!r}")
    for index, row in enumerate(rows):
        if len(row) != len(headers):
            raise ValueError(f"rows[{index}] has {len(row)} cells, expected {len(headers)}")
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.ljust(width) if side == "l" else cell.rjust(width)
            for cell, width, side in zip(cells, widths, align, strict=True)
        )
        return (indent + "  ".join(padded)).rstrip()

    return "\n".join([line(headers), *(line(row) for row in rows)])
