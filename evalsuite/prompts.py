"""The prompts the benchmarks send, in DeepSeek-OCR's conventions, and the text condition's image.

DeepSeek-OCR always takes an image; the studies' "text" condition passes the context in the
prompt with a blank 32 x 32 white image, as galah92/deepseek-ocr-eval did, processed in
:data:`TEXT_CONDITION_MODE` whatever the mode of the vision condition.
"""

from __future__ import annotations

from functools import cache

from PIL import Image

FREE_OCR = "<image>\nFree OCR."
MARKDOWN = "<image>\n<|grounding|>Convert the document to markdown."
BLANK_IMAGE_SIZE = 32
TEXT_CONDITION_MODE = "tiny"
"""DeepSeek-OCR's mode for the text condition's blank image: the study ran it at base_size =
image_size = 512 without crops (``run_text_condition`` in galah92/deepseek-ocr-eval), which is
the tiny mode, while its vision condition ran in the experiment's mode."""


@cache
def blank_image() -> Image.Image:
    """The text condition's stand-in image: 32 x 32 white. Do not mutate the shared instance."""
    return Image.new("RGB", (BLANK_IMAGE_SIZE, BLANK_IMAGE_SIZE), "white")


def text_condition_prompt(context: str, question: str) -> str:
    """Context in the prompt: ``<image>\\n{context}\\n\\n{question}`` (the image is blank)."""
    return f"<image>\n{context}\n\n{question}"


def vision_condition_prompt(question: str) -> str:
    """Context in the image: ``<image>\\n\\n{question}``."""
    return f"<image>\n\n{question}"


def qa_question(question: str) -> str:
    """The study's question format: ``Question: {question}\\nAnswer:``."""
    return f"Question: {question}\nAnswer:"
