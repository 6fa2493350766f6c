"""Surya-style text-line detection; declared in :mod:`evalsuite.benchmarks.surya_detection`."""

from evalsuite.benchmarks import surya_detection as detection

BENCHMARK = detection.BENCHMARK


def test_surya_detection(bench):
    bench.evaluate(detection.samples(bench.data, bench.mode), detection.score, detection.METRICS)
