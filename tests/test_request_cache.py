"""The run's shared request cache: across processes a request reaches the engine once; a failed
or abandoned claim is taken over; ``pytest -n 2`` makes the serial run's model calls."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from evalsuite.engines.base import InferenceResult
from evalsuite.records.results import read_results
from evalsuite.request_cache import SharedResultCache
from tests.support.shared_data import needs_data
from tests.support.subprocess_runs import child_env, run_pytest


def _compute_slowly(path: str, key: str, started: str, text: str, fail: bool) -> None:
    cache = SharedResultCache(Path(path))
    assert cache.claim(key)
    Path(started).touch()
    time.sleep(0.5)
    cache.put(key, InferenceResult(text=text, error="boom" if fail else None))


def _claim_and_die(path: str, key: str) -> None:
    assert SharedResultCache(Path(path)).claim(key)
    os._exit(0)  # dies holding the claim


@pytest.mark.parametrize("fail", [False, True], ids=["answered", "failed"])
def test_a_second_process_waits_for_the_first_ones_answer(tmp_path: Path, fail: bool) -> None:
    path, started = tmp_path / "cache.sqlite", tmp_path / "started"
    worker = multiprocessing.get_context("spawn").Process(
        target=_compute_slowly, args=(str(path), "k", str(started), "from the other", fail))
    worker.start()
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    cache = SharedResultCache(path)
    assert not cache.claim("k")  # the other process holds it
    answer = cache.wait("k")
    worker.join()
    if fail:  # a failure is not shared: the claim is ours now, to compute ourselves
        assert answer is None and cache.get("k") is None
        cache.put("k", InferenceResult(text="ours"))
        assert SharedResultCache(path).get("k").text == "ours"
    else:
        assert answer == InferenceResult(text="from the other")


def _write_and_reopen(path: str, start_at: float, worker: int) -> None:
    time.sleep(max(0.0, start_at - time.time()))
    for batch in range(40):
        cache = SharedResultCache(Path(path))  # a new connection, as a new process opens one
        for index in range(5):
            key = f"{worker}-{batch}-{index}"
            assert cache.claim(key)
            cache.put(key, InferenceResult(text=key))
        cache.close()


def test_connections_opened_while_others_write_all_get_in(tmp_path: Path) -> None:
    """Setting up the WAL journal answers "database is locked" at once, not after the busy
    timeout, while another process writes; it failed a test of a ``-n 2`` run (1 in 4)."""
    context = multiprocessing.get_context("spawn")
    for round_ in range(3):  # the race is lost about 2 times in 5 per round
        path = tmp_path / f"cache{round_}.sqlite"
        start_at = time.time() + 3.0  # after every process has imported
        processes = [context.Process(target=_write_and_reopen, args=(str(path), start_at, n))
                     for n in range(4)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(120)
        assert [process.exitcode for process in processes] == [0] * 4
        cache = SharedResultCache(path)
        assert all(cache.get(f"{n}-39-4") == InferenceResult(text=f"{n}-39-4") for n in range(4))


def test_the_claim_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    dying = multiprocessing.get_context("spawn").Process(target=_claim_and_die,
                                                         args=(str(path), "k"))
    dying.start()
    dying.join()
    cache = SharedResultCache(path)
    assert not cache.claim("k")
    assert cache.wait("k") is None  # taken over, not waited for forever


def test_a_released_claim_can_be_claimed_again(tmp_path: Path) -> None:
    first, second = SharedResultCache(tmp_path / "c"), SharedResultCache(tmp_path / "c")
    second.owner = "elsewhere:1"
    assert first.claim("k") and not second.claim("k")
    first.release("k")
    assert second.claim("k")


@pytest.mark.e2e
@needs_data("render_docs")
def test_two_workers_make_the_serial_runs_model_calls_and_scores(tmp_path: Path) -> None:
    """Slow (~50 s here): two child pytest runs (serial, -n 2) of one Fox and one
    render-configuration test, both rendering the render study's four documents, which tesseract
    reads once per run; these two tests are the ones that share pages, and the serial run is the
    reference for the -n 2 run's model calls and scores."""
    # the same study pages are read by a Fox test and a render-configuration test
    tests = ["benches/test_fox.py::test_fox_pages[tesseract-native-study]",
             "benches/test_render_configs.py::test_render_ocr"
             "[tesseract-native-render_docs-color_default]"]
    outputs = {}
    for workers in ("0", "2"):
        report = tmp_path / f"n{workers}"
        done = run_pytest(*tests, "--engine", "tesseract", "-n", workers, "--report-dir",
                          report, "--golden-dir", tmp_path / "golden", "--update-golden",
                          env=child_env(data=True))
        assert done.returncode == 0, done.stdout[-3000:]
        (run,) = [p for p in report.iterdir() if p.is_dir()]
        assert not list(run.glob("request_cache.sqlite*"))  # removed with the run written
        calls = [line for line in done.stdout.splitlines() if line.startswith("model calls:")]
        scores = {(r.benchmark, s.sample_id): s.scores
                  for r in read_results(run / "results.json").records for s in r.samples}
        outputs[workers] = (calls, scores)
    assert outputs["0"] == outputs["2"]
    assert outputs["0"][0] == ["model calls: 4 (native 4)"]


@pytest.mark.e2e
def test_a_run_that_wrote_no_record_leaves_no_cache_behind(tmp_path: Path) -> None:
    (tmp_path / "broken_engine.py").write_text(
        "from evalsuite.engines import EngineBase\n"
        "from evalsuite.errors import EngineUnavailableError\n\n\n"
        "class Broken(EngineBase):\n"
        "    name = 'broken'\n"
        "    kind = 'ocr'\n\n"
        "    def infer(self, request):\n"
        "        raise EngineUnavailableError('no model here')\n"
    )
    reports = tmp_path / "reports"
    env = child_env(PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    done = run_pytest("benches/test_fox.py::test_fox_pages", "--engine", "broken_engine:Broken",
                      "--report-dir", reports, env=env)
    assert done.returncode == 1 and "no model here" in done.stdout, done.stdout[-3000:]
    assert not list(reports.rglob("request_cache.sqlite*"))
