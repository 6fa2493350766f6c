"""Requests in different modes batched together, through vLLM's own batching code
(``group_and_batch_mm_kwargs``, which the model runner calls before ``embed_multimodal``): each
request's views must reach the plugin's encoder loop exactly as they do when the request is
alone. vLLM concatenates the tiles of a batch as one flat field and zero-pads every tile to the
largest edge in it, so an untiled request whose empty tile tensor had its own mode's size
(1024 px in base, 1280 in large) made gundam's 640-px tiles arrive padded to that size."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from evalsuite.engines.deepseek_views import FAMILY_VIEWS, page_views
from evalsuite.vllm_plugin import ARCHITECTURES, MODE_KWARG
from tests.support.synthetic_pages import synthetic_page

PAGE_SIZES = ((1400, 2000), (2000, 700), (500, 400))
"""A page tiled 2 x 3 in gundam, one tiled 3 x 1, and one smaller than a tile (never tiled)."""


def items(renderer: Any, family: str) -> list[tuple[str, Any, tuple[int, int]]]:
    """``(mode, vLLM's multimodal item, page size)`` of every mode x page."""
    from vllm.multimodal.inputs import MultiModalKwargsItem

    made = []
    for mode in FAMILY_VIEWS[family]:
        for size in PAGE_SIZES:
            engine_input = renderer._process_tokens({
                "prompt_token_ids": [0, 128815, 201],
                "multi_modal_data": {"image": synthetic_page(*size)},
                "mm_processor_kwargs": {MODE_KWARG: mode},
            })
            item = engine_input["mm_kwargs"]["image"][0]
            assert isinstance(item, MultiModalKwargsItem)
            made.append((mode, item, size))
    return made


def encoder_inputs(batch: list[Any]) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per image of ``batch`` (in order): the global view, tiles and grid the plugin's model
    hands its encoder, after vLLM batched the items as its model runner does."""
    from vllm.multimodal.utils import group_and_batch_mm_kwargs

    from evalsuite.vllm_plugin.models import split_images

    views = []
    for _, _, kwargs in group_and_batch_mm_kwargs([("image", item) for item in batch]):
        views += split_images(
            kwargs["pixel_values"], kwargs.get("images_crop"), kwargs["images_spatial_crop"]
        )
    return views


@pytest.mark.parametrize("family", list(ARCHITECTURES))
def test_a_mixed_mode_batch_gives_each_request_its_own_tensors(
    make_family_renderer: Callable[[str, bool], Any], family: str
) -> None:
    made = items(make_family_renderer(family), family)
    alone = [encoder_inputs([item])[0] for _, item, _ in made]
    together = encoder_inputs([item for _, item, _ in made])
    assert len(together) == len(made)
    differing = []
    for (mode, _, size), one, batched in zip(made, alone, together, strict=True):
        if any(a.shape != b.shape or not torch.equal(a, b) for a, b in zip(one, batched,
                                                                               strict=True)):
            differing.append(f"{mode} {size}: tiles {tuple(one[1].shape)} alone, "
                             f"{tuple(batched[1].shape)} batched")
    assert not differing, differing


@pytest.mark.parametrize("family", list(ARCHITECTURES))
def test_the_encoder_gets_the_reference_views_in_a_mixed_batch(
    make_family_renderer: Callable[[str, bool], Any], family: str
) -> None:
    """Independently of the alone case: tile count and edge as DeepSeek's ``infer()`` makes
    them (evalsuite.engines.deepseek_views), in a batch of every mode."""
    made = items(make_family_renderer(family), family)
    for (mode, _, size), (view, tiles, grid) in zip(
        made, encoder_inputs([item for _, item, _ in made]), strict=True
    ):
        settings = FAMILY_VIEWS[family][mode]
        expected = page_views(synthetic_page(*size), settings)
        assert tuple(view.shape) == (1, 3, settings.global_size, settings.global_size)
        assert len(tiles) == len(expected.tiles), (mode, size)
        if expected.tiles:
            assert tuple(tiles.shape[1:]) == (3, settings.image_size, settings.image_size)
        assert grid.tolist() == [list(expected.grid)]


@pytest.mark.parametrize("family", list(ARCHITECTURES))
def test_a_page_the_processor_cache_holds_keeps_each_modes_tokens(
    make_family_renderer: Callable[[str, bool], Any], family: str
) -> None:
    """vLLM's multimodal processor cache (on unless ``--mm-processor-cache-gb 0``) answers a
    page it has seen without the page's items: the prompt update must still write the image
    tokens of the request's mode, and the cached tensors must be that mode's."""
    renderer = make_family_renderer(family, True)
    page = synthetic_page(1400, 2000)
    for cached in (False, True):
        for mode, settings in FAMILY_VIEWS[family].items():
            engine_input = renderer._process_tokens({
                "prompt_token_ids": [0, 128815, 201],
                "multi_modal_data": {"image": page},
                "mm_processor_kwargs": {MODE_KWARG: mode},
            })
            expected = page_views(page, settings)
            assert engine_input["prompt_token_ids"].count(128815) == expected.image_tokens, mode
            item = engine_input["mm_kwargs"]["image"][0]
            if cached:  # the engine's side of the cache holds the tensors
                assert item is None, mode
            else:
                assert item["images_spatial_crop"].data.tolist() == list(expected.grid), mode
