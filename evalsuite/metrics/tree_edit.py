"""Tree edit distance of two ordered labelled trees (Zhang & Shasha, 1989), compiled with numba.

Trees are given as their postorder: a node label per node (an index into the rows or columns of
a rename-cost matrix) and the node's number of children. Deleting or inserting a node costs 1;
renaming costs ``rename_costs[label1, label2]``. The distance is the minimum over edit scripts,
the same value every exact algorithm (APTED included) computes; only the order in which the
floating-point costs are added differs, so sums of fractional costs can differ from another
algorithm's in the last bits.

Work is ``K1 * K2`` cell updates, ``K`` being the sum of the sizes of a tree's key-root
subtrees: about ``n * depth`` for shallow trees such as tables, so a 2,000-cell table takes a
fraction of a second. Memory is two ``(n1 + 1) x (n2 + 1)`` float64 arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray


def tree_edit_distance(
    labels1: Sequence[int],
    fan_outs1: Sequence[int],
    labels2: Sequence[int],
    fan_outs2: Sequence[int],
    rename_costs: NDArray[np.float64],
) -> float:
    """Least total cost of edits turning tree 1 into tree 2: insert/delete 1, rename from a matrix.

    ``labels`` and ``fan_outs`` list each tree's nodes in postorder: the node's row (tree 1) or
    column (tree 2) in ``rename_costs`` and its number of children. Raises ValueError when a tree
    is empty or its fan-outs do not describe one tree, or when a label is outside the matrix.
    """
    costs = np.ascontiguousarray(rename_costs, dtype=np.float64)
    if costs.ndim != 2:
        raise ValueError(f"rename_costs must be a 2-d matrix, got {costs.ndim} dimensions")
    first = _postorder_arrays(labels1, fan_outs1, costs.shape[0], "tree 1")
    second = _postorder_arrays(labels2, fan_outs2, costs.shape[1], "tree 2")
    return float(_compiled_zhang_shasha()(*first, *second, costs))


def _postorder_arrays(
    labels: Sequence[int], fan_outs: Sequence[int], label_count: int, name: str
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Labels, leftmost leaf of each node, and the key roots (the highest node of each leftmost
    leaf, in increasing order) of a postorder tree."""
    if len(labels) != len(fan_outs):
        raise ValueError(f"{name}: {len(labels)} labels but {len(fan_outs)} fan-outs")
    if not labels:
        raise ValueError(f"{name} has no node")
    label_array = np.asarray(labels, dtype=np.int64)
    if label_array.min() < 0 or label_array.max() >= label_count:
        raise ValueError(f"{name} has a label outside the {label_count} rename-cost rows/columns")
    leftmost = np.empty(len(labels), dtype=np.int64)
    open_subtrees: list[int] = []
    for node, fan_out in enumerate(fan_outs):
        if fan_out < 0 or fan_out > len(open_subtrees):
            raise ValueError(f"{name}: node {node} has {fan_out} children, not a postorder tree")
        if fan_out == 0:
            leftmost[node] = node
        else:
            leftmost[node] = leftmost[open_subtrees[-fan_out]]
            del open_subtrees[-fan_out:]
        open_subtrees.append(node)
    if len(open_subtrees) != 1:
        raise ValueError(f"{name}: the postorder leaves {len(open_subtrees)} trees, not one")
    highest = {int(left): node for node, left in enumerate(leftmost)}
    key_roots = np.array(sorted(highest.values()), dtype=np.int64)
    return label_array, leftmost, key_roots


@functools.cache
def _compiled_zhang_shasha() -> Callable[..., Any]:
    """:func:`_zhang_shasha` compiled by numba (imported here: it takes 0.2 s to import, which
    every evalsuite command would pay), cached on disk beside this module."""
    import numba

    return numba.njit(cache=True, nogil=True)(_zhang_shasha)


def _zhang_shasha(
    labels1: NDArray[np.int64],
    leftmost1: NDArray[np.int64],
    key_roots1: NDArray[np.int64],
    labels2: NDArray[np.int64],
    leftmost2: NDArray[np.int64],
    key_roots2: NDArray[np.int64],
    costs: NDArray[np.float64],
) -> float:
    # tree[i, j]: distance of the subtrees rooted at i and j; forest[x, y]: distance of the
    # forests made of the first x nodes of key root 1's subtree and the first y of key root 2's.
    size1, size2 = labels1.shape[0], labels2.shape[0]
    tree = np.zeros((size1, size2))
    forest = np.empty((size1 + 1, size2 + 1))
    for root1 in key_roots1:
        left1 = leftmost1[root1]
        rows = root1 - left1 + 2
        for root2 in key_roots2:
            left2 = leftmost2[root2]
            columns = root2 - left2 + 2
            forest[0, 0] = 0.0
            for x in range(1, rows):
                forest[x, 0] = forest[x - 1, 0] + 1.0
            for y in range(1, columns):
                forest[0, y] = forest[0, y - 1] + 1.0
            for x in range(1, rows):
                node1 = left1 + x - 1
                node1_left = leftmost1[node1]
                for y in range(1, columns):
                    node2 = left2 + y - 1
                    delete = forest[x - 1, y] + 1.0
                    insert = forest[x, y - 1] + 1.0
                    node2_left = leftmost2[node2]
                    if node1_left == left1 and node2_left == left2:
                        rename = forest[x - 1, y - 1] + costs[labels1[node1], labels2[node2]]
                        best = min(delete, insert, rename)
                        tree[node1, node2] = best
                    else:
                        rename = forest[node1_left - left1, node2_left - left2] + tree[node1, node2]
                        best = min(delete, insert, rename)
                    forest[x, y] = best
    return tree[size1 - 1, size2 - 1]
