"""OmniDocBench end-to-end; declared in :mod:`evalsuite.benchmarks.omnidocbench`.

One test per official evaluation version; a version not chosen for the data
(:func:`~evalsuite.benchmarks.omnidocbench.scoring_versions`) is skipped, saying why. The
engine answers each page once per run whatever the number of versions (the request cache)."""

import pytest

from evalsuite.benchmarks import omnidocbench
from evalsuite.metrics.omnidocbench.common.formula_cdm import cdm_hook
from evalsuite.metrics.omnidocbench.evaluation import OFFICIAL_VERSION

BENCHMARK = omnidocbench.BENCHMARK


@pytest.mark.parametrize("version", list(OFFICIAL_VERSION))
def test_omnidocbench(bench, version):
    chosen = omnidocbench.scoring_versions(bench.data, bench.options.omnidocbench_versions)
    if version not in chosen:
        pytest.skip(f"v{version} is not scored for this data (scored: v{', v'.join(chosen)}; "
                    "choose with --omnidocbench-version)")
    formula_cdm = cdm_hook(version)  # checks the CDM toolchain before any model call
    record = bench.evaluate(
        omnidocbench.samples(bench.data, bench.mode, version),
        omnidocbench.scorer(version, formula_cdm),
        omnidocbench.metrics(version),
        parameter=omnidocbench.parameter(bench.mode, version, bench.data),
        group_by=omnidocbench.language,
        required_groups=omnidocbench.gated_per_group(version),
    )
    # The pages' markdown in the official naming, and the official evaluation of them.
    predictions = bench.artifact_dir("omnidocbench_predictions")
    omnidocbench.write_predictions(predictions, record)
    omnidocbench.write_summary(
        predictions / omnidocbench.summary_name(version),
        omnidocbench.official_summary(bench.data, predictions, version, formula_cdm),
    )
