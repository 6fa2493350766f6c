"""The suite's reference of DeepSeek's preprocessing (evalsuite.engines.deepseek_views) against
cases produced by running DeepSeek's own ``infer()`` preprocessing on synthetic pages
(``tests/fixtures/deepseek_reference/official_preprocess.json``: its ``source`` names the code
and revision, ``generator`` the pages), and against the independent token arithmetic of
evalsuite.tokens."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from PIL import Image

from evalsuite.engines.deepseek_views import (
    DEEPSEEK_OCR_VIEWS,
    OCR2_VIEWS,
    image_token_count,
    normalized,
    page_views,
    tile_edge,
    view_settings,
)
from evalsuite.tokenizer import deepseek_ocr_tokenizer
from evalsuite.tokens import vision_tokens
from tests.support.paths import TEST_FIXTURES
from tests.support.synthetic_pages import synthetic_page

REFERENCE = TEST_FIXTURES / "deepseek_reference" / "official_preprocess.json"
OFFICIAL = json.loads(REFERENCE.read_text(encoding="utf-8"))
IMAGE_TOKEN_ID = 128815


def _sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _cases() -> list[tuple[str, dict]]:
    return [("deepseek-ocr", case) for case in OFFICIAL["v1_cases"]] + [
        ("deepseek-ocr-2", case) for case in OFFICIAL["v2_cases"]
    ]


def test_the_fixture_covers_every_mode_and_its_generator_is_ours() -> None:
    assert {case["mode"] for case in OFFICIAL["v1_cases"]} == set(DEEPSEEK_OCR_VIEWS)
    assert {case["mode"] for case in OFFICIAL["v2_cases"]} == {"default"}
    assert "width * 100_003 + height" in OFFICIAL["generator"]
    for mode, (base, image, crop) in OFFICIAL["v1_modes"].items():
        settings = DEEPSEEK_OCR_VIEWS[mode]
        assert (settings.base_size, settings.image_size, settings.crop_mode) == (base, image, crop)


@pytest.mark.parametrize(
    ("family", "case"),
    _cases(),
    ids=[f"{f}-{c['mode']}-{c['size'][0]}x{c['size'][1]}" for f, c in _cases()],
)
def test_views_equal_deepseeks_own_preprocessing(family: str, case: dict) -> None:
    width, height = case["size"]
    views = page_views(synthetic_page(width, height), view_settings(family, case["mode"]))
    assert views.grid == tuple(case["images_spatial_crop"][0])
    assert len(views.tiles) == case["n_crops"]
    assert views.image_tokens == case["n_image_tokens"]
    assert _sha256(np.asarray(views.global_view)) == case["global_u8_sha256"]
    assert _sha256(normalized(views.global_view)) == case["global_f32_sha256"]
    if views.tiles:
        tiles = np.stack([np.asarray(tile) for tile in views.tiles])
        assert _sha256(tiles) == case["crops_u8_sha256"]
        stacked = np.stack([normalized(tile) for tile in views.tiles])
        assert _sha256(stacked) == case["crops_f32_sha256"]
    else:
        assert case["crops_u8_sha256"] is None


@pytest.mark.parametrize("family", ["deepseek-ocr", "deepseek-ocr-2"])
def test_prompt_layout_equals_the_official_input_ids(family: str) -> None:
    cases = OFFICIAL["v1_cases" if family == "deepseek-ocr" else "v2_cases"]
    tokenizer = deepseek_ocr_tokenizer()
    text = tokenizer.encode("\nFree OCR.", add_special_tokens=False).ids
    for case in cases:
        ids = [0] + [IMAGE_TOKEN_ID] * case["n_image_tokens"] + text
        rle: list[list[int]] = []
        for token in ids:
            if rle and rle[-1][0] == token:
                rle[-1][1] += 1
            else:
                rle.append([token, 1])
        assert rle == case["input_ids_rle"]


def test_token_counts_agree_with_the_independent_arithmetic() -> None:
    sizes = [(w, h) for w in (1, 300, 640, 641, 1280, 2480) for h in (1, 500, 640, 641, 3508)]
    for width, height in sizes:
        for mode, settings in DEEPSEEK_OCR_VIEWS.items():
            raw = vision_tokens(width, height, mode, max_crops=9).raw
            assert image_token_count(width, height, settings) == raw


def test_ocr2_global_mode_pads_to_1024_without_tiles() -> None:
    views = page_views(synthetic_page(2000, 500), OCR2_VIEWS["global"])
    assert views.global_view.size == (1024, 1024) and views.tiles == ()
    assert views.image_tokens == 16 * 16 + 1
    # the page keeps its aspect ratio: rows above and below it are the grey fill
    assert np.asarray(views.global_view)[0].tolist()[0] == [127, 127, 127]


def test_bad_mode_and_non_rgb_page_are_refused() -> None:
    with pytest.raises(ValueError, match="deepseek-ocr has no mode 'huge'"):
        view_settings("deepseek-ocr", "huge")
    with pytest.raises(ValueError, match="must be an RGB image"):
        page_views(Image.new("L", (10, 10)), DEEPSEEK_OCR_VIEWS["tiny"])


def test_each_family_tiles_at_one_edge_whatever_the_page() -> None:
    """DeepSeek-OCR tiles at 640 px, DeepSeek-OCR-2 at 768 px (the papers' crop size): every
    tile any page gets in any mode has that edge, which is what the vLLM plugin's empty tile
    tensors must match so that a mixed-mode batch needs no padding."""
    for family, views, edge in (("deepseek-ocr", DEEPSEEK_OCR_VIEWS, 640),
                                ("deepseek-ocr-2", OCR2_VIEWS, 768)):
        assert tile_edge(family) == edge
        for settings in views.values():
            for size in ((1300, 1300), (2000, 700), (641, 2000)):
                tiles = page_views(synthetic_page(*size), settings).tiles
                assert {tile.size for tile in tiles} <= {(edge, edge)}
    with pytest.raises(ValueError, match="unknown model family"):
        tile_edge("dots.ocr")
