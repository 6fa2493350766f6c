"""Fox page OCR with vision-token compression; declared in :mod:`evalsuite.benchmarks.fox`."""

from evalsuite.benchmarks import fox

BENCHMARK = fox.BENCHMARK


def test_fox_pages(bench):
    bench.evaluate(
        fox.samples(bench.data, bench.mode), fox.score, fox.METRICS, group_by=fox.token_bin
    )
