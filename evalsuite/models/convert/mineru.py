"""MinerU2.5's answers to page markdown, as mineru-vl-utils 0.1.22 reads them and OmniDocBench's
MinerU2.5 script writes the page.

1. The layout answer (:func:`parse_layout`), one block per line::

       <|box_start|>x1 y1 x2 y2<|box_end|><|ref_start|>TYPE<|ref_end|><|rotate_up|>

   as ``MinerUClientHelper.parse_layout_output`` reads it: a line must match the whole pattern
   (integer corners on a 0–1000 grid, a word as the type, any tail); a corner above 1000 drops the
   line, reversed corners are swapped, a box of zero width or height is dropped, corners become
   fractions (c / 1000); the type is lower-cased and must be one of the client's block types
   (``unknown`` included, ``inline_formula`` not); the angle is that of the first rotate token of
   up, right, down, left (0, 90, 180, 270) found in the tail, else None. No de-duplication.
2. The blocks with their answers (:func:`post_processed`): the client's own ``post_process``
   (OTSL tables to HTML, the LaTeX fixes of equations, equations wrapped in ``\\[ … \\]``,
   ``equation_block`` dropped) with the flags of OmniDocBench's script: ``handle_equation_block``
   off, the client's defaults otherwise. Where it raises, the blocks stay as they are, as
   ``MinerUClientHelper.post_process`` keeps them.
3. The page (:func:`page_markdown`): every block's content that is not empty, in the layout's
   order, joined by a blank line (headers, footers and page numbers stay; images have none).
"""

from __future__ import annotations

import re

from mineru_vl_utils.post_process import post_process
from mineru_vl_utils.structs import BLOCK_TYPES, ContentBlock

GRID = 1000
"""The layout's coordinates run from 0 to this, over the 1036 x 1036 layout image."""
ANGLES = {"<|rotate_up|>": 0, "<|rotate_right|>": 90, "<|rotate_down|>": 180,
          "<|rotate_left|>": 270}
"""Rotate tokens and their angles (degrees counter-clockwise), in the order they are looked for."""
_LAYOUT_LINE = re.compile(
    r"<\|box_start\|>(\d+)\s+(\d+)\s+(\d+)\s+(\d+)<\|box_end\|>"
    r"<\|ref_start\|>(\w+?)<\|ref_end\|>(.*)"
)


def _fractions(corners: tuple[int, int, int, int]) -> list[float] | None:
    """The box as fractions of the page (x1 <= x2, y1 <= y2); None outside the grid or empty."""
    if any(corner > GRID for corner in corners):
        return None
    x1, y1, x2, y2 = corners
    x1, x2 = sorted((x1, x2))
    y1, y2 = sorted((y1, y2))
    if x1 == x2 or y1 == y2:
        return None
    return [corner / GRID for corner in (x1, y1, x2, y2)]


def _angle(tail: str) -> int | None:
    return next((angle for token, angle in ANGLES.items() if token in tail), None)


def parse_layout(answer: str) -> list[ContentBlock]:
    """The blocks of a layout answer, in its order (see the module docstring, step 1)."""
    blocks = []
    for line in answer.split("\n"):
        match = _LAYOUT_LINE.fullmatch(line)
        if match is None:
            continue
        *corners, kind, tail = match.groups()
        box = _fractions(tuple(int(corner) for corner in corners))
        kind = kind.lower()
        if box is None or kind not in BLOCK_TYPES:
            continue
        blocks.append(ContentBlock(kind, box, angle=_angle(tail)))
    return blocks


def post_processed(blocks: list[ContentBlock]) -> tuple[list[ContentBlock], str | None]:
    """The blocks after mineru-vl-utils' ``post_process`` with OmniDocBench's flags, and the
    error it raised (then the blocks as it left them), else None."""
    try:
        return post_process(blocks, simple_post_process=False, handle_equation_block=False,
                            abandon_list=False, abandon_paratext=False), None
    except Exception as exc:  # the client's helper keeps the blocks on any error
        return blocks, f"{type(exc).__name__}: {exc}"


def page_markdown(blocks: list[ContentBlock]) -> str:
    """The non-empty contents of ``blocks`` joined by a blank line (OmniDocBench's script)."""
    return "\n\n".join(block.content for block in blocks if block.content)
