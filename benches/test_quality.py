"""QuALITY long-document QA, vision vs text context; declared in
:mod:`evalsuite.benchmarks.quality`."""

import pytest

from evalsuite.benchmarks import quality
from evalsuite.benchmarks.scoring import CONDITIONS

BENCHMARK = quality.BENCHMARK


@pytest.mark.parametrize("condition", CONDITIONS)
def test_quality(bench, condition):
    samples = quality.samples(
        bench.data,
        bench.condition_mode(condition),
        condition,
        num_articles=bench.options.num_articles,
        questions_per_article=bench.options.questions_per_article,
        context_tokens=getattr(bench.engine, "context_tokens", quality.DECODER_CONTEXT_TOKENS),
    )
    parameter = f"mode={bench.mode},condition={condition}"
    bench.evaluate(samples, quality.score, quality.METRICS, parameter=parameter)
