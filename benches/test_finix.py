"""FinixDocBench markdown page parsing; declared in :mod:`evalsuite.benchmarks.finix`."""

from evalsuite.benchmarks import finix

BENCHMARK = finix.BENCHMARK


def test_finix(bench):
    record = bench.evaluate(finix.samples(bench.data, bench.mode), finix.score, finix.METRICS)
    # The predictions as .md files, for re-scoring with `python -m evalsuite.finix`.
    finix.write_predictions(
        bench.artifact_dir("finix_predictions"),
        {sample.sample_id: sample.prediction or "" for sample in record.samples},
    )
