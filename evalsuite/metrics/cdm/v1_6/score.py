"""CDM as OmniDocBench v1.6 computes it: each side prepared (:data:`prepare`: the v1.6 tokenizer,
then the shared normalisation and colouring), rendered by pdflatex and Ghostscript (cached by
content and toolchain, in parallel, formulas sharing pdflatex runs) and matched with the v1.6
settings of the shared matcher."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from functools import partial
from pathlib import Path

from evalsuite.metrics.cdm.common import colouring
from evalsuite.metrics.cdm.common.batch import render_many
from evalsuite.metrics.cdm.common.matching import ZERO_SCORE, CdmScore, score_boxes
from evalsuite.metrics.cdm.common.render import (
    MAX_FORMULA_CHARS,
    Rendering,
    RenderJob,
    cached,
    store,
)
from evalsuite.metrics.cdm.common.toolchain import program_paths
from evalsuite.metrics.cdm.common.version import PrepareFn
from evalsuite.metrics.cdm.v1_6 import tokenizer

BATCH_SIZE = 24
"""Most formulas one worker typesets in one pdflatex run."""
PARALLEL_MATCH_MIN = 32
"""From this many pairs on, matching (RANSAC in numpy, CPU-bound) runs in worker processes."""

prepare: PrepareFn = partial(colouring.prepare, tokenize=tokenizer.tokenize)
"""v1.6's preparation stage: LaTeX string -> colour-coded formula."""


def score_jobs(
    jobs: Sequence[tuple[RenderJob | None, RenderJob | None]],
    *,
    workers: int | None = None,
    cache_dir: Path | None = None,
) -> list[CdmScore]:
    """CDM of prepared (gt, pred) pairs. Each distinct job is read from ``cache_dir`` or
    rendered once: the misses in up to ``workers`` parallel chunks of at most
    :data:`BATCH_SIZE`, each chunk sharing pdflatex runs (:mod:`..common.batch`); the pairs are then
    matched, in ``workers`` processes from :data:`PARALLEL_MATCH_MIN` pairs on."""
    program_paths()
    distinct = list(dict.fromkeys(job for pair in jobs for job in pair if job is not None))
    rendered: dict[RenderJob, Rendering | None] = {}
    missing = []
    for job in distinct:
        found, rendering = cached(job, cache_dir)
        if found:
            rendered[job] = rendering
        else:
            missing.append(job)
    lanes = workers or os.cpu_count() or 1
    size = min(BATCH_SIZE, max(1, -(-len(missing) // lanes)))
    chunks = [missing[start : start + size] for start in range(0, len(missing), size)]
    with ThreadPoolExecutor(max_workers=lanes) as pool:
        outcomes = pool.map(render_many, chunks)
        for chunk, (renderings, timed_out) in zip(chunks, outcomes, strict=True):
            for job, rendering in zip(chunk, renderings, strict=True):
                rendered[job] = rendering
                if job not in timed_out:
                    store(job, rendering, cache_dir)
    sides = [
        (
            rendered[gt] if gt is not None else None,
            rendered[pred] if pred is not None else None,
        )
        for gt, pred in jobs
    ]
    if lanes > 1 and len(sides) >= PARALLEL_MATCH_MIN:
        with ProcessPoolExecutor(max_workers=lanes) as processes:
            return list(processes.map(_score_sides, sides, chunksize=8))
    return [_score_sides(pair) for pair in sides]


def _score_sides(sides: tuple[Rendering | None, Rendering | None]) -> CdmScore:
    """v1.6 matching of a (gt, pred) pair of renderings (None: the side failed)."""
    gt, pred = sides
    if gt is None:
        return ZERO_SCORE
    return score_boxes(
        gt.boxes, pred.boxes if pred else None, gt.size, pred.size if pred else None
    )


def cdm_scores(
    pairs: list[tuple[str, str]], workers: int | None, cache_dir: Path | None
) -> list[CdmScore]:
    """v1.6 CDM of each (gt, pred) LaTeX pair: both sides prepared (one longer than
    :data:`..common.render.MAX_FORMULA_CHARS` fails unprepared), then rendered and matched by
    :func:`score_jobs`."""
    def side(latex: str) -> RenderJob | None:
        return prepare(latex) if len(latex) <= MAX_FORMULA_CHARS else None

    return score_jobs([(side(gt), side(pred)) for gt, pred in pairs], workers=workers,
                      cache_dir=cache_dir)
