"""CDM (Character Detection Matching) as OmniDocBench v1.5 computes it (commit 0f22218).

Per side: newlines -> spaces, KaTeX normalisation (:mod:`.katex`; on failure the raw text),
v1.5 token rules and colouring (:mod:`.latex`), xelatex + Ghostscript rendering and colour
boxes (:mod:`.render`). Per pair: the Hungarian + RANSAC matching of :mod:`.match`. As in the
official ``CDM.evaluate``, any failure (no PDF, unbalanced braces, a side without a visible
box) scores recall = precision = F1 = 0. Each distinct LaTeX string is rendered once.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from evalsuite.metrics.cdm.common.matching import ZERO_SCORE, CdmScore, score_counts
from evalsuite.metrics.cdm.common.render import MAX_FORMULA_CHARS
from evalsuite.metrics.cdm.common.toolchain import program_paths
from evalsuite.metrics.cdm.v1_5.katex import normaliser_dir, tokenize
from evalsuite.metrics.cdm.v1_5.latex import colour_tokens, normalize
from evalsuite.metrics.cdm.v1_5.match import RenderedSide, cdm_counts
from evalsuite.metrics.cdm.v1_5.render import render, xelatex_document

PERCENT_MARK = "<PERCENTAGETOKEN>"


def prepare_side(latex: str) -> tuple[str, list[str], int] | None:
    """(xelatex document, visible tokens, colour count) for one LaTeX string; None on failure."""
    latex = latex.replace("\n", " ").replace("\\%", PERCENT_MARK)
    try:
        ok, tokens = tokenize(latex)
    except LookupError:
        return None
    if not (ok and tokens):
        tokens = latex
    tokens = tokens.replace(" ".join(PERCENT_MARK), "\\%")
    try:
        normalized = normalize(tokens)
        placeholders = min(len(normalized.strip().split(" ")), 5800)
        coloured, visible = colour_tokens(normalized)
    except (IndexError, ValueError):
        return None
    return xelatex_document(coloured, placeholders, len(visible)), visible, placeholders


def render_side(latex: str) -> RenderedSide | None:
    """Boxes of one LaTeX string's visible tokens; None where the official code writes none,
    and for a string longer than :data:`.render.MAX_FORMULA_CHARS` (a deviation)."""
    if len(latex) > MAX_FORMULA_CHARS:
        return None
    prepared = prepare_side(latex)
    if prepared is None or not prepared[1]:
        return None
    document, tokens, placeholders = prepared
    return render(document, tokens, placeholders)


def _drawn(side: RenderedSide) -> RenderedSide:
    """The side's tokens that have pixels (the official code skips boxless bbox lines)."""
    kept = [(token, box) for token, box in zip(side.tokens, side.boxes, strict=True) if box]
    return RenderedSide([token for token, _ in kept], [box for _, box in kept], side.size)


def score_sides(gt: RenderedSide | None, pred: RenderedSide | None) -> CdmScore:
    """The v1.5 metrics of two rendered sides (zero where either has no visible box)."""
    if gt is None or pred is None:
        return ZERO_SCORE
    gt_kept, pred_kept = _drawn(gt), _drawn(pred)
    if not gt_kept.tokens or not pred_kept.tokens:
        return ZERO_SCORE
    return score_counts(cdm_counts(gt_kept, pred_kept), len(gt_kept.tokens), len(pred_kept.tokens))


def cdm_scores(pairs: list[tuple[str, str]], *, workers: int | None = None) -> list[CdmScore]:
    """v1.5 CDM of each (gt, pred) LaTeX pair, in order; distinct strings rendered in parallel.

    Raises CdmToolchainUnavailableError first where xelatex, gs, node or the KaTeX JS is missing."""
    program_paths("1.5")
    normaliser_dir()
    distinct = sorted({text for pair in pairs for text in pair})
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        sides = dict(zip(distinct, pool.map(render_side, distinct), strict=True))
    return [score_sides(sides[gt], sides[pred]) for gt, pred in pairs]
