"""Your own pages (``--pages-dir DIR``); declared in :mod:`evalsuite.benchmarks.pages`."""

import pytest

from evalsuite.benchmarks import pages

BENCHMARK = pages.BENCHMARK


def test_pages(bench):
    notes = pages.notes(bench.limit(bench.data), bench.location)  # of the pages that run
    if bench.options.pages_strict and pages.unmatched_ground_truth(bench.location):
        pytest.fail(notes[-1], pytrace=False)
    samples = pages.samples(
        bench.data,
        bench.mode,
        dpi=bench.options.pages_dpi,
        render_dir=bench.artifact_dir("pages_rendered"),
    )
    bench.evaluate(samples, pages.score, pages.METRICS, params={"notes": notes})
