"""Qwen2.5-VL and Qwen3-VL as general VLMs on document pages, as OmniDocBench runs them.

Settings from OmniDocBench's own inference scripts (opendatalab/OmniDocBench 9dc1dec,
``tools/model_infer/``), the source of its published Qwen figures:

- ``Qwen2VL_img2md.py`` (transformers, used for Qwen2-VL and Qwen2.5-VL): the markdown prompt as
  a raw string (its lines indented by 8 spaces, ``\\\\[ \\\\]`` kept doubled), the page before the
  text, no system message; greedy decoding (``do_sample=False``, here temperature 0) with up to
  32,000 new tokens; the page resized by qwen-vl-utils' ``fetch_image`` (``smart_resize``, factor
  28, 4·28² to 16384·28² pixels, Pillow's bicubic filter).
- ``Qwen3-VL-235B_img2md.py`` (an OpenAI-compatible API): the same prompt as a plain string, the
  text before the page, no decoding field at all (the server's defaults), the page file as it is;
  the answer written with ``print``, so the page ends with one more newline.

Deliberate deviations: Qwen3-VL's script streams and stops at the chunk that carries a
``finish_reason`` without adding that chunk's text; here the whole answer is taken. It sends
the file's bytes labelled JPEG; here the page goes as a lossless PNG of the same pixels.
"""

from __future__ import annotations

from PIL import Image

from evalsuite.models import (
    PAGE_MARKDOWN,
    Answer,
    Complete,
    ModelProfile,
    TaskPrompt,
    register_model,
)
from evalsuite.models.resize import QWEN_VL_UTILS, resized

OMNIDOCBENCH = "opendatalab/OmniDocBench@9dc1dec tools/model_infer"
MARKDOWN_PROMPT = (
    "You are an AI assistant specialized in converting PDF images to Markdown format. Please "
    "follow these instructions for the conversion:\n\n"
    "1. Text Processing:\n"
    "- Accurately recognize all text content in the PDF image without guessing or inferring.\n"
    "- Convert the recognized text into Markdown format.\n"
    "- Maintain the original document structure, including headings, paragraphs, lists, etc.\n\n"
    "2. Mathematical Formula Processing:\n"
    "- Convert all mathematical formulas to LaTeX format.\n"
    "- Enclose inline formulas with \\( \\). For example: This is an inline formula "
    "\\( E = mc^2 \\)\n"
    "- Enclose block formulas with \\[ \\]. For example: "
    "\\[ \\frac{-b \\pm \\sqrt{b^2 - 4ac}}{2a} \\]\n\n"
    "3. Table Processing:\n"
    "- Convert tables to HTML format.\n"
    "- Wrap the entire table with <table> and </table>.\n\n"
    "4. Figure Handling:\n"
    "- Ignore figures content in the PDF image. Do not attempt to describe or convert images.\n\n"
    "5. Output Format:\n"
    "- Ensure the output Markdown document has a clear structure with appropriate line breaks "
    "between elements.\n"
    "- For complex layouts, try to maintain the original document's structure and format as "
    "closely as possible.\n\n"
    "Please strictly follow these guidelines to ensure accuracy and consistency in the "
    "conversion. Your task is to accurately convert the content of the PDF image into Markdown "
    "format without adding any extra explanations or comments.\n"
)
"""``Qwen3-VL-235B_img2md.py``'s prompt."""
_INDENT = " " * 8
PDF_PAGES = ("; PDF pages come at the benchmark's own rendering (the script reads page "
             "images only)")


def raw_string_prompt(prompt: str) -> str:
    """``Qwen2VL_img2md.py``'s spelling of ``prompt``: written as an indented ``r'''…'''``
    literal, so every line after the first but the empty ones starts with 8 spaces, the text
    ends with them, and the block-formula example's first ``\\[ \\]`` keeps two backslashes."""
    lines = prompt.split("\n")
    indented = [lines[0], *(_INDENT + line if line else line for line in lines[1:-1]), _INDENT]
    return "\n".join(indented).replace("with \\[ \\]", "with \\\\[ \\\\]", 1)


def prepare_page(page: Image.Image) -> Image.Image:
    """qwen-vl-utils' ``fetch_image`` with its defaults: RGB, ``smart_resize`` size, bicubic."""
    height, width = QWEN_VL_UTILS.size(page.height, page.width)
    return resized(page, (width, height))


async def printed_page(
    profile: ModelProfile, task: str, original: Image.Image, page: Image.Image,
    complete: Complete,
) -> Answer:
    """One call; the page is the answer as ``print(result, file=f)`` writes it (one more
    newline)."""
    completion = await complete(page, profile.decoding)
    return Answer(completion.text + "\n", completion.text)


_SETTINGS_FROM = "OmniDocBench's own script (9dc1dec tools/model_infer/{})"
QWEN25_VL = register_model(
    ModelProfile(
        name="Qwen2.5-VL",
        version=1,
        hf_ids=("Qwen/Qwen2.5-VL-72B-Instruct", "Qwen/Qwen2.5-VL-32B-Instruct",
                "Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-3B-Instruct"),
        sources={
            "prompts": f"{OMNIDOCBENCH}/Qwen2VL_img2md.py (prompt)",
            "message": f"{OMNIDOCBENCH}/Qwen2VL_img2md.py (image, then text)",
            "decoding": f"{OMNIDOCBENCH}/Qwen2VL_img2md.py (max_new_tokens 32000, "
            "do_sample False)",
            "image": "qwen-vl-utils 0.0.14 qwen_vl_utils/vision_process.py:fetch_image, "
            "smart_resize",
        },
        tasks={PAGE_MARKDOWN: TaskPrompt(raw_string_prompt(MARKDOWN_PROMPT))},
        decoding={"temperature": 0.0, "max_tokens": 32000},
        image_rule="qwen-vl-utils smart_resize (factor 28, 3136..12845056 px), bicubic",
        prepare_image=prepare_page,
        converter="none (the answer is the page)",
        settings_from=_SETTINGS_FROM.format("Qwen2VL_img2md.py"),
        runs_here="page → markdown with OmniDocBench's prompt; prompt and message order equal "
        "its script's",
        left_out="sampling is greedy as `temperature` 0 (the script sets `do_sample=False`)"
        + PDF_PAGES,
    )
)
QWEN3_VL = register_model(
    ModelProfile(
        name="Qwen3-VL",
        version=1,
        hf_ids=("Qwen/Qwen3-VL-235B-A22B-Instruct", "Qwen/Qwen3-VL-235B-A22B-Instruct-FP8",
                "qwen/qwen3-vl-235b-a22b-instruct", "Qwen/Qwen3-VL-30B-A3B-Instruct",
                "Qwen/Qwen3-VL-8B-Instruct", "Qwen/Qwen3-VL-4B-Instruct"),
        sources={
            "prompts": f"{OMNIDOCBENCH}/Qwen3-VL-235B_img2md.py (prompt)",
            "message": f"{OMNIDOCBENCH}/Qwen3-VL-235B_img2md.py (text, then image_url)",
            "decoding": f"{OMNIDOCBENCH}/Qwen3-VL-235B_img2md.py (no decoding field)",
            "converter": f"{OMNIDOCBENCH}/Qwen3-VL-235B_img2md.py (print(result, file=f))",
        },
        tasks={PAGE_MARKDOWN: TaskPrompt(MARKDOWN_PROMPT, image_first=False)},
        max_tokens_field="max_tokens",
        image_rule="the page as given (the server's processor resizes)",
        converter="the answer and a newline (print)",
        pipeline=printed_page,
        settings_from=_SETTINGS_FROM.format("Qwen3-VL-235B_img2md.py"),
        runs_here="page → markdown with OmniDocBench's prompt, the server's own decoding "
        "defaults; prompt and message order equal its script's",
        left_out="streaming (its script drops the text of the chunk that ends the answer); the "
        "page goes as PNG, not the file's bytes" + PDF_PAGES,
    )
)
