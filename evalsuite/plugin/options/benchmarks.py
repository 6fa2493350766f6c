"""Options of single benchmarks: QuALITY's articles and questions, OmniDocBench's evaluation
versions, olmOCR-bench's repeats, and the pages benchmark's own folder of pages."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from evalsuite.metrics.omnidocbench.evaluation import OFFICIAL_VERSION as OMNIDOCBENCH_VERSIONS
from evalsuite.plugin.options.suite import PAGES_DPI_DEFAULT
from evalsuite.plugin.options.values import (
    parse_choice,
    parse_count,
    parse_names,
    parse_number,
    readable_dir,
)


def add_benchmark_options(group: pytest.OptionGroup) -> None:
    """Declare the options of single benchmarks in ``group``."""
    group.addoption("--num-articles", default=None, help="QuALITY: articles to use")
    group.addoption(
        "--omnidocbench-version",
        default=None,
        metavar="V[,V]",
        help="OmniDocBench: the official evaluation version(s) to score by, e.g. 1.5 or 1.0,1.5 "
        "(default: the data's release; every version for a set that is no release)",
    )
    group.addoption(
        "--questions-per-article", default=None, help="QuALITY: questions per article"
    )
    group.addoption(
        "--repeats",
        default=None,
        metavar="N",
        help="olmOCR-bench: convert each page N times, as its --repeats does; a test passes when "
        "more than half of its repeats pass (default 1; results form their own golden series)",
    )
    group.addoption(
        "--pages-dir",
        default=None,
        metavar="DIR",
        help="pages: your own page images (PNG/JPEG) and PDFs, with <stem>.md or <stem>.txt "
        "ground truth beside each",
    )
    group.addoption(
        "--pages-dpi",
        default=str(PAGES_DPI_DEFAULT),
        help=f"pages: resolution PDF pages are rendered at (default {PAGES_DPI_DEFAULT})",
    )
    group.addoption(
        "--pages-strict",
        action="store_true",
        help="pages: a ground-truth file without a page file of its name is an error "
        "(default: a note in the summary)",
    )
    group.addoption(
        "--dataset-name",
        default=None,
        help="pages: the name of the --pages-dir dataset; its goldens are "
        "golden/pages-<name>.json (default: the folder's name)",
    )


def parse_benchmark_options(config: pytest.Config) -> dict[str, Any]:
    """The :class:`SuiteOptions` fields of the options of single benchmarks."""
    option = config.getoption
    return {
        "num_articles": parse_count(option("--num-articles"), "--num-articles"),
        "omnidocbench_versions": _omnidocbench_versions(option("--omnidocbench-version")),
        "questions_per_article": parse_count(
            option("--questions-per-article"), "--questions-per-article"
        ),
        "repeats": parse_count(option("--repeats"), "--repeats") or 1,
        "pages_dir": _pages_dir(option("--pages-dir")),
        "pages_dpi": parse_number(
            option("--pages-dpi"), "--pages-dpi", "dots per inch, 18 to 1200",
            lambda number: 18 <= number <= 1200, float,
        ),
        "pages_strict": bool(option("--pages-strict")),
        "dataset_name": _dataset_name(option("--dataset-name"), option("--pages-dir")),
    }


def _omnidocbench_versions(value: str | None) -> tuple[str, ...] | None:
    """``1.0,v1.5`` -> ("1.0", "1.5"), each one the suite scores."""
    names = parse_names(value)
    if names is None:
        return None
    versions = tuple(dict.fromkeys(name.removeprefix("v") for name in names))
    for version in versions:
        parse_choice(version, "--omnidocbench-version", tuple(OMNIDOCBENCH_VERSIONS))
    return versions


def _pages_dir(value: str | None) -> Path | None:
    if value is None:
        return None
    return readable_dir(Path(value).expanduser().resolve(), "--pages-dir")


def _dataset_name(value: str | None, pages_dir: str | None) -> str | None:
    """--dataset-name, else the --pages-dir folder's name; it names a golden file."""
    if value is None:
        if pages_dir is None:
            return None
        value = Path(pages_dir).expanduser().resolve().name
        where = f"the name of --pages-dir {pages_dir} ({value!r})"
    else:
        where = f"--dataset-name {value!r}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", value):
        raise pytest.UsageError(
            f"{where}: a dataset name is letters, digits and . _ - (at most 100 characters); "
            "pass --dataset-name NAME"
        )
    return value
