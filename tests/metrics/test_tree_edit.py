"""The compiled tree edit distance against APTED (the ``apted`` package, an independent
implementation of the same minimum), on random trees and random rename costs that keep the
triangle inequality, plus its laws and its refusal of malformed trees.

APTED 1.0.3 can overshoot the minimum where rename costs break the triangle inequality (a
rename dearer than two cheaper ones through a third label): :func:`test_non_metric_costs`
pins such a case, found by hypothesis, against the minimum over every edit mapping."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pytest
from apted import APTED, Config
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics.tree_edit import tree_edit_distance

LABELS = 4


@dataclass
class Node:
    label: int
    children: list[Node] = field(default_factory=list)


def postorder(root: Node) -> tuple[list[int], list[int]]:
    labels: list[int] = []
    fan_outs: list[int] = []

    def visit(node: Node) -> None:
        for child in node.children:
            visit(child)
        labels.append(node.label)
        fan_outs.append(len(node.children))

    visit(root)
    return labels, fan_outs


def size(root: Node) -> int:
    return 1 + sum(size(child) for child in root.children)


class MatrixConfig(Config):
    def __init__(self, costs: np.ndarray) -> None:
        self.costs = costs

    def rename(self, node1: Node, node2: Node) -> float:
        return float(self.costs[node1.label, node2.label])

    def children(self, node: Node) -> list[Node]:
        return node.children


def apted_distance(tree1: Node, tree2: Node, costs: np.ndarray) -> float:
    return float(APTED(tree1, tree2, MatrixConfig(costs)).compute_edit_distance())


def ours(tree1: Node, tree2: Node, costs: np.ndarray) -> float:
    return tree_edit_distance(*postorder(tree1), *postorder(tree2), costs)


trees = st.recursive(
    st.builds(Node, st.integers(0, LABELS - 1)),
    lambda inner: st.builds(Node, st.integers(0, LABELS - 1), st.lists(inner, max_size=4)),
    max_leaves=12,
)
# Rename costs in [0, 2] with a zero diagonal, as fractions (sums that round) or whole numbers.
cost_matrices = st.lists(
    st.one_of(
        st.integers(0, 8).map(lambda k: k / 4), st.floats(0, 2), st.integers(0, 3).map(float)
    ),
    min_size=LABELS * LABELS,
    max_size=LABELS * LABELS,
).map(lambda values: np.array(values).reshape(LABELS, LABELS) * (1 - np.eye(LABELS)))

_SETTINGS = settings(max_examples=300, deadline=None)


def shortest_renames(costs: np.ndarray) -> np.ndarray:
    """``costs`` closed under the triangle inequality: each rename at most any chain of renames
    through other labels (Floyd-Warshall)."""
    closed = costs.copy()
    for via in range(len(closed)):
        closed = np.minimum(closed, closed[:, [via]] + closed[[via], :])
    return closed


@_SETTINGS
@given(trees, trees, cost_matrices.map(shortest_renames))
def test_equals_apted(tree1: Node, tree2: Node, costs: np.ndarray) -> None:
    expected = apted_distance(tree1, tree2, costs)
    assert ours(tree1, tree2, costs) == pytest.approx(expected, abs=1e-12)


def minimum_over_mappings(tree1: Node, tree2: Node, costs: np.ndarray) -> float:
    """The edit distance by its definition: the cheapest mapping that keeps ancestors and
    left-to-right order (renames of mapped nodes, 1 per node left out of either tree); every
    partial mapping enumerated, so for small trees only."""

    def nodes(root: Node) -> list[tuple[int, int, int]]:  # (label, preorder, postorder)
        found: list[tuple[int, int, int]] = []
        counter = itertools.count()

        def visit(node: Node) -> None:
            pre = next(counter)
            for child in node.children:
                visit(child)
            found.append((node.label, pre, len(found)))

        visit(root)
        return found

    def above(x: tuple[int, int, int], y: tuple[int, int, int]) -> bool:
        return x[1] < y[1] and x[2] > y[2]

    def before(x: tuple[int, int, int], y: tuple[int, int, int]) -> bool:
        return x[1] < y[1] and x[2] < y[2]

    first, second = nodes(tree1), nodes(tree2)
    best = float(len(first) + len(second))
    for choice in itertools.product(range(-1, len(second)), repeat=len(first)):
        taken = [j for j in choice if j >= 0]
        if len(taken) != len(set(taken)):
            continue
        pairs = [(first[i], second[j]) for i, j in enumerate(choice) if j >= 0]
        if all(above(a, c) == above(b, d) and above(c, a) == above(d, b)
               and before(a, c) == before(b, d)
               for (a, b), (c, d) in itertools.combinations(pairs, 2)):
            cost = sum(float(costs[a[0], b[0]]) for a, b in pairs)
            best = min(best, cost + len(first) + len(second) - 2 * len(pairs))
    return best


def test_non_metric_costs() -> None:
    """Renaming 1 to 0 costs 1.5 but 3 to 0 only 0.25: the minimum (4.25) maps the 3 onto a
    leaf 0 and deletes and inserts around it; APTED 1.0.3 answers 4.5."""
    tree1 = Node(0, [Node(1), Node(3, [Node(1)]), Node(1)])
    tree2 = Node(0, [Node(0), Node(1, [Node(0)]), Node(0)])
    costs = np.zeros((LABELS, LABELS))
    costs[1, 0], costs[3, 0] = 1.5, 0.25
    assert minimum_over_mappings(tree1, tree2, costs) == 4.25
    assert ours(tree1, tree2, costs) == 4.25
    assert apted_distance(tree1, tree2, costs) == 4.5
    unit = 1 - np.eye(LABELS)
    assert minimum_over_mappings(tree1, tree2, unit) == ours(tree1, tree2, unit) == 4.0


@_SETTINGS
@given(trees, trees, cost_matrices)
def test_laws(tree1: Node, tree2: Node, costs: np.ndarray) -> None:
    distance = ours(tree1, tree2, costs)
    assert ours(tree1, tree1, costs) == 0.0
    # deleting every node of one tree and inserting every node of the other is one edit script
    assert 0.0 <= distance <= size(tree1) + size(tree2)
    # with symmetric costs, an edit script reversed is one of the same cost the other way
    symmetric = (costs + costs.T) / 2
    assert ours(tree1, tree2, symmetric) == pytest.approx(ours(tree2, tree1, symmetric), abs=1e-12)


def test_hand_worked_distances() -> None:
    unit = 1 - np.eye(LABELS)
    a, b, c = 0, 1, 2
    # f(d(a b) c) vs f(a c) with f=3, d=... : delete d (its children move up) costs 1
    tree1 = Node(3, [Node(1, [Node(a), Node(b)]), Node(c)])
    tree2 = Node(3, [Node(a), Node(b), Node(c)])
    assert ours(tree1, tree2, unit) == 1.0
    assert ours(Node(a), Node(b), unit) == 1.0
    assert ours(Node(a), Node(a, [Node(b), Node(c)]), unit) == 2.0
    halves = unit / 2
    assert ours(Node(a, [Node(b)]), Node(b, [Node(a)]), halves) == 1.0  # two renames at 1/2


@pytest.mark.parametrize(
    ("labels", "fan_outs", "message"),
    [
        ([], [], "has no node"),
        ([0, 1], [0], "2 labels but 1 fan-outs"),
        ([0, 1], [0, 2], "node 1 has 2 children"),
        ([0, 1], [0, 0], "leaves 2 trees"),
        ([0, 9], [0, 1], "label outside the 4"),
        ([0, -1], [0, 1], "label outside the 4"),
    ],
)
def test_malformed_trees_are_refused(labels: list[int], fan_outs: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tree_edit_distance(labels, fan_outs, [0], [0], np.zeros((LABELS, LABELS)))


def test_rename_costs_must_be_a_matrix() -> None:
    with pytest.raises(ValueError, match="2-d matrix"):
        tree_edit_distance([0], [0], [0], [0], np.zeros(4))
