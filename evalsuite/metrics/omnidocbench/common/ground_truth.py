"""What OmniDocBench's code bases (v1.0's, v1.6's) read alike of a ground-truth page: the
categories scored as text, those matched but not scored, and a group of truncated blocks merged
into one block."""

from __future__ import annotations

from typing import Any

__all__ = ["IGNORED_CATEGORIES", "TEXT_CATEGORIES", "merged_block"]

TEXT_CATEGORIES = (
    "text_block",
    "title",
    "code_txt",
    "code_txt_caption",
    "reference",
    "equation_caption",
    "figure_caption",
    "figure_footnote",
    "table_caption",
    "table_footnote",
    "code_algorithm",
    "code_algorithm_caption",
    "header",
    "footer",
    "page_footnote",
    "page_number",
)
"""Ground-truth categories matched as text, in the order the official code collects them
(before the ignored ones are dropped)."""

IGNORED_CATEGORIES = (
    "figure_caption",
    "figure_footnote",
    "table_caption",
    "table_footnote",
    "code_algorithm",
    "code_algorithm_caption",
    "header",
    "footer",
    "page_footnote",
    "page_number",
    "equation_caption",
)
"""Ground-truth categories that are matched (to absorb such predicted text) but not scored."""


def merged_block(parts: list[Any]) -> dict[str, Any]:
    """Truncated blocks (sorted by ``order``) as one: the first's ``category_type``, ``order``
    and ``anno_id``, their ``text`` joined with ``""``, ``merge_list`` = ``parts``."""
    first = parts[0]
    return {
        "category_type": first["category_type"],
        "order": first["order"],
        "anno_id": first["anno_id"],
        "text": "".join(block["text"] for block in parts),
        "merge_list": parts,
    }
