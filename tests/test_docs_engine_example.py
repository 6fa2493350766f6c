"""docs/add_an_engine.md, run as written: the example engine, given as module:factory from its
own folder, sets goldens on the project's fixtures and then gates; a degraded copy fails."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.degraded_engine import drop_every_third_word
from tests.support.subprocess_runs import REPO, child_env, needs_tesseract, run_pytest

EXAMPLES = REPO / "docs" / "examples"
sys.path.insert(0, str(EXAMPLES))
from my_ocr_engine import CommandLineOCR  # noqa: E402  (the documented example itself)


class DegradedCommandLineOCR(CommandLineOCR):
    """The example engine with every third word of its output dropped, under the same label."""

    def _infer(self, request):
        result = super()._infer(request)
        result.text = drop_every_third_word(result.text)
        return result


def run_documented(engine: str, golden: Path, reports: Path, *extra: str):
    return run_pytest(
        "benches", "-m", "fox or pages", "--pages-dir", "tests/fixtures/pages", "--engine", engine,
        "--golden-dir", golden, "--report-dir", reports, *extra,
        env=child_env(PYTHONPATH=os.pathsep.join([str(EXAMPLES), str(REPO)])),
    )


@pytest.mark.e2e
@needs_tesseract
def test_the_documented_engine_sets_goldens_gates_and_catches_a_regression(tmp_path):
    """Slow (~74 s here): three child pytest runs of the Fox and pages benches, one tesseract
    process per page: the two commands docs/add_an_engine.md gives (goldens set, then gated) and
    a degraded copy that must fail against the same goldens, which only the first run writes."""
    golden, reports = tmp_path / "my-golden", tmp_path / "reports"
    first = run_documented("my_ocr_engine:CommandLineOCR", golden, reports, "--update-golden")
    assert first.returncode == 0, first.stdout[-3000:]
    assert {path.name for path in golden.glob("*.json")} == {"fox.json", "pages-pages.json"}
    again = run_documented("my_ocr_engine:CommandLineOCR", golden, reports)
    assert again.returncode == 0, again.stdout[-3000:]
    assert " passed" in again.stdout.strip().splitlines()[-1]
    worse = run_documented(
        "tests.test_docs_engine_example:DegradedCommandLineOCR", golden, reports
    )
    assert worse.returncode == 1, worse.stdout[-3000:]
    assert "edit_precision regressed" in worse.stdout

