"""FinixDocBench: score markdown page predictions against ground-truth markdown pages.

Per page (blocks from :func:`evalsuite.metrics.markdown_blocks.parse_blocks`):

- ``text_block_Edit_dist`` = Σ Levenshtein(pred, gt) / Σ max(len(pred), len(gt)) over the text
  block pairs of a minimum-cost assignment (Hungarian, cost = normalised edit distance), every
  unmatched block paired with "" (so it adds its length to both sums); 0.0 when neither page has
  text.
- ``reading_order_Edit_dist`` = normalised edit distance between ``[0, 1, …, n−1]`` (the n
  ground-truth blocks, text and tables, in page order) and the ground-truth indices of the matched
  predicted blocks, taken in predicted order; 0.0 when both are empty.
- ``table_TEDS`` = 100 × mean over ground-truth tables of the TEDS of the predicted table assigned
  to it (Hungarian, cost = 1 − TEDS), floored at 0; 0 when unassigned; None without a
  ground-truth table.

Assignments break ties between equally cheap matchings in favour of blocks at the same relative
position on the page (a term of at most ``markdown_tables.TIE_BREAK`` = 1e-9 per pair).

Dataset: each metric is the mean over pages (``table_TEDS`` over pages with a ground-truth
table); ``overall = ((1 − text)·100 + (1 − order)·100 + TEDS) / 3``, or the mean of the first two
terms when no page has a table. A missing prediction is scored as an empty page; a prediction that
is unreadable or trips a safeguard is scored as an empty page too and recorded as failed, with
its reason.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from evalsuite.errors import DatasetFormatError, DatasetNotFoundError
from evalsuite.metrics._validation import require_str
from evalsuite.metrics.markdown_blocks import Block, parse_blocks, strip_grounding_markup
from evalsuite.metrics.markdown_tables import assign, match_tables
from evalsuite.metrics.tables import FINIXDOCBENCH_MAX_CELLS
from evalsuite.metrics.text import normalized_edit_distance
from evalsuite.textfiles import MAX_PREDICTION_CHARS, file_problem

MAX_TABLE_CELLS = FINIXDOCBENCH_MAX_CELLS
"""A table with more cells than this (50,000) scores TEDS 0: FinixDocBench gives up on it."""
MAX_PRED_ITEMS = 50_000
"""A prediction with more blocks than this is a failed page."""
RATIO_THRESHOLD = 100
"""A prediction with more than this many blocks per ground-truth block is a failed page."""
MAX_TOTAL_LENGTH = MAX_PREDICTION_CHARS
"""A prediction with more characters than this is a failed page (checked before parsing):
FinixDocBench's 10,000,000, the limit of every scorer of the suite."""
MAX_SINGLE_ITEM_LENGTH = 10_000_000
"""A prediction with a block longer than this (characters) is a failed page."""

NO_TABLE_NOTE = (
    "no ground-truth page has a table: table_TEDS is null and overall is the mean of "
    "(1 - text_block_Edit_dist)*100 and (1 - reading_order_Edit_dist)*100"
)
_SUFFIX = ".md"


@dataclass(frozen=True)
class Safeguards:
    """FinixDocBench's limits; the defaults are the module constants of the same names."""

    max_table_cells: int = MAX_TABLE_CELLS
    max_pred_items: int = MAX_PRED_ITEMS
    ratio_threshold: float = RATIO_THRESHOLD
    max_total_length: int = MAX_TOTAL_LENGTH
    max_single_item_length: int = MAX_SINGLE_ITEM_LENGTH

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            kinds = (int, float) if field.name == "ratio_threshold" else (int,)
            if isinstance(value, bool) or not isinstance(value, kinds):
                expected = "a number" if len(kinds) == 2 else "an int"
                raise TypeError(f"{field.name} must be {expected}, got {type(value).__name__}")
            if not value > 0:
                raise ValueError(f"{field.name} must be positive, got {value!r}")


DEFAULT_SAFEGUARDS = Safeguards()


class UnreadablePageError(DatasetFormatError):
    """A page file is not UTF-8 text (undecodable bytes or NUL characters)."""


def evaluate_page(
    pred_markdown: str | None,
    gt_markdown: str,
    *,
    safeguards: Safeguards = DEFAULT_SAFEGUARDS,
) -> dict[str, Any]:
    """Score one predicted page against its ground truth (``None`` = missing prediction).

    Returns ``text_block_Edit_dist`` and ``reading_order_Edit_dist`` in [0, 1], ``table_TEDS``
    in [0, 100] or None, the sums and sequences they come from, block counts, ``status``
    (``ok``/``missing``/``failed``), ``reason`` and ``valid_prediction`` (see :func:`success_rate`).
    """
    gt_blocks = parse_blocks(require_str(gt_markdown, "gt_markdown"))
    if pred_markdown is None:
        return _score_page([], gt_blocks, safeguards, status="missing")
    require_str(pred_markdown, "pred_markdown")
    pred_blocks, reason = _checked_prediction(pred_markdown, len(gt_blocks), safeguards)
    if reason:
        return _failed_page(gt_blocks, reason, safeguards)
    page = _score_page(pred_blocks, gt_blocks, safeguards, status="ok")
    page["valid_prediction"] = _is_valid(pred_markdown, pred_blocks)
    return page


def aggregate_pages(pages: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Dataset metrics from per-page results: means over pages, ``overall`` and ``score``.

    ``table_TEDS`` averages the pages that have a ground-truth table and is None when none has;
    ``overall = ((1 − text)·100 + (1 − order)·100 + table_TEDS) / 3``, without the TEDS term (a
    mean of two) when it is None. ``score`` equals ``overall``.
    """
    if not pages:
        raise ValueError("pages must hold at least one page result")
    ordered = [pages[name] for name in sorted(pages)]
    text = math.fsum(page["text_block_Edit_dist"] for page in ordered) / len(ordered)
    order = math.fsum(page["reading_order_Edit_dist"] for page in ordered) / len(ordered)
    table_pages = [page["table_TEDS"] for page in ordered if page["table_TEDS"] is not None]
    table = math.fsum(table_pages) / len(table_pages) if table_pages else None
    parts = [(1 - text) * 100, (1 - order) * 100, *([] if table is None else [table])]
    overall = math.fsum(parts) / len(parts)
    return {
        "text_block_Edit_dist": text,
        "reading_order_Edit_dist": order,
        "table_TEDS": table,
        "overall": overall,
        "num_samples": len(ordered),
        "score": overall,
    }


def evaluate_dirs(
    pred_dir: str | os.PathLike[str],
    gt_dir: str | os.PathLike[str],
    *,
    allow_name_mismatch: bool = False,
    workers: int | None = None,
    safeguards: Safeguards = DEFAULT_SAFEGUARDS,
) -> dict[str, Any]:
    """Score every ``*.md`` page of ``gt_dir`` against the same file name in ``pred_dir``.

    Returns ``{"success": True, "metrics": aggregate_pages(...), "inputs": {gt_files, pred_files,
    missing_predictions, unexpected_predictions}, "notes": [...], "success_rate": ..., "pages":
    {name: evaluate_page(...)}}``. Raises DatasetNotFoundError for a missing directory and
    DatasetFormatError for no ground-truth page, an unreadable ground-truth page, or differing
    file names (unless ``allow_name_mismatch``: missing predictions then score as empty pages).
    ``workers`` processes share the pages (default: one per available CPU).
    """
    gt_names = _page_names(gt_dir, "gt_dir")
    pred_names = _page_names(pred_dir, "pred_dir")
    if not gt_names:
        raise DatasetFormatError(f"gt_dir has no {_SUFFIX} files: {gt_dir}")
    missing = sorted(set(gt_names) - set(pred_names))
    unexpected = sorted(set(pred_names) - set(gt_names))
    if (missing or unexpected) and not allow_name_mismatch:
        raise DatasetFormatError(
            "prediction and ground-truth file names differ "
            f"(use --allow_name_mismatch to score anyway); missing predictions: {missing}; "
            f"unexpected predictions: {unexpected}"
        )
    tasks = [
        (
            Path(gt_dir, name),
            None if name in missing else Path(pred_dir, name),
            safeguards,
        )
        for name in gt_names
    ]
    pages = dict(zip(gt_names, _run_tasks(tasks, workers), strict=True))
    metrics = aggregate_pages(pages)
    return {
        "success": True,
        "metrics": metrics,
        "inputs": {
            "gt_files": len(gt_names),
            "pred_files": len(pred_names),
            "missing_predictions": missing,
            "unexpected_predictions": unexpected,
        },
        "notes": [NO_TABLE_NOTE] if metrics["table_TEDS"] is None else [],
        "success_rate": sum(page["valid_prediction"] for page in pages.values()) / len(pages),
        "pages": pages,
    }


def success_rate(pred_dir: str | os.PathLike[str], gt_dir: str | os.PathLike[str]) -> float:
    """Share of ground-truth pages whose prediction is valid, in [0, 1].

    Valid: the file exists, is UTF-8 text, is not empty once grounding markup and whitespace are
    removed, trips no safeguard, and every HTML table in it has a closing tag and a cell.
    """
    gt_names = _page_names(gt_dir, "gt_dir")
    if not gt_names:
        raise DatasetFormatError(f"gt_dir has no {_SUFFIX} files: {gt_dir}")
    pred_names = set(_page_names(pred_dir, "pred_dir"))
    valid = 0
    for name in gt_names:
        if name not in pred_names:
            continue
        gt_items = len(parse_blocks(read_page(Path(gt_dir, name))))
        try:
            pred_markdown = read_page(Path(pred_dir, name))
        except UnreadablePageError:
            continue
        blocks, reason = _checked_prediction(pred_markdown, gt_items, DEFAULT_SAFEGUARDS)
        valid += reason is None and _is_valid(pred_markdown, blocks)
    return valid / len(gt_names)


def read_page(path: str | os.PathLike[str]) -> str:
    """A page file's text; UnreadablePageError naming the file if it is not UTF-8 text."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UnreadablePageError(
            f"{path} is not valid UTF-8 (byte {error.start}: {error.reason})"
        ) from None
    if "\x00" in text:
        raise UnreadablePageError(f"{path} is binary (contains NUL characters), not markdown")
    return text


def _page_names(directory: str | os.PathLike[str], name: str) -> list[str]:
    path = Path(directory)
    if not path.exists():
        raise DatasetNotFoundError(f"{name} does not exist: {directory}")
    if not path.is_dir():
        raise DatasetFormatError(f"{name} is not a directory: {directory}")
    names = []
    for entry in path.iterdir():
        if entry.name.endswith(_SUFFIX):
            problem = file_problem(entry)  # a folder or a dead link is not a missing page
            if problem is not None:
                raise DatasetFormatError(f"{name} entry {entry} is {problem}")
            names.append(entry.name)
    return sorted(names)


def _run_tasks(
    tasks: Sequence[tuple[Path, Path | None, Safeguards]], workers: int | None
) -> list[dict[str, Any]]:
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    workers = min(workers, len(tasks))
    if workers == 1:
        return [_evaluate_page_files(task) for task in tasks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        chunksize = max(1, len(tasks) // (workers * 8))
        return list(pool.map(_evaluate_page_files, tasks, chunksize=chunksize))


def _evaluate_page_files(task: tuple[Path, Path | None, Safeguards]) -> dict[str, Any]:
    gt_path, pred_path, safeguards = task
    gt_markdown = read_page(gt_path)
    if pred_path is None:
        return evaluate_page(None, gt_markdown, safeguards=safeguards)
    try:
        pred_markdown = read_page(pred_path)
    except UnreadablePageError as error:
        return _failed_page(parse_blocks(gt_markdown), str(error), safeguards)
    return evaluate_page(pred_markdown, gt_markdown, safeguards=safeguards)


def _checked_prediction(
    pred_markdown: str, gt_items: int, safeguards: Safeguards
) -> tuple[list[Block], str | None]:
    """The prediction's blocks, or no blocks and the safeguard it trips."""
    if len(pred_markdown) > safeguards.max_total_length:
        return [], (
            f"prediction has {len(pred_markdown):,} characters, more than "
            f"MAX_TOTAL_LENGTH = {safeguards.max_total_length:,}"
        )
    blocks = parse_blocks(pred_markdown)
    items = len(blocks)
    longest = max((len(block.content) for block in blocks), default=0)
    if items > safeguards.max_pred_items:
        reason = f"prediction has {items:,} blocks, more than MAX_PRED_ITEMS = "
        reason += f"{safeguards.max_pred_items:,}"
    elif items > safeguards.ratio_threshold * max(gt_items, 1):
        reason = f"prediction has {items:,} blocks for {gt_items:,} ground-truth blocks, more "
        reason += f"than RATIO_THRESHOLD = {safeguards.ratio_threshold:g} per ground-truth block"
    elif longest > safeguards.max_single_item_length:
        reason = f"prediction has a block of {longest:,} characters, more than "
        reason += f"MAX_SINGLE_ITEM_LENGTH = {safeguards.max_single_item_length:,}"
    else:
        return blocks, None
    return [], reason


def _is_valid(pred_markdown: str, pred_blocks: Sequence[Block]) -> bool:
    """Not empty once grounding markup and whitespace are removed, and every table well formed."""
    return bool(strip_grounding_markup(pred_markdown).strip()) and all(
        block.well_formed for block in pred_blocks if block.kind == "table"
    )


def _failed_page(gt_blocks: Sequence[Block], reason: str, safeguards: Safeguards) -> dict[str, Any]:
    return _score_page([], gt_blocks, safeguards, status="failed", reason=reason)


def _score_page(
    pred_blocks: Sequence[Block],
    gt_blocks: Sequence[Block],
    safeguards: Safeguards,
    *,
    status: str,
    reason: str | None = None,
) -> dict[str, Any]:
    # A table without a cell carries nothing to score (it only makes a prediction invalid).
    pred_blocks = [block for block in pred_blocks if block.kind == "text" or block.cells]
    gt_blocks = [block for block in gt_blocks if block.kind == "text" or block.cells]
    pred_text = [i for i, block in enumerate(pred_blocks) if block.kind == "text"]
    gt_text = [i for i, block in enumerate(gt_blocks) if block.kind == "text"]
    pred_tables = [i for i, block in enumerate(pred_blocks) if block.kind == "table"]
    gt_tables = [i for i, block in enumerate(gt_blocks) if block.kind == "table"]

    text_pairs, edits, length = _match_text(
        [pred_blocks[i].content for i in pred_text], [gt_blocks[i].content for i in gt_text]
    )
    table_pairs, table_scores = match_tables(
        [pred_blocks[i] for i in pred_tables],
        [gt_blocks[i] for i in gt_tables],
        max_cells=safeguards.max_table_cells,
    )
    gt_index_of = {pred_text[p]: gt_text[g] for p, g in text_pairs}
    gt_index_of.update({pred_tables[p]: gt_tables[g] for p, g in table_pairs})
    matched_order = [gt_index_of[i] for i in range(len(pred_blocks)) if i in gt_index_of]
    return {
        "status": status,
        "reason": reason,
        "valid_prediction": False,
        "text_block_Edit_dist": edits / length if length else 0.0,
        "reading_order_Edit_dist": normalized_edit_distance(
            matched_order, list(range(len(gt_blocks)))
        ),
        "table_TEDS": 100 * math.fsum(table_scores) / len(table_scores) if gt_tables else None,
        "text_edit_distance_sum": edits,
        "text_max_length_sum": length,
        "matched_gt_order": matched_order,
        "table_scores": [100 * score for score in table_scores],
        "gt_text_blocks": len(gt_text),
        "pred_text_blocks": len(pred_text),
        "gt_tables": len(gt_tables),
        "pred_tables": len(pred_tables),
    }


def _match_text(pred: Sequence[str], gt: Sequence[str]) -> tuple[list[tuple[int, int]], int, int]:
    """Hungarian pairs (pred index, gt index), Σ edit distances and Σ max lengths over all pairs,
    unmatched blocks counted against ""."""
    pred_lengths = np.array([len(text) for text in pred], dtype=np.int64)
    gt_lengths = np.array([len(text) for text in gt], dtype=np.int64)
    if not pred or not gt:
        total = int(pred_lengths.sum() + gt_lengths.sum())
        return [], total, total
    # Same numbers as metrics.text.edit_distance (rapidfuzz's Levenshtein), for all pairs at once.
    distances = cdist(pred, gt, scorer=Levenshtein.distance, dtype=np.int64, workers=1)
    longest = np.maximum(pred_lengths[:, None], gt_lengths[None, :])
    pairs = assign(distances / longest)
    pred_done = {p for p, _ in pairs}
    gt_done = {g for _, g in pairs}
    unmatched = sum(int(n) for i, n in enumerate(pred_lengths) if i not in pred_done) + sum(
        int(n) for j, n in enumerate(gt_lengths) if j not in gt_done
    )
    edits = sum(int(distances[p, g]) for p, g in pairs) + unmatched
    length = sum(int(longest[p, g]) for p, g in pairs) + unmatched
    return pairs, edits, length
