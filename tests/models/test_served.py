"""Peer model profiles through the served engine, against a fake OpenAI-compatible server that
refuses any field the profile's official runner does not send, and end to end through
``pytest benches --model NAME --api-base URL``.

dots.ocr's request and page are compared with its unmodified parser
(tests/fixtures/models/dots_ocr/dots_ocr_parser.json.gz, made by gen_dots_ocr_parser.py beside
it); olmOCR-2's with olmocr's ``build_page_query`` cases and its retry ladder over HTTP.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from PIL import Image

from evalsuite.datasets.pages import render_pdf_page
from evalsuite.engines import InferenceRequest, create_engine
from evalsuite.errors import EngineUnavailableError
from evalsuite.models import available_models, model_profile
from evalsuite.models.dots_ocr import DOTS_OCR
from evalsuite.models.olmocr import OLMOCR_2
from evalsuite.models.resize import QWEN_VL_UTILS, side_scaled
from tests.support.fake_servers import chat_app, serving
from tests.support.faults import bench_env
from tests.support.paths import TEST_FIXTURES
from tests.support.subprocess_runs import run_pytest

FIXTURES = TEST_FIXTURES / "models"
Answerer = Callable[[dict[str, Any], Image.Image], tuple[str, str]]


def load_cases(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)["cases"]


def decoded(data_url: str) -> Image.Image:
    header, _, data = data_url.partition(",")
    assert header == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(data)))


@dataclass
class PeerServer:
    """A model server for one profile: it lists ``served``, refuses (HTTP 400, as OpenAI does)
    a body with a field outside ``model``, ``messages`` and the profile's decoding fields, and
    answers with ``answer(body, page)`` (text, finish_reason)."""

    profile_fields: frozenset[str]
    answer: Answerer
    served: tuple[str, ...]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    api_base: str = ""

    async def models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": m} for m in self.served]})

    async def completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        unknown = set(body) - {"model", "messages"} - self.profile_fields
        if unknown or body["model"] not in self.served:
            message = f"Unrecognized request argument supplied: {sorted(unknown)}" if unknown \
                else f"The model `{body['model']}` does not exist."
            return web.json_response({"error": {"message": message}}, status=400)
        content = body["messages"][-1]["content"]
        (image,) = [part for part in content if part["type"] == "image_url"]
        text, finish = self.answer(body, decoded(image["image_url"]["url"]))
        return web.json_response({
            "choices": [{"message": {"content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": len(text),
                      "total_tokens": 1000 + len(text)},
        })


@contextlib.contextmanager
def running(server: PeerServer) -> Iterator[PeerServer]:
    """``server`` on a free port of 127.0.0.1, its event loop in a thread."""
    with serving(chat_app(server.models, server.completions)) as api_base:
        server.api_base = api_base
        yield server


def synthetic_page(width: int, height: int, seed: int) -> Image.Image:
    """gen_dots_ocr_layoutjson2md's page: (31x + 17y + s, x² + 7y + 3s, x ^ y ^ s) mod 256."""
    y, x = np.mgrid[0:height, 0:width].astype(np.int64)
    pixels = np.stack([(31 * x + 17 * y + seed) % 256, (x * x + 7 * y + 3 * seed) % 256,
                       (x ^ y ^ seed) % 256], axis=-1).astype(np.uint8)
    return Image.fromarray(pixels, "RGB")


DOTS_ANSWER = json.dumps([
    {"bbox": [10, 8, 300, 40], "category": "Page-header", "text": "Journal of Tests 12"},
    {"bbox": [20, 50, 600, 90], "category": "Title", "text": "# Results"},
    {"bbox": [20, 100, 900, 300], "category": "Text", "text": "The table shows the results."},
    {"bbox": [20, 310, 500, 360], "category": "Formula", "text": "$$E = mc^2$$"},
    {"bbox": [20, 370, 900, 600], "category": "Table",
     "text": "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>"},
    {"bbox": [10, 900, 200, 930], "category": "Page-footer", "text": "3"},
])
OLMOCR_ANSWER = (
    "---\nprimary_language: en\nis_rotation_valid: True\nrotation_correction: 0\n"
    "is_table: True\nis_diagram: False\n---\n# Results\n\nThe table shows the results.\n\n"
    "\\[E = mc^2\\]\n\n<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>"
)


def olmocr_answers() -> Answerer:
    """olmOCR-2's answers: each page's first call is cut off (``length``), then answered."""
    seen: set[bytes] = set()

    def answer(body: dict[str, Any], page: Image.Image) -> tuple[str, str]:
        key = page.tobytes()[:4096] + bytes(str(page.size), "ascii")
        if key not in seen:
            seen.add(key)
            return OLMOCR_ANSWER[:40], "length"
        return OLMOCR_ANSWER, "stop"

    return answer


MARKDOWN_ANSWER = (
    "# Results\n\nThe table shows the results.\n\n\\[E = mc^2\\]\n\n"
    "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>"
)
NANONETS_ANSWER = (
    "<page_number>3</page_number>\n# Results\n\nThe table shows the results.\n\n$$E = mc^2$$"
    "\n\n<table><tr><td>a</td><td>b</td></tr></table>\n<watermark>DRAFT</watermark>"
)


def chandra_answer(bbox: Callable[[int, int, int, int], str]) -> str:
    """Chandra's ``ocr_layout`` answer: top-level layout divs of HTML, with a header and a
    footer its converter leaves out; ``bbox`` writes a box as the version's prompt asks."""
    blocks = [
        ((40, 20, 960, 50), "Page-Header", "<p>Journal of Tests 12</p>"),
        ((50, 60, 600, 100), "Section-Header", "<h1>Results</h1>"),
        ((50, 110, 950, 300), "Text", "<p>The table shows the <b>results</b>.</p>"),
        ((50, 310, 500, 360), "Equation-Block", '<math display="block">E = mc^2</math>'),
        ((50, 370, 950, 600), "Table",
         "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"),
        ((40, 950, 200, 980), "Page-Footer", "<p>3</p>"),
    ]
    return "\n".join(f'<div data-bbox="{bbox(*box)}" data-label="{label}">{html}</div>'
                     for box, label, html in blocks)


CHANDRA_1_ANSWER = chandra_answer(lambda *box: json.dumps(list(box)))
CHANDRA_2_ANSWER = chandra_answer(lambda *box: " ".join(map(str, box)))


def plain_server(name: str, answer: str) -> Callable[[], PeerServer]:
    """A server of profile ``name`` answering ``answer`` to every page."""
    profile = model_profile(name)
    return lambda: PeerServer(frozenset(profile.decoding), lambda b, p: (answer, "stop"),
                              profile.hf_ids[:1])


MINERU_LAYOUT = "\n".join(
    f"<|box_start|>{box}<|box_end|><|ref_start|>{kind}<|ref_end|><|rotate_up|>"
    for box, kind in [("100 40 900 80", "title"), ("100 100 900 300", "text"),
                      ("250 320 750 360", "equation"), ("100 380 900 600", "table"),
                      ("100 620 900 800", "image")])
MINERU_BLOCK_ANSWERS = {
    "\nTable Recognition:": "<fcel>a<fcel>b<nl><fcel>1<fcel>2<nl>",
    "\nFormula Recognition:": "E = mc^2",
}


def mineru_answer(body: dict[str, Any], page: Image.Image) -> tuple[str, str]:
    """MinerU2.5's answers by prompt, each ending in ``<|im_end|>`` (special tokens are kept):
    the layout (a title, text, a formula, a table, an image); a table in OTSL, a formula in
    LaTeX; text by the crop's shape (the title's is five times flatter than the text's)."""
    prompt = body["messages"][1]["content"][1]["text"]
    if prompt == "\nLayout Detection:":
        text = MINERU_LAYOUT
    elif prompt in MINERU_BLOCK_ANSWERS:
        text = MINERU_BLOCK_ANSWERS[prompt]
    elif page.width > 8 * page.height:
        text = "Results"
    else:
        text = "The table shows the results."
    return text + "<|im_end|>", "stop"


SERVERS: dict[str, Callable[[], PeerServer]] = {
    "dots.ocr": plain_server("dots.ocr", DOTS_ANSWER),
    "olmOCR-2": lambda: PeerServer(frozenset(OLMOCR_2.decoding), olmocr_answers(),
                                   OLMOCR_2.hf_ids[1:]),
    "Qwen2.5-VL": plain_server("Qwen2.5-VL", MARKDOWN_ANSWER),
    "Qwen3-VL": plain_server("Qwen3-VL", MARKDOWN_ANSWER),
    "Nanonets-OCR2": plain_server("Nanonets-OCR2", NANONETS_ANSWER),
    "Chandra": plain_server("Chandra", CHANDRA_1_ANSWER),
    "Chandra-2": plain_server("Chandra-2", CHANDRA_2_ANSWER),
    "MinerU2.5": lambda: PeerServer(frozenset(model_profile("MinerU2.5").decoding),
                                    mineru_answer, model_profile("MinerU2.5").hf_ids),
}


def test_every_registered_peer_has_an_end_to_end_server_here() -> None:
    # API models: tests/models/test_api.py; profiles without a page_markdown task (no run of
    # omnidocbench/olmocr_bench) run end to end in their own test files
    peers = {name for name in available_models()
             if model_profile(name).family is None and model_profile(name).unavailable is None
             and model_profile(name).api_base is None
             and "page_markdown" in model_profile(name).tasks}
    assert peers == set(SERVERS)
    assert model_profile("DOTS.OCR") is DOTS_OCR and model_profile("olmocr-2") is OLMOCR_2


@pytest.mark.parametrize(
    "case", load_cases(FIXTURES / "dots_ocr" / "dots_ocr_parser.json.gz"),
    ids=lambda c: f"{c['input']['page']['seed']}-{len(c['input']['response'])}",
)
def test_dots_ocr_request_and_page_equal_its_parser(case: dict[str, Any]) -> None:
    """The body the parser sends (model id aside: the one the server serves), the page's size
    after fitz's rendering, and the markdown it writes for the scorers."""
    spec = case["input"]["page"]
    page = synthetic_page(spec["width"], spec["height"], spec["seed"])
    server = PeerServer(frozenset(DOTS_OCR.decoding),
                        lambda body, image: (case["input"]["response"], "stop"), ("model",))
    with running(server):
        engine = create_engine("openai", api_base=server.api_base, model_profile="dots.ocr",
                               model="model")
        result = engine.infer(InferenceRequest(page, "unused", "native", "p",
                                               task="page_markdown"))
    assert result.error is None, result.error
    official = case["output"]["request"]
    (body,) = server.bodies
    assert body["model"] == official["model"]
    assert {k: v for k, v in body.items() if k not in ("model", "messages")} == \
        official["decoding"]
    (message,) = body["messages"]
    (official_message,) = official["messages"]
    assert message["role"] == official_message["role"]
    image, text = message["content"]
    official_image, official_text = official_message["content"]
    assert text == official_text and image["type"] == official_image["type"]
    sent = decoded(image["image_url"]["url"])
    assert sent.mode == "RGB" and [sent.width, sent.height] == [
        official_image["image_url"]["width"], official_image["image_url"]["height"]]
    assert result.text == case["output"]["markdown"]
    assert result.settings["salvaged"] is case["output"]["filtered"]
    assert result.settings["raw_answer"] == case["input"]["response"]
    assert result.settings["model_profile"]["name"] == "dots.ocr"


def test_olmocr_retries_over_http_with_its_ladder_and_sends_its_page_query() -> None:
    page = Image.new("RGB", (1700, 2200), "white")
    (query,) = [c for c in load_cases(FIXTURES / "olmocr" / "olmocr2_page_query.json.gz")
                if c["input"]["image_rotation"] == 0 and c["input"]["page_rotate"] == 0
                and c["input"]["target_longest_image_dim"] == 1288
                and c["input"]["mediabox_w_pt"] == 612 and c["input"]["mediabox_h_pt"] == 792]
    server = SERVERS["olmOCR-2"]()
    with running(server):
        engine = create_engine("openai", api_base=server.api_base, model_profile="olmocr-2")
        result = engine.infer(InferenceRequest(page, "unused", "native", "p",
                                               task="page_markdown"))
    assert result.error is None, result.error
    assert result.text == OLMOCR_ANSWER.split("---\n", 2)[2].strip()
    assert [(b["temperature"], b["max_tokens"]) for b in server.bodies] == [(0.1, 8000)] * 2
    official = query["output"]["request"]
    for body in server.bodies:
        assert body["model"] == "allenai/olmOCR-2-7B-1025-FP8"  # the checkpoint it serves
        (message,) = body["messages"]
        text, image = message["content"]
        assert text == official["messages"][0]["content"][0]
        sent = decoded(image["image_url"]["url"])
        assert [sent.width, sent.height] == [
            official["messages"][0]["content"][1]["image"][k] for k in ("width", "height")]
    assert result.settings["calls"] == 2 and result.settings["attempts"] == 2
    assert result.settings["model_profile"]["name"] == "olmOCR-2"
    assert engine.default_label == "olmocr-2-v2"  # version 2: -v2


def test_the_label_follows_the_checkpoint_served_under_another_name() -> None:
    """The authors' own command serves dots.ocr as ``model``: vLLM's card says what it loaded
    (``root``), so results still key on the profile; a checkpoint of one's own keys on its id."""
    for root, label in (("rednote-hilab/dots.ocr", "dots.ocr-v2"),
                        ("/ckpt/my-dots-ft", "model-v2")):
        server = PeerServer(frozenset(DOTS_OCR.decoding), lambda b, p: ("", "stop"), ("model",))

        async def models(_: web.Request, root: str = root) -> web.Response:
            return web.json_response({"data": [{"id": "model", "root": root}]})

        server.models = models  # type: ignore[method-assign]
        with running(server):
            engine = create_engine("openai", api_base=server.api_base,
                                   model_profile="dots.ocr", model="model")
        assert engine.default_label == label


def test_a_server_without_the_model_is_refused_naming_what_it_serves() -> None:
    server = PeerServer(frozenset(DOTS_OCR.decoding), lambda b, p: ("", "stop"), ("other/model",))
    with running(server), pytest.raises(EngineUnavailableError) as refused:
        create_engine("openai", api_base=server.api_base, model_profile="dots.ocr")
    assert "'rednote-hilab/dots.ocr'" in str(refused.value)
    assert "it serves: other/model" in str(refused.value)
    assert "--served-model-name" in str(refused.value)


def test_a_task_without_a_prompt_fails_the_sample_naming_the_tasks() -> None:
    server = SERVERS["olmOCR-2"]()
    with running(server):
        engine = create_engine("openai", api_base=server.api_base, model_profile="olmOCR-2")
        result = engine.infer(InferenceRequest(Image.new("RGB", (50, 50)), "Question?",
                                               "native", "q", task="qa"))
    assert result.failed and "no prompt for task 'qa'" in str(result.error)
    assert "page_markdown" in str(result.error) and server.bodies == []


def test_decoding_and_prompt_overrides_reach_every_call_and_change_the_label() -> None:
    server = PeerServer(frozenset({*DOTS_OCR.decoding, "seed"}),
                        lambda b, p: (DOTS_ANSWER, "stop"), DOTS_OCR.hf_ids)
    with running(server):
        plain = create_engine("openai", api_base=server.api_base, model_profile="dots.ocr")
        custom = create_engine("openai", api_base=server.api_base, model_profile="dots.ocr",
                               prompt="Read it.", decoding={"temperature": 0.0, "seed": 7})
        custom.infer(InferenceRequest(Image.new("RGB", (60, 80), "white"), "x", "native", "s",
                                      task="page_markdown"))
    (body,) = server.bodies
    assert body["temperature"] == 0.0 and body["seed"] == 7 and body["top_p"] == 1.0
    assert body["messages"][0]["content"][1]["text"] == "<|img|><|imgpad|><|endofimg|>Read it."
    assert plain.default_label == "dots.ocr-v2"
    assert custom.default_label.startswith("dots.ocr-v2+")


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SERVERS))
def test_benches_run_and_gate_a_peer_with_no_code(name: str, tmp_path: Path) -> None:
    """``pytest benches -m "omnidocbench or olmocr_bench" --model NAME --api-base URL`` on the
    fixtures: sets goldens, then gates against them; olmOCR-bench's scores equal scoring the
    converted pages it wrote with the official rules, and OmniDocBench's predictions are the
    converted markdown.
    Slow (~24-33 s per peer here): two child pytest runs of both benches against the peer's
    fake server (goldens set, then gated), the olmOCR-bench PDFs rendered as its runner does;
    each peer's profile (prompt, decoding, page rendering, conversion) is its own, so no case
    stands for another, and the gate needs the first run's goldens."""
    from evalsuite.datasets.olmocr_bench import load_olmocr_bench
    from evalsuite.metrics.olmocr_bench import score_predictions
    from evalsuite.records.results import read_results

    reports, golden = tmp_path / "reports", tmp_path / "golden"
    server = SERVERS[name]()
    with running(server):
        args = ("benches", "-m", "omnidocbench or olmocr_bench", "--model", name,
                "--api-base", server.api_base, "--golden-dir", golden, "--report-dir", reports,
                "--omnidocbench-version", "1.0")
        first = run_pytest(*args, "--update-golden", env=bench_env())
        assert first.returncode == 0, first.stdout[-3000:]
        again = run_pytest(*args, env=bench_env())
        assert again.returncode == 0, again.stdout[-3000:]
    profile = model_profile(name)
    label = name.lower() + (f"-v{profile.version}" if profile.version != 1 else "")
    results = sorted(reports.glob("*/results.json"))[-1]
    records = {r.benchmark: r for r in read_results(results).records}
    assert set(records) == {"omnidocbench", "olmocr_bench"}
    for record in records.values():
        assert record.engine == label
        assert all(s.error is None for s in record.samples), [s.error for s in record.samples]
        settings = record.samples[0].details["settings"]
        assert settings["model_profile"]["name"] == name and settings["mode"] == "native"
    olmocr = records["olmocr_bench"]
    for sample in olmocr.samples:  # each PDF page rendered as the model's runner renders it
        pdf, page = sample.details["page"].rsplit("#", 1)
        path = FIXTURES.parent / "olmocr_bench" / "fixture" / "pdfs" / pdf
        own = profile.pdf_rendering
        expected = render_pdf_page(path, int(page) - 1, own.dpi) if own else render_pdf_page(
            path, int(page) - 1, longest_side=2048)
        assert sample.details["settings"]["page"] == list(expected.size), sample.id
        prepare = own.prepare if own else profile.prepare_image
        expected = prepare(expected) if prepare is not None else expected
        assert sample.details["settings"]["prepared_page"] == list(expected.size), sample.id
    predictions = results.parent / "olmocr_bench_predictions" / f"{label}-native-fixtures"
    bench = load_olmocr_bench(FIXTURES.parent / "olmocr_bench" / "fixture")
    scores = score_predictions(bench.tests, bench.pdfs, predictions)
    assert scores.errors == []
    assert olmocr.metrics["overall"].value == pytest.approx(scores.overall, abs=1e-12)
    written = sorted((results.parent / "omnidocbench_predictions").rglob("*.md"))
    assert written and {p.read_text(encoding="utf-8") for p in written} == {
        s.prediction for s in records["omnidocbench"].samples}
    entries = json.loads((golden / "olmocr_bench.json").read_text())["entries"]
    assert {entry["engine"] for entry in entries} == {label}


PINNED_SETTINGS = {
    ("Chandra", 2): "608cb8eef87c922e",
    ("Chandra-2", 2): "14f9200f0aa32b9a",
    ("deepseek-ocr", 1): "f9ac6768ad539e39",
    ("deepseek-ocr-2", 1): "4973fbbaf6275ffa",
    ("dots.ocr", 2): "a1e60d988a3fbafc",
    ("Gemini-2.5-Flash", 2): "d2b4d2cf5cd24723",
    ("GOT-OCR2", 1): "4207c183f13ab730",
    ("GPT-4o", 2): "6447d4ab41f7c513",
    ("GPT-5", 2): "0ca86802525dfcf0",
    ("MinerU2.5", 2): "9a413b227d0fa311",
    ("Nanonets-OCR2", 2): "f9cddf10f819804e",
    ("olmOCR-2", 2): "393460904ecb5c8c",
    ("PaddleOCR-VL", 1): "f1fdbcb935dce757",
    ("Qwen2.5-VL", 1): "a2e08900392d9622",
    ("Qwen3-VL", 1): "77524f54e25c4dda",
}
"""Each profile version's settings, hashed: a changed prompt, decoding, image rule, converter,
checkpoint list or vLLM flag must come with a new version (a new golden series)."""


@pytest.mark.parametrize("name", available_models())
def test_a_profile_setting_changes_only_with_its_version(name: str) -> None:
    profile = model_profile(name)
    settings = {**profile.settings(), "vllm_flags": list(profile.vllm_flags),
                "hf_ids": list(profile.hf_ids)}
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    assert PINNED_SETTINGS.get((profile.name, profile.version)) == digest, (
        f"{name}'s settings changed: raise its version and pin {digest} for it here")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--model", "no-such-model"],
         "unknown model 'no-such-model'; choose one of: Chandra, Chandra-2, deepseek"),
        (["--prompt", "Read."], "--prompt needs --model NAME"),
        (["--model", "dots.ocr", "--engine", "tesseract"], "runs on the served engines"),
        (["--model", "dots.ocr"], "vllm serve rednote-hilab/dots.ocr --trust-remote-code"),
        (["--model", "dots.ocr", "--api-base", "http://127.0.0.1:9/v1", "--api-key-env",
          "EVALSUITE_NO_SUCH_KEY"], "--api-key-env EVALSUITE_NO_SUCH_KEY: the variable is not set"),
        (["--model", "dots.ocr", "--api-base", "http://127.0.0.1:9/v1", "--decoding", "x"],
         "--decoding 'x': expected KEY=VALUE"),
        (["--model", "deepseek-ocr", "--served-model", "deepseek-ocr-2"], "name different models"),
        (["--model", "got-ocr2", "--api-base", "http://127.0.0.1:9/v1"],
         "--model GOT-OCR2: vLLM does not serve GOT-OCR2"),
    ],
)
def test_model_options_are_checked_before_anything_runs(
    options: list[str], message: str, tmp_path: Path
) -> None:
    done = run_pytest("benches/test_olmocr_bench.py", *options, "--report-dir", tmp_path,
                      "--golden-dir", tmp_path, env=bench_env())
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert message in done.stderr


@pytest.mark.slow
def test_a_stock_server_runs_the_benches_with_the_generic_request(tmp_path: Path) -> None:
    """``--engine openai --api-base URL`` and no model named: every sample is answered by a
    server that refuses DeepSeek's fields (was: an error at setup, then HTTP 400s)."""
    from evalsuite.records.results import read_results

    server = PeerServer(frozenset({"temperature", "max_tokens"}),
                        lambda body, page: ("# Results\n\nThe table shows the results.", "stop"),
                        ("some/model",))
    with running(server):
        done = run_pytest("benches/test_olmocr_bench.py", "--engine", "openai", "--api-base",
                          server.api_base, "--update-golden", "--golden-dir", tmp_path / "golden",
                          "--report-dir", tmp_path / "reports", env=bench_env())
    assert done.returncode == 0, done.stdout[-3000:]
    (results,) = (tmp_path / "reports").glob("*/results.json")
    (record,) = read_results(results).records
    assert record.engine == "model" and record.params["mode"] == "native"
    assert record.samples and all(sample.error is None for sample in record.samples)
    assert all(set(body) == {"model", "messages", "temperature", "max_tokens"}
               for body in server.bodies)


def test_qwen_prompts_and_message_order_equal_omnidocbench_scripts() -> None:
    cases = {c["input"]["script"]: c["output"]
             for c in load_cases(FIXTURES / "qwen_vl" / "qwen_vl_prompts.json.gz")}
    for name, script in (("Qwen2.5-VL", "Qwen2VL_img2md.py"),
                         ("Qwen3-VL", "Qwen3-VL-235B_img2md.py")):
        prompt = model_profile(name).task("page_markdown")
        assert prompt.user_text == cases[script]["prompt"], name
        assert prompt.system is None
        assert prompt.image_first is cases[script]["content_order"][0].startswith("image")


def test_qwen_page_is_qwen_vl_utils_size_and_qwen3_adds_prints_newline() -> None:
    server = SERVERS["Qwen2.5-VL"]()
    page = Image.new("RGB", (1700, 2200), "white")
    with running(server):
        result = create_engine("openai", api_base=server.api_base, model_profile="qwen2.5-vl"
                               ).infer(InferenceRequest(page, "x", "native", "p",
                                                        task="page_markdown"))
    (body,) = server.bodies
    image, _ = body["messages"][0]["content"]
    height, width = QWEN_VL_UTILS.size(2200, 1700)
    assert decoded(image["image_url"]["url"]).size == (width, height) != page.size
    assert body["temperature"] == 0.0 and body["max_tokens"] == 32000
    assert result.text == MARKDOWN_ANSWER
    server = SERVERS["Qwen3-VL"]()
    with running(server):
        result = create_engine("openai", api_base=server.api_base, model_profile="qwen3-vl"
                               ).infer(InferenceRequest(page, "x", "native", "p",
                                                        task="page_markdown"))
    (body,) = server.bodies
    assert set(body) == {"model", "messages"}
    assert decoded(body["messages"][0]["content"][1]["image_url"]["url"]).size == page.size
    assert result.text == MARKDOWN_ANSWER + "\n"


NANONETS_CASES = load_cases(FIXTURES / "nanonets" / "nanonets_olmocr_runner_server.json.gz")


def test_nanonets_request_equals_olmocr_bench_runner() -> None:
    """run_nanonetsocr_2.run_server with its defaults: the same body (the page aside) and the
    same page size: poppler's at the dpi it asked for, shortest side 1280."""
    defaults = [c for c in NANONETS_CASES if c["input"]["kwargs"] == {}]
    assert len(defaults) >= 20
    server = SERVERS["Nanonets-OCR2"]()
    with running(server):
        engine = create_engine("openai", api_base=server.api_base, model_profile="nanonets-ocr2")
        result = engine.infer(InferenceRequest(Image.new("RGB", (612, 792), "white"), "x",
                                               "native", "p", task="page_markdown"))
    assert result.text == NANONETS_ANSWER  # no converter upstream: the tags stay
    (body,) = server.bodies
    official = defaults[0]["output"]["http"][1]["post"]["json"]
    assert {k: v for k, v in body.items() if k != "messages"} == {
        k: v for k, v in official.items() if k != "messages"}
    (system, user), (official_system, official_user) = body["messages"], official["messages"]
    assert system == official_system and user["role"] == official_user["role"]
    assert user["content"][1] == official_user["content"][1]
    assert [part["type"] for part in user["content"]] == [
        part["type"] for part in official_user["content"]]
    checked = 0
    for case in defaults:
        (argv,) = case["output"]["pdftoppm_argv"]
        dpi = float(argv[argv.index("-r") + 1])
        sides = case["input"]["mediabox"]
        ours = side_scaled(*sides, 1280, side="shortest")
        short = sides.index(min(sides))
        # poppler's ⌈⌉ of a product meant to be 1280 gives 1281 by float noise at times
        assert ours[short] == 1280 and math.ceil(sides[short] * dpi / 72) in (1280, 1281)
        other = 1 - short
        product = sides[other] * dpi / 72
        if abs(product - round(product)) > 1e-6:
            assert ours[other] == math.ceil(product), case["input"]
            checked += 1
    assert checked >= 10


def test_a_model_no_server_runs_is_refused_saying_why() -> None:
    with pytest.raises(EngineUnavailableError, match="vLLM does not serve GOT-OCR2"):
        create_engine("openai", api_base="http://127.0.0.1:9/v1", model_profile="GOT-OCR2")
