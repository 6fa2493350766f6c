"""Run-selection options: which modes and samples run (--modes, --max-samples, --shard), from
which data folder, in what batches, and the largest image a run opens."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from evalsuite.datasets import DATA_ENV
from evalsuite.images import (
    DEFAULT_MAX_IMAGE_PIXELS,
    LIMIT_HELP,
    LIMIT_OPTION,
    parse_max_image_pixels,
)
from evalsuite.plugin.options.values import parse_count, parse_names, readable_dir


def add_selection_options(group: pytest.OptionGroup) -> None:
    """Declare the run-selection options in ``group``."""
    group.addoption("--modes", default=None, help="modes, e.g. tiny,small,base (per-bench default)")
    group.addoption(
        "--data-dir", default=None, help=f"benchmark data folder (default ${DATA_ENV})"
    )
    group.addoption("--max-samples", default=None, help="cap samples per benchmark test")
    group.addoption(LIMIT_OPTION, default=None, metavar="N", help=LIMIT_HELP)
    group.addoption("--batch-size", default=None, help="requests per engine batch (default: the "
                    "engine's own preference)")
    group.addoption(
        "--shard",
        default=None,
        metavar="K/N",
        help="run the K-th of N deterministic parts of every benchmark's samples (one machine "
        "of N); nothing is gated until `evalsuite merge` joins the N runs",
    )


def parse_selection_options(config: pytest.Config) -> dict[str, Any]:
    """The :class:`SuiteOptions` fields of the run-selection options."""
    option = config.getoption
    return {
        "modes": parse_names(option("--modes")),
        "data_dir": _data_dir(option("--data-dir")),
        "max_samples": parse_count(option("--max-samples"), "--max-samples"),
        "batch_size": parse_count(option("--batch-size"), "--batch-size"),
        "max_image_pixels": _max_image_pixels(option(LIMIT_OPTION)),
        "shard": _shard(option("--shard")),
    }


def _data_dir(value: str | None) -> Path | None:
    explicit = value is not None
    raw = value if explicit else os.environ.get(DATA_ENV)
    if not raw:
        return None
    return readable_dir(Path(raw).expanduser(), "--data-dir" if explicit else f"${DATA_ENV}")


def _max_image_pixels(value: str | None) -> int:
    if value is None:
        return DEFAULT_MAX_IMAGE_PIXELS
    try:
        return parse_max_image_pixels(value)
    except ValueError as exc:
        raise pytest.UsageError(f"{LIMIT_OPTION} {exc}") from None


def _shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise pytest.UsageError(f"--shard {value!r}: expected K/N with 1 <= K <= N, e.g. 1/4")
    return int(index), int(count)
