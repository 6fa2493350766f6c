"""Fault battery, benchmark runs: corrupt or wrongly typed golden files, corrupt Parquet and
JSONL data, a recordings file cut short, an engine that raises on one sample. Each case asserts
the exact outcome: the error text, the failed-sample record, or the untouched file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalsuite.benchmarks import get_benchmark
from evalsuite.errors import DatasetFormatError
from evalsuite.records.results import read_results
from tests.support.faults import ANSWER, FIXED_TEXT, RAW_BATCH, bench_env, run_benches
from tests.support.subprocess_runs import REPO

pytestmark = pytest.mark.faults

FOX = "benches/test_fox.py"
FOX_SAMPLES = ("fixture_1", "fixture_2", "fixture_3")


@pytest.fixture(scope="module")
def fox_goldens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Golden files of the fixed-text engine on fox's fixtures, set by a clean run."""
    golden = tmp_path_factory.mktemp("golden")
    done = run_benches(FOX, "--engine", FIXED_TEXT, "--update-golden", "--golden-dir", golden,
                       "--report-dir", tmp_path_factory.mktemp("reports"))
    assert done.returncode == 0, done.stdout[-3000:]
    assert (golden / "fox.json").is_file()
    return golden


def golden_with(fox_goldens: Path, folder: Path, edit: Any) -> Path:
    """A copy of the fox goldens in ``folder`` with ``edit(text) -> text`` applied."""
    folder.mkdir()
    text = (fox_goldens / "fox.json").read_text(encoding="utf-8")
    (folder / "fox.json").write_text(edit(text), encoding="utf-8")
    return folder


def wrongly_typed(text: str) -> str:
    document = json.loads(text)
    document["entries"][1]["value"] = "high"
    return json.dumps(document, indent=2)


def not_finite(text: str) -> str:
    document = json.loads(text)
    document["entries"][2]["tolerance"] = float("nan")
    return json.dumps(document, indent=2)  # json writes NaN, which json.loads reads back


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text[: len(text) // 2], "fox.json is not valid JSON: "),
        (wrongly_typed, "fox.json, entry 1: field 'value' must be a number, got 'high'"),
        (not_finite, "fox.json, entry 2: field 'tolerance' must be a finite number, got nan"),
    ],
    ids=["cut-short", "wrongly-typed", "nan"],
)
@pytest.mark.parametrize("update", [False, True], ids=["gate", "update-golden"])
def test_bad_golden_file_is_named_and_never_rewritten(
    fox_goldens: Path, tmp_path: Path, edit: Any, message: str, update: bool
) -> None:
    golden = golden_with(fox_goldens, tmp_path / "golden", edit)
    before = (golden / "fox.json").read_bytes()
    done = run_benches(FOX, "--engine", FIXED_TEXT, "--golden-dir", golden,
                       "--report-dir", tmp_path / "reports", *(["--update-golden"] * update))
    where = f"golden file {golden / 'fox.json'}"
    if update:  # refused before anything runs
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-3000:]
        assert f"ERROR: {where}" in done.stderr and message in done.stderr
        assert "INTERNALERROR" not in done.stderr + done.stdout
    else:  # the test fails with the one line, no traceback
        assert done.returncode == 1, done.stdout[-3000:]
        lines = [line for line in done.stdout.splitlines() if line.startswith(where)]
        assert len(lines) == 1 and message in lines[0], done.stdout[-3000:]
        assert "Traceback" not in done.stdout and "golden.py:" not in done.stdout
    assert (golden / "fox.json").read_bytes() == before
    assert sorted(path.name for path in golden.iterdir() if not path.name.endswith(".lock")) == [
        "fox.json"
    ]


def truncated_copy(source: Path, target: Path, keep: int) -> Path:
    """The first ``keep`` bytes of ``source`` at ``target`` (a download cut short)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes()[:keep])
    return target


@pytest.mark.parametrize(
    ("benchmark", "source", "file", "message"),
    [
        ("finewiki", "finewiki", "finewiki/sample.parquet",
         "finewiki/train.parquet: not a readable Parquet file"),
        ("quality", "quality", "quality/QuALITY.v1.0.1.htmlstripped.dev",
         "quality/QuALITY.v1.0.1.htmlstripped.dev:1: not a JSON line: "),
    ],
)
def test_corrupt_data_file_is_named_by_its_loader(
    tmp_path: Path, benchmark: str, source: str, file: str, message: str
) -> None:
    fixture = REPO / "tests" / "fixtures" / file
    name = "train.parquet" if file.endswith(".parquet") else fixture.name
    truncated_copy(fixture, tmp_path / source / name, 300)
    data_source = get_benchmark(benchmark).source(source)
    location = data_source.locate(tmp_path, {})
    assert location == tmp_path / source
    with pytest.raises(DatasetFormatError) as error:
        data_source.loader(location)
    assert str(error.value).startswith(str(tmp_path))
    assert message in str(error.value)


def test_corrupt_parquet_fails_the_bench_in_one_line(tmp_path: Path) -> None:
    truncated_copy(REPO / "tests/fixtures/finewiki/sample.parquet",
                   tmp_path / "data/finewiki/train.parquet", 300)
    done = run_benches("benches/test_finewiki.py", "-k", "finewiki-text", "--engine",
                       "tiny-deepseek-ocr-2", "--max-samples", "1", "--data-dir", tmp_path / "data",
                       "--golden-dir", tmp_path / "golden", "--report-dir", tmp_path / "reports")
    assert done.returncode == 1, done.stdout[-3000:]
    expected = (f"finewiki data source finewiki: {tmp_path}/data/finewiki/train.parquet: not a "
                "readable Parquet file (Parquet magic bytes not found in footer.")
    assert any(line.startswith(expected) for line in done.stdout.splitlines()), done.stdout[-3000:]
    assert "Traceback" not in done.stdout and "ArrowInvalid" not in done.stdout


def samples_of(report_dir: Path) -> dict[str, Any]:
    (run_dir,) = [path for path in report_dir.iterdir() if path.is_dir()]
    (record,) = read_results(run_dir / "results.json").records
    return {sample.sample_id: sample for sample in record.samples}


def test_recordings_cut_short_replay_the_rest_and_fail_the_cut_sample(
    fox_goldens: Path, tmp_path: Path
) -> None:
    recording = tmp_path / "recorded.jsonl"
    done = run_benches(FOX, "--engine", FIXED_TEXT, "--record", recording,
                       "--golden-dir", fox_goldens, "--report-dir", tmp_path / "live")
    assert done.returncode == 0, done.stdout[-3000:]
    lines = recording.read_text(encoding="utf-8").splitlines(keepends=True)
    assert [json.loads(line)["sample_id"] for line in lines] == list(FOX_SAMPLES)
    recording.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2], encoding="utf-8")

    done = run_benches(FOX, "--engine", "replay", "--modes", "native", "--recordings", recording,
                       "--engine-label", f"replay={FIXED_TEXT}", "--golden-dir", fox_goldens,
                       "--report-dir", tmp_path / "replay")
    assert done.returncode == 1, done.stdout[-3000:]
    assert f"{recording}:3: incomplete last line ignored" in done.stdout
    samples = samples_of(tmp_path / "replay")
    assert [samples[name].prediction for name in FOX_SAMPLES[:2]] == [
        f"{ANSWER} {name}" for name in FOX_SAMPLES[:2]
    ]
    assert all(samples[name].error is None for name in FOX_SAMPLES[:2])
    cut = samples["fixture_3"]
    assert cut.error.startswith("MissingRecordingError: no recording for key ")
    assert "sample_id='fixture_3'" in cut.error and cut.prediction == ""
    assert "fixture_3: failed: MissingRecordingError: no recording" in done.stdout


@pytest.mark.parametrize("engine", [FIXED_TEXT, RAW_BATCH], ids=["engine-base", "raw-batch"])
def test_engine_raising_on_one_sample_records_it_and_the_gate_reports_it(
    fox_goldens: Path, tmp_path: Path, engine: str
) -> None:
    report_dir = tmp_path / "reports"
    golden = tmp_path / "golden"
    shutil.copytree(fox_goldens, golden)
    done = run_benches(FOX, "--engine", engine, "--engine-label", f"{engine}={FIXED_TEXT}",
                       "--golden-dir", golden, "--report-dir", report_dir,
                       env=bench_env(sample="fixture_2"))
    assert done.returncode == 1, done.stdout[-3000:]
    samples = samples_of(report_dir)
    assert sorted(samples) == list(FOX_SAMPLES)  # the run went on past the failure
    failed = samples["fixture_2"]
    assert failed.error == "SampleFault: injected fault on fixture_2"
    assert failed.prediction == "" and failed.scores["edit_precision"] == 0.0
    for name in ("fixture_1", "fixture_3"):
        assert samples[name].error is None and samples[name].prediction == f"{ANSWER} {name}"
    assert "fixture_2: failed: SampleFault: injected fault on fixture_2" in done.stdout
    assert "edit_precision regressed (higher is better)" in done.stdout
    summary = " ".join(done.stdout.split())  # the summary wraps at the terminal's width
    assert f"{FIXED_TEXT}: 4 metrics gated on 3 samples" in summary
    assert "; 1 sample errors)" in summary
    assert "Traceback" not in done.stdout
    history = (report_dir / "history.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(history) == 1
