"""PaddleOCR-VL's profile against the unmodified official client code (paddlex 3.7.2):
the request its vllm-server client sends for an ``OCR:`` block, the JPEG it encodes, the block's
content and markdown on the layout-off route; and end to end through ``pytest benches``.

Cases in tests/fixtures/models/paddleocr_vl/, each made by the ``gen_*.py`` beside it.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from evalsuite.engines import InferenceRequest, create_engine
from evalsuite.models import LINE_TEXT, PLAIN_TEXT, model_profile
from evalsuite.models.convert.paddleocr_vl import (
    ocr_block_content,
    ocr_block_markdown,
    truncate_repetitive_content,
)
from evalsuite.models.paddleocr_vl import PADDLEOCR_VL, jpeg_bytes, jpeg_pixels
from tests.models.test_served import FIXTURES, PeerServer, decoded, load_cases, running
from tests.support.faults import bench_env
from tests.support.subprocess_runs import run_pytest

CASES = FIXTURES / "paddleocr_vl"
ANSWER = "Results of \\(x^2\\) in $1$ run\n\nand more"
"""An answer whose handling shows: its $ go, \\( \\) become $ and its newlines doubled."""


def server(answer: str = ANSWER, served: tuple[str, ...] = PADDLEOCR_VL.hf_ids[1:]
           ) -> PeerServer:
    """A strict server of the profile: only the fields the vllm-server client sends; served
    as the genai_server names it."""
    return PeerServer(frozenset(PADDLEOCR_VL.decoding), lambda b, p: (answer, "stop"), served)


def block_image() -> Image.Image:
    """gen_paddleocr_vl_requests.py's block: 64x24 white, row 12 = (4x mod 256, 0, 128)."""
    image = Image.new("RGB", (64, 24), (255, 255, 255))
    for x in range(64):
        image.putpixel((x, 12), (x * 4 % 256, 0, 128))
    return image


def official_ocr_call() -> dict[str, Any]:
    """The vllm-server client's call for the "OCR:" block with the pipeline's arguments."""
    (case,) = [c for c in load_cases(CASES / "paddleocr_vl_requests.json.gz")
               if c["input"]["backend"] == "vllm-server"
               and c["input"]["kwargs_name"] == "pipeline_default"]
    (call,) = [c for c in case["output"]["calls"]
               if c["messages"][0]["content"][1]["text"] == "OCR:"]
    return call


@pytest.mark.parametrize("task", [LINE_TEXT, PLAIN_TEXT])
def test_request_equals_the_vllm_server_clients(task: str) -> None:
    """The body the engine sends is the client's call: its ``extra_body`` as top-level fields
    (the OpenAI client merges them so), the other keyword arguments but the client's own
    (``timeout``, ``return_future``), one user message, image then "OCR:", the model the
    server lists; the image is the JPEG the client encodes, decoded (PNG on the wire)."""
    call = official_ocr_call()
    fake = server()
    with running(fake):
        engine = create_engine("openai", api_base=fake.api_base, model_profile="paddleocr-vl")
        result = engine.infer(InferenceRequest(block_image(), "unused", "native", "b",
                                               task=task))
    assert result.error is None, result.error
    (body,) = fake.bodies
    official_fields = {k: v for k, v in call.items()
                       if k not in ("messages", "extra_body", "timeout", "return_future")}
    assert {k: v for k, v in body.items() if k not in ("model", "messages")} == {
        **official_fields, **call["extra_body"]}
    assert body["model"] == "PaddleOCR-VL-0.9B"
    (message,) = body["messages"]
    (official,) = call["messages"]
    assert message["role"] == official["role"] == "user"
    image, text = message["content"]
    official_image, official_text = official["content"]
    assert text == official_text == {"type": "text", "text": "OCR:"}
    assert image["type"] == official_image["type"] == "image_url"
    sent = decoded(image["image_url"]["url"])
    assert list(sent.size) == official_image["image_url"]["decoded_size"]
    assert sent.convert("RGB").tobytes() == jpeg_pixels(block_image()).tobytes()
    assert result.text == ocr_block_markdown(ANSWER) == "Results of  $ x^2 $ in 1 run\n\nand more"
    assert result.settings["raw_answer"] == ANSWER


def test_jpeg_bytes_equal_the_clients() -> None:
    """The client's data URL payload, hashed, for the same block (same Pillow as the cases')."""
    official = official_ocr_call()["messages"][0]["content"][0]["image_url"]
    assert official["prefix"] == "data:image/jpeg;base64,"
    payload = base64.b64encode(jpeg_bytes(block_image()))
    assert hashlib.sha256(payload).hexdigest() == official["payload_sha256"]
    pixels = jpeg_pixels(block_image())
    assert pixels.mode == "RGB" and pixels.size == (64, 24)
    assert pixels.tobytes() != block_image().tobytes()  # JPEG is lossy: the artefacts are sent


def test_decoding_is_the_vllm_server_defaults_of_every_prompt() -> None:
    """Every block prompt of the pipeline gets the same fields from the client; the profile
    sends them, ``max_completion_tokens`` being what --max-new-tokens sets."""
    (case,) = [c for c in load_cases(CASES / "paddleocr_vl_requests.json.gz")
               if c["input"]["backend"] == "vllm-server"
               and c["input"]["kwargs_name"] == "pipeline_default"]
    assert len(case["output"]["calls"]) == 6
    for call in case["output"]["calls"]:
        fields = {k: v for k, v in call.items()
                  if k not in ("messages", "extra_body", "timeout", "return_future")}
        assert {**fields, **call["extra_body"]} == PADDLEOCR_VL.decoding
    assert PADDLEOCR_VL.max_tokens_field == "max_completion_tokens"
    assert PADDLEOCR_VL.task(LINE_TEXT).system is None
    assert PADDLEOCR_VL.task(LINE_TEXT).image_first and PADDLEOCR_VL.task(PLAIN_TEXT).image_first


TRUNCATE_CASES = load_cases(CASES / "paddleocr_vl_truncate.json.gz")


def test_repetition_truncation_equals_the_official() -> None:
    """uilts.truncate_repetitive_content at the pipeline's two min_counts and its default."""
    compared = 0
    for case in TRUNCATE_CASES:
        for key, min_count in (("min_count_50_other", 50), ("min_count_5000_table", 5000),
                               ("default_3000", 3000)):
            assert truncate_repetitive_content(case["input"], min_count) == \
                case["output"][key], (key, case["input"][:80])
            compared += 1
    assert compared == 405
    assert sum(c["output"]["min_count_50_other"] != c["input"] for c in TRUNCATE_CASES) >= 50


def test_block_content_equals_the_assembly_for_every_text_like_block() -> None:
    """_paddleocr_vl_assemble_parsing_results on the generated pages: every block that got an
    answer and is no table or formula number (which it treats otherwise) has the content of
    an ``OCR:`` block."""
    compared = 0
    for case in load_cases(CASES / "paddleocr_vl_page.json.gz"):
        blocks = case["output"]["blocks"]
        assert len(blocks) == len(case["input"])
        for given, block in zip(case["input"], blocks, strict=True):
            if given["label"] in ("table", "formula_number", "image", "header_image",
                                  "footer_image", "chart", "seal"):
                continue
            assert ocr_block_content(given["answer"]) == block["content"], given
            compared += 1
    assert compared == 1046


OCR_BLOCK_CASES = load_cases(CASES / "paddleocr_vl_ocr_block.json.gz")


def test_answer_equals_the_layout_off_routes_markdown() -> None:
    """One block labelled ``ocr`` (predict(use_layout_detection=False)): its content and the
    markdown the CLI saves (pretty=True; pretty=False is the same for this label)."""
    blocks = [c for c in OCR_BLOCK_CASES if c["input"]["function"] != "filter_overlap_boxes"]
    assert len(blocks) == 176
    for case in blocks:
        answer, output = case["input"]["answer"], case["output"]
        assert ocr_block_content(answer) == output["content"], answer
        assert ocr_block_markdown(answer) == output["markdown_pretty_True"] == \
            output["markdown_pretty_False"], answer
    assert sum(ocr_block_markdown(c["input"]["answer"]) != c["input"]["answer"]
               for c in blocks) >= 50


def test_the_layout_off_route_reads_any_image_of_6_px_a_side_or_more() -> None:
    """filter_overlap_boxes keeps the one whole-image box unless a side is under 6 px (what
    the profile sends anyway: its left_out says so)."""
    boxes = {tuple(c["input"]["size"]): c["output"]["kept"] for c in OCR_BLOCK_CASES
             if c["input"]["function"] == "filter_overlap_boxes"}
    assert boxes == {(64, 24): 1, (1224, 1584): 1, (6, 6): 1, (5, 40): 0, (40, 5): 0,
                     (600, 8): 1}
    assert "under 6 px" in PADDLEOCR_VL.left_out


def test_profile_names_its_checkpoint_and_the_genai_servers_name() -> None:
    assert model_profile("PaddleOCR-VL") is PADDLEOCR_VL
    assert PADDLEOCR_VL.hf_ids == ("PaddlePaddle/PaddleOCR-VL", "PaddleOCR-VL-0.9B")
    assert "page_markdown" not in PADDLEOCR_VL.tasks
    assert "PP-DocLayoutV2" in PADDLEOCR_VL.left_out


@pytest.mark.slow
def test_benches_run_and_gate_surya_recognition(tmp_path: Path) -> None:
    """``pytest benches -m surya_recognition --model PaddleOCR-VL --api-base URL``: sets
    goldens, then gates against them; every line is one "OCR:" call whose answer is
    converted."""
    from evalsuite.records.results import read_results

    reports, golden = tmp_path / "reports", tmp_path / "golden"
    fake = server("Results of \\(x\\)")
    with running(fake):
        args = ("benches", "-m", "surya_recognition", "--model", "PaddleOCR-VL",
                "--api-base", fake.api_base, "--golden-dir", golden, "--report-dir", reports)
        first = run_pytest(*args, "--update-golden", env=bench_env())
        assert first.returncode == 0, first.stdout[-3000:]
        again = run_pytest(*args, env=bench_env())
        assert again.returncode == 0, again.stdout[-3000:]
    assert fake.bodies and all(b["messages"][0]["content"][1]["text"] == "OCR:"
                               for b in fake.bodies)
    results = sorted(reports.glob("*/results.json"))[-1]
    records = read_results(results).records  # one per data source
    assert records and {(r.benchmark, r.engine) for r in records} == {
        ("surya_recognition", "paddleocr-vl")}
    samples = [sample for record in records for sample in record.samples]
    assert len(samples) == len(fake.bodies) // 2  # two runs
    assert samples and all(s.error is None for s in samples)
    assert {s.prediction for s in samples} == {"Results of  $ x $"}
    settings = samples[0].details["settings"]
    assert settings["model_profile"]["name"] == "PaddleOCR-VL" and settings["mode"] == "native"


@pytest.mark.slow
def test_omnidocbench_fails_at_setup_naming_the_profiles_tasks(tmp_path: Path) -> None:
    fake = server()
    with running(fake):
        done = run_pytest("benches", "-m", "omnidocbench", "--model", "PaddleOCR-VL",
                          "--api-base", fake.api_base, "--golden-dir", tmp_path,
                          "--report-dir", tmp_path, "--omnidocbench-version", "1.0",
                          env=bench_env())
    assert done.returncode == 1, done.stdout[-3000:]
    assert ("omnidocbench: model 'PaddleOCR-VL' has no prompt for task 'page_markdown' "
            "(its tasks: line_text, plain_text); run it on benchmarks of those tasks"
            ) in done.stdout
    assert fake.bodies == []
