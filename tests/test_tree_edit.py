"""The compiled tree edit distance against APTED (the ``apted`` package, an independent
implementation of the same minimum), on random trees and random rename costs, plus its laws and
its refusal of malformed trees."""

from __future__ import annotations

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


@_SETTINGS
@given(trees, trees, cost_matrices)
def test_equals_apted(tree1: Node, tree2: Node, costs: np.ndarray) -> None:
    expected = apted_distance(tree1, tree2, costs)
    assert ours(tree1, tree2, costs) == pytest.approx(expected, abs=1e-12)


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
