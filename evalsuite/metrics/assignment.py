"""Minimum-cost assignment and pairwise distances from scipy, imported on first use.

scipy.optimize and scipy.spatial cost ~0.4 s and ~0.3 s to import; at module level in the
metrics, every ``pytest benches`` or ``evalsuite`` process paid them before it ran anything,
whether it scored a table or not.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def linear_sum_assignment(cost: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.optimize.linear_sum_assignment(cost)``: the rows and columns of a minimum-cost
    complete matching of the smaller side."""
    from scipy.optimize import linear_sum_assignment as solve

    return solve(cost)


def l1_distances(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``scipy.spatial.distance.cdist(a, b, "minkowski", p=1)``: Σ |aᵢ − bᵢ| for every pair
    of rows."""
    from scipy.spatial.distance import cdist

    return cdist(a, b, "minkowski", p=1)
