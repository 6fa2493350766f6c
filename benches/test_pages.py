"""Your own pages (``--pages-dir DIR``); declared in :mod:`evalsuite.benchmarks.pages`."""

from evalsuite.benchmarks import pages

BENCHMARK = pages.BENCHMARK


def test_pages(bench):
    samples = pages.samples(
        bench.data,
        bench.mode,
        dpi=bench.options.pages_dpi,
        render_dir=bench.artifact_dir("pages_rendered"),
    )
    bench.evaluate(samples, pages.score, pages.METRICS)
