"""PaddleOCR-VL (PaddlePaddle/PaddleOCR-VL, its VLM PaddleOCR-VL-0.9B) on ONE element, as the
official client reads an image without its layout model.

Settings from paddlex 3.7.2 (PyPI), the implementation of paddleocr 3.7.0's ``PaddleOCRVL``
(``pipeline_version="v1"``, pipeline ``PaddleOCR-VL``) with ``vl_rec_backend="vllm-server"``.
``predict(use_layout_detection=False)`` (``paddleocr doc_parser --use_layout_detection False``)
makes the whole input image one block labelled ``ocr`` (``prompt_label``'s default), so one
request: no system message, one user message with the image, then "OCR:"; ``temperature`` 0,
``max_completion_tokens`` 4,096 and, as ``extra_body`` (top-level fields of the request),
``skip_special_tokens`` true and ``mm_processor_kwargs`` {min_pixels 112,896, max_pixels
1,003,520} (the server's processor resizes within them). The image goes as JPEG at Pillow's
default quality: the page is JPEG-compressed exactly so (:func:`jpeg_pixels`) and our engine
sends those pixels losslessly as PNG, so the server decodes the same pixels. The answer becomes
the block's content (repetition truncation, ``\\( \\)``/``\\[ \\]`` to ``$``/``$$``) and its
markdown (:mod:`evalsuite.models.convert.paddleocr_vl`).

That is the model's route for a text line (``line_text``) and, by the same switch, for a page
read as one block (``plain_text``). Its whole-page markdown is not: the published pipeline
first runs PP-DocLayoutV2 (layout boxes, reading order), filters and merges the boxes, and sends
each crop with its label's prompt; that model is not run here, so the profile has no
``page_markdown`` task and OmniDocBench/olmOCR-bench refuse it at setup.
"""

from __future__ import annotations

import io

from PIL import Image

from evalsuite.models import (
    LINE_TEXT,
    PLAIN_TEXT,
    Answer,
    Complete,
    ModelProfile,
    TaskPrompt,
    register_model,
)
from evalsuite.models.convert.paddleocr_vl import ocr_block_markdown

PADDLEX = "paddlex 3.7.2 (PyPI) paddlex/inference"
PIPELINE = f"{PADDLEX}/pipelines/paddleocr_vl/pipeline.py"
PREDICTOR = f"{PADDLEX}/models/doc_vlm/predictor.py:DocVLMGenAIClientPredictor"
OCR_PROMPT = "OCR:"
MIN_PIXELS = 112896
MAX_PIXELS = 1003520
MAX_NEW_TOKENS = 4096


def jpeg_bytes(page: Image.Image) -> bytes:
    """``page`` in RGB saved as the client saves a block: ``Image.save(buf, format="JPEG")``
    (Pillow's defaults: quality 75, 4:2:0 subsampling)."""
    with io.BytesIO() as buffer:
        page.convert("RGB").save(buffer, format="JPEG")
        return buffer.getvalue()


def jpeg_pixels(page: Image.Image) -> Image.Image:
    """The pixels a server decodes from :func:`jpeg_bytes` of ``page`` (RGB, same size)."""
    with Image.open(io.BytesIO(jpeg_bytes(page))) as decoded:
        return decoded.convert("RGB")


async def ocr_block(
    profile: ModelProfile, task: str, original: Image.Image, page: Image.Image,
    complete: Complete,
) -> Answer:
    """One ``OCR:`` call on the whole image; the answer as the markdown of that one block."""
    completion = await complete(page, profile.decoding)
    return Answer(ocr_block_markdown(completion.text), completion.text)


PADDLEOCR_VL = register_model(
    ModelProfile(
        name="PaddleOCR-VL",
        version=1,
        hf_ids=("PaddlePaddle/PaddleOCR-VL", "PaddleOCR-VL-0.9B"),
        sources={
            "route": f"{PIPELINE}:_PaddleOCRVLPipeline.predict (use_layout_detection False: one "
            "box of the whole image, label prompt_label or 'ocr'); paddleocr 3.7.0 "
            "paddleocr/_pipelines/paddleocr_vl.py (--use_layout_detection, --prompt_label)",
            "prompts": f"{PIPELINE}:_PaddleOCRVLPipeline."
            "_paddleocr_vl_collect_page_vlm_entries_core (text_prompt 'OCR:' for a non-image "
            "label)",
            "message": f"{PREDICTOR}._doc_vlm_genai_build_request_specs (one user message: "
            "image_url, then text; no system message)",
            "decoding": f"{PREDICTOR}._doc_vlm_genai_build_request_specs (temperature 0, "
            "max_completion_tokens, extra_body skip_special_tokens and, for vllm-server, "
            f"mm_processor_kwargs); {PIPELINE}:_paddleocr_vl_run_vl_recognition_batches "
            "(max_new_tokens 4096, skip_special_tokens True), get_layout_parsing_results "
            "(min_pixels 112896, max_pixels 1003520)",
            "image": f"{PREDICTOR}._genai_client_process (image_format JPEG but for "
            "llama-cpp-server), _doc_vlm_genai_build_request_specs (BGR -> RGB, "
            "Image.save(format='JPEG'))",
            "converter": f"{PIPELINE}:_PaddleOCRVLPipeline._paddleocr_vl_assemble_parsing_results"
            " (truncate_repetitive_content min_count 50, \\( \\[ -> $ $$); "
            f"{PADDLEX}/pipelines/paddleocr_vl/result.py:PaddleOCRVLResult._to_markdown -> "
            f"{PADDLEX}/common/result/converter/markdown_format_funcs.py:"
            "_format_normalize_newlines (label ocr)",
            "serving": f"{PADDLEX}/genai/configs/paddleocr_vl_09b.py:get_config (vllm, CUDA); "
            f"{PADDLEX}/genai/backends/vllm.py:run_vllm_server (served-model-name = "
            "--model_name PaddleOCR-VL-0.9B, chat-template genai/chat_templates/"
            "PaddleOCR-VL-0.9B.jinja)",
        },
        tasks={LINE_TEXT: TaskPrompt(OCR_PROMPT), PLAIN_TEXT: TaskPrompt(OCR_PROMPT)},
        decoding={
            "temperature": 0,
            "max_completion_tokens": MAX_NEW_TOKENS,
            "skip_special_tokens": True,
            "mm_processor_kwargs": {"min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS},
        },
        max_tokens_field="max_completion_tokens",
        vllm_flags=("--trust-remote-code", "--gpu-memory-utilization", "0.5",
                    "--max-model-len", "16384", "--max-num-batched-tokens", "131072",
                    "--api-server-count", "4"),
        image_rule="the image as one block, JPEG at Pillow's default quality (sent as PNG of "
        "the decoded pixels); the server resizes within 112896..1003520 px",
        prepare_image=jpeg_pixels,
        converter="one ocr block: repetition truncation (min 50 chars), \\( \\[ -> $ $$, "
        "newlines doubled",
        pipeline=ocr_block,
        settings_from="paddlex 3.7.2 (paddleocr 3.7.0 `PaddleOCRVL`, pipeline v1) vllm-server "
        "client with `use_layout_detection=False`",
        runs_here="a text line (`line_text`) or a page read as one `OCR:` block (`plain_text`); "
        "request and JPEG equal to the vllm-server client's; block content equal to the "
        "pipeline's on 1,046 blocks and 176 answers, truncation on 405 cases",
        left_out="whole pages (`page_markdown`): the published pipeline needs PP-DocLayoutV2 "
        "(layout detection, reading order, box filtering and block merging, per-label prompts "
        "for tables and formulas), a second model whose weights and runtime (paddle, torch or "
        "onnxruntime) are not run here, so OmniDocBench and olmOCR-bench refuse the profile; "
        "`plain_text` is the layout-off switch, not the published route; vLLM is not started "
        "with paddlex's chat template file; an image under 6 px a side (dropped unread "
        "upstream) is sent",
    )
)
