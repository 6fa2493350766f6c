"""FineWiki continuation, vision vs text context; declared in
:mod:`evalsuite.benchmarks.finewiki`."""

import pytest

from evalsuite.benchmarks import finewiki
from evalsuite.benchmarks.scoring import CONDITIONS

BENCHMARK = finewiki.BENCHMARK


@pytest.mark.parametrize("condition", CONDITIONS)
def test_finewiki(bench, condition):
    bench.evaluate(
        finewiki.samples(bench.data, bench.condition_mode(condition), condition),
        finewiki.score,
        finewiki.METRICS,
        parameter=f"mode={bench.mode},condition={condition}",
    )
