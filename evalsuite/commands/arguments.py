"""Argument types shared by the commands: whole numbers in a range, and ``--workers``, which
means the same in every command (at least 1; left out, one per CPU)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(low: int, high: int | None = None, *, what: str = "a whole number",
                 allowed: str = "") -> Callable[[str], int]:
    """An argparse ``type``: an int from ``low`` to ``high`` (no bound: None); the error says
    ``allowed`` (default ``at least LOW`` or ``LOW-HIGH``)."""
    allowed = allowed or (f"at least {low}" if high is None else f"{low}-{high}")

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is out of range: use {allowed}")
        return value

    return parse


def add_workers_argument(parser: argparse.ArgumentParser, doing: str) -> None:
    """``--workers N``: ``doing`` (e.g. "renderings at once") in N processes or threads, N at
    least 1; left out (``args.workers`` None), one per CPU."""
    parser.add_argument(
        "--workers", type=whole_number(1, allowed="at least 1, or leave it out for one per CPU"),
        default=None, help=f"{doing} (at least 1; default: one per CPU)")
