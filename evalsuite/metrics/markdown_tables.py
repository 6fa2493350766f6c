"""TEDS between canonical page tables, and the assignment of predicted to ground-truth tables.

Canonical tables (see :mod:`evalsuite.metrics.markdown_blocks`) are trees table > tr > td whose
cells hold text only, so under PubTabNet's costs (insert/delete 1; rename 0 for tr→tr, 1 when
colspan or rowspan differ, else Levenshtein(text) / longer length, 0 for two empty cells) the tree
edit distance D is bracketed without computing it:

- lower bound L: each node of one tree is either deleted (1) or renamed onto a node of the other
  (at least its cheapest rename), and at least ``n_other − n_this`` nodes of the other tree are
  inserted; L is the larger of the two directions' sums.
- upper bound U: the cost of one valid mapping, table→table, rows aligned in order by a
  minimum-cost sequence alignment (row pairs costed with cells paired by position), then the
  cells of each aligned row pair aligned in order by another.

Both are computed in exact rational arithmetic. When L = U, D = U and TEDS = 1 − U / n needs no
tree edit distance; otherwise :func:`evalsuite.metrics.tables.teds` computes it. The assignment uses
1 − L / n as an optimistic score for the pairs it has not computed, and computes exactly only
the pairs an optimal assignment picks, until it picks only computed pairs; the result is an
optimal assignment on the exact scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from evalsuite.metrics.assignment import linear_sum_assignment
from evalsuite.metrics.markdown_blocks import Block, Cell
from evalsuite.metrics.tables import teds

TIE_BREAK = 1e-9
"""Weight of the tie-break term ``|(i + ½)/m − (j + ½)/n|`` added to each assignment cost, so
that among equally cheap assignments blocks pair with blocks at the same relative position."""
# Above this many cell pairs the bounds would cost more memory than they save time.
_MAX_BOUND_CELL_PAIRS = 4_000_000


def assign(cost: np.ndarray) -> list[tuple[int, int]]:
    """Minimum-cost assignment of rows to columns (Hungarian), ties going to pairs at the same
    relative position (see ``TIE_BREAK``)."""
    m, n = cost.shape
    offset = np.abs((np.arange(m)[:, None] + 0.5) / m - (np.arange(n)[None, :] + 0.5) / n)
    row_index, column_index = linear_sum_assignment(cost + TIE_BREAK * offset)
    return [(int(r), int(c)) for r, c in zip(row_index, column_index, strict=True)]


def table_nodes(table: Block) -> int:
    """Elements below the table element: one per row and one per cell."""
    return len(table.rows) + table.cells


def teds_bounds(pred: Block, gt: Block) -> tuple[Fraction, Fraction] | None:
    """(L, U) with L ≤ tree edit distance ≤ U for two canonical tables; None when too large."""
    pred_cells = [cell for row in pred.rows for cell in row]
    gt_cells = [cell for row in gt.rows for cell in row]
    if len(pred_cells) * len(gt_cells) > _MAX_BOUND_CELL_PAIRS:
        return None
    distances, longest, same_spans = _cell_pair_terms(pred_cells, gt_cells)
    costs = np.where(same_spans, np.divide(distances, np.maximum(longest, 1)), 1.0)

    def exact(i: int, j: int) -> Fraction:
        if not same_spans[i, j]:
            return Fraction(1)
        return Fraction(int(distances[i, j]), int(longest[i, j])) if longest[i, j] else Fraction(0)

    lower = max(
        _one_sided_lower(costs, exact, pred, gt),
        _one_sided_lower(costs.T, lambda j, i: exact(i, j), gt, pred),
    )
    return lower, _row_alignment_upper(pred.rows, gt.rows, costs, exact)


def table_teds(pred: Block, gt: Block, *, max_cells: int) -> float:
    """``teds(pred.content, gt.content, max_cells=max_cells)``, skipping the tree edit distance
    when L = U."""
    if max(pred.cells, gt.cells) > max_cells:
        return 0.0
    bounds = teds_bounds(pred, gt)
    if bounds is not None and bounds[0] == bounds[1]:
        return 1.0 - float(bounds[1] / max(table_nodes(pred), table_nodes(gt)))
    return teds(pred.content, gt.content, max_cells=max_cells)


def match_tables(
    pred: Sequence[Block], gt: Sequence[Block], *, max_cells: int
) -> tuple[list[tuple[int, int]], list[float]]:
    """Pairs (pred index, gt index) maximising Σ max(TEDS, 0), and each gt table's score."""
    if not pred or not gt:
        return [], [0.0] * len(gt)
    optimistic = np.zeros((len(pred), len(gt)))
    exact: dict[tuple[int, int], float] = {}
    for p, pred_table in enumerate(pred):
        for g, gt_table in enumerate(gt):
            nodes = max(table_nodes(pred_table), table_nodes(gt_table))
            if max(pred_table.cells, gt_table.cells) > max_cells:
                exact[p, g] = 0.0
                continue
            bounds = teds_bounds(pred_table, gt_table)
            if bounds is None:
                lower = Fraction(abs(table_nodes(pred_table) - table_nodes(gt_table)))
            elif bounds[0] == bounds[1]:
                exact[p, g] = max(1.0 - float(bounds[1] / nodes), 0.0)
                continue
            else:
                lower = bounds[0]
            optimistic[p, g] = max(1.0 - float(lower / nodes), 0.0)
    while True:
        scores = optimistic.copy()
        for (p, g), score in exact.items():
            scores[p, g] = score
        pairs = assign(1.0 - scores)
        unknown = [pair for pair in pairs if pair not in exact]
        if not unknown:
            break
        for p, g in unknown:
            score = teds(pred[p].content, gt[g].content, max_cells=max_cells)
            exact[p, g] = max(score, 0.0)
    per_gt = [0.0] * len(gt)
    for p, g in pairs:
        per_gt[g] = exact[p, g]
    return pairs, per_gt


def _cell_pair_terms(
    pred_cells: Sequence[Cell], gt_cells: Sequence[Cell]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Levenshtein distances of cell texts, longer lengths, and whether the spans agree."""
    shape = (len(pred_cells), len(gt_cells))
    if not all(shape):
        return np.zeros(shape, np.int64), np.zeros(shape, np.int64), np.zeros(shape, bool)
    distances = cdist(
        [text for text, _, _ in pred_cells],
        [text for text, _, _ in gt_cells],
        scorer=Levenshtein.distance,
        dtype=np.int64,
        workers=1,
    )
    pred_lengths = np.array([len(text) for text, _, _ in pred_cells])
    gt_lengths = np.array([len(text) for text, _, _ in gt_cells])
    longest = np.maximum(pred_lengths[:, None], gt_lengths[None, :])
    pred_spans = [(colspan, rowspan) for _, colspan, rowspan in pred_cells]
    gt_spans = [(colspan, rowspan) for _, colspan, rowspan in gt_cells]
    same_spans = np.array([[a == b for b in gt_spans] for a in pred_spans], dtype=bool)
    return distances, longest, same_spans


def _one_sided_lower(
    costs: np.ndarray, exact: Callable[[int, int], Fraction], this: Block, other: Block
) -> Fraction:
    """Σ over this tree's nodes of min(1, cheapest rename into the other) + surplus insertions."""
    total = Fraction(0 if other.rows else len(this.rows))  # a row renames onto a row for free
    if costs.shape[1]:
        best = costs.argmin(axis=1)
        total += sum(min(Fraction(1), exact(i, int(j))) for i, j in enumerate(best))
    else:
        total += costs.shape[0]
    return total + max(0, table_nodes(other) - table_nodes(this))


def _row_alignment_upper(
    pred_rows: Sequence[Sequence[Cell]],
    gt_rows: Sequence[Sequence[Cell]],
    costs: np.ndarray,
    exact: Callable[[int, int], Fraction],
) -> Fraction:
    """Exact cost of one valid mapping: rows aligned in order (minimising the cost with cells
    paired by position), then the cells of each aligned row pair aligned in order; unaligned rows
    and cells are deleted or inserted."""
    pred_start = np.cumsum([0, *(len(row) for row in pred_rows)])
    gt_start = np.cumsum([0, *(len(row) for row in gt_rows)])
    positional = np.empty((len(pred_rows), len(gt_rows)))
    for i, pred_row in enumerate(pred_rows):
        for j, gt_row in enumerate(gt_rows):
            shared = min(len(pred_row), len(gt_row))
            diagonal = costs[pred_start[i] + np.arange(shared), gt_start[j] + np.arange(shared)]
            positional[i, j] = diagonal.sum() + abs(len(pred_row) - len(gt_row))
    total = Fraction(0)
    for i, j in _align(
        positional, [1 + len(row) for row in pred_rows], [1 + len(row) for row in gt_rows]
    ):
        if j is None:
            total += 1 + len(pred_rows[i])
        elif i is None:
            total += 1 + len(gt_rows[j])
        else:
            pred_cells = range(pred_start[i], pred_start[i + 1])
            gt_cells = range(gt_start[j], gt_start[j + 1])
            block = costs[np.ix_(pred_cells, gt_cells)]
            for a, b in _align(block, [1] * len(pred_cells), [1] * len(gt_cells)):
                is_pair = a is not None and b is not None
                total += exact(pred_cells[a], gt_cells[b]) if is_pair else 1
    return total


def _align(
    substitute: np.ndarray, delete: Sequence[float], insert: Sequence[float]
) -> list[tuple[int | None, int | None]]:
    """A minimum-cost order-preserving alignment of two sequences (edit-distance DP): pairs
    ``(i, j)``, ``(i, None)`` for a deletion, ``(None, j)`` for an insertion."""
    m, n = substitute.shape
    table = np.zeros((m + 1, n + 1))
    table[1:, 0] = np.cumsum(delete)
    table[0, 1:] = np.cumsum(insert)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            table[i, j] = min(
                table[i - 1, j] + delete[i - 1],
                table[i, j - 1] + insert[j - 1],
                table[i - 1, j - 1] + substitute[i - 1, j - 1],
            )
    steps: list[tuple[int | None, int | None]] = []
    i, j = m, n
    while i or j:
        if i and j and table[i, j] == table[i - 1, j - 1] + substitute[i - 1, j - 1]:
            steps.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i and (not j or table[i, j] == table[i - 1, j] + delete[i - 1]):
            steps.append((i - 1, None))
            i -= 1
        else:
            steps.append((None, j - 1))
            j -= 1
    return steps[::-1]
