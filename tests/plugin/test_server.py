"""``--gpu --model NAME`` starts a stock vLLM as the model's authors do: checked with a stand-in
``vllm`` executable (``--vllm PATH``) that records its command line and serves the model's
answers over HTTP like ``vllm serve``."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from evalsuite.models import model_profile
from evalsuite.plugin.server import RANDOM_WEIGHTS_FLAGS, plan_peer_server
from evalsuite.records.results import read_results
from tests.support.faults import bench_env
from tests.support.subprocess_runs import run_pytest

FAKE_VLLM = '''\
import json, sys
from aiohttp import web

arguments = sys.argv[1:]
with open(sys.argv[0] + ".argv.json", "w") as handle:
    json.dump(arguments, handle)
name = arguments[arguments.index("--served-model-name") + 1]
answer = json.dumps([{"bbox": [20, 50, 600, 90], "category": "Title", "text": "# Results"},
                     {"bbox": [20, 100, 900, 300], "category": "Text", "text": "The table."}])


async def health(_):
    return web.Response(text="ok")


async def models(_):
    return web.json_response({"object": "list", "data": [{"id": name}]})


async def completions(request):
    body = await request.json()
    return web.json_response({
        "choices": [{"message": {"content": answer}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


app = web.Application(client_max_size=256 * 1024**2)
app.router.add_get("/health", health)
app.router.add_get("/v1/models", models)
app.router.add_post("/v1/chat/completions", completions)
web.run_app(app, host="127.0.0.1", port=int(arguments[arguments.index("--port") + 1]),
            print=None)
'''


def test_a_peer_is_planned_as_its_authors_serve_it(tmp_path: Path) -> None:
    dots, chandra = model_profile("dots.ocr"), model_profile("Chandra-2")
    plan = plan_peer_server(dots, None, 60.0, vllm="/opt/vllm env/bin/vllm")
    assert shlex.split(plan.command) == [
        "/opt/vllm env/bin/vllm", "serve", "rednote-hilab/dots.ocr", "--host", "127.0.0.1",
        "--port", "{port}", "--served-model-name", "rednote-hilab/dots.ocr",
        "--trust-remote-code", "--chat-template-content-format", "string"]
    assert plan.weights == "checkpoint" and plan.environment == {}
    (tmp_path / "config.json").write_text("{}")
    plan = plan_peer_server(chandra, str(tmp_path), 60.0)  # its flags name the served model
    words = shlex.split(plan.command)
    assert words[2] == str(tmp_path) and words.count("--served-model-name") == 1
    assert words[-len(RANDOM_WEIGHTS_FLAGS):] == list(RANDOM_WEIGHTS_FLAGS)
    assert plan.weights == "random"


def test_gpu_model_starts_the_server_and_runs_the_benches(tmp_path: Path) -> None:
    vllm = tmp_path / "bin" / "vllm"
    vllm.parent.mkdir()
    vllm.write_text(f"#!{sys.executable}\n{FAKE_VLLM}")
    vllm.chmod(0o755)
    weights = tmp_path / "weights"  # a checkpoint folder without weight files: random weights
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    reports = tmp_path / "reports"
    run = run_pytest("benches", "-m", "olmocr_bench", "--gpu", "--model", "dots.ocr",
                     "--vllm", vllm, "--model-path", weights, "--report-dir", reports,
                     "--golden-dir", tmp_path / "golden", "--update-golden", env=bench_env())
    assert run.returncode == 0, run.stdout[-3000:]
    argv = json.loads(Path(f"{vllm}.argv.json").read_text())
    profile = model_profile("dots.ocr")
    assert argv[:2] == ["serve", str(weights)]
    assert argv[argv.index("--served-model-name") + 1] == profile.hf_ids[0]
    assert " ".join(profile.vllm_flags) in " ".join(argv)
    assert argv[-2:] == list(RANDOM_WEIGHTS_FLAGS)
    results = read_results(next(reports.glob("*/results.json")))
    (record,) = results.records
    assert record.engine == "dots.ocr-v2"  # profile version 2
    assert all(s.error is None for s in record.samples)
    assert "evalsuite: model server ready at" in run.stdout
