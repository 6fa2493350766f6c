"""What the DeepSeek engines feed their models: the page image as DeepSeek-OCR loads it, and
prompts carrying DeepSeek's ``<image>`` placeholder."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageOps

from evalsuite.images import open_image

IMAGE_PLACEHOLDER = "<image>"


def load_page_image(image: Path | str | Image.Image) -> Image.Image:
    """``image`` as an RGB PIL image, upright per its EXIF orientation (DeepSeek-OCR's loading).

    A file is read through :func:`~evalsuite.images.open_image`: ImageInputError for a bad one.
    """
    if isinstance(image, Image.Image):
        return ImageOps.exif_transpose(image).convert("RGB")
    if not isinstance(image, (str, Path)):
        raise TypeError(f"image must be a path or a PIL image, got {type(image).__name__}")
    with open_image(image) as opened:
        return ImageOps.exif_transpose(opened).convert("RGB")


def with_image_placeholder(prompt: str) -> str:
    """``prompt`` with ``<image>\\n`` in front unless it already holds the placeholder.

    DeepSeek's prompts mark where the page goes; without the mark its processors have nowhere to
    put the vision tokens (and DeepSeek-OCR's ``infer(eval_mode=True)`` returns nothing).
    """
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be str, got {type(prompt).__name__}")
    return prompt if IMAGE_PLACEHOLDER in prompt else f"{IMAGE_PLACEHOLDER}\n{prompt}"
