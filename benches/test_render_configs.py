"""The text-rendering configuration study; declared in
:mod:`evalsuite.benchmarks.render_configs`."""

import pytest

from evalsuite.benchmarks import render_configs as study
from evalsuite.benchmarks.scoring import CONDITIONS
from evalsuite.render import PRESETS

BENCHMARK = study.BENCHMARK


@pytest.mark.parametrize("config_name", list(PRESETS))
def test_render_ocr(bench, config_name):
    bench.evaluate(
        study.ocr_samples(bench.data, bench.mode, config_name),
        study.score_ocr,
        study.OCR_METRICS,
        parameter=f"mode={bench.mode},config={config_name}",
    )


@pytest.mark.needs_vlm
@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("config_name", study.QA_CONFIGS)
def test_render_context_qa(bench, config_name, condition):
    bench.evaluate(
        study.qa_samples(bench.data, bench.condition_mode(condition), config_name, condition),
        study.score_qa,
        study.QA_METRICS,
        parameter=f"mode={bench.mode},config={config_name},condition={condition}",
    )
