"""dots.ocr's answer to ``prompt_layout_all_en`` (a JSON list of layout cells) as page markdown.

As its parser does (rednote-hilab/dots.ocr 36d7248, ``DotsOCRParser._parse_single_image``):

1. The answer is parsed as JSON and every cell's bbox mapped from the model's input pixels (the
   sent image after :data:`~evalsuite.models.resize.DOTS_OCR`'s resize) to the page:
   x → int(x / (W'/W)), y → int(y / (H'/H)) (``post_process_cells``).
2. Where that fails (not JSON, not a non-empty list starting with a dict, a bad bbox), the answer
   is salvaged (``OutputCleaner.clean_model_output``, :func:`salvage`) and the page is the text of
   the salvaged cells joined by blank lines, nothing else (headers and footers kept).
3. Otherwise the cells become markdown (``layoutjson2md``): Picture → the crop as a PNG data URL,
   Formula → a ``$$`` block (:func:`formula_markdown`), anything else its text stripped; items
   joined by blank lines; ``drop_page_header_footer`` leaves out Page-header and Page-footer (the
   ``_nohf.md`` file its OmniDocBench and olmOCR-bench evaluations read).

Where the official code raises, :class:`~evalsuite.models.convert.ConversionError` is raised (the
sample fails with that reason) instead of writing a page.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Sequence
from typing import Any

from PIL import Image

from evalsuite.models.convert import ConversionError
from evalsuite.models.resize import DOTS_OCR, ImageSizeError

HEADER_FOOTER = ("Page-header", "Page-footer")
_LATEX_MARKERS = [
    re.compile(pattern, re.DOTALL)
    for pattern in (
        r"\$\$.*?\$\$",
        r"\$[^$\n]+?\$",
        r"\\begin\{.*?\}.*?\\end\{.*?\}",
        r"\\[a-zA-Z]+\{.*?\}",
        r"\\[a-zA-Z]+",
        r"\\\[.*?\\\]",
        r"\\\(.*?\\\)",
    )
]
_PREAMBLE = [
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\\documentclass\{[^}]+\}",
        r"\\usepackage\{[^}]+\}",
        r"\\usepackage\[[^\]]*\]\{[^}]+\}",
        r"\\begin\{document\}",
        r"\\end\{document\}",
    )
]
_DISPLAY_ON_ONE_LINE = re.compile(r".*\\\[.*\\\].*")
_INLINE_MATH = re.compile(r"\$([^$]+)\$")
_CELL = re.compile(r'\{[^{}]*?"bbox"\s*:\s*\[[^\]]*?\][^{}]*?\}', re.DOTALL)
_MISSING_COMMA = re.compile(r'\}\s*\{(?!")')
_CELL_START = '{"bbox":'
_LONG_ANSWER = 50000
REPEATED_TEXT_LIMIT = 5
"""A (category, text) pair seen this often keeps only its first cell."""


def has_latex(text: Any) -> bool:
    """Whether ``text`` holds a LaTeX marker: $$…$$, $…$, \\begin…\\end, \\cmd{…}, \\cmd,
    \\[…\\] or \\(…\\) (``has_latex_markdown``)."""
    return isinstance(text, str) and any(p.search(text) for p in _LATEX_MARKERS)


def formula_markdown(text: str) -> str:
    """A Formula cell's text as a display block (``get_formula_in_markdown``): ``$$…$$`` and
    ``\\[…\\]`` rewrapped as ``$$\\n…\\n$$`` (``$$`` content holding a ``$`` kept as is); text
    with ``\\[…\\]`` on one line, with ``$…$``, or without LaTeX kept; other LaTeX, its preamble
    commands removed (when "usepackage" occurs) and outer backticks dropped, wrapped in ``$$``."""
    if not isinstance(text, str):
        raise ConversionError(f"Formula text is {type(text).__name__}, not a string")
    text = text.strip()
    if text.startswith("$$") and text.endswith("$$"):
        inner = text[2:-2].strip()
        return text if "$" in inner else f"$$\n{inner}\n$$"
    if text.startswith("\\[") and text.endswith("\\]"):
        return f"$$\n{text[2:-2].strip()}\n$$"
    if _DISPLAY_ON_ONE_LINE.search(text) or _INLINE_MATH.search(text) or not has_latex(text):
        return text
    if "usepackage" in text:
        for pattern in _PREAMBLE:
            text = pattern.sub("", text)
    if not text:
        raise ConversionError("Formula text is empty once its LaTeX preamble is removed")
    if text[0] == "`" and text[-1] == "`":
        text = text[1:-1]
    return f"$$\n{text}\n$$"


def clean_text(text: Any) -> str:
    """Any other cell's text (``clean_text``): "" when falsy, else stripped, with the outer
    backticks of a "`$…$`" dropped."""
    if not text:
        return ""
    if not isinstance(text, str):
        raise ConversionError(f"cell text is {type(text).__name__}, not a string")
    text = text.strip()
    if text[:2] == "`$" and text[-2:] == "$`":
        text = text[1:-1]
    return text


def _png_data_url(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def cells_markdown(
    page: Image.Image,
    cells: Sequence[dict[str, Any]],
    *,
    text_key: str = "text",
    drop_page_header_footer: bool = False,
) -> str:
    """The page markdown of layout cells (``layoutjson2md``; bboxes in ``page`` pixels)."""
    items = []
    for cell in cells:
        try:
            x1, y1, x2, y2 = (int(value) for value in cell["bbox"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConversionError(f"cell bbox {cell.get('bbox')!r} is not 4 numbers") from exc
        text = cell.get(text_key, "")
        category = cell.get("category")
        if "category" not in cell:
            raise ConversionError("cell has no category")
        if drop_page_header_footer and category in HEADER_FOOTER:
            continue
        if category == "Picture":
            if x2 < x1 or y2 < y1:
                raise ConversionError(f"Picture bbox {[x1, y1, x2, y2]} has a negative side")
            if x2 == x1 or y2 == y1:
                raise ConversionError(f"Picture bbox {[x1, y1, x2, y2]} is empty")
            items.append(f"![]({_png_data_url(page.crop((x1, y1, x2, y2)))})")
        elif category == "Formula":
            items.append(formula_markdown(text))
        else:
            items.append(clean_text(text))
    return "\n\n".join(items)


def page_cells(
    answer: str,
    page_size: tuple[int, int],
    sent_size: tuple[int, int],
    min_pixels: int | None = None,
    max_pixels: int | None = None,
) -> list[dict[str, Any]] | None:
    """The answer's cells with bboxes in page pixels (``post_process_cells``), or None where the
    official parser falls back to salvaging: not JSON, not a non-empty list starting with a
    dict, or a bbox it cannot map."""
    try:
        cells = json.loads(answer)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(cells, list) and cells and isinstance(cells[0], dict)):
        return None
    page_width, page_height = page_size
    try:
        height, width = DOTS_OCR.size(sent_size[1], sent_size[0], min_pixels=min_pixels or None,
                                      max_pixels=max_pixels or None)
    except ImageSizeError:
        return None
    scale_x, scale_y = width / page_width, height / page_height
    mapped = []
    try:
        for cell in cells:
            x1, y1, x2, y2 = cell["bbox"][:4]
            mapped.append({**cell, "bbox": [int(float(x1) / scale_x), int(float(y1) / scale_y),
                                            int(float(x2) / scale_x), int(float(y2) / scale_y)]})
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError):
        return None
    return mapped


def _cells_of_list(items: list[Any]) -> list[Any]:
    """``clean_list_data``: dicts with a 4-number bbox kept, a 3-number bbox reduced to its
    category and text, no bbox kept when there is a category; anything else dropped."""
    kept = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if "bbox" not in item:
            if "category" in item:
                kept.append(dict(item))
            continue
        bbox = item["bbox"]
        if isinstance(bbox, list) and len(bbox) == 3:
            reduced = {key: item[key] for key in ("category", "text") if key in item}
            if reduced:
                kept.append(reduced)
        elif isinstance(bbox, list) and len(bbox) == 4:
            kept.append(dict(item))
    return kept


def _repair_text(text: str) -> str:
    """``clean_string_data``'s text steps: "}{" gets its comma; a long answer, or one not ending
    in "]", loses its last cell when it has several; repeated cells are dropped (the answer is
    rebuilt from the first of each); the brackets of a JSON list are made sure of."""
    text = _MISSING_COMMA.sub("},{", text)
    if (len(text) > _LONG_ANSWER or not text.strip().endswith("]")) and (
        text.count(_CELL_START) > 1
    ):
        last = text.rfind(_CELL_START)
        if last > 0:
            text = text[:last].rstrip()
            text = text[:-1] if text.endswith(",") else text
    found = [match.group() for match in _CELL.finditer(text)]
    unique = list(dict.fromkeys(found))
    if len(unique) < len(found):
        text = "[" + ", ".join(unique) + "]"
    text = text.strip()
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text.rstrip(",").rstrip() + "]"
    return text


def _single_cell(text: str) -> list[dict[str, Any]] | None:
    """``_handle_single_incomplete_dict``: one cell from the first bbox (4 integers), category
    (default Text) and up to 10,000 characters of text of an answer cut inside its first cell."""
    if not text.strip().startswith('[{"bbox":'):
        return None
    bbox = re.search(r'"bbox"\s*:\s*\[([^\]]+)\]', text)
    if bbox is None:
        return None
    try:
        coordinates = [int(part.strip()) for part in bbox.group(1).split(",")]
    except ValueError:
        return None
    if len(coordinates) != 4:
        return None
    category = re.search(r'"category"\s*:\s*"([^"]+)"', text)
    content = re.search(r'"text"\s*:\s*"([^"]{0,10000})', text)
    cell: dict[str, Any] = {"bbox": coordinates,
                            "category": category.group(1) if category else "Text"}
    if content and content.group(1):
        cell["text"] = content.group(1)
    return [cell]


def _cells_of_text(text: str) -> list[Any]:
    """``clean_string_data``: the repaired answer's list, else each cell-like object in it that
    parses, else :func:`_single_cell`; [] when nothing comes out."""
    text = _repair_text(text)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        cells = []
        for match in _CELL.finditer(text):
            try:
                cells.append(json.loads(match.group()))
            except (ValueError, RecursionError):
                continue
        return cells or _single_cell(text) or []
    except RecursionError:
        return []
    return parsed if isinstance(parsed, list) else []


def _drop_repeats(cells: list[Any]) -> list[Any]:
    """``remove_duplicate_category_text_pairs_and_bbox``: a (category, text) pair seen
    REPEATED_TEXT_LIMIT times or more, and a bbox seen twice or more, keep their first cell.
    Raises TypeError for an unhashable text or bbox value, as the official code does."""
    if len(cells) <= 1:
        return cells
    texts: dict[tuple[Any, Any], list[int]] = {}
    boxes: dict[tuple[Any, ...], list[int]] = {}
    for position, cell in enumerate(cells):
        if isinstance(cell, dict) and "category" in cell and "text" in cell:
            texts.setdefault((cell["category"], cell["text"]), []).append(position)
    for position, cell in enumerate(cells):
        if isinstance(cell, dict) and isinstance(cell.get("bbox"), list) and cell["bbox"]:
            boxes.setdefault(tuple(cell["bbox"]), []).append(position)
    dropped = {p for seen in texts.values() if len(seen) >= REPEATED_TEXT_LIMIT for p in seen[1:]}
    dropped |= {p for seen in boxes.values() if len(seen) >= 2 for p in seen[1:]}
    return [cell for position, cell in enumerate(cells) if position not in dropped]


def salvage(answer: Any) -> Any:
    """``OutputCleaner.clean_model_output``: the cells that can be recovered from an answer the
    parser could not use (a list is filtered, anything else repaired as text, its ``str``), with
    repeats dropped; the answer itself where the cleaning raises."""
    try:
        cells = _cells_of_list(answer) if isinstance(answer, list) else _cells_of_text(str(answer))
        return _drop_repeats(cells) if cells else cells
    except TypeError:
        return answer


def salvaged_markdown(answer: Any) -> str:
    """The page of a salvaged answer: the ``text`` of each cell that has one, joined by blank
    lines (``post_process_output``'s fallback); a text answer nothing was salvaged from, as is."""
    cells = salvage(answer)
    if not isinstance(cells, list):
        if isinstance(cells, str):
            return cells
        raise ConversionError(f"dots.ocr's answer is JSON {type(cells).__name__}, not cells")
    texts = []
    for cell in cells:
        try:
            if "text" not in cell:
                continue
            text = cell["text"]
        except TypeError as exc:
            raise ConversionError(f"salvaged cell {cell!r} is not a JSON object") from exc
        if not isinstance(text, str):
            raise ConversionError(f"salvaged cell text {text!r} is not a string")
        texts.append(text)
    return "\n\n".join(texts)


def page_markdown(
    answer: str,
    page: Image.Image,
    sent_size: tuple[int, int],
    *,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    drop_page_header_footer: bool = True,
) -> tuple[str, bool]:
    """(markdown, salvaged) of dots.ocr's layout answer for ``page`` sent at ``sent_size``
    (width, height): the cells' markdown, or the salvaged text (``salvaged`` True)."""
    cells = page_cells(answer, page.size, sent_size, min_pixels, max_pixels)
    if cells is None:
        try:
            parsed: Any = json.loads(answer)
        except (ValueError, RecursionError):
            parsed = answer
        return salvaged_markdown(parsed), True
    return cells_markdown(page, cells, drop_page_header_footer=drop_page_header_footer), False
