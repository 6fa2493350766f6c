"""Results options: goldens (--update-golden, --golden-tolerance, --golden-dir), recordings of
engine outputs (--record, --recordings) and where runs are kept under which name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalsuite.plugin.options.suite import SuiteOptions
from evalsuite.plugin.options.values import LABEL_PATTERN, parse_number


def add_results_options(group: pytest.OptionGroup) -> None:
    """Declare the results options in ``group``."""
    group.addoption("--update-golden", action="store_true", help="rewrite the goldens that ran")
    group.addoption(
        "--golden-tolerance",
        default=None,
        help="with --update-golden: set this tolerance on the entries written (default: keep "
        "each entry's, or the metric's default for a new one)",
    )
    group.addoption("--golden-dir", default=None, help="golden files (default <rootdir>/golden)")
    group.addoption("--record", default=None, help="append every live engine output to this JSONL")
    group.addoption(
        "--recordings",
        action="append",
        default=[],
        metavar="PATH",
        help="recordings the replay engine serves (repeatable; default $EVALSUITE_RECORDINGS, "
        "then <data dir>/deepseek_ocr_recordings/recordings.jsonl)",
    )
    group.addoption(
        "--report-dir", default=None, help="where runs are kept (default <rootdir>/reports)"
    )
    group.addoption("--run-name", default=None, help="a name for this run (history, A/B)")


def parse_results_options(config: pytest.Config) -> dict[str, Any]:
    """The :class:`SuiteOptions` fields of the results options."""
    option = config.getoption
    return {
        "update_golden": bool(option("--update-golden")),
        "golden_tolerance": _tolerance(option("--golden-tolerance")),
        "golden_dir": _path(option("--golden-dir"), config.rootpath / "golden"),
        "record": Path(option("--record")) if option("--record") else None,
        "recordings": tuple(Path(p) for p in option("--recordings")),
        "report_dir": report_folder(config),
        "run_name": _run_name(option("--run-name")),
    }


def report_folder(config: pytest.Config) -> Path:
    """The folder runs are kept in: --report-dir, else ``<rootdir>/reports``."""
    return _path(config.getoption("--report-dir"), config.rootpath / "reports")


def check_recordings(options: SuiteOptions) -> None:
    """A usage error for a --recordings file that does not exist."""
    for path in options.recordings:
        if not path.is_file():
            raise pytest.UsageError(f"--recordings {path}: no such file")


def _tolerance(value: str | None) -> float | None:
    if value is None:
        return None
    return parse_number(
        value, "--golden-tolerance", "a number >= 0", lambda number: number >= 0, float
    )


def _run_name(value: str | None) -> str | None:
    if value is not None and not LABEL_PATTERN.fullmatch(value):
        raise pytest.UsageError(
            f"--run-name {value!r}: letters, digits and . _ @ + : - (at most 100 characters)"
        )
    return value


def _path(value: str | None, default: Path) -> Path:
    return Path(value).expanduser() if value else default
