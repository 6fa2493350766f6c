"""evalsuite's vLLM plugin against the suite's reference of DeepSeek's preprocessing
(evalsuite.engines.deepseek_views, itself checked against DeepSeek's code in
tests/engines/test_deepseek_views.py), through vLLM's own chat renderer and multimodal processor: a
grid of page sizes x every DeepSeek-OCR mode. The negative control runs the same grid through the
stock vLLM class, which must show its known mismatches."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from evalsuite.engines.deepseek_views import (
    DEEPSEEK_OCR_VIEWS,
    crop_grid,
    image_token_count,
    normalized,
    page_views,
)
from evalsuite.tokenizer import deepseek_ocr_tokenizer
from evalsuite.vllm_plugin import ARCHITECTURES, MODE_KWARG
from tests.support.synthetic_pages import synthetic_page

IMAGE_TOKEN_ID = 128815
BOUNDARIES = (1, 2, 511, 512, 513, 639, 640, 641, 767, 768, 769, 1023, 1024, 1025, 1279, 1280,
              1281, 1920, 1921)


def page_sizes() -> list[tuple[int, int]]:
    """520 sizes: tiny pages, extreme aspect ratios, every pair of sides at tile and view
    boundaries, and seeded random pages up to 2,000 px."""
    sizes = {(1, 1), (1, 2), (2, 1), (7, 300), (300, 7), (16, 16), (3, 1500), (1500, 3),
             (12, 2000), (2000, 12), (640, 5760), (5760, 640), (100, 2000), (2000, 100)}
    sizes |= {(w, h) for w in BOUNDARIES for h in BOUNDARIES}
    rng = random.Random(20261124)
    while len(sizes) < 520:
        sizes.add((rng.randint(1, 2000), rng.randint(1, 2000)))
    return sorted(sizes)


def official_ids(image_tokens: int) -> list[int]:
    """``<image>\\nFree OCR.`` as DeepSeek's ``infer()`` tokenizes it: BOS, the image tokens,
    then the text after the tag."""
    text = deepseek_ocr_tokenizer().encode("\nFree OCR.", add_special_tokens=False).ids
    return [0, *[IMAGE_TOKEN_ID] * image_tokens, *text]


def processed(renderer: Any, page: Any, mode: str) -> tuple[list[int], dict[str, Any]]:
    """The prompt ids and multimodal tensors vLLM makes of ``page`` with the prompt
    ``<image>\\nFree OCR.`` (BOS, image tag, newline, text: the chat template's layout, checked
    in test_chat_prompt_layout) and ``mm_processor_kwargs`` ``{"mode": mode}``."""
    text = deepseek_ocr_tokenizer().encode("\nFree OCR.", add_special_tokens=False).ids
    ids = [0, IMAGE_TOKEN_ID, *text]
    engine_input = renderer._process_tokens({
        "prompt_token_ids": ids,
        "multi_modal_data": {"image": page},
        "mm_processor_kwargs": {MODE_KWARG: mode},
    })
    item = engine_input["mm_kwargs"]["image"][0]
    return engine_input["prompt_token_ids"], {k: v.data for k, v in item.items()}


def mismatches(renderer: Any, page: Any, mode: str) -> Iterator[str]:
    """What of vLLM's processing of ``page`` in ``mode`` differs from the reference, lazily:
    the prompt ids and the grid first (they need only the page's size), then the pixels of the
    reference views, built only when asked for."""
    settings = DEEPSEEK_OCR_VIEWS[mode]
    image_tokens = image_token_count(*page.size, settings)
    grid = crop_grid(*page.size, settings)
    ids, tensors = processed(renderer, page, mode)
    if ids != official_ids(image_tokens):
        yield (f"prompt ids ({ids.count(IMAGE_TOKEN_ID)} image tokens, "
               f"expected {image_tokens})")
    if tensors["images_spatial_crop"].tolist() != list(grid):
        yield f"grid {tensors['images_spatial_crop'].tolist()} != {grid}"
    expected = page_views(page, settings)
    if not np.array_equal(tensors["pixel_values"].numpy(), normalized(expected.global_view)):
        yield "global view pixels"
    tiles = tensors["images_crop"].numpy()
    if len(tiles) != len(expected.tiles) or not all(
        np.array_equal(tile, normalized(view))
        for tile, view in zip(tiles, expected.tiles, strict=False)
    ):
        yield f"tiles ({len(tiles)} vs {len(expected.tiles)})"


def differs(renderer: Any, page: Any, mode: str) -> bool:
    """Whether anything of vLLM's processing differs from the reference (the first finding
    decides; the later checks are not run)."""
    return next(mismatches(renderer, page, mode), None) is not None


GRID = page_sizes()


def test_the_grid_has_500_sizes_with_boundaries_and_extremes() -> None:
    assert len(GRID) >= 500
    assert (641, 640) in GRID and (640, 5760) in GRID and (1, 1) in GRID


@pytest.mark.parametrize("mode", list(DEEPSEEK_OCR_VIEWS))
def test_plugin_equals_the_reference_on_the_grid(
    make_renderer: Callable[[str | None], Any], mode: str
) -> None:
    renderer = make_renderer(ARCHITECTURES["deepseek-ocr"])
    failures = {}
    for width, height in GRID:
        found = list(mismatches(renderer, synthetic_page(width, height), mode))
        if found:
            failures[(width, height)] = found
    assert not failures, f"{len(failures)}/{len(GRID)} pages differ: {list(failures.items())[:5]}"


NEGATIVE_GRID = GRID


@pytest.mark.parametrize("mode", list(DEEPSEEK_OCR_VIEWS))
def test_negative_control_stock_vllm_shows_its_mismatches(
    make_renderer: Callable[[str | None], Any], mode: str
) -> None:
    """The stock class ignores the mode (gundam always, 6 tiles at most): every page differs
    in tiny, small and large, every page wider or taller than 640 px in base (smaller ones are
    padded to 1024 px either way), and in gundam exactly the pages whose grid needs 7-9 tiles."""
    renderer = make_renderer(None)
    differing = {
        size for size in NEGATIVE_GRID if differs(renderer, synthetic_page(*size), mode)
    }
    if mode in ("tiny", "small", "large"):
        assert differing == set(NEGATIVE_GRID)
    elif mode == "base":
        assert differing == {(w, h) for w, h in NEGATIVE_GRID if max(w, h) > 640}
    else:
        settings = DEEPSEEK_OCR_VIEWS["gundam"]
        many = {size for size in NEGATIVE_GRID if np.prod(crop_grid(*size, settings)) > 6}
        assert differing == many and many


def test_chat_prompt_layout(make_renderer: Callable[[str | None], Any]) -> None:
    """An OpenAI chat message (image part, then "Free OCR.") becomes DeepSeek's
    ``<image>\\nFree OCR.`` ids, in every mode."""
    import base64
    import io

    from vllm.renderers.params import ChatParams

    page = synthetic_page(900, 1300)
    buffer = io.BytesIO()
    page.save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    message = [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "Free OCR."},
    ]}]
    renderer = make_renderer(ARCHITECTURES["deepseek-ocr"])
    for mode, settings in DEEPSEEK_OCR_VIEWS.items():
        params = ChatParams(mm_processor_kwargs={MODE_KWARG: mode})
        _, prompt = renderer.render_messages(message, params)
        engine_input = renderer._process_tokens(
            {**prompt, "mm_processor_kwargs": {MODE_KWARG: mode}}
        )
        expected = page_views(page, settings).image_tokens
        assert engine_input["prompt_token_ids"] == official_ids(expected), mode


def test_a_bad_mode_is_refused_with_the_modes(make_renderer: Callable[[str | None], Any]) -> None:
    renderer = make_renderer(ARCHITECTURES["deepseek-ocr"])
    with pytest.raises(ValueError, match="Failed to apply ModeProcessor") as refused:
        processed(renderer, synthetic_page(100, 100), "huge")
    assert "deepseek-ocr has no mode 'huge'; choose one of: tiny, small" in str(
        refused.value.__cause__
    )
