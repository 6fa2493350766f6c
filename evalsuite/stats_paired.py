"""Paired tests of a candidate against a baseline on the same samples, for ``evalsuite ab``.

Pure functions of paired outcomes or values; scipy does the distributions (the Wilcoxon
signed-rank test's sign-flip branch is counted here, equal to scipy's):

- proportions (0/1 outcomes): McNemar's exact test, a two-sided binomial test with p = 1/2 on
  the discordant pairs (b: baseline right, candidate wrong; c: the reverse);
- means: the exact sign-flip (paired permutation) test of the mean difference (candidate −
  baseline) up to :data:`SIGN_FLIP_MAX_PAIRS` pairs, a paired bootstrap beyond, or the Wilcoxon
  signed-rank test of the differences;
- several tests at once: Holm's step-down adjustment of the p-values (family-wise error rate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalsuite.stats import CONFIDENCE

BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0
SIGN_FLIP_MAX_PAIRS = 16
"""Up to this many pairs a mean is tested by enumerating every sign flip (2**16 = 65,536);
a bootstrap of so few pairs claims p-values no test on them can reach (5 pairs: at best 1/16
two-sided)."""


@dataclass(frozen=True)
class PairedTest:
    """One paired comparison: the mean difference candidate − baseline (for 0/1 outcomes, the
    difference of the two proportions), its interval where the test gives one, and the
    two-sided p-value of "no difference"."""

    test: str
    n: int
    delta: float
    p_value: float
    ci_low: float | None = None
    ci_high: float | None = None


def discordant_counts(baseline: Sequence[bool], candidate: Sequence[bool]) -> tuple[int, int]:
    """(b, c): pairs true only in the baseline, and pairs true only in the candidate."""
    _require_pairs(baseline, candidate)
    only_baseline = sum(1 for a, b in zip(baseline, candidate, strict=True) if a and not b)
    only_candidate = sum(1 for a, b in zip(baseline, candidate, strict=True) if b and not a)
    return only_baseline, only_candidate


def mcnemar_exact(baseline: Sequence[bool], candidate: Sequence[bool]) -> PairedTest:
    """McNemar's exact test: p = two-sided binomial test of b successes in b + c trials at 1/2
    (1 when no pair is discordant). delta = (c − b) / n, the change of the proportion."""
    only_baseline, only_candidate = discordant_counts(baseline, candidate)
    discordant = only_baseline + only_candidate
    if discordant == 0:
        p_value = 1.0
    else:
        from scipy import stats as scipy_stats

        p_value = float(scipy_stats.binomtest(only_baseline, discordant, 0.5).pvalue)
    n = len(baseline)
    return PairedTest(
        f"McNemar exact (b={only_baseline}, c={only_candidate})",
        n,
        (only_candidate - only_baseline) / n,
        p_value,
    )


def paired_bootstrap(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> PairedTest:
    """Paired bootstrap of the mean difference d̄ = mean(candidate − baseline).

    ``scipy.stats.bootstrap`` resamples the pairs ``resamples`` times (percentile method,
    random state ``seed``); the interval is its percentile interval. The two-sided p-value is
    p = min(1, 2·(min(k≤, k≥) + 1) / (B + 1)), k≤ and k≥ the resampled means at or below and at
    or above 0 and B the resamples: the smallest level at which the percentile interval
    excludes 0, with the +1 that keeps a finite resampling from claiming p = 0.
    """
    _require_pairs(baseline, candidate)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    differences = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    if not np.all(np.isfinite(differences)):
        raise ValueError("paired_bootstrap: values must be finite numbers")
    delta = math.fsum(differences) / len(differences)
    if np.all(differences == differences[0]):
        # every resample has the same mean; scipy refuses a degenerate distribution
        distribution = np.full(resamples, delta)
        low = high = delta
    else:
        from scipy import stats as scipy_stats

        result = scipy_stats.bootstrap(
            (differences,),
            np.mean,
            n_resamples=resamples,
            confidence_level=confidence,
            method="percentile",
            random_state=np.random.default_rng(seed),
            vectorized=True,
        )
        distribution = result.bootstrap_distribution
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    at_or_below = int(np.count_nonzero(distribution <= 0))
    at_or_above = int(np.count_nonzero(distribution >= 0))
    p_value = min(1.0, 2 * (min(at_or_below, at_or_above) + 1) / (resamples + 1))
    return PairedTest(
        f"paired bootstrap ({resamples} resamples)", len(differences), delta, p_value, low, high
    )


def sign_flip_exact(baseline: Sequence[float], candidate: Sequence[float]) -> PairedTest:
    """Exact paired permutation test of the mean difference d̄ = mean(candidate − baseline).

    Under "no difference" each pair's difference is as likely to have either sign; the null
    distribution is d̄ over all 2ⁿ sign assignments, enumerated. p = min(1, 2·min(P(T ≤ d̄),
    P(T ≥ d̄))), comparisons with a relative slack of 100 machine epsilons of d̄ (scipy's
    ``permutation_test`` rule, so ties of floating sums count as ties). n ≤
    :data:`SIGN_FLIP_MAX_PAIRS`; 5 pairs all worse give p = 2/32.
    """
    _require_pairs(baseline, candidate)
    differences = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    n = len(differences)
    if n > SIGN_FLIP_MAX_PAIRS:
        raise ValueError(f"sign_flip_exact enumerates 2**n flips: n must be <= "
                         f"{SIGN_FLIP_MAX_PAIRS}, got {n}")
    if not np.all(np.isfinite(differences)):
        raise ValueError("sign_flip_exact: values must be finite numbers")
    delta = math.fsum(differences) / n
    flips = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    null = (np.where(flips == 1, -differences, differences)).mean(axis=1)
    observed = differences.mean()
    slack = abs(np.finfo(float).eps * 100 * observed)
    at_or_below = np.count_nonzero(null <= observed + slack) / len(null)
    at_or_above = np.count_nonzero(null >= observed - slack) / len(null)
    p_value = float(min(1.0, 2 * min(at_or_below, at_or_above)))
    return PairedTest(f"exact sign-flip ({n} pairs)", n, delta, p_value)


WILCOXON_PERMUTATION_MAX_PAIRS = 13
"""scipy's ``wilcoxon`` tests up to this many pairs with ties or zero differences by every sign
flip (2**13 is under its 9,999 resamples); beyond, by the normal approximation."""


def wilcoxon_signed_rank(baseline: Sequence[float], candidate: Sequence[float]) -> PairedTest:
    """Wilcoxon signed-rank test of the differences candidate − baseline, as
    ``scipy.stats.wilcoxon`` with its defaults (zero differences dropped from the ranks, exact
    distribution for small n); p = 1 when every difference is zero. delta is the mean
    difference.

    Where scipy enumerates every sign flip (ties or zeros, n ≤ 13) the same p-value comes from
    :func:`_signed_rank_flip_p`, which counts the flips instead of running each (~2 s per test
    at n = 13 in scipy); the other cases are scipy's.
    """
    _require_pairs(baseline, candidate)
    differences = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    delta = math.fsum(differences) / len(differences)
    nonzero = differences[differences != 0]
    if not np.any(differences):
        p_value = 1.0
    elif (len(differences) <= WILCOXON_PERMUTATION_MAX_PAIRS
          and np.all(np.isfinite(differences))
          and (len(nonzero) < len(differences)
               or len(np.unique(np.abs(nonzero))) < len(nonzero))):
        p_value = _signed_rank_flip_p(nonzero)
    else:
        from scipy import stats as scipy_stats

        p_value = float(scipy_stats.wilcoxon(differences).pvalue)
    return PairedTest("Wilcoxon signed-rank", len(differences), delta, p_value)


def _signed_rank_flip_p(nonzero: np.ndarray) -> float:
    """Two-sided p of the signed-rank sum R⁺ over every sign flip of the non-zero differences
    ``nonzero``: p = min(1, 2·min(#{R⁺ ≤ r⁺}, #{R⁺ ≥ r⁺}) / 2ᵐ), m = len(nonzero), ranks of |d|
    averaged over ties (zeros take no rank). Counted exactly on doubled ranks (integers) by
    dynamic programming over the subsets; the counts equal scipy's enumeration, whose
    half-integer sums are exact in floating point."""
    magnitudes = np.abs(nonzero)
    order = np.sort(magnitudes)
    # doubled average rank of a value = first + last 1-based position of its tie group
    first = np.searchsorted(order, magnitudes, side="left") + 1
    last = np.searchsorted(order, magnitudes, side="right")
    doubled_ranks = (first + last).tolist()
    observed = sum(rank for rank, value in zip(doubled_ranks, nonzero, strict=True) if value > 0)
    ways = [1] + [0] * sum(doubled_ranks)
    for rank in doubled_ranks:
        for total in range(len(ways) - 1, rank - 1, -1):
            ways[total] += ways[total - rank]
    flips = 2 ** len(doubled_ranks)
    at_or_below = sum(ways[: observed + 1]) / flips
    at_or_above = sum(ways[observed:]) / flips
    return min(1.0, min(at_or_below, at_or_above) * 2)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: with p₍₁₎ ≤ … ≤ p₍ₘ₎,
    p̃₍ᵢ₎ = min(1, max over j ≤ i of (m − j + 1)·p₍ⱼ₎). Rejecting where p̃ < α keeps the
    family-wise error rate at α."""
    for value in p_values:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"p-values must lie in [0, 1], got {value!r}")
    m = len(p_values)
    order = sorted(range(m), key=lambda index: p_values[index])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def _require_pairs(baseline: Sequence[object], candidate: Sequence[object]) -> None:
    if len(baseline) != len(candidate):
        raise ValueError(f"paired samples differ in length: {len(baseline)} vs {len(candidate)}")
    if len(baseline) == 0:
        raise ValueError("a paired test needs at least one pair")
