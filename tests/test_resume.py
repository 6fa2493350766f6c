"""``pytest benches --resume RUN``: a night killed part-way (SIGKILL of pytest and of the model
server) is finished by a second run that reuses every answer the first one kept, sends only the
rest to the engine, and writes one complete run that records what an uninterrupted run records.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalsuite.engines.base import InferenceResult
from evalsuite.records.results import read_results
from evalsuite.request_cache import (
    CACHE_FILE,
    RESUMED_MARKER,
    ResumeError,
    SharedResultCache,
    check_resumable,
    remove_stale_caches,
    resume_summary,
)
from evalsuite.serving.process import serve_subprocess
from tests.support.subprocess_runs import REPO, child_env, pytest_command, run_pytest

BENCHES = ("benches/test_fox.py", "benches/test_surya_recognition.py")
ENGINE_MODULE = '''
import hashlib
import json

from evalsuite.perf.serving import FixedLatencyEngine


class LoggingEngine(FixedLatencyEngine):
    """The stand-in GPU engine, answering each request with what identifies it (sample, mode,
    image, prompt) and appending that to a log."""

    def __init__(self, *, log, latency_s=0.0):
        super().__init__(latency_s=latency_s)
        self.log = log

    def infer_batch(self, requests):
        results = super().infer_batch(requests)
        for request, result in zip(requests, results):
            prompt = hashlib.sha256(request.prompt.encode()).hexdigest()[:12]
            result.text = json.dumps([request.sample_id, request.mode,
                                      (request.image_sha256 or "")[:12], prompt])
        with open(self.log, "a") as handle:
            handle.write("".join(result.text + "\\n" for result in results))
        return results


def make(**options):
    return LoggingEngine(**options)
'''


def _served_calls(log: Path) -> list[tuple[str, ...]]:
    """What identifies each request the engine behind a server answered."""
    if not log.exists():
        return []
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]


def _stored_answers(cache: Path) -> set[tuple[str, ...]]:
    """What identifies the request of each answer a run's cache holds."""
    connection = sqlite3.connect(cache)
    try:
        rows = connection.execute("SELECT result FROM results WHERE result IS NOT NULL")
        answers = [pickle.loads(blob) for (blob,) in rows]
    finally:
        connection.close()
    return {tuple(json.loads(answer.text)) for answer in answers}


def _comparable(records: list[Any]) -> list[dict[str, Any]]:
    """The records without their timing (latency) and the URL of the server that answered."""
    comparable = []
    for record in records:
        data = record.to_dict()
        for sample in data["samples"]:
            sample["details"].pop("latency_s", None)
            sample["details"].get("settings", {}).pop("api_base", None)
        comparable.append(data)
    return comparable


def _outcomes(run_dir: Path) -> dict[str, str]:
    report = json.loads((run_dir / "report.json").read_text())
    return {test["nodeid"]: test["outcome"] for test in report["tests"]}


def _kill_when_answered(command: list[str], cache_parent: Path, answers: int) -> None:
    """Run ``command`` in a process group of its own and SIGKILL the whole group (pytest and
    whatever it started) once a run folder's cache under ``cache_parent`` holds ``answers``."""
    process = subprocess.Popen(command, cwd=REPO, env=child_env(), start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            assert process.poll() is None, "the run ended before it could be killed"
            for cache in cache_parent.glob(f"*/{CACHE_FILE}"):
                try:
                    connection = sqlite3.connect(cache)
                    count = connection.execute(
                        "SELECT COUNT(*) FROM results WHERE result IS NOT NULL").fetchone()[0]
                    connection.close()
                except sqlite3.OperationalError:  # being created
                    count = 0
                if count >= answers:
                    return
            time.sleep(0.02)
        raise AssertionError("the run answered too little to be killed mid-way")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture
def engine_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``module:factory`` of the logging stand-in, importable by the servers started here."""
    folder = tmp_path / "engine"
    folder.mkdir()
    (folder / "resume_engine.py").write_text(ENGINE_MODULE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(folder), os.environ.get("PYTHONPATH", "")]))
    return "resume_engine:make"


@pytest.mark.e2e
def test_a_killed_night_resumed_records_what_an_uninterrupted_one_does(
    tmp_path: Path, engine_module: str
) -> None:
    """Slow (~76 s here): three ``evalsuite serve`` stand-ins (0.1 s a request, one at a time)
    behind three child pytest runs of Fox and Surya recognition (whole, killed a third of the
    way, resumed at -n 2) and three refused resumes; the whole run is the reference the resumed
    one must equal, and the killed one must run long enough to die part-way."""
    golden, runs = tmp_path / "golden", tmp_path / "runs"
    options = ["--engine", "openai", "--concurrency", "1", "--golden-dir", str(golden)]
    logs = {name: tmp_path / f"{name}.log" for name in ("whole", "killed", "resumed")}

    def server(name: str) -> Any:  # a GPU server's stand-in, 0.1 s a request
        return serve_subprocess(engine_module, max_batch=1,
                                engine_options={"log": str(logs[name]), "latency_s": 0.1})

    with server("whole") as whole:
        done = run_pytest(*BENCHES, *options, "--api-base", whole.api_base,
                          "--report-dir", tmp_path / "whole")
    (whole_dir,) = (tmp_path / "whole").glob("*/results.json")
    reference = read_results(whole_dir)
    calls = reference.metadata.model_calls
    assert calls == len(_served_calls(logs["whole"])) > 10, done.stdout[-3000:]

    # the night dies a third of the way: pytest, its workers and the server, all at once
    with server("killed") as killed:
        _kill_when_answered(
            pytest_command(*BENCHES, *options, "--api-base", killed.api_base,
                           "--report-dir", runs),
            runs, answers=calls // 3)
        killed.process.kill()
    (dead,) = runs.iterdir()
    assert not (dead / "results.json").exists() and not (runs / "history.jsonl").exists()
    kept = _stored_answers(dead / CACHE_FILE)
    assert calls // 3 <= len(kept) < calls

    # a new server (another port: another node), two workers this time
    with server("resumed") as again:
        resumed = run_pytest(*BENCHES, *options, "--api-base", again.api_base, "-n", "2",
                             "--report-dir", runs, "--resume", dead.name)
    assert resumed.returncode == done.returncode, resumed.stdout[-3000:]
    (new_dir,) = [path.parent for path in runs.glob("*/results.json")]
    run = read_results(new_dir / "results.json")

    # the engine answered only what the dead run had not kept, each request once
    sent = _served_calls(logs["resumed"])
    assert len(sent) == len(set(sent)) == calls - len(kept)
    assert not set(sent) & kept
    assert set(sent) | kept == set(_served_calls(logs["whole"]))

    # one complete run, equal to the uninterrupted one but for timing and the server's URL
    assert _comparable(run.records) == _comparable(reference.records)
    assert run.metadata.model_calls == calls
    assert run.metadata.extra["resumed"] == {
        "from": [dead.name], "answers": len(kept), "reused_requests": len(kept)}
    assert _outcomes(new_dir) == _outcomes(whole_dir.parent)
    history = (runs / "history.jsonl").read_text().splitlines()
    assert [json.loads(line)["run"]["run_id"] for line in history] == [new_dir.name]
    # the answers moved with the resuming run and went with its results: no copy is left
    assert not list(runs.rglob(f"{CACHE_FILE}*"))
    assert json.loads((dead / RESUMED_MARKER).read_text())["resumed_as"] == new_dir.name

    # resuming again is refused, naming what is wrong
    for run_id, message in (
        (dead.name, f"already resumed as {new_dir.name}"),
        (new_dir.name, "that run is complete"),
        ("20990101T000000Z-00000000", "no run '20990101T000000Z-00000000'"),
    ):
        refused = run_pytest(*BENCHES, *options, "--api-base", "http://127.0.0.1:9/v1",
                             "--report-dir", runs, "--resume", run_id)
        assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout[-2000:]
        assert message in refused.stderr, refused.stderr[-2000:]


@pytest.mark.e2e
def test_a_resume_with_other_options_is_refused(tmp_path: Path) -> None:
    """A dead run's folder (its cache made as a run with ``--batch-size 1`` makes it): a resume
    with another batch size or engine label would mix two setups, and is a usage error."""
    runs = tmp_path / "runs"
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from evalsuite.engines.base import InferenceResult\n"
        "from evalsuite.plugin.options import SuiteOptions, request_identity\n"
        "from evalsuite.request_cache import SharedResultCache\n"
        "options = SuiteOptions(engines=('tesseract',), batch_size=1)\n"
        "cache = SharedResultCache(Path(sys.argv[1]) / 'request_cache.sqlite',\n"
        "                          identity=request_identity(options, Path.cwd()))\n"
        "assert cache.claim('k')\n"
        "cache.put('k', InferenceResult(text='kept'))\n"
    )
    made = subprocess.run([sys.executable, "-c", script, str(runs / "dead")], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    base = ["benches/test_fox.py", "--engine", "tesseract", "--report-dir", runs,
            "--resume", "dead"]
    for extra, message in (
        (["--batch-size", "2"], "--batch-size 1 then, 2 now"),
        (["--batch-size", "1", "--engine-label", "tess"],
         "--engine-label {} then, {'tesseract': 'tess'} now"),
    ):
        refused = run_pytest(*base, *extra)
        assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout[-2000:]
        assert "answers were made otherwise" in refused.stderr, refused.stderr[-2000:]
        assert message in refused.stderr, refused.stderr[-2000:]
    assert (runs / "dead" / CACHE_FILE).is_file()  # a refused resume leaves the run resumable


def _cache(run_dir: Path, owner: str | None = None, **kwargs: Any) -> SharedResultCache:
    cache = SharedResultCache(run_dir / CACHE_FILE, identity={"--engine": "x"}, **kwargs)
    if owner is not None:
        cache.owner = owner
    return cache


def test_a_resuming_cache_takes_over_the_answers_not_the_claims(tmp_path: Path) -> None:
    """The answers of the dead run are counted once per run, by the first process to use each;
    its unanswered claims (of a process of another host, which could never be taken over) are
    not carried; its cache is freed and points to the run that took it over."""
    dead = _cache(tmp_path / "dead")
    for key in ("a", "b"):
        assert dead.claim(key)
        dead.put(key, InferenceResult(text=key))
    dead.owner = "another-host:1"
    assert dead.claim("c")  # computing on another node when the night died
    dead.close()
    first = _cache(tmp_path / "resumed", resume_from=tmp_path / "dead")
    second = _cache(tmp_path / "resumed", owner="this-host-worker:2",
                    resume_from=tmp_path / "dead")
    assert first.get("a") == InferenceResult(text="a") and first.resumed_answer("a")
    assert not first.resumed_answer("a")  # once
    assert second.get("a") == InferenceResult(text="a") and not second.resumed_answer("a")
    assert second.get("b") == InferenceResult(text="b") and second.resumed_answer("b")
    assert first.get("c") is None and first.claim("c")  # at once: no claim was carried
    assert not list((tmp_path / "dead").glob(f"{CACHE_FILE}*"))
    marker = json.loads((tmp_path / "dead" / RESUMED_MARKER).read_text())
    assert marker["resumed_as"] == "resumed"
    assert resume_summary(tmp_path / "resumed") == {
        "from": ["dead"], "answers": 2, "reused_requests": 2}
    first.put("c", InferenceResult(text="c"))
    first.close()
    second.close()
    again = _cache(tmp_path / "again", resume_from=tmp_path / "resumed")
    assert again.get("c") == InferenceResult(text="c") and again.resumed_answer("c")
    again.close()
    assert resume_summary(tmp_path / "again") == {
        "from": ["dead", "resumed"], "answers": 3, "reused_requests": 1}
    assert resume_summary(tmp_path / "dead") is None


def test_what_cannot_be_resumed_is_named(tmp_path: Path) -> None:
    identity = {"--engine": "x"}
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResumeError, match="holds no request cache"):
        check_resumable(tmp_path / "empty", identity)
    live = _cache(tmp_path / "live")
    assert live.claim("k")  # this very process: alive
    with pytest.raises(ResumeError, match=rf"still running \(process .*:{os.getpid()}"):
        check_resumable(tmp_path / "live", identity)
    live.put("k", InferenceResult(text="k"))
    check_resumable(tmp_path / "live", identity)
    with pytest.raises(ResumeError, match=r"--engine 'x' then, 'y' now"):
        check_resumable(tmp_path / "live", {"--engine": "y"})
    (tmp_path / "live" / "results.json").write_text("{}")
    with pytest.raises(ResumeError, match="that run is complete"):
        check_resumable(tmp_path / "live", identity)


KEY_SCRIPT = """
from PIL import Image
from evalsuite.engines.base import DOCUMENT_EVALUATION_NGRAM, InferenceRequest
from evalsuite.request_cache import request_key

class Keyed:
    keyed_outputs = True

request = InferenceRequest(
    sample_id="s1", image=Image.new("L", (64, 32), 200), prompt="<image>\\nFree OCR.",
    mode="small", key={"data": "fixtures", "languages": {"en", "de", "fr", "ja", "zh", "ru"}},
    anti_repetition=DOCUMENT_EVALUATION_NGRAM)
print(request_key("deepseek-ocr", Keyed(), request))
"""


def test_a_request_has_one_key_in_every_process() -> None:
    """The cache key of a request is the same in processes with other hash seeds (a resumed
    run's processes): no set or dict order reaches it."""
    keys = set()
    for seed in ("1", "2", "3", "4"):
        done = subprocess.run([sys.executable, "-c", KEY_SCRIPT], cwd=REPO, text=True,
                              capture_output=True, timeout=60,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        keys.add(done.stdout.strip())
    assert len(keys) == 1


def test_only_dead_runs_caches_beyond_the_newest_few_or_too_old_are_removed(
    tmp_path: Path,
) -> None:
    now = time.time()
    ages_h = {"live": 0.1, "d1": 2, "d2": 3, "d3": 4, "d4": 5, "d5": 6, "old": 24 * 8}
    for name, age_h in ages_h.items():
        cache = _cache(tmp_path / name)
        cache.claim("k")
        cache.put("k", InferenceResult(text="k"))
        cache.close()
        for path in (tmp_path / name).glob(f"{CACHE_FILE}*"):
            os.utime(path, (now - age_h * 3600, now - age_h * 3600))
    removed = remove_stale_caches(tmp_path, keep=3, max_age_days=7, now=now)
    assert sorted(path.name for path in removed) == ["d4", "d5", "old"]
    left = sorted(path.parent.name for path in tmp_path.glob(f"*/{CACHE_FILE}"))
    assert left == ["d1", "d2", "d3", "live"]
