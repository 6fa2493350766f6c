"""The --resume option: the run that died part-way whose answers this run reuses, and the
identity (:func:`request_identity`) a resumed run must share with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalsuite import __version__
from evalsuite.plugin.options.engines import AUTO
from evalsuite.plugin.options.results import report_folder
from evalsuite.plugin.options.suite import SuiteOptions
from evalsuite.plugin.server import model_argument
from evalsuite.records.metadata import git_label
from evalsuite.records.results import RESULTS_FILE
from evalsuite.request_cache import CACHE_FILE, ResumeError, check_resumable


def add_resume_option(group: pytest.OptionGroup) -> None:
    """Declare --resume in ``group``."""
    group.addoption(
        "--resume",
        default=None,
        metavar="RUN",
        help="finish a run that died part-way (a run id in --report-dir, or its folder): reuse "
        "every request it answered, run the rest, write one complete run (same options)",
    )


def parse_resume_option(config: pytest.Config) -> Path | None:
    """The folder of the run --resume names (a run id in the report folder, or a path); None
    without --resume."""
    return _resume_dir(config.getoption("--resume"), report_folder(config))


def check_resume(options: SuiteOptions, config: pytest.Config) -> None:
    """A usage error when the run --resume names cannot be resumed with these options; the
    controller checks, its workers take its word (it may have resumed by now)."""
    if options.resume is None or getattr(config, "workerinput", None) is not None:
        return
    try:
        check_resumable(options.resume, request_identity(options, config.rootpath))
    except ResumeError as exc:
        raise pytest.UsageError(str(exc)) from None


def request_identity(options: SuiteOptions, root: Path) -> dict[str, Any]:
    """What decides the answers to a run's requests beyond the requests themselves (which the
    cache keys hold), by the option that sets it: a ``--resume`` must match the run resumed.
    The server's URL is not part of it (a resumed night runs on another node)."""
    return {
        "--gpu": options.gpu,
        "--engine": ",".join(options.engines or (AUTO,)),
        "--engine-label": options.engine_labels,
        "--served-model": options.served_model,
        "--model": options.model,
        "--served-model-name": options.served_model_name,
        "--prompt": options.prompt,
        "--decoding": options.decoding,
        "weights": {
            "deepseek-ocr": model_argument("deepseek-ocr", options.model_path),
            "deepseek-ocr-2": model_argument("deepseek-ocr-2", options.model_path_v2),
        },
        "--server-command": options.server_command,
        "--recordings": [str(path) for path in options.recordings],
        "--batch-size": options.batch_size,
        "--max-new-tokens": options.max_new_tokens,
        "evalsuite": f"{__version__} at {git_label(root)}",
    }


def _resume_dir(value: str | None, report_dir: Path) -> Path | None:
    """The folder of the run ``--resume`` names: a run id in the report folder, or a path."""
    if value is None:
        return None
    for candidate in (report_dir / value, Path(value).expanduser()):
        if candidate.is_dir():
            return candidate.resolve()
    unfinished = sorted(
        path.parent.name for path in report_dir.glob(f"*/{CACHE_FILE}")
        if not (path.parent / RESULTS_FILE).exists()
    )
    listed = ", ".join(unfinished[-5:]) if unfinished else "none"
    raise pytest.UsageError(
        f"--resume {value}: no run {value!r} in {report_dir} and no folder of that path; runs "
        f"there that did not finish (newest last): {listed}"
    )
