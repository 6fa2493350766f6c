"""Statistics shared by the aggregates, the golden gate and the trend view.

Proportions get Wilson score intervals and a one-sided exact binomial test; means get
Student-t intervals. Everything here is a pure function of counts or values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evalsuite.records.model import Direction, MetricSummary
from evalsuite.textformat import significant

CONFIDENCE = 0.95

# scipy.stats costs ~1 s to import (it builds every distribution's docstring), which every child
# run paid in its first aggregate; the quantiles and binomial tails below are the very
# scipy.special kernels scipy.stats' norm, t and binom call (bitwise equal; tests/test_stats_golden
# compares them with scipy.stats), imported on first use.


def normal_quantile(q: float) -> float:
    """Φ⁻¹(q), the standard normal quantile (``scipy.stats.norm.ppf``)."""
    from scipy.special import ndtri

    return float(ndtri(q))


def student_t_quantile(q: float, df: int) -> float:
    """The quantile at ``q`` of Student's t with ``df`` degrees of freedom
    (``scipy.stats.t.ppf``)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p) (``scipy.stats.binom.cdf``): 0 below the support, 1 from
    k = n on."""
    return 0.0 if k < 0 else 1.0 if k >= n else _binomial_kernel("cdf", k, n, p)


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X > k) for X ~ Binomial(n, p) (``scipy.stats.binom.sf``): 1 below the support, 0 from
    k = n on."""
    return 1.0 if k < 0 else 0.0 if k >= n else _binomial_kernel("sf", k, n, p)


def _binomial_kernel(tail: str, k: int, n: int, p: float) -> float:
    """scipy.stats.binom's ``cdf``/``sf`` kernel inside the support (0 <= k < n)."""
    try:  # recent scipy keeps binom's Boost kernels in scipy.special
        from scipy.special import _ufuncs

        kernel = getattr(_ufuncs, f"_binom_{tail}")
    except (ImportError, AttributeError):  # older scipy: through scipy.stats itself
        from scipy.stats import binom

        kernel = getattr(binom, tail)
    return float(kernel(k, n, p))


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of ``successes / n``.

    (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z the normal quantile.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    z = normal_quantile(1 - (1 - confidence) / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Student-t interval of the mean: mean ± t(n-1)·s/sqrt(n); the point itself when n < 2."""
    n = len(values)
    if n == 0:
        raise ValueError("mean_interval needs at least one value")
    mean = math.fsum(values) / n
    if n < 2:
        return mean, mean
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = student_t_quantile(1 - (1 - confidence) / 2, n - 1) * math.sqrt(variance / n)
    return mean - half, mean + half


def summarize_proportion(
    outcomes: Sequence[bool], direction: Direction | None = "higher"
) -> MetricSummary:
    """Share of true outcomes, with its Wilson interval."""
    n = len(outcomes)
    successes = sum(bool(o) for o in outcomes)
    low, high = wilson_interval(successes, n)
    value = successes / n if n else None
    return MetricSummary(value, n, low if n else None, high if n else None, "proportion", direction)


def summarize_mean(
    values: Sequence[float], direction: Direction | None = "higher"
) -> MetricSummary:
    """Mean of ``values`` with its t interval; value None when there are none."""
    if not values:
        return MetricSummary(None, 0, None, None, "mean", direction)
    low, high = mean_interval(values)
    return MetricSummary(math.fsum(values) / len(values), len(values), low, high, "mean", direction)


def summarize_weighted_mean(
    values: Sequence[float], weights: Sequence[float], direction: Direction | None = "higher"
) -> MetricSummary:
    """Σ value·weight / Σ weight; the interval is not estimated (None) for weighted means."""
    if len(values) != len(weights):
        raise ValueError(f"{len(values)} values but {len(weights)} weights")
    if any(w < 0 for w in weights):
        raise ValueError("weights must be >= 0")
    total = math.fsum(weights)
    if not values or total == 0:
        return MetricSummary(None, len(values), None, None, "mean", direction)
    value = math.fsum(v * w for v, w in zip(values, weights, strict=True)) / total
    return MetricSummary(value, len(values), None, None, "mean", direction)


@dataclass(frozen=True)
class Comparison:
    """Whether a current value is a regression (or improvement) against a reference."""

    regressed: bool
    improved: bool
    delta: float
    test: str
    p_value: float | None = None


def compare_proportion(
    reference: float,
    current: float,
    n: int,
    direction: Direction,
    *,
    tolerance: float = 0.0,
    alpha: float = 1 - CONFIDENCE,
) -> Comparison:
    """One-sided exact binomial test of ``current`` (a share of n) against ``reference``.

    Higher is better: regressed when P(X <= k | n, p0) < alpha with k = round(current·n) and
    p0 = reference − tolerance. Lower is better: P(X >= k | n, p0) < alpha with p0 = reference +
    tolerance. Improvement is the mirror test.
    """
    if n <= 0:
        raise ValueError(f"n must be positive to test a proportion, got {n}")
    for name, value in (("reference", reference), ("current", current)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} proportion must lie in [0, 1], got {value}")
    k = round(current * n)
    sign = 1 if direction == "higher" else -1
    worse_p0 = min(1.0, max(0.0, reference - sign * tolerance))
    better_p0 = min(1.0, max(0.0, reference + sign * tolerance))
    low_tail = binomial_cdf(k, n, worse_p0 if sign > 0 else better_p0)
    high_tail = binomial_sf(k - 1, n, better_p0 if sign > 0 else worse_p0)
    worse_tail, better_tail = (low_tail, high_tail) if sign > 0 else (high_tail, low_tail)
    return Comparison(
        regressed=worse_tail < alpha,
        improved=better_tail < alpha,
        delta=current - reference,
        test=f"one-sided exact binomial, n={n}, alpha={alpha:g}",
        p_value=worse_tail,
    )


def compare_mean(
    reference: float, current: float, direction: Direction, *, tolerance: float
) -> Comparison:
    """A continuous metric regresses when worse than ``reference`` by more than ``tolerance``."""
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    delta = current - reference
    worse_by = -delta if direction == "higher" else delta
    return Comparison(
        regressed=worse_by > tolerance + 1e-12,
        improved=-worse_by > tolerance + 1e-12,
        delta=delta,
        test=f"tolerance {significant(tolerance)}",
    )


def compare_to_reference(
    reference: float, current: MetricSummary, *, tolerance: float, kind: str | None = None
) -> Comparison | None:
    """``current`` against ``reference`` with the test for the metric's kind (``kind``, else
    ``current.kind``): :func:`compare_proportion` for a proportion, :func:`compare_mean` for a
    mean. None when there is nothing to judge: no value, no samples, or no better direction."""
    if current.value is None or current.n <= 0 or current.direction is None:
        return None
    if (kind or current.kind) == "proportion":
        return compare_proportion(
            reference, current.value, current.n, current.direction, tolerance=tolerance
        )
    return compare_mean(reference, current.value, current.direction, tolerance=tolerance)
