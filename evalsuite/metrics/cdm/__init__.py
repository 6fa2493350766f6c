"""CDM (Character Detection Matching), the formula metric of OmniDocBench.

A formula pair is scored in three stages: a version's *preparation* turns each LaTeX string into
a colour-coded formula (tokenizer + normalisation + one palette colour per token:
:class:`~evalsuite.metrics.cdm.render.RenderJob`), :mod:`~evalsuite.metrics.cdm.render` typesets
and rasterises it into token boxes, and :mod:`~evalsuite.metrics.cdm.matching` pairs the boxes and
counts the matches (F1 = 2 tp / (n_gt + n_pred)). A version is a row of :data:`VERSIONS`
(:class:`CdmVersion`: the files it checks up front and how it scores pairs); v1.6's row carries its
``prepare`` function, and its renderings are cached by content and toolchain and computed in
parallel. v1.5 (KaTeX JavaScript normaliser, xelatex, scikit-image's RANSAC) is
:mod:`.cdm_v15`, sharing the matcher, Ghostscript step and colouring rules as data.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics import pylatexenc_v210
from evalsuite.metrics.cdm import colouring, tokenizer
from evalsuite.metrics.cdm.batch import render_many
from evalsuite.metrics.cdm.cdm_v15 import cdm_v15_scores
from evalsuite.metrics.cdm.katex_v15 import normaliser_dir
from evalsuite.metrics.cdm.matching import ZERO_SCORE, CdmScore, score_boxes
from evalsuite.metrics.cdm.render import MAX_FORMULA_CHARS, Rendering, RenderJob, cached, store
from evalsuite.metrics.cdm.toolchain import CdmToolchainUnavailableError, program_paths

__all__ = [
    "CDM_VERSIONS",
    "VERSIONS",
    "CdmScore",
    "CdmToolchainUnavailableError",
    "CdmVersion",
    "UnknownCdmVersionError",
    "cdm_scores",
    "ensure_toolchain",
    "score_jobs",
]

PrepareFn = Callable[[str], "RenderJob | None"]
"""A preparation stage: LaTeX string -> colour-coded formula (None: cannot prepare)."""
BATCH_SIZE = 24
"""Most formulas one worker typesets in one pdflatex run."""
PARALLEL_MATCH_MIN = 32
"""From this many pairs on, matching (RANSAC in numpy, CPU-bound) runs in worker processes."""


class UnknownCdmVersionError(EvalsuiteError):
    """No CDM version of that name is computed here."""


def score_jobs(
    jobs: Sequence[tuple[RenderJob | None, RenderJob | None]],
    *,
    workers: int | None = None,
    cache_dir: Path | None = None,
) -> list[CdmScore]:
    """CDM of prepared (gt, pred) pairs. Each distinct job is read from ``cache_dir`` or
    rendered once: the misses in up to ``workers`` parallel chunks of at most
    :data:`BATCH_SIZE`, each chunk sharing pdflatex runs (:mod:`.batch`); the pairs are then
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


@dataclass(frozen=True)
class CdmVersion:
    """One official CDM version as data: the files of its own it needs besides the programs
    (checked up front; raises naming the fix) and how it scores (gt, pred) LaTeX pairs."""

    check_files: Callable[[], object]
    score_pairs: Callable[[list[tuple[str, str]], int | None, Path | None], list[CdmScore]]
    prepare: PrepareFn | None = None
    """Its preparation stage where it renders through :func:`score_jobs` (v1.6)."""


def _score_prepared(
    prepare: PrepareFn, pairs: list[tuple[str, str]], workers: int | None, cache_dir: Path | None
) -> list[CdmScore]:
    """Both sides prepared (one longer than :data:`.render.MAX_FORMULA_CHARS` fails
    unprepared), then rendered and matched by :func:`score_jobs`."""
    def side(latex: str) -> RenderJob | None:
        return prepare(latex) if len(latex) <= MAX_FORMULA_CHARS else None

    return score_jobs([(side(gt), side(pred)) for gt, pred in pairs], workers=workers,
                      cache_dir=cache_dir)


_PREPARE_V16: PrepareFn = partial(colouring.prepare, tokenize=tokenizer.tokenize)
VERSIONS: dict[str, CdmVersion] = {
    "1.5": CdmVersion(
        normaliser_dir,
        lambda pairs, workers, _cache_dir: cdm_v15_scores(pairs, workers=workers)),
    "1.6": CdmVersion(
        pylatexenc_v210.module, partial(_score_prepared, _PREPARE_V16),
        prepare=_PREPARE_V16),
}
"""The OmniDocBench versions whose CDM is computed here, by version."""
CDM_VERSIONS = tuple(VERSIONS)


def ensure_toolchain(version: str) -> None:
    """Check up front that CDM ``version`` can run here.

    Raises:
        UnknownCdmVersionError: a version this build does not compute.
        CdmToolchainUnavailableError: a program or file it needs is absent (the message names the
            command that installs it)."""
    if version not in CDM_VERSIONS:
        raise UnknownCdmVersionError(
            f"CDM v{version} is not computed here (versions: {', '.join(CDM_VERSIONS)})")
    program_paths(version)
    VERSIONS[version].check_files()


def cdm_scores(
    pairs: Sequence[tuple[str, str]],
    *,
    version: str = "1.6",
    workers: int | None = None,
    cache_dir: Path | None = None,
) -> list[CdmScore]:
    """CDM (F1_score, recall, precision) of each (ground truth, prediction) LaTeX pair, as
    OmniDocBench ``version``'s official code computes it (its row of :data:`VERSIONS`): v1.6
    through its ``prepare`` and the shared renderer (renderings cached in ``cache_dir``), v1.5
    through :func:`.cdm_v15.cdm_v15_scores` (its own xelatex renderer; each distinct formula
    rendered once per call, not cached between calls). A side longer than
    :data:`.render.MAX_FORMULA_CHARS` fails untypeset, and TeX runs confined to its folder
    (:mod:`evalsuite.confined`): deviations from the official code, which tries every side
    and lets TeX read and write where the distribution allows. ``workers``: at least 1 (None:
    one per CPU), as everywhere in the suite."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers must be an int of at least 1 (None: one per CPU), got "
                         f"{workers!r}")
    ensure_toolchain(version)
    return VERSIONS[version].score_pairs(list(pairs), workers, cache_dir)
