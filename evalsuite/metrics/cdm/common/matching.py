"""CDM token matching, shared by the versions: Hungarian assignment, then RANSAC on box centres.

Given the coloured-token boxes of the ground-truth and predicted renderings, a token of each
side is paired by ``scipy.optimize.linear_sum_assignment`` on

    cost = token + 0.05 * position + 0.15 * order

token: 0 for the same token, ``near_token_cost`` for tokens of the same class (the version's
``canonical`` function), else 1; position: L1 distance of the boxes (coordinates divided by the
image width/height) / 4; order: |i - j| / max(n_gt, n_pred) (v1.6) or |i / n_gt - j / n_pred|
(v1.5). A pair counts when its centres (y, x) agree with a translation-plus-scale model (rounds
of RANSAC, each on the pairs not yet accepted; with no more pairs than samples all count) and its
tokens are not plainly different (token cost 1). Scores are rounded to 3 decimals:
recall = tp / n_gt, precision = tp / n_pred, F1 = 2 tp / (n_gt + n_pred).

What differs between versions is data, :class:`MatchSettings`: v1.6 (:data:`V16`) runs its own
RANSAC (5 rounds, 2 samples, residual < 30 px, 500 trials, ``default_rng(2026)`` restarted every
round, best = most inliers then least summed inlier residual); v1.5 (``v1_5.match.SETTINGS``) runs
scikit-image 0.20's ``ransac`` (3 rounds, 3 samples, < 25 px, 50 trials, seed 42, best = most
inliers then least sum of squared residuals, trial bound shrunk as inliers are found).

The arithmetic follows the official code operation by operation (same numpy calls, same order),
because the random stream and float ties decide which pairs a round accepts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evalsuite.metrics.assignment import l1_distances, linear_sum_assignment

COST_TOKEN, COST_POSITION, COST_ORDER = 1.0, 0.05, 0.15
ROUND_PLACES = 3

Box = Sequence[int]

# Tokens drawn alike that the v1.6 matcher treats as one class (token cost 0.005 instead of 1).
_SAME_GLYPH = {
    "\\dot": ".",
    "\\Dot": ".",
    "\\cdot": ".",
    "\\cdotp": ".",
    "\\ldotp": ".",
    "\\mid": "|",
    "\\rightarrow": "\\to",
    "\\top": "T",
    "\\Tilde": "\\tilde",
    "\\prime": "'",
    "\\ast": "*",
    "\\left<": "\\langle",
    "\\right>": "\\rangle",
    "\\lbrace": "\\{",
    "\\rbrace": "\\}",
    "\\lbrack": "[",
    "\\rbrack": "]",
    "\\blackslash": "/",
    "\\slash": "/",
    "\\leq": "\\le",
    "\\geq": "\\ge",
    "\\Vert": "\\|",
    "\\lVert": "\\|",
    "\\rVert": "\\|",
    "\\vert": "|",
    "\\lvert": "|",
    "\\rvert": "|",
    "\\colon": ":",
    "\\Ddot": "\\ddot",
    "\\Bar": "\\bar",
    "\\Vec": "\\vec",
    "\\parallel": "\\|",
    "\\dag": "\\dagger",
    "\\ddag": "\\ddagger",
    "\\textlangle": "<",
    "\\textrangle": ">",
    "\\textgreater": ">",
    "\\textless": "<",
    "\\textbackslash": "n",
    "\\textunderscore": "_",
    "\\=": "_",
    "\\neg": "\\lnot",
    # The official table lists \neq twice; the later entry wins.
    "\\neq": "\\not=",
}


@dataclass(frozen=True)
class MatchSettings:
    """What one CDM version's matcher does differently (see the module docstring)."""

    canonical: Callable[[str], str]
    near_token_cost: float
    order_by_own_length: bool
    ransac_rounds: int
    ransac_samples: int
    ransac_residual_px: float
    ransac_trials: int
    ransac_seed: int
    # scikit-image 0.20's ransac: score = sum of all squared residuals, the trial bound shrinks
    # with the inlier ratio, a zero score stops; else score = sum of the inliers' residuals.
    skimage_ransac: bool


@dataclass(frozen=True)
class TokenBox:
    """One rendered token: its LaTeX text and pixel box (x_min, y_min, x_max, y_max)."""

    token: str
    box: tuple[int, int, int, int]


@dataclass(frozen=True)
class CdmScore:
    """CDM of one pair, each rounded to 3 decimals; tp/gt_tokens/pred_tokens are counts."""

    F1_score: float
    recall: float
    precision: float
    tp: int = 0
    gt_tokens: int = 0
    pred_tokens: int = 0


ZERO_SCORE = CdmScore(0.0, 0.0, 0.0)


def canonical_token(token: str) -> str:
    """v1.6 class of a token: delimiter sizes and \\left/\\right dropped, aliases merged."""
    if token.startswith(("\\left", "\\right")) and not any(
        part in token for part in ("arrow", "<", ">", "harpoon")
    ):
        token = token.replace("\\left", "").replace("\\right", "")
    if token.startswith(("\\big", "\\Big")):
        tail = token[4:]
        token = "\\" + tail.split("\\")[-1] if "\\" in tail else token[-1]
    token = _SAME_GLYPH.get(token, token)
    if token.startswith("\\wide"):
        return token.replace("wide", "")
    if token.startswith("\\var"):
        return token.replace("var", "")
    if token.startswith("\\string"):
        return token.replace("\\string", "")
    return token


V16 = MatchSettings(
    canonical=canonical_token,
    near_token_cost=0.005,
    order_by_own_length=False,
    ransac_rounds=5,
    ransac_samples=2,
    ransac_residual_px=30,
    ransac_trials=500,
    ransac_seed=2026,
    skimage_ransac=False,
)


def _class_ids(tokens: Sequence[str]) -> list[int]:
    ids: dict[str, int] = {}
    return [ids.setdefault(token, len(ids)) for token in tokens]


def token_cost(gt: Sequence[str], pred: Sequence[str], settings: MatchSettings = V16) -> np.ndarray:
    """(n_gt, n_pred) matrix: 0 same token, near_token_cost same class, 1 otherwise."""
    both = list(gt) + list(pred)
    exact = np.array(_class_ids(both))
    canonical = np.array(_class_ids([settings.canonical(token) for token in both]))
    n = len(gt)
    differs = exact[:n, None] != exact[None, n:]
    similar = canonical[:n, None] == canonical[None, n:]
    cost = differs.astype(float)
    cost[differs & similar] = settings.near_token_cost
    return cost


def _relative_boxes(boxes: Sequence[Box], size: tuple[int, int]) -> np.ndarray:
    width, height = size
    return np.array([[b[0] / width, b[1] / height, b[2] / width, b[3] / height] for b in boxes])


def _l1_cost(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return l1_distances(a, b) / a.shape[-1]


def _order(count: int, scale: int) -> np.ndarray:
    return np.array([[index / scale] for index in range(count)])


def assign(
    gt: tuple[Sequence[str], Sequence[Box], tuple[int, int]],
    pred: tuple[Sequence[str], Sequence[Box], tuple[int, int]],
    settings: MatchSettings,
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Hungarian pairs (gt index, pred index) of two (tokens, boxes, size) sides, and the
    token-cost matrix they were chosen on."""
    (gt_tokens, gt_boxes, gt_size), (pred_tokens, pred_boxes, pred_size) = gt, pred
    longest = max(len(gt_boxes), len(pred_boxes))
    gt_scale, pred_scale = (
        (len(gt_boxes), len(pred_boxes)) if settings.order_by_own_length else (longest, longest)
    )
    tokens = token_cost(gt_tokens, pred_tokens, settings)
    position = _l1_cost(_relative_boxes(gt_boxes, gt_size), _relative_boxes(pred_boxes, pred_size))
    order = _l1_cost(_order(len(gt_boxes), gt_scale), _order(len(pred_boxes), pred_scale))
    cost = COST_TOKEN * tokens + COST_POSITION * position + COST_ORDER * order
    cost[np.isnan(cost) | np.isinf(cost)] = 100
    rows, cols = linear_sum_assignment(cost)
    return list(zip(rows.tolist(), cols.tolist(), strict=True)), tokens


def shift_scale_residuals(src: np.ndarray, dst: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """(trials, points) distances of ``dst`` from ``src`` moved by each trial's model: centre
    shift plus isotropic scale about the mean of ``src``, fitted to the points in that trial's
    row of ``samples``. Each trial gets the float operations, in the order, of a model fitted
    and applied on its own (every reduction runs over one trial's values in the same order)."""
    src_s, dst_s = src[samples], dst[samples]  # (trials, samples, 2)
    src_mean = np.mean(src_s, axis=1)
    dst_mean = np.mean(dst_s, axis=1)
    shift = dst_mean - src_mean
    scale = np.mean(np.linalg.norm(dst_s - dst_mean[:, None], axis=2), axis=1) / (
        np.mean(np.linalg.norm(src_s - src_mean[:, None], axis=2), axis=1) + 1e-10
    )
    centre = np.mean(src, axis=0)
    moved = scale[:, None, None] * (src - centre) + centre + shift[:, None, :]
    return np.sqrt(np.sum((moved - dst) ** 2, axis=2))


def _skimage_trial_bound(inliers: int, points: int, samples: int) -> float:
    """scikit-image's dynamic trial bound at stop probability 1."""
    eps = np.spacing(1)
    return np.ceil(np.log(eps) / np.log(max(eps, 1 - (inliers / points) ** samples)))


@functools.lru_cache(maxsize=4096)
def trial_samples(seed: int, points: int, samples: int, trials: int) -> np.ndarray:
    """(trials, samples) point indices: ``default_rng(seed).choice(points, samples,
    replace=False)`` drawn ``trials`` times from one fresh generator, as a trial-by-trial RANSAC
    draws them (they depend on nothing else, so they are computed once per point count)."""
    rng = np.random.default_rng(seed)
    drawn = np.array([rng.choice(points, size=samples, replace=False) for _ in range(trials)])
    drawn.flags.writeable = False
    return drawn


def ransac_inliers(
    src: np.ndarray, dst: np.ndarray, settings: MatchSettings = V16
) -> np.ndarray | None:
    """Inlier mask of the best shift-scale model over the trials (None where none has one).

    Trials that find no inlier never win (in scikit-image they can only replace each other),
    so both variants skip them."""
    points = src.shape[0]
    samples = trial_samples(
        settings.ransac_seed, points, settings.ransac_samples, settings.ransac_trials
    )
    residuals = shift_scale_residuals(src, dst, samples)
    inlier_masks = residuals < settings.ransac_residual_px
    counts = np.count_nonzero(inlier_masks, axis=1).tolist()
    best: np.ndarray | None = None
    best_count, best_score = 0, np.inf
    trial_bound: float = settings.ransac_trials
    trial = 0
    while trial < trial_bound:
        count, trial = counts[trial], trial + 1
        if count == 0 or count < best_count:
            continue  # cannot win, whatever its score
        row = residuals[trial - 1].copy()
        if settings.skimage_ransac:
            score = row.dot(row)
        else:
            score = float(np.sum(row[inlier_masks[trial - 1]]))
        if count > best_count or score < best_score:
            best, best_count, best_score = inlier_masks[trial - 1], count, score
            if settings.skimage_ransac:
                trial_bound = min(
                    trial_bound, _skimage_trial_bound(count, points, settings.ransac_samples)
                )
                if best_score <= 0:
                    break
    return best


def _centres(boxes: Sequence[Box], picks: Sequence[int]) -> np.ndarray:
    return np.array(
        [
            [float((boxes[i][1] + boxes[i][3]) / 2), float((boxes[i][0] + boxes[i][2]) / 2)]
            for i in picks
        ]
    )


def count_matches(
    gt: tuple[Sequence[str], Sequence[Box], tuple[int, int]],
    pred: tuple[Sequence[str], Sequence[Box], tuple[int, int]],
    settings: MatchSettings,
) -> int:
    """Number of Hungarian pairs that survive the RANSAC rounds and are not token mismatches."""
    pairs, tokens = assign(gt, pred, settings)
    src = _centres(gt[1], [a for a, _ in pairs])
    dst = _centres(pred[1], [b for _, b in pairs])
    samples = settings.ransac_samples
    if len(pairs) <= samples:
        inliers = np.ones(len(pairs), dtype=bool)
    else:
        inliers = np.zeros(len(pairs), dtype=bool)
        for _ in range(settings.ransac_rounds):
            remaining = np.flatnonzero(~inliers)
            if remaining.size <= samples:
                break
            found = ransac_inliers(src[remaining], dst[remaining], settings)
            if found is None:
                break
            inliers[remaining[found]] = True
            if np.count_nonzero(inliers) >= len(pairs):
                break
    return sum(1 for keep, (a, b) in zip(inliers, pairs, strict=True) if keep and tokens[a, b] != 1)


def score_counts(tp: int, gt_tokens: int, pred_tokens: int) -> CdmScore:
    """F1, recall and precision of ``tp`` matches, rounded to ROUND_PLACES."""
    return CdmScore(
        F1_score=round(2 * tp / (gt_tokens + pred_tokens), ROUND_PLACES),
        recall=round(tp / gt_tokens, ROUND_PLACES),
        precision=round(tp / pred_tokens, ROUND_PLACES),
        tp=tp,
        gt_tokens=gt_tokens,
        pred_tokens=pred_tokens,
    )


def accepted_pairs(
    gt: Sequence[TokenBox],
    pred: Sequence[TokenBox],
    gt_size: tuple[int, int],
    pred_size: tuple[int, int],
) -> int:
    """v1.6 :func:`count_matches` of two sides' token boxes."""
    return count_matches(
        ([b.token for b in gt], [b.box for b in gt], gt_size),
        ([b.token for b in pred], [b.box for b in pred], pred_size),
        V16,
    )


def score_boxes(
    gt: Sequence[TokenBox] | None,
    pred: Sequence[TokenBox] | None,
    gt_size: tuple[int, int] | None,
    pred_size: tuple[int, int] | None,
) -> CdmScore:
    """v1.6 CDM from both sides' boxes; no gt box scores 0, no pred box 0 with the gt count."""
    if not gt or gt_size is None:
        return ZERO_SCORE
    if not pred or pred_size is None:
        return CdmScore(0.0, 0.0, 0.0, 0, len(gt), 0)
    return score_counts(accepted_pairs(gt, pred, gt_size, pred_size), len(gt), len(pred))
