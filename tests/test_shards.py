"""--shard K/N and `evalsuite merge`: the shards of a run merge into the records one run
writes (apart from timing), gated the same; bad sets of shards are refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.records.results import read_results
from evalsuite.shards import shard_positions
from tests.support.faults import FIXED_TEXT, run_benches
from tests.support.subprocess_runs import run_evalsuite

TESTS = ("benches/test_fox.py::test_fox_pages", "benches/test_olmocr_bench.py")
TIMING = ("latency_s",)


def run_dir(report_dir: Path, known: set[str]) -> Path:
    (new,) = [p for p in report_dir.iterdir() if p.is_dir() and p.name not in known]
    known.add(new.name)
    return new


def comparable(results: Path) -> list[dict]:
    """Records without their timing fields."""
    records = []
    for record in read_results(results).records:
        samples = [{**vars(s), "details": {k: v for k, v in s.details.items() if k not in TIMING}}
                   for s in record.samples]
        records.append({**vars(record), "samples": samples})
    return records


def test_shard_positions_split_every_sample_once_keeping_shared_requests_together() -> None:
    parts = [shard_positions(list("abcdefg"), k, 3) for k in (1, 2, 3)]
    assert parts == [[0, 3, 6], [1, 4], [2, 5]]
    shared = [shard_positions(list("aabccd"), k, 2) for k in (1, 2)]
    assert shared == [[0, 1, 3, 4], [2, 5]]  # a, c | b, d: both 'a' samples in one shard


@pytest.mark.e2e
def test_two_shards_merge_into_what_one_run_writes_and_gate_alike(tmp_path: Path) -> None:
    """Slow (~53 s here): four child pytest runs of the Fox pages and olmOCR-bench on the
    fixed-text engine (goldens set, the whole run, shards 1/2 and 2/2) and an ``evalsuite
    merge``; the merge is compared with a whole run gated against the same goldens, so none of
    the runs can go."""
    golden, reports = tmp_path / "golden", tmp_path / "reports"
    common = ("--engine", FIXED_TEXT, "--golden-dir", golden, "--report-dir", reports)
    seen: set[str] = set()
    assert run_benches(*TESTS, *common, "--update-golden").returncode == 0
    run_dir(reports, seen)
    whole = run_benches(*TESTS, *common)
    assert whole.returncode == 0, whole.stdout[-3000:]
    whole_dir = run_dir(reports, seen)
    shards = []
    for k in (1, 2):
        done = run_benches(*TESTS, *common, "--shard", f"{k}/2")
        assert done.returncode == 0, done.stdout[-3000:]
        assert f"shard {k}/2" in done.stdout and "gated once `evalsuite merge`" in done.stdout
        shards.append(run_dir(reports, seen))
    history = (reports / "history.jsonl").read_text().splitlines()
    assert len(history) == 2  # shard runs are parts, not runs of the history

    merged = run_evalsuite("merge", *shards, "--report-dir", reports, "--golden-dir", golden)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    merged_dir = run_dir(reports, seen)
    assert comparable(merged_dir / "results.json") == comparable(whole_dir / "results.json")
    assert len((reports / "history.jsonl").read_text().splitlines()) == 3
    gates = [r.params["gates"] for r in read_results(merged_dir / "results.json").records]
    assert gates and all(gate["status"] == "ok" for g in gates for gate in g.values()
                         if gate["status"] != "not measured")


@pytest.mark.e2e
def test_bad_sets_of_shards_are_refused(tmp_path: Path) -> None:
    """Slow (~31 s here): three child pytest runs of the Fox pages on the fixed-text engine
    (shard 1/2 twice, a whole run) and three ``evalsuite merge`` refusals; each refusal needs
    its own bad set: a shard missing, a shard given twice, a run that is not a shard."""
    golden, reports = tmp_path / "golden", tmp_path / "reports"
    common = ("--engine", FIXED_TEXT, "--golden-dir", golden, "--report-dir", reports)
    seen: set[str] = set()
    first = run_benches(TESTS[0], *common, "--shard", "1/2")
    assert first.returncode == 0, first.stdout[-3000:]
    one = run_dir(reports, seen)
    assert run_benches(TESTS[0], *common, "--shard", "1/2").returncode == 0
    again = run_dir(reports, seen)
    missing = run_evalsuite("merge", one, "--report-dir", reports)
    assert missing.returncode == 2 and "shard(s) 2/2 missing" in missing.stderr
    twice = run_evalsuite("merge", one, again, "--report-dir", reports)
    assert twice.returncode == 2 and "shard 1/2 is given twice" in twice.stderr
    assert run_benches(TESTS[0], *common, "--update-golden").returncode == 0
    whole = run_dir(reports, seen)
    not_shard = run_evalsuite("merge", one, whole, "--report-dir", reports)
    assert not_shard.returncode == 2 and "is not a shard" in not_shard.stderr


@pytest.mark.parametrize("value", ["0/2", "3/2", "a/b", "2"])
def test_a_bad_shard_option_is_a_usage_error(tmp_path: Path, value: str) -> None:
    done = run_benches(TESTS[0], "--engine", FIXED_TEXT, "--shard", value,
                       "--report-dir", tmp_path)
    assert done.returncode == 4 and "expected K/N with 1 <= K <= N" in done.stdout + done.stderr
