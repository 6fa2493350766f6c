"""OmniDocBench end-to-end; declared in :mod:`evalsuite.benchmarks.omnidocbench`."""

from evalsuite.benchmarks import omnidocbench

BENCHMARK = omnidocbench.BENCHMARK


def test_omnidocbench(bench):
    record = bench.evaluate(
        omnidocbench.samples(bench.data, bench.mode),
        omnidocbench.score,
        omnidocbench.METRICS,
        group_by=omnidocbench.language,
        required_groups=omnidocbench.GATED_PER_GROUP,
    )
    # The pages' markdown in the official naming, and the official evaluation of them.
    predictions = bench.artifact_dir("omnidocbench_predictions")
    omnidocbench.write_predictions(predictions, record)
    omnidocbench.write_summary(
        predictions / "omnidocbench_summary.json",
        omnidocbench.official_summary(bench.data, predictions),
    )
