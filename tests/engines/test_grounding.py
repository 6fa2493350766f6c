"""DeepSeek-OCR grounding markup: box parsing (0-999 grid to pixels) and the text cleaner."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.engines.grounding import GroundedBox, parse_grounding, strip_grounding

# A page as DeepSeek-OCR writes it with "<|grounding|>Convert the document to markdown."
PAGE = (
    "<|ref|>title<|/ref|><|det|>[[100, 50, 899, 120]]<|/det|>\n# Annual Report\n\n"
    "<|ref|>text<|/ref|><|det|>[[100, 150, 899, 300], [100, 310, 500, 330]]<|/det|>\n"
    "Revenue grew by 12%.\n\n"
    "<|ref|>image<|/ref|><|det|>[[0, 400, 999, 999]]<|/det|>\n"
)


def test_boxes_are_scaled_by_999_and_truncated():
    boxes = parse_grounding(PAGE, 1000, 640)
    # Worked by hand: x1 = int(100 / 999 * 1000) = int(100.1001) = 100,
    # y1 = int(50 / 999 * 640) = int(32.032) = 32, x2 = int(899 / 999 * 1000) = int(899.8999) = 899,
    # y2 = int(120 / 999 * 640) = int(76.8769) = 76; grid 999 is the full side (1000, not 999).
    assert boxes == [
        GroundedBox("title", (100, 32, 899, 76)),
        GroundedBox("text", (100, 96, 899, 192)),
        GroundedBox("text", (100, 198, 500, 211)),
        GroundedBox("image", (0, 256, 1000, 640)),
    ]


def test_divisor_is_999_not_1000():
    # 999 / 1000 * 1000 would give 999; DeepSeek-OCR divides by 999 and gets the full width.
    [box] = parse_grounding("<|ref|>x<|/ref|><|det|>[[999, 999, 999, 999]]<|/det|>", 1000, 2000)
    assert box.box == (1000, 2000, 1000, 2000)


def test_labels_keep_their_text_and_order():
    text = (
        "<|ref|>the red car<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|> and "
        "<|ref|>a\ndog<|/ref|><|det|>[[5, 6, 7, 8]]<|/det|>"
    )
    assert [b.label for b in parse_grounding(text, 999, 999)] == ["the red car", "a\ndog"]


def test_malformed_box_lists_follow_the_reference():
    text = (
        "<|ref|>a<|/ref|><|det|>not a list<|/det|>"  # not a literal: skipped
        "<|ref|>b<|/ref|><|det|>[[10, 10, 20, 20], [1, 2, 3], [30, 30, 40, 40]]<|/det|>"
        "<|ref|>c<|/ref|><|det|>[10, 10, 20, 20]<|/det|>"  # flat list: no entry is a box
        "<|ref|>d<|/ref|><|det|>[[1e999, 0, 0, 0]]<|/det|>"  # infinite coordinate
        "<|ref|>e<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>"
    )
    boxes = parse_grounding(text, 999, 999)
    # b keeps the entry before its first malformed one, as draw_bounding_boxes draws it.
    assert boxes == [GroundedBox("b", (10, 10, 20, 20)), GroundedBox("e", (0, 0, 999, 999))]


def test_text_without_markup_has_no_boxes():
    assert parse_grounding("plain text <|ref|>unclosed", 10, 10) == []


@pytest.mark.parametrize(
    ("args", "error", "name"),
    [
        ((None, 10, 10), TypeError, "text"),
        ((b"x", 10, 10), TypeError, "text"),
        (("x", 0, 10), ValueError, "width"),
        (("x", 10, -1), ValueError, "height"),
        (("x", 10.0, 10), TypeError, "width"),
        (("x", 10, True), TypeError, "height"),
    ],
)
def test_bad_arguments_are_named(args, error, name):
    with pytest.raises(error, match=name):
        parse_grounding(*args)


def test_strip_matches_deepseek_result_mmd():
    assert strip_grounding(PAGE) == (
        "\n# Annual Report\n\n\nRevenue grew by 12%.\n\n![](images/0.jpg)\n\n"
    )


def test_strip_numbers_images_and_removes_labels():
    text = (
        "<|ref|>image<|/ref|><|det|>[[0, 0, 10, 10]]<|/det|>"
        "<|ref|>caption words<|/ref|><|det|>[[0, 0, 10, 10]]<|/det|>Fig. 1"
        "<|ref|>image<|/ref|><|det|>[[20, 20, 30, 30]]<|/det|>"
    )
    assert strip_grounding(text) == "![](images/0.jpg)\nFig. 1![](images/1.jpg)\n"


def test_strip_rewrites_colon_equals_only_after_removing_an_element():
    formula = r"$a \coloneqq b$, $c \eqqcolon d$"
    assert strip_grounding(formula) == formula  # no element removed: left as is
    only_image = "<|ref|>image<|/ref|><|det|>[[0, 0, 1, 1]]<|/det|>" + formula
    assert strip_grounding(only_image) == "![](images/0.jpg)\n" + formula
    with_text = "<|ref|>equation<|/ref|><|det|>[[0, 0, 1, 1]]<|/det|>" + formula
    assert strip_grounding(with_text) == "$a := b$, $c =: d$"


def test_strip_rejects_non_str():
    with pytest.raises(TypeError, match="text"):
        strip_grounding(None)


_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ABC0123456789.,:;-()#\n", max_size=30)
_labels = st.text(alphabet="abcdefghijklmnopqrstuvwxyz _-", min_size=1, max_size=12).filter(
    lambda label: label != "image"
)
_grid_box = st.lists(st.integers(0, 999), min_size=4, max_size=4)
_elements = st.lists(
    st.tuples(_labels, st.lists(_grid_box, min_size=1, max_size=3), _words),
    max_size=6,
)


def _markup(elements):
    return "".join(
        f"<|ref|>{label}<|/ref|><|det|>{boxes}<|/det|>{body}" for label, boxes, body in elements
    )


@settings(max_examples=150, deadline=None)
@given(_elements, st.integers(1, 5000), st.integers(1, 5000))
def test_round_trip_labels_and_pixels(elements, width, height):
    parsed = parse_grounding(_markup(elements), width, height)
    expected = [(label, box) for label, boxes, _ in elements for box in boxes]
    assert [b.label for b in parsed] == [label for label, _ in expected]
    for found, (_, grid) in zip(parsed, expected, strict=True):
        sizes = (width, height, width, height)
        for pixel, coordinate, size in zip(found.box, grid, sizes, strict=True):
            exact = Fraction(coordinate * size, 999)
            assert 0 <= pixel <= size
            # int(c / 999 * size): truncation, one lower where the float product of an exact
            # integer rounds down (63 / 999 * 111 = 6.999…)
            assert exact - 1 <= pixel <= exact


@settings(max_examples=150, deadline=None)
@given(_elements)
def test_strip_leaves_exactly_the_body_text(elements):
    assert strip_grounding(_markup(elements)) == "".join(body for _, _, body in elements)
