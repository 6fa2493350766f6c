"""The PNGs the served engine sends (:func:`evalsuite.images.lossless_png`): decoded by Pillow,
an independent decoder, and converted to RGB, they hold exactly the page's pixels, whatever its
mode and colors, whether Pillow lends its pixels' memory or they are copied; pages of at most
256 colors travel as palette PNGs of each color once; the request's cache key (``image_sha256``)
is the image's, as before."""

from __future__ import annotations

import base64
import hashlib
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageOps

from evalsuite import images
from evalsuite.engines.base import InferenceRequest
from evalsuite.engines.served import encode_page
from evalsuite.images import lossless_png
from evalsuite.perf.serving import PAGE_TEXT
from evalsuite.render import RenderConfig, render_text


def decoded(png: bytes) -> Image.Image:
    with Image.open(io.BytesIO(png)) as image:
        image.load()
        return image


def sent(image: Image.Image) -> Image.Image:
    """The page as the server decodes it from the engine's data URL."""
    return decoded(base64.b64decode(encode_page(image).data_url.partition(",")[2]))


def same_pixels(png_image: Image.Image, page: Image.Image) -> bool:
    return (png_image.size == page.size
            and png_image.convert("RGB").tobytes() == page.convert("RGB").tobytes())


def colored_page(colors: int, size: tuple[int, int], seed: int = 0) -> Image.Image:
    """An RGB page of exactly ``colors`` distinct random colors, at random places."""
    rng = np.random.default_rng(seed)
    return page_of(rng.choice(1 << 24, size=colors, replace=False), size, seed)


def page_of(keys: np.ndarray, size: tuple[int, int], seed: int = 0) -> Image.Image:
    """An RGB page of the colors ``keys`` (red | green << 8 | blue << 16), each at least once
    (``len(keys)`` <= pixels), at random places."""
    rng = np.random.default_rng(seed)
    width, height = size
    picks = rng.integers(0, len(keys), size=width * height)
    picks[: len(keys)] = np.arange(len(keys))  # every color appears
    rng.shuffle(picks)
    pixels = np.asarray(keys, np.int64)[picks]
    rgb = np.stack([pixels & 255, pixels >> 8 & 255, pixels >> 16], axis=-1).astype(np.uint8)
    return Image.fromarray(rgb.reshape(height, width, 3), "RGB")


def palette_size(png_image: Image.Image) -> int:
    return len(png_image.getpalette() or ()) // 3


@pytest.fixture(scope="module")
def rendered() -> dict[str, Image.Image]:
    return {
        "black on white": render_text(PAGE_TEXT, RenderConfig()).pages[0].image,
        "sepia": render_text(PAGE_TEXT, RenderConfig(colors="sepia")).pages[0].image,
    }


@pytest.mark.parametrize("name", ["black on white", "sepia"])
def test_rendered_pages_travel_as_palette_pngs_with_their_exact_pixels(rendered, name) -> None:
    page = rendered[name]
    png = sent(page)
    assert png.mode == "P"  # a palette of its <= 256 colors, not RGB
    assert same_pixels(png, page)


SIZES = [(1, 1), (1, 150), (150, 1), (61, 130), (300, 64)]


@pytest.mark.parametrize(("colors", "size"), [
    pytest.param(colors, size, id=f"{colors}-colors-{size[0]}x{size[1]}")
    for colors in (1, 2, 3, 16, 17, 255, 256) for size in SIZES if colors <= size[0] * size[1]
])
def test_up_to_256_colors_make_a_palette_png_of_the_same_pixels(colors, size) -> None:
    page = colored_page(colors, size, seed=colors)
    png = sent(page)
    assert png.mode == "P" and palette_size(png) == colors  # each color once
    assert same_pixels(png, page)


@pytest.mark.parametrize("colors", [257, 5000])
def test_more_colors_make_an_rgb_png_of_the_same_pixels(colors) -> None:
    page = colored_page(colors, (97, 83), seed=colors)
    png = sent(page)
    assert png.mode == "RGB"
    assert same_pixels(png, page)


def colliding_keys(count: int) -> np.ndarray:
    """``count`` colors whose keys all hash to the last slot of the table that indexes colors,
    so that each is found by probing past the others, around the table's end."""
    keys = np.arange(1 << 22, dtype=np.int64)
    slots = (keys * images._GOLDEN_RATIO_32 & 0xFFFFFFFF) >> (32 - images._HASH_BITS)
    found = keys[slots == images._HASH_SLOTS - 1][:count]
    assert len(found) == count
    return found


@pytest.mark.parametrize("colors", [2, 40, 256])
def test_colors_that_hash_alike_keep_their_own_indices(colors) -> None:
    page = page_of(colliding_keys(colors), (61, 130), seed=colors)
    png = decoded(lossless_png(page))
    assert png.mode == "P" and palette_size(png) == colors
    assert same_pixels(png, page)


def test_a_257th_color_that_hashes_alike_makes_an_rgb_png() -> None:
    page = page_of(colliding_keys(257), (61, 130))
    png = decoded(lossless_png(page))
    assert png.mode == "RGB" and same_pixels(png, page)


def test_the_pad_byte_of_pillows_rgb_pixels_is_not_part_of_a_color() -> None:
    rng = np.random.default_rng(7)
    palette = rng.integers(0, 256, (5, 3), dtype=np.uint8)
    raw = rng.integers(0, 256, (40, 50, 4), dtype=np.uint8)  # the 4th byte: anything
    raw[..., :3] = palette[rng.integers(0, 5, (40, 50))]
    page = Image.frombytes("RGB", (50, 40), raw.tobytes(), "raw", "RGBX")
    pixels = images._rgb_pixels(page)
    assert pixels.shape[2] == 3 or len(np.unique(pixels[..., 3])) > 1
    png = decoded(lossless_png(page))
    assert png.mode == "P" and palette_size(png) == len(np.unique(palette, axis=0))
    assert same_pixels(png, page)


@pytest.mark.skipif(not hasattr(Image.Image, "__arrow_c_array__"), reason="Pillow < 11.2")
def test_without_pillows_own_memory_the_copied_pixels_make_the_same_png(
    rendered, monkeypatch
) -> None:
    page = rendered["sepia"]
    assert images._rgb_pixels(page).shape == (page.height, page.width, 4)  # a view
    lent = lossless_png(page)
    monkeypatch.delattr(Image.Image, "__arrow_c_array__")  # as with Pillow < 11.2
    assert images._rgb_pixels(page).shape == (page.height, page.width, 3)  # a copy
    assert lossless_png(page) == lent


def test_a_page_over_pillows_block_of_memory_is_copied_with_its_exact_pixels(rendered) -> None:
    tile = rendered["sepia"]
    page = Image.new("RGB", (4 * tile.width + 4, tile.height), "white")  # > 16 MB as RGBX
    for left in range(0, page.width, tile.width):
        page.paste(tile, (left, 0))
    assert images._rgb_pixels(page).shape[2] == 3  # rows in several blocks: copied
    png = decoded(lossless_png(page))
    assert png.mode == "P" and same_pixels(png, page)


@settings(max_examples=60, deadline=None)
@given(
    colors=st.integers(1, 300),
    width=st.integers(1, 90),
    height=st.integers(1, 140),
    seed=st.integers(0, 2**32 - 1),
    grey=st.booleans(),
)
def test_any_page_decodes_to_its_own_pixels(colors, width, height, seed, grey) -> None:
    page = colored_page(min(colors, width * height), (width, height), seed)
    if grey:
        page = page.convert("L").convert("RGB")
    assert same_pixels(sent(page), page)


@pytest.mark.parametrize("mode", ["L", "P", "RGBA", "LA", "1", "CMYK", "I;16"])
def test_every_mode_is_sent_as_deepseek_loads_it(rendered, mode) -> None:
    page = rendered["sepia"].crop((0, 0, 300, 200))
    image = page.convert(mode) if mode not in ("P", "I;16") else (
        page.quantize(64) if mode == "P" else page.convert("L").convert("I;16"))
    if image.mode in ("RGBA", "LA"):
        image.putalpha(128)  # transparency is dropped, not blended
    expected = ImageOps.exif_transpose(image).convert("RGB")
    assert same_pixels(sent(image), expected)


def test_an_l_page_is_sent_as_its_grey_levels(rendered) -> None:
    page = rendered["black on white"].convert("L")
    png = sent(page)
    assert png.mode == "P" and same_pixels(png, page.convert("RGB"))


@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA"])
def test_the_cache_key_is_the_images_own_and_encoding_leaves_it_alone(rendered, mode) -> None:
    image = rendered["sepia"].crop((0, 0, 200, 120)).convert(mode)
    oracle = hashlib.sha256(f"{mode}:200x120:".encode() + image.tobytes()).hexdigest()
    request = InferenceRequest(image, "Free OCR.", "gundam", "s")
    assert request.image_sha256 == oracle
    encode_page(image)
    assert InferenceRequest(image, "Free OCR.", "gundam", "s").image_sha256 == oracle
    assert image.mode == mode


def test_only_rgb_and_l_pages_that_have_pixels_are_taken() -> None:
    with pytest.raises(ValueError, match="RGBA"):
        lossless_png(Image.new("RGBA", (4, 4)))
    for size in ((0, 0), (0, 5), (5, 0)):
        with pytest.raises(ValueError, match="empty image"):
            lossless_png(Image.new("RGB", size))
