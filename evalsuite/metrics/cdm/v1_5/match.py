"""OmniDocBench v1.5 CDM matching: the shared matcher (:mod:`..common.matching`), v1.5 settings.

v1.5 differs from v1.6 only in data: its token classes (``same_token``, near-token cost
0.05), the order cost |i/len(gt) - j/len(pred)| and scikit-image 0.20's ``ransac`` (3 rounds,
min_samples 3, residual threshold 25 px, 50 trials, ``random_state=42``).
"""

from __future__ import annotations

from dataclasses import dataclass

from evalsuite.metrics.cdm.common.matching import MatchSettings, count_matches


@dataclass(frozen=True)
class RenderedSide:
    """Token boxes of one rendered formula; ``size`` is the cropped image's (width, height).

    A box is [x_min, y_min, x_max, y_max] in pixels, [] for a token with no pixel.
    """

    tokens: list[str]
    boxes: list[list[int]]
    size: tuple[int, int]


SAME_TOKEN = {
    "\\cdot": ".",
    "\\mid": "|",
    "\\to": "\\rightarrow",
    "\\top": "T",
    "\\Tilde": "\\tilde",
    "\\cdots": "\\dots",
    "\\prime": "'",
    "\\ast": "*",
    "\\left<": "\\langle",
    "\\right>": "\\rangle",
}


def same_token(token: str) -> str:
    """The v1.5 class of a token: visually equal tokens (\\leq, \\le) share one."""
    token = SAME_TOKEN.get(token, token)
    if token.startswith("\\left") or token.startswith("\\right"):
        token = token.replace("\\left", "").replace("\\right", "")
    if token.startswith("\\big") or token.startswith("\\Big"):
        token = "\\" + token[4:].split("\\")[-1] if "\\" in token[4:] else token[-1]
    if token in ("\\leq", "\\geq"):
        return token[:-1]
    if token in ("\\lVert", "\\rVert", "\\Vert"):
        return "\\|"
    if token in ("\\lvert", "\\rvert", "\\vert"):
        return "|"
    if token.endswith("rightarrow"):
        return "\\rightarrow"
    if token.endswith("leftarrow"):
        return "\\leftarrow"
    if token.startswith("\\wide"):
        return token.replace("wide", "")
    if token.startswith("\\var"):
        return token.replace("\\var", "")
    return token


SETTINGS = MatchSettings(
    canonical=same_token,
    near_token_cost=0.05,
    order_by_own_length=True,
    ransac_rounds=3,
    ransac_samples=3,
    ransac_residual_px=25,
    ransac_trials=50,
    ransac_seed=42,
    skimage_ransac=True,
)


def cdm_counts(gt: RenderedSide, pred: RenderedSide) -> int:
    """Matched tokens: Hungarian pairs kept by RANSAC whose tokens are not different."""
    return count_matches(
        (gt.tokens, gt.boxes, gt.size), (pred.tokens, pred.boxes, pred.size), SETTINGS
    )
