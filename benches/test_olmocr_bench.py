"""olmOCR-bench; declared in :mod:`evalsuite.benchmarks.olmocr_bench`."""

from evalsuite.benchmarks import olmocr_bench

BENCHMARK = olmocr_bench.BENCHMARK


def test_olmocr_bench(bench):
    record = bench.evaluate(
        olmocr_bench.samples(bench.data, bench.mode, bench.options.repeats),
        olmocr_bench.score,
        olmocr_bench.METRICS,
        parameter=olmocr_bench.parameter(bench.mode, bench.options.repeats),
        group_by=olmocr_bench.category,
        required_groups=olmocr_bench.GATED_PER_FILE,
    )
    # The pages' markdown in the benchmark's candidate naming, for `evalsuite score olmocr-bench`.
    olmocr_bench.write_predictions(bench.artifact_dir("olmocr_bench_predictions"), record)
