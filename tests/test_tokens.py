"""Vision-token arithmetic against hand-worked DeepSeek-OCR cases, plus its laws."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.tokens import (
    APPROX_METHOD,
    MODES,
    VisionTokens,
    approximate_token_count,
    compression_ratio,
    deepseek_tile_candidates,
    mode_settings,
    text_token_count,
    tile_grid,
    vision_tokens,
)

sides = st.integers(min_value=1, max_value=6000)


def test_modes_table() -> None:
    table = {
        name: (m.base_size, m.image_size, m.crop_mode, m.nominal_tokens, m.tokens_per_tile)
        for name, m in MODES.items()
    }
    assert table == {
        "tiny": (512, 512, False, 64, 0),
        "small": (640, 640, False, 100, 0),
        "base": (1024, 1024, False, 256, 0),
        "large": (1280, 1280, False, 400, 0),
        "gundam": (1024, 640, True, 256, 100),
    }


def test_unknown_mode_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"'huge'.*tiny, small, base, large, gundam"):
        mode_settings("huge")
    with pytest.raises(ValueError, match="tiny, small"):
        vision_tokens(100, 100, "Base")
    with pytest.raises(TypeError, match="mode"):
        mode_settings(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (640, 640, (1, 1)),  # both sides <= 640: no tiling
        (640, 100, (1, 1)),
        (641, 640, (2, 2)),  # one pixel over: aspect 1.0016, (2, 2) is closest
        (816, 1056, (2, 3)),  # aspect 0.773: (2, 3)=0.667 beats (2, 2)=1 and (1, 2)=0.5
        (2000, 500, (4, 1)),  # exact aspect match
        (500, 3000, (1, 6)),
        (10000, 100, (6, 1)),  # capped at max_crops
        # aspect 1.25 ties (2, 2) and (3, 2) at distance 0.25; the later (3, 2) wins only when
        # w·h > 0.5·640²·6 = 1,228,800
        (1000, 800, (2, 2)),  # 800,000
        (1250, 1000, (3, 2)),  # 1,250,000
    ],
)
def test_tile_grid_hand_worked(width: int, height: int, expected: tuple[int, int]) -> None:
    assert tile_grid(width, height) == expected


def test_tile_grid_tie_keeps_set_order() -> None:
    # With exactly 2 crops the candidates are (1, 2) then (2, 1); aspect 1.25 is 0.75 from both.
    # The later (2, 1) replaces (1, 2) only when w·h > 0.5·640²·2 = 409,600.
    assert deepseek_tile_candidates(2, 2) == [(1, 2), (2, 1)]
    assert tile_grid(700, 560, max_crops=2) == (1, 2)  # 392,000: the first candidate stays
    assert tile_grid(800, 640, max_crops=2) == (2, 1)  # 512,000


def test_tile_grid_hugging_face_cap_of_nine() -> None:
    # Square pages tie (2, 2) with (3, 3) (both exact); (3, 3) needs w·h > 0.5·640²·9 = 1,843,200.
    assert tile_grid(2000, 2000, max_crops=9) == (3, 3)
    assert tile_grid(1000, 1000, max_crops=9) == (2, 2)
    assert tile_grid(2000, 2000) == (2, 2)  # 3x3 is not a candidate under the default cap of 6


def test_candidate_order_is_by_tile_count() -> None:
    counts = [c * r for c, r in deepseek_tile_candidates(2, 6)]
    assert counts == sorted(counts)
    assert len(counts) == 13 and min(counts) == 2 and max(counts) == 6


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"width": 0, "height": 10}, ValueError, "width"),
        ({"width": 10, "height": -1}, ValueError, "height"),
        ({"width": 10.0, "height": 10}, TypeError, "width"),
        ({"width": True, "height": 10}, TypeError, "width"),
        ({"width": 900, "height": 900, "min_crops": 4, "max_crops": 3}, ValueError, "max_crops"),
        ({"width": 900, "height": 900, "tile": 0}, ValueError, "tile"),
    ],
)
def test_tile_grid_rejects_bad_input(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        tile_grid(**kwargs)


@pytest.mark.parametrize(
    ("size", "mode", "expected"),
    [
        # tiny and small stretch the page: every token is valid; raw = q(q+1)+1, q = 8 / 10
        ((816, 1056), "tiny", VisionTokens(64, 64, 73, 0)),
        ((816, 1056), "small", VisionTokens(100, 100, 111, 0)),
        # base and large pad: r = 1 - 240/1056 = 0.7727; 256r = 197.8, 400r = 309.1
        ((816, 1056), "base", VisionTokens(256, 197, 273, 0)),
        ((816, 1056), "large", VisionTokens(400, 309, 421, 0)),
        ((1024, 1024), "base", VisionTokens(256, 256, 273, 0)),
        # gundam, 2x3 tiles: 256 + 6·100; valid 197 + 600; raw 273 + (10·2+1)·(10·3)
        ((816, 1056), "gundam", VisionTokens(856, 797, 903, 6)),
        # gundam, 3x2 tiles after the tie: r = 0.8, 256r = 204.8; raw 273 + 31·20
        ((1250, 1000), "gundam", VisionTokens(856, 804, 893, 6)),
        # gundam page within 640 px: the global view only; r = 2/3, 256r = 170.7
        ((600, 400), "gundam", VisionTokens(256, 170, 273, 0)),
        ((640, 640), "gundam", VisionTokens(256, 256, 273, 0)),
    ],
)
def test_vision_tokens_hand_worked(
    size: tuple[int, int], mode: str, expected: VisionTokens
) -> None:
    assert vision_tokens(*size, mode) == expected


def test_valid_tokens_use_deepseeks_float_expression() -> None:
    # 640 x 328 in large mode: r = 1 - 312/640 = 0.5125 exactly on paper, so 400r = 205, but
    # DeepSeek's 1 - (312/640) rounds to 204.99999999999997 in floating point and int() gives 204.
    assert vision_tokens(640, 328, "large").valid == 204


def test_vision_tokens_hugging_face_tiling() -> None:
    # infer() tiles up to 9: 3x3 tiles, raw 273 + (10·3+1)·(10·3)
    assert vision_tokens(2000, 2000, "gundam", max_crops=9) == VisionTokens(1156, 1156, 1203, 9)


def test_compression_ratio() -> None:
    assert compression_ratio(256, 100) == 2.56
    assert compression_ratio(197, VisionTokens(256, 197, 273, 0)) == 1.0  # uses valid
    assert compression_ratio(0, 64) == 0.0


@pytest.mark.parametrize(
    ("text_tokens", "vision", "error", "match"),
    [
        (10, 0, ValueError, "vision_tokens must be > 0"),
        (10, VisionTokens(256, 0, 273, 0), ValueError, "vision_tokens must be > 0"),
        (-1, 10, ValueError, "text_tokens"),
        (10, -5, ValueError, "vision_tokens"),
        (1.5, 10, TypeError, "text_tokens"),
        (True, 10, TypeError, "text_tokens"),
        (10, None, TypeError, "vision_tokens"),
    ],
)
def test_compression_ratio_rejects(text_tokens, vision, error, match) -> None:
    with pytest.raises(error, match=match):
        compression_ratio(text_tokens, vision)


def test_approximate_token_count_is_labelled_estimate() -> None:
    count = approximate_token_count("Hello world")
    assert count == 2 and count.method == APPROX_METHOD and not count.exact
    # "Salary" ":" " $" "95" "," "000"
    assert approximate_token_count("Salary: $95,000") == 6
    assert approximate_token_count("") == 0
    with pytest.raises(TypeError, match="text"):
        approximate_token_count(None)  # type: ignore[arg-type]


def test_text_token_count_defaults_to_deepseek_ocr() -> None:
    # DeepSeek-OCR's tokenizer (see tests/test_tokenizer.py for its ids and the study's counts):
    # "Hello" " world"; "Salary" ":" " $" "95" "," "000", a tie with the estimate here
    count = text_token_count("Hello world")
    assert count == 2 and count.exact and count.method.startswith("tokenizer:deepseek-ocr (")
    assert text_token_count("Salary: $95,000") == 6
    # where they differ: "INV-2024-0892" is "IN" "V" "-" "202" "4" "-" "089" "2"
    assert (text_token_count("INV-2024-0892"), approximate_token_count("INV-2024-0892")) == (8, 7)
    with pytest.raises(TypeError, match="text"):
        text_token_count(b"bytes")  # type: ignore[arg-type]


def test_text_token_count_with_tokenizers() -> None:
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    # One token per character (BPE without merges), BOS added by a template: the count is the
    # number of characters, whichever wrapper holds the tokenizer.
    chars = sorted(set("Free OCR.abc\n"))
    vocab = {"<s>": 0, **{c: i + 1 for i, c in enumerate(chars)}}
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    raw.add_special_tokens(["<s>"])
    wrapped = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", name_or_path="chars")
    count = text_token_count("Free OCR.", wrapped)
    assert count == len("Free OCR.") and count.exact and count.method == "tokenizer:chars"
    assert text_token_count("abc\n", raw) == 4  # a tokenizers.Tokenizer: ids live on .ids


@settings(max_examples=150, deadline=None)
@given(sides, sides)
def test_tile_grid_laws(width: int, height: int) -> None:
    cols, rows = tile_grid(width, height)
    if width <= 640 and height <= 640:
        assert (cols, rows) == (1, 1)
        return
    assert 2 <= cols * rows <= 6
    # no candidate is strictly closer in aspect ratio than the chosen grid
    distance = abs(width / height - cols / rows)
    assert all(abs(width / height - c / r) >= distance for c, r in deepseek_tile_candidates(2, 6))


@settings(max_examples=150, deadline=None)
@given(sides, sides, st.sampled_from(sorted(MODES)))
def test_vision_token_laws(width: int, height: int, mode: str) -> None:
    tokens = vision_tokens(width, height, mode)
    assert 0 <= tokens.valid <= tokens.nominal < tokens.raw  # raw adds newline/separator tokens
    if mode == "gundam":
        assert tokens.nominal == 256 + 100 * tokens.tiles
    else:
        assert tokens.tiles == 0 and tokens.nominal == MODES[mode].nominal_tokens
    if width == height:
        assert tokens.valid == tokens.nominal


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=10**4))
def test_compression_ratio_inverts_multiplication(text_tokens: int, vision: int) -> None:
    assert compression_ratio(text_tokens, vision) * vision == pytest.approx(text_tokens)
