"""Surya-style text-line recognition; declared in
:mod:`evalsuite.benchmarks.surya_recognition`."""

from evalsuite.benchmarks import surya_recognition as recognition

BENCHMARK = recognition.BENCHMARK


def test_surya_recognition(bench):
    bench.evaluate(
        recognition.samples(bench.data, bench.mode),
        recognition.score,
        recognition.METRICS,
        group_by=recognition.language,
    )
