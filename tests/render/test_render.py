"""Tests of evalsuite.render: determinism, exact line boxes, presets, wrapping, markdown tables."""

from __future__ import annotations

import hashlib
import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.render import (
    COLOR_SCHEMES,
    PRESETS,
    ColorScheme,
    RenderConfig,
    RenderedPage,
    preset,
    render_markdown,
    render_text,
)
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data

FIXTURES = TEST_FIXTURES / "render"
LETTER = (FIXTURES / "letter.txt").read_text(encoding="utf-8")
REPORT = (FIXTURES / "report.md").read_text(encoding="utf-8")

# The seed study's color pairs (galah92/deepseek-ocr-eval, experiment/render_documents.py),
# as (foreground, background) hex.
SEED_COLORS = {
    "default": ("#000000", "#ffffff"),
    "dark": ("#d4d4d4", "#1e1e1e"),
    "sepia": ("#5c4b37", "#f4ecd8"),
    "blue": ("#1a365d", "#e8f4fc"),
    "low_contrast": ("#606060", "#e0e0e0"),
}


def rgb(hex_color: str) -> tuple[int, int, int]:
    return tuple(int(hex_color[i : i + 2], 16) for i in (1, 3, 5))


def pixels(page: RenderedPage) -> np.ndarray:
    return np.asarray(page.image)


def ink(page: RenderedPage, background: tuple[int, int, int]) -> np.ndarray:
    """True where a pixel differs from the background."""
    return (pixels(page) != np.array(background, dtype=np.uint8)).any(axis=2)


def filled(shape: tuple[int, ...], boxes) -> np.ndarray:
    mask = np.zeros(shape[:2], dtype=bool)
    for x1, y1, x2, y2 in boxes:
        mask[y1:y2, x1:x2] = True
    return mask


def outlines(shape: tuple[int, ...], boxes) -> np.ndarray:
    mask = np.zeros(shape[:2], dtype=bool)
    for x1, y1, x2, y2 in boxes:
        mask[y1, x1:x2] = mask[y2 - 1, x1:x2] = True
        mask[y1:y2, x1] = mask[y1:y2, x2 - 1] = True
    return mask


def assert_boxes_exact(page: RenderedPage, background) -> None:
    """No ink outside the line boxes, cell outlines and rules; every line box's edges are inked."""
    painted = ink(page, background)
    width, height = page.size
    accounted = filled(painted.shape, [line.box for line in page.lines])
    accounted |= outlines(painted.shape, [cell.box for cell in page.cells])
    accounted |= filled(painted.shape, page.rules)
    assert not (painted & ~accounted).any(), "ink outside every box"
    for line in page.lines:
        x1, y1, x2, y2 = line.box
        assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height, line
        inside = painted[y1:y2, x1:x2]
        # Tight: ink touches all four sides (antialiasing may leave faint edges unchanged in
        # low-contrast schemes, so allow one pixel of slack there).
        rows, cols = np.nonzero(inside)
        assert rows.size, f"box without ink: {line}"
        assert rows.min() <= 1 and cols.min() <= 1, line
        assert rows.max() >= inside.shape[0] - 2 and cols.max() >= inside.shape[1] - 2, line


def words_of(document) -> list[str]:
    return [word for line in document.lines for word in line.text.split()]


# --- determinism ---------------------------------------------------------------------------


def test_same_text_and_config_give_identical_png():
    config = preset("font_serif")
    first, second = render_text(LETTER, config), render_text(LETTER, config)
    assert first.pages[0].png_bytes() == second.pages[0].png_bytes()
    assert first.content_hash() == second.content_hash()
    assert first.pages[0].content_hash() == hashlib.sha256(first.pages[0].png_bytes()).hexdigest()
    assert render_markdown(REPORT).content_hash() == render_markdown(REPORT).content_hash()


def test_render_in_a_subprocess_gives_the_same_hashes():
    script = (
        "import sys; from pathlib import Path; "
        "from evalsuite.render import preset, render_markdown, render_text; "
        "d = Path(sys.argv[1]); "
        "print(render_text((d / 'letter.txt').read_text(encoding='utf-8'), "
        "preset('color_sepia')).content_hash()); "
        "print(render_markdown((d / 'report.md').read_text(encoding='utf-8')).content_hash())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(FIXTURES)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert result.stdout.split() == [
        render_text(LETTER, preset("color_sepia")).content_hash(),
        render_markdown(REPORT).content_hash(),
    ]


def test_png_holds_no_metadata_chunks():
    data = (
        render_text("Hello", RenderConfig(page_width=200, page_height=100, margins=10))
        .pages[0]
        .png_bytes()
    )
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        chunks.append(data[offset + 4 : offset + 8].decode("ascii"))
        offset += 12 + length
    assert chunks[0] == "IHDR" and chunks[-1] == "IEND"
    assert set(chunks) == {"IHDR", "IDAT", "IEND"}


def test_equal_configs_render_equal_and_different_ones_differ():
    hashes = {name: render_text(LETTER, config).content_hash() for name, config in PRESETS.items()}
    # These three presets are all the common default (mono, 20 pt, black on white).
    assert hashes["font_mono"] == hashes["size_medium"] == hashes["color_default"]
    distinct = {hashes[name] for name in PRESETS if name not in ("size_medium", "color_default")}
    assert len(distinct) == len(PRESETS) - 2


def test_size_is_converted_to_pixels_through_dpi():
    assert RenderConfig(size=10, dpi=144).size_px == 20.0
    half_points = render_text(LETTER, RenderConfig(size=10, dpi=144)).content_hash()
    assert half_points == render_text(LETTER, RenderConfig(size=20)).content_hash()


# --- presets and colors --------------------------------------------------------------------


def test_color_schemes_are_the_documented_pairs():
    assert set(COLOR_SCHEMES) == set(SEED_COLORS)
    for name, (foreground, background) in SEED_COLORS.items():
        assert COLOR_SCHEMES[name] == ColorScheme(rgb(foreground), rgb(background))


def test_presets_are_the_seed_study_and_vary_one_factor():
    assert set(PRESETS) == {
        "font_mono",
        "font_serif",
        "font_sans",
        "size_small",
        "size_medium",
        "size_large",
        "color_default",
        "color_dark",
        "color_sepia",
        "color_blue",
        "color_low_contrast",
    }
    base = RenderConfig(font="mono", size=20, colors="default")
    sizes = {"small": 14, "medium": 20, "large": 28}
    for name, config in PRESETS.items():
        factor, value = name.split("_", 1)
        if factor == "font":
            assert config == base.replace(font=value), name
        elif factor == "size":
            assert config == base.replace(size=sizes[value]), name
        else:
            assert config == base.replace(colors=value), name
    assert preset("size_large").size == 28


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_renders_in_its_colors_with_exact_boxes(name):
    config = preset(name)
    foreground, background = (rgb(h) for h in SEED_COLORS[config.colors])
    document = render_text(LETTER, config)
    page = document.pages[0]
    assert page.size == (1024, 1024)
    array = pixels(page)
    for corner in (array[0, 0], array[0, -1], array[-1, 0], array[-1, -1]):
        assert tuple(corner) == background
    # Glyph stems are solid: the text color itself is on the page.
    assert (array == np.array(foreground, dtype=np.uint8)).all(axis=2).sum() > 500
    for page in document.pages:
        assert_boxes_exact(page, background)
    # The long URL is split between characters; nothing else changes.
    assert "".join(words_of(document)) == "".join(LETTER.split())


def test_explicit_rgb_colors():
    config = RenderConfig(colors=((200, 10, 20), (5, 40, 60)))
    assert config.scheme == ColorScheme((200, 10, 20), (5, 40, 60))
    page = render_text("Explicit colors", config).pages[0]
    assert tuple(pixels(page)[0, 0]) == (5, 40, 60)
    assert (pixels(page) == np.array((200, 10, 20), dtype=np.uint8)).all(axis=2).any()
    assert_boxes_exact(page, (5, 40, 60))


def test_larger_sizes_draw_taller_lines():
    heights = [
        render_text("Height", preset(name)).lines[0].box
        for name in ("size_small", "size_medium", "size_large")
    ]
    assert [y2 - y1 for _, y1, _, y2 in heights] == sorted({y2 - y1 for _, y1, _, y2 in heights})


# --- text layout ----------------------------------------------------------------------------


def test_lines_keep_their_text_spacing_and_order():
    document = render_text(LETTER)
    texts = [line.text for line in document.lines]
    assert texts[:4] == [
        "Harbor Street Library",
        "=====================",
        "Notice No. 2024-117",
        "To all members:",
    ]
    assert "Monday - Thursday    9:00 - 20:00" in texts
    assert "Saturday (tabbed)   10:00 - 16:00" in texts
    long_url = "https://library.example.org/notices/2024-117/reading-room-closure-and-temporary-arrangements-for-members"
    assert texts[-4].endswith("or visit") and "".join(texts[-3:-1]) == long_url
    assert texts[-1] == "Thank you for your patience."
    tops = [line.box[1] for line in document.lines]
    assert tops == sorted(tops)


def test_blank_lines_keep_their_height_and_indent_is_kept():
    config = RenderConfig()
    pitch = config.line_pitch_px
    single = render_text("Ab\nAb", config).lines
    double = render_text("Ab\n\nAb", config).lines
    assert single[1].box[1] - single[0].box[1] == pitch
    assert double[1].box[1] - double[0].box[1] == 2 * pitch
    indented = render_text("Ab\n    Ab", config).lines
    # DejaVu Sans Mono advances 0.602 em per character: four spaces at 20 px.
    assert indented[1].box[0] - indented[0].box[0] == round(4 * 0.60205 * 20)


def test_wrapped_continuations_keep_the_indent():
    line = "   " + " ".join(["wrap"] * 80)
    lines = render_text(line, RenderConfig(page_width=500, page_height=2000)).lines
    assert len(lines) > 3
    assert len({box[0] for box in (line.box for line in lines)}) == 1
    assert lines[0].box[0] > render_text("wrap").lines[0].box[0]


WORDS = st.lists(
    st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789.,;:!?()-'", min_size=1, max_size=14
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(
    words=WORDS,
    separators=st.lists(st.sampled_from([" ", "  ", "\n", " \n", "\n\n", "\t"]), max_size=60),
    family=st.sampled_from(["mono", "serif", "sans"]),
    size=st.sampled_from([9, 14, 20, 28]),
    page_width=st.integers(min_value=220, max_value=700),
)
def test_wrapping_keeps_all_words_in_order(words, separators, family, size, page_width):
    text = words[0] + "".join(
        (separators[i] if i < len(separators) else " ") + word for i, word in enumerate(words[1:])
    )
    config = RenderConfig(
        font=family, size=size, page_width=page_width, page_height=400, margins=20
    )
    document = render_text(text, config)
    assert "".join(words_of(document)) == "".join(text.split())
    # Words are split only when wider than the line: no DejaVu glyph is wider than 1.1 em.
    if max(map(len, words)) * 1.1 * size <= page_width - 40:
        assert words_of(document) == text.split()
    for page in document.pages:
        for line in page.lines:
            # Ink may overhang its advance width by a pixel or two (serif terminals).
            assert line.box[2] <= page_width - 20 + 2 and line.box[3] <= 400 - 20


def test_a_word_wider_than_the_page_is_split_between_characters():
    word = "x" * 300
    document = render_text(f"start {word} end", RenderConfig(page_width=400, page_height=800))
    texts = [line.text for line in document.lines]
    assert texts[0] == "start"
    assert "".join(texts[1:-1]) + texts[-1].removesuffix(" end") == word
    assert all(line.box[2] <= 400 - 40 for line in document.lines)


def test_long_text_is_paginated_and_single_page_is_one_tall_page():
    text = "\n\n".join([LETTER] * 6)
    config = RenderConfig(page_height=500)
    paged = render_text(text, config)
    tall = render_text(text, config, single_page=True)
    assert len(paged.pages) > 3 and len(tall.pages) == 1
    _, top, _, bottom = config.margins
    for page in paged.pages:
        assert page.size == (1024, 500)
        assert page.lines and all(
            top - 3 <= ln.box[1] and ln.box[3] <= 500 - bottom for ln in page.lines
        )
        assert_boxes_exact(page, (255, 255, 255))
    # Pages are filled: at most three blank lines and the next line's room stay free.
    for page in paged.pages[:-1]:
        assert page.lines[-1].box[3] > 500 - bottom - 4 * config.line_pitch_px
    assert tall.pages[0].size[0] == 1024 and tall.pages[0].size[1] > 4 * 500
    assert [ln.text for ln in tall.lines] == [ln.text for ln in paged.lines]
    assert "".join(words_of(tall)) == "".join(text.split())
    assert_boxes_exact(tall.pages[0], (255, 255, 255))


def test_empty_text_is_one_blank_page():
    document = render_text("")
    assert len(document.pages) == 1 and document.lines == []
    assert not ink(document.pages[0], (255, 255, 255)).any()
    assert render_text("", single_page=True).pages[0].size == (1024, 80)


def test_save_and_layout(tmp_path):
    one = render_text(LETTER)
    [path] = one.save(tmp_path / "letter.png")
    assert path.read_bytes() == one.pages[0].png_bytes()
    many = render_text("\n".join(["line"] * 200), RenderConfig(page_height=300))
    paths = many.save(tmp_path / "many.png")
    assert len(paths) == len(many.pages) > 9
    assert paths[0].name == f"many_p{1:0{len(str(len(paths)))}d}.png"
    assert [p.read_bytes() for p in paths] == [page.png_bytes() for page in many.pages]
    layout = json.loads(json.dumps(one.layout()))
    assert layout["config"]["font"] == "mono"
    assert [tuple(line["box"]) for line in layout["pages"][0]["lines"]] == [
        line.box for line in one.lines
    ]


# --- the seed study's documents -------------------------------------------------------------


def render_docs() -> list[Path]:
    return sorted(shared_data("render_docs").glob("*.txt"))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_seed_documents_render_every_word(name):
    config = preset(name)
    documents = render_docs()
    assert len(documents) == 4
    for path in documents:
        source = path.read_text(encoding="utf-8")
        # One image per document, as the seed study rendered them.
        document = render_text(source, config, single_page=True)
        assert document.pages[0].size[0] == 1024
        assert words_of(document) == source.split()
        if config.size <= 20:  # at 28 pt the longest line (56 characters) wraps
            expected = [line.strip() for line in source.split("\n") if line.strip()]
            assert [line.text for line in document.lines] == expected
        assert_boxes_exact(document.pages[0], config.scheme.background)


def pubtabnet_records() -> list[dict]:
    path = shared_data("pubtabnet", "PubTabNet_Examples.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_pubtabnet_tables_render_with_their_spans():
    records = pubtabnet_records()
    assert len(records) == 20
    for record in records:
        structure, cells = record["html"]["structure"]["tokens"], record["html"]["cells"]
        html, spans, cell_tokens = [], [], iter(cells)
        for token in structure:
            html.append(token)
            if token in ("<td>", "<td"):
                spans.append({"rowspan": 1, "colspan": 1})
            if match := re.fullmatch(r' (rowspan|colspan)="(\d+)"', token):
                spans[-1][match.group(1)] = int(match.group(2))
            if token in ("<td>", ">"):
                html.append("".join(next(cell_tokens)["tokens"]))
        page = render_markdown("<table>" + "".join(html) + "</table>", single_page=True).pages[0]
        assert [(c.rowspan, c.colspan) for c in page.cells] == [
            (s["rowspan"], s["colspan"]) for s in spans
        ], record["filename"]
        assert [c.text for c in page.cells] == [
            " ".join(re.sub(r"<[^>]+>", "", "".join(cell["tokens"])).split()) for cell in cells
        ]
        assert_boxes_exact(page, (255, 255, 255))


# --- markdown -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report():
    return render_markdown(REPORT)


def lines_by_text(document) -> dict[str, tuple[int, int, int, int]]:
    return {line.text: line.box for line in document.lines}


def test_markdown_ink_is_all_in_lines_cells_and_rules(report):
    assert len(report.pages) == 1
    page = report.pages[0]
    assert_boxes_exact(page, (255, 255, 255))
    array = pixels(page)
    rules = outlines(array.shape, [cell.box for cell in page.cells])
    assert (array[rules] == 0).all(), "cell borders are solid foreground"
    assert len(page.rules) == 1 and (array[filled(array.shape, page.rules)] == 0).all()


def test_markdown_headings_lists_and_code(report):
    roles = {line.text: line.role for line in report.lines}
    assert roles["Quarterly Report"] == roles["Highlights"] == "heading"
    assert roles["total = q1 + q2"] == "code"
    assert roles["Figures exclude discontinued operations."] == "paragraph"
    boxes = lines_by_text(report)
    height = {text: box[3] - box[1] for text, box in boxes.items()}
    assert height["Quarterly Report"] > height["Regional results"] > height["• Debt: none"]
    items = [line.text for line in report.lines if line.role == "list_item"]
    assert items == [
        "1. Revenue rose 12% year over year.",
        "2. Operating margin held at 18%.",
        "• North America led growth.",
        "◦ Canada doubled its share.",
        "• Europe was flat.",
        "3. Headcount stayed constant.",
        "• Cash position: strong",
        "• Debt: none",
    ]
    x = {text.split()[1]: box[0] for text, box in boxes.items() if text in items}
    assert x["Revenue"] < x["North"] < x["Canada"]
    assert x["North"] == x["Europe"]
    # Paragraph text wraps at the right margin and keeps every word.
    paragraph = [line.text for line in report.lines if line.role == "paragraph"][:2]
    assert " ".join(paragraph).split() == REPORT.split("\n\n")[1].split()


def test_bold_headings_carry_more_ink_than_body_text():
    document = render_markdown("#### Same words here\n\nSame words here")
    heading, body = document.lines
    assert heading.role == "heading" and body.role == "paragraph"
    painted = ink(document.pages[0], (255, 255, 255))
    heading_ink, body_ink = (
        painted[y1:y2, x1:x2].sum() for x1, y1, x2, y2 in (heading.box, body.box)
    )
    assert heading_ink > 1.1 * body_ink


def cells_of(document, table):
    return {cell.text: cell for cell in document.pages[0].cells if cell.table == table}


def test_pipe_table_is_a_full_grid_with_alignment(report):
    cells = [cell for cell in report.pages[0].cells if cell.table == 0]
    assert [(c.row, c.col, c.text, c.header) for c in cells] == [
        (r, c, text, r == 0)
        for r, row in enumerate(
            [
                ["Region", "Q1", "Q2"],
                ["North", "120", "135"],
                ["South", "80", "95"],
                ["East", "101", "99"],
            ]
        )
        for c, text in enumerate(row)
    ]
    boxes = lines_by_text(report)
    # Q1 is right-aligned, Region left-aligned: equal right (resp. left) edges down the column.
    assert boxes["120"][2] == boxes["80"][2] == boxes["101"][2]
    assert boxes["North"][0] == boxes["South"][0] == boxes["East"][0]
    # Neighbouring cells share their border.
    by_place = {(c.row, c.col): c.box for c in cells}
    assert by_place[(0, 0)][2] - 1 == by_place[(0, 1)][0]
    assert by_place[(0, 0)][3] - 1 == by_place[(1, 0)][1]


def test_html_table_spans_are_drawn(report):
    cells = cells_of(report, 1)
    revenue, segment = cells["Revenue"], cells["Segment"]
    assert (revenue.colspan, segment.rowspan) == (2, 2)
    assert revenue.box[0] == cells["2023"].box[0] and revenue.box[2] == cells["2024"].box[2]
    assert segment.box[1] == revenue.box[1] and segment.box[3] == cells["2023"].box[3]
    assert cells["merged reporting"].colspan == 2 and cells["Services"].rowspan == 2
    assert cells["77"].row == 4 and cells["77"].col == 1 and cells["Hardware"].header is False
    page = report.pages[0]
    painted = ink(page, (255, 255, 255))
    text = filled(painted.shape, [line.box for line in page.lines])
    # The column border between 2023 and 2024 stops at the spanning cells ...
    border_x = cells["2024"].box[0]
    for spanning in (revenue, cells["merged reporting"]):
        column = slice(spanning.box[1] + 1, spanning.box[3] - 1)
        assert not (painted[column, border_x] & ~text[column, border_x]).any()
    assert painted[cells["2024"].box[1] + 1 : cells["2024"].box[3] - 1, border_x].all()
    # ... and the row border below Revenue stops at Segment.
    border_y = cells["2023"].box[1]
    row = slice(segment.box[0] + 1, segment.box[2] - 1)
    assert not (painted[border_y, row] & ~text[border_y, row]).any()
    assert painted[border_y, cells["2023"].box[0] : cells["2024"].box[2]].all()


def test_long_tables_split_between_rows_that_no_rowspan_crosses():
    body = "".join(
        f'<tr><td rowspan="2">group {i}</td><td>first {i}</td></tr><tr><td>second {i}</td></tr>'
        for i in range(20)
    )
    document = render_markdown(f"<table>{body}</table>", RenderConfig(page_height=400))
    assert len(document.pages) > 2
    seen = []
    for page in document.pages:
        rows = sorted({cell.row for cell in page.cells})
        assert rows[0] % 2 == 0 and rows[-1] % 2 == 1, "a rowspan pair was split"
        seen.extend(cell.text for cell in page.cells)
        assert_boxes_exact(page, (255, 255, 255))
        assert all(cell.box[3] <= 400 - 40 + 1 for cell in page.cells)
    assert seen == [t for i in range(20) for t in (f"group {i}", f"first {i}", f"second {i}")]
    tall = render_markdown(
        f"<table>{body}</table>", RenderConfig(page_height=400), single_page=True
    )
    assert len(tall.pages) == 1 and [c.text for c in tall.pages[0].cells] == seen


SPANS = st.lists(
    st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=4),
    min_size=1,
    max_size=5,
)


def expected_grid(spans) -> list[tuple[int, int]] | None:
    """HTML's table model by hand: each cell at the first free slot of its row; None on overlap."""
    taken: set[tuple[int, int]] = set()
    places = []
    for i, row in enumerate(spans):
        col = 0
        for rowspan, colspan in row:
            while (i, col) in taken:
                col += 1
            slots = {
                (r, c)
                for r in range(i, min(i + rowspan, len(spans)))
                for c in range(col, col + colspan)
            }
            if slots & taken:
                return None
            taken |= slots
            places.append((i, col))
            col += colspan
    return places


@settings(max_examples=60, deadline=None)
@given(spans=SPANS)
def test_spanning_cells_are_placed_by_the_html_table_model(spans):
    html = (
        "<table>"
        + "".join(
            "<tr>"
            + "".join(
                f'<td rowspan="{rs}" colspan="{cs}">r{i}c{j}</td>' for j, (rs, cs) in enumerate(row)
            )
            + "</tr>"
            for i, row in enumerate(spans)
        )
        + "</table>"
    )
    places = expected_grid(spans)
    if places is None:
        with pytest.raises(ValueError, match="overlaps"):
            render_markdown(html)
        return
    page = render_markdown(html, single_page=True).pages[0]
    assert [(cell.row, cell.col) for cell in page.cells] == places
    assert [cell.text for cell in page.cells] == [
        f"r{i}c{j}" for i, row in enumerate(spans) for j in range(len(row))
    ]
    interiors = [(c.box[0] + 1, c.box[1] + 1, c.box[2] - 1, c.box[3] - 1) for c in page.cells]
    for a, first in enumerate(interiors):
        for second in interiors[a + 1 :]:
            assert (
                first[2] <= second[0]
                or second[2] <= first[0]
                or first[3] <= second[1]
                or second[3] <= first[1]
            ), "cells overlap"
    for cell, line in zip(page.cells, page.lines, strict=True):
        assert line.text == cell.text
        x1, y1, x2, y2 = cell.box
        assert x1 < line.box[0] and line.box[2] < x2 and y1 < line.box[1] and line.box[3] < y2
    assert_boxes_exact(page, (255, 255, 255))


def test_wide_table_cells_wrap_inside_the_page():
    row = "| " + " | ".join(["several words in this cell"] * 6) + " |"
    md = "\n".join([row, "|" + "---|" * 6, row])
    document = render_markdown(md, RenderConfig(page_width=800))
    page = document.pages[0]
    assert max(cell.box[2] for cell in page.cells) <= 800 - 40
    assert len(page.lines) > len(page.cells)
    for cell in page.cells:
        inside = [
            ln
            for ln in page.lines
            if cell.box[0] < ln.box[0]
            and ln.box[2] < cell.box[2]
            and cell.box[1] < ln.box[1]
            and ln.box[3] < cell.box[3]
        ]
        assert " ".join(ln.text for ln in inside) == cell.text
    assert_boxes_exact(page, (255, 255, 255))


def test_html_block_without_a_table_is_a_paragraph():
    document = render_markdown("<div>\nSome <b>bold</b> words\n</div>")
    assert [(line.text, line.role) for line in document.lines] == [("Some bold words", "paragraph")]


@pytest.mark.parametrize(
    ("html", "message"),
    [
        ('<table><tr><td colspan="x">a</td></tr></table>', "colspan"),
        ('<table><tr><td rowspan="0">a</td></tr></table>', "rowspan"),
        ("<table></table>", "no cells"),
        (
            '<table><tr><td>a</td><td rowspan="2">b</td></tr><tr><td colspan="2">c</td></tr>'
            "</table>",
            "overlaps",
        ),
    ],
)
def test_malformed_html_tables_raise(html, message):
    with pytest.raises(ValueError, match=message):
        render_markdown(html)


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "error", "field"),
    [
        ({"font": "comic"}, ValueError, "font"),
        ({"font": None}, TypeError, "font"),
        ({"size": "huge"}, ValueError, "size"),
        ({"size": -3}, ValueError, "size"),
        ({"size": float("nan")}, ValueError, "size"),
        ({"size": 0.5}, ValueError, "size"),
        ({"size": True}, TypeError, "size"),
        ({"colors": "neon"}, ValueError, "colors"),
        ({"colors": ((300, 0, 0), (0, 0, 0))}, ValueError, "colors"),
        ({"colors": ((0, 0), (0, 0, 0))}, ValueError, "colors"),
        ({"colors": 7}, TypeError, "colors"),
        ({"page_width": 0}, ValueError, "page_width"),
        ({"page_height": 10.5}, TypeError, "page_height"),
        ({"margins": 600}, ValueError, "margins"),
        ({"margins": (1, 2, 3)}, ValueError, "margins"),
        ({"margins": (1, 2, 3, -4)}, ValueError, "margins"),
        ({"line_spacing": 0}, ValueError, "line_spacing"),
        ({"dpi": float("inf")}, ValueError, "dpi"),
    ],
)
def test_bad_config_names_the_field(changes, error, field):
    with pytest.raises(error, match=field):
        RenderConfig(**changes)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="font_mono"):
        preset("font_comic")
    with pytest.raises(TypeError, match="text"):
        render_text(None)
    with pytest.raises(TypeError, match="text"):
        render_text(b"bytes")
    with pytest.raises(TypeError, match="md"):
        render_markdown(b"# bytes")
    with pytest.raises(TypeError, match="config"):
        render_text("x", "mono")
    with pytest.raises(TypeError, match="single_page"):
        render_text("x", single_page="yes")
    with pytest.raises(ValueError, match="page_height"):
        render_text("x", RenderConfig(size=60, page_height=80, margins=10))
    assert (
        len(
            render_text(
                "x", RenderConfig(size=60, page_height=80, margins=10), single_page=True
            ).lines
        )
        == 1
    )
