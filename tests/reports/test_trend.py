"""``evalsuite trend``: golden-file tests of its output, its CI exit code, its statistics."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from evalsuite.commands import trend as trend_command
from evalsuite.records.history import append_history
from evalsuite.records.model import BenchmarkRecord, MetricSummary
from evalsuite.records.results import RunMetadata
from evalsuite.stats import summarize_proportion
from tests.support.paths import TEST_FIXTURES
from tests.support.reports_builder import build_runs

FIXTURES = TEST_FIXTURES / "reports"


def run_trend(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    trend_command.add_arguments(parser)
    return trend_command.run(parser.parse_args(list(argv)))


@pytest.fixture()
def in_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the fixture folder so that printed paths are the same on every machine."""
    monkeypatch.chdir(FIXTURES)


@pytest.mark.parametrize(
    ("argv", "expected_file", "expected_code"),
    [
        (
            ["--benchmark", "fox", "--metric", "edit_precision", "--last", "4",
             "--golden-dir", "absent", "--fail-on-regression", "--all"],
            "trend_fox_edit_precision.txt",
            1,
        ),
        (
            ["--benchmark", "render_configs", "--metric", "accuracy", "--last", "3",
             "--golden-dir", "golden", "--fail-on-regression", "--all"],
            "trend_render_configs_accuracy.txt",
            0,
        ),
    ],
)
def test_terminal_output_matches_the_golden_file(
    in_fixtures: None,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    expected_file: str,
    expected_code: int,
) -> None:
    code = run_trend("--history", "history.jsonl", *argv)
    assert capsys.readouterr().out == (FIXTURES / expected_file).read_text("utf-8")
    assert code == expected_code


def test_the_golden_files_flag_what_the_fixture_history_was_built_to_show() -> None:
    """The snapshots themselves: the newest tiny-mode run regressed; low contrast improved."""
    fox = (FIXTURES / "trend_fox_edit_precision.txt").read_text("utf-8").splitlines()
    flagged = [line for line in fox if "REGRESSED" in line]
    assert any("20251106T020000Z-000005" in line for line in flagged)
    assert "fox [tiny-deepseek-ocr-2 data=fixtures mode=tiny] edit_precision: " in fox[-2]
    render = (FIXTURES / "trend_render_configs_accuracy.txt").read_text("utf-8").splitlines()
    [improved] = [line for line in render if "improved" in line]
    row = render.index(improved)
    assert "color_low_contrast,condition=vision" in render[row - 2]
    cells = improved.split()
    assert "0.9" in cells and "+0.4667" in cells


def test_without_the_flag_a_regression_still_exits_zero(
    in_fixtures: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_trend("--history", "history.jsonl", "--golden-dir", "absent") == 0
    out = capsys.readouterr().out
    assert "1 regression(s)" in out
    for benchmark in ("fox", "render_configs", "quality"):
        assert f"\n{benchmark}\n" in out
    assert "edit_precision[" not in out  # per-group aggregates only on request


def test_per_group_aggregates_on_request(
    in_fixtures: None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--history", "history.jsonl", "--golden-dir", "absent", "--fail-on-regression"]
    assert run_trend(*argv, "--groups", "--all") == 1
    out = capsys.readouterr().out
    assert "7 regression(s)" in out  # tiny mode's edit_precision and 6 of its token bins
    assert "\nfox · edit_precision[1200-1300] (mean, higher is better)" in out
    assert run_trend(*argv, "--metric", "edit_precision[600-700]") == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert sum(row[:1] == ["edit_precision[600-700]"] for row in rows) == 3  # one per series


def test_a_golden_tolerance_decides_instead_of_the_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A golden tolerance of 0.25 for tiny mode's edit_precision: its newest drop of 0.14
    passes the gate, so it is no regression for the trend view either; its per-bin aggregates
    (edit_precision[700-800], ...) have no entry of their own and take the same tolerance."""
    golden = json.loads((FIXTURES / "golden" / "fox.json").read_text("utf-8"))
    entry = {**golden["entries"][0], "engine": "tiny-deepseek-ocr-2", "parameter": "mode=tiny",
             "tolerance": 0.25}
    (tmp_path / "fox.json").write_text(json.dumps({**golden, "entries": [entry]}))
    argv = ["--history", str(FIXTURES / "history.jsonl"), "--benchmark", "fox", "--groups",
            "--fail-on-regression"]
    assert run_trend(*argv, "--golden-dir", str(tmp_path)) == 0
    assert "no regression" in capsys.readouterr().out
    assert run_trend(*argv, "--golden-dir", str(FIXTURES / "golden")) == 1


def test_proportion_regressions_use_the_one_sided_exact_binomial_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "history.jsonl"
    for day, correct in ((1, 27), (2, 26), (3, 18)):
        summary = summarize_proportion([True] * correct + [False] * (30 - correct))
        record = BenchmarkRecord("quality", "replay", "mode=small", {"accuracy": summary})
        meta = RunMetadata(run_id=f"run{day}", created_utc=f"2025-11-0{day}T00:00:00Z")
        append_history(history, meta, [record])

    code = run_trend("--history", str(history), "--golden-dir", str(tmp_path),
                     "--fail-on-regression", "--all")
    out = capsys.readouterr().out
    assert code == 1
    p_value = scipy_stats.binom.cdf(18, 30, 26 / 30)  # P(X <= 18 | n=30, p0=26/30)
    [flagged] = [line for line in out.splitlines() if "REGRESSED" in line]
    assert flagged.split()[0] == "run3"
    assert flagged.endswith(f"▼ REGRESSED p={p_value:.2g}")
    assert scipy_stats.binom.cdf(26, 30, 27 / 30) > 0.05  # why run2 is not flagged


def test_a_mean_within_half_the_previous_interval_is_noise(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    previous = MetricSummary(0.90, 10, 0.86, 0.94, "mean", "higher")  # half-width 0.04
    for day, summary in ((1, previous), (2, MetricSummary(0.87, 10, 0.83, 0.91))):
        meta = RunMetadata(run_id=f"run{day}", created_utc=f"2025-11-0{day}T00:00:00Z")
        append_history(history, meta, [BenchmarkRecord("fox", "e", "p", {"ep": summary})])
    common = ["--history", str(history), "--golden-dir", str(tmp_path), "--fail-on-regression"]
    assert run_trend(*common) == 0
    assert run_trend(*common, "--tolerance", "0.01") == 1


def test_usage_errors_exit_two_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_trend("--history", str(tmp_path / "none.jsonl")) == 2
    assert "none.jsonl" in capsys.readouterr().err
    history = FIXTURES / "history.jsonl"
    assert run_trend("--history", str(history), "--metric", "no_such_metric") == 2
    assert "no_such_metric" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_trend("--history", str(history), "--last", "0")


def test_the_fixture_history_is_what_the_builder_writes(tmp_path: Path) -> None:
    """tests/fixtures/reports/history.jsonl is regenerated by writing build_runs() with
    append_history (then the golden files above by running the commands they test)."""
    history = tmp_path / "history.jsonl"
    for run in build_runs():
        append_history(history, run.metadata, run.records,
                       results_path=f"{run.metadata.run_id}/results.json")
    assert history.read_bytes() == (FIXTURES / "history.jsonl").read_bytes()


def test_runs_on_other_data_make_another_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run on a real dataset is not compared with runs on the fixtures, and a golden entry
    of one data source gives no tolerance to the other's series."""
    history = tmp_path / "history.jsonl"
    runs = (("run1", "fixtures", 0.90), ("run2", "fox@3f2a", 0.50), ("run3", "fixtures", 0.89))
    for day, (run_id, data, value) in enumerate(runs, start=1):
        summary = MetricSummary(value, 10, value - 0.04, value + 0.04, "mean", "higher")
        record = BenchmarkRecord("fox", "e", "mode=tiny", {"ep": summary}, data=data)
        meta = RunMetadata(run_id=run_id, created_utc=f"2025-11-0{day}T00:00:00Z")
        append_history(history, meta, [record])
    argv = ["--history", str(history), "--golden-dir", str(tmp_path), "--fail-on-regression",
            "--all"]
    assert run_trend(*argv) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {run: line.split() for line in out for run in ("run1", "run2", "run3")
            if f" {run} " in line}
    assert rows["run1"][:3] == ["e", "fixtures", "mode=tiny"]
    assert rows["run2"][:3] == ["e", "fox@3f2a", "mode=tiny"]
    assert rows["run2"][-2:] == ["0.46–0.54", "10"]  # first of its series: no Δ, no flag
    assert rows["run3"][-1] == "-0.01"  # against run1, not run2
    assert "no regression" in out[-2]

    def golden(data: str) -> None:
        entry = {"engine": "e", "data": data, "parameter": "mode=tiny", "metric": "ep",
                 "value": 0.9, "n": 10, "direction": "higher", "tolerance": 0.0, "kind": "mean"}
        document = {"benchmark": "fox", "format": 2, "entries": [entry]}
        (tmp_path / "fox.json").write_text(json.dumps(document))

    golden("fox@3f2a")
    assert run_trend(*argv) == 0
    golden("fixtures")
    assert run_trend(*argv) == 1  # tolerance 0: the drop of 0.01 regressed


def test_the_default_prints_one_line_per_series_with_last_value_deltas_and_sparkline(
    in_fixtures: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Six runs, 51 series: the default view has one row per series (the long form, a row per
    run); the tesseract row is compared with its golden entry, the regressed series is flagged."""
    assert run_trend("--history", "history.jsonl", "--golden-dir", "golden") == 0
    out = capsys.readouterr().out.splitlines()
    history = [json.loads(line) for line in (FIXTURES / "history.jsonl").read_text().splitlines()]
    newest = history[-1]["records"]
    series = {
        (r["benchmark"], r["engine"], r["data"], r["parameter"], metric): summary["value"]
        for r in newest
        for metric, summary in r["metrics"].items()
        if "[" not in metric
    }
    rows = [line.split() for line in out
            if line.startswith("  ") and not line.startswith("  fox [")]
    data_rows = [row for row in rows if row[0] != "metric"]
    assert len(data_rows) == len(series)
    assert len(out) < 2 * len(series)  # the long form has a row per run: 6x as many
    [tesseract] = [r for r in data_rows if r[:2] == ["edit_precision", "tesseract"]]
    golden = json.loads((FIXTURES / "golden" / "fox.json").read_text())["entries"][0]["value"]
    value = series[("fox", "tesseract", "fixtures", "mode=native", "edit_precision")]
    assert tesseract[4] == f"{value:.4g}"
    assert tesseract[7] == f"{value - golden:+.4g}"
    [tiny] = [r for r in data_rows if r[:4] == ["edit_precision", "tiny-deepseek-ocr-2",
                                                "fixtures", "mode=tiny"]]
    assert tiny[-2:] == ["▼", "REGRESSED"]
    values = [
        r["metrics"]["edit_precision"]["value"]
        for run in history
        for r in run["records"]
        if (r["benchmark"], r["engine"], r["parameter"]) == ("fox", "tiny-deepseek-ocr-2",
                                                             "mode=tiny")
    ]
    assert len(tiny[-3]) == len(values) == 6
    assert tiny[-3][-1] == "▁" and values[-1] == min(values)  # the newest, the lowest
    assert tiny[6] == f"{values[-1] - values[-2]:+.4g}"


def test_the_header_names_the_peer_profile_behind_each_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Engines run through a peer's model profile are named with its name and version from the
    runs' engine details; a label that ran two versions (--engine-label) says it changed; an
    engine without a profile is not listed."""
    history = tmp_path / "history.jsonl"
    for day, version in ((1, 1), (2, 1), (3, 2)):
        details = {
            "dots": {"engine": "served", "model": "rednote-hilab/dots.ocr",
                     "model_profile": {"name": "dots.ocr", "version": version}},
            "olmocr-2": {"engine": "served", "model_profile": {"name": "olmOCR-2", "version": 1}},
            "tesseract": {"engine": "tesseract"},
        }
        meta = RunMetadata(run_id=f"run{day}", created_utc=f"2025-11-0{day}T00:00:00Z",
                           engines=sorted(details), engine_details=details)
        summary = MetricSummary(0.8, 10, 0.75, 0.85, "mean", "higher")
        append_history(history, meta, [BenchmarkRecord("fox", engine, "mode=native",
                                                        {"ep": summary})
                                        for engine in sorted(details)])
    assert run_trend("--history", str(history), "--golden-dir", str(tmp_path)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == ("model profiles: dots = dots.ocr v1 → dots.ocr v2 (changed within its "
                      "series); olmocr-2 = olmOCR-2 v1")
    assert run_trend("--history", str(history), "--golden-dir", str(tmp_path), "--benchmark",
                     "fox", "--metric", "ep") == 0
    assert "model profiles: dots = " in capsys.readouterr().out
