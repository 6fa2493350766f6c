"""The noise pages of the DeepSeek preprocessing reference cases
(``tests/fixtures/deepseek_reference/official_preprocess.json``, its ``generator`` field): every
pixel differs, so any difference in resizing, padding or cropping shows."""

from __future__ import annotations

import numpy as np
from PIL import Image


def synthetic_page(width: int, height: int) -> Image.Image:
    """A ``width`` x ``height`` RGB page of seeded uniform noise."""
    rng = np.random.default_rng(width * 100_003 + height)
    return Image.fromarray(rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8), "RGB")
