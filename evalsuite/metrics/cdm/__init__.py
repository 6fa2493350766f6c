"""CDM (Character Detection Matching), the formula metric of OmniDocBench.

A formula pair is scored in three stages: a version's *preparation* turns each LaTeX string into
a colour-coded formula (tokenizer + normalisation + one palette colour per token), it is
typeset and rasterised into token boxes, and the boxes are paired and the matches counted
(F1 = 2 tp / (n_gt + n_pred)). What the versions share is :mod:`.common` (matcher, colouring
rules, pdflatex/Ghostscript rendering, toolchain); each version is a package, :mod:`.v1_5`
(KaTeX JavaScript normaliser, xelatex, scikit-image's RANSAC) and :mod:`.v1_6` (pylatexenc
tokenizer, pdflatex renderings cached by content and toolchain and computed in parallel),
exporting its row of :data:`VERSIONS` (:class:`CdmVersion`: the files it checks up front and
how it scores pairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.cdm import v1_5, v1_6
from evalsuite.metrics.cdm.common.matching import CdmScore
from evalsuite.metrics.cdm.common.toolchain import CdmToolchainUnavailableError, program_paths
from evalsuite.metrics.cdm.common.version import CdmVersion
from evalsuite.metrics.cdm.v1_6.score import score_jobs

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


class UnknownCdmVersionError(EvalsuiteError):
    """No CDM version of that name is computed here."""


VERSIONS: dict[str, CdmVersion] = {"1.5": v1_5.VERSION, "1.6": v1_6.VERSION}
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
    through :func:`.v1_5.score.cdm_scores` (its own xelatex renderer; each distinct formula
    rendered once per call, not cached between calls). A side longer than
    :data:`.common.render.MAX_FORMULA_CHARS` fails untypeset, and TeX runs confined to its folder
    (:mod:`evalsuite.confined`): deviations from the official code, which tries every side
    and lets TeX read and write where the distribution allows. ``workers``: at least 1 (None:
    one per CPU), as everywhere in the suite."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers must be an int of at least 1 (None: one per CPU), got "
                         f"{workers!r}")
    ensure_toolchain(version)
    return VERSIONS[version].score_pairs(list(pairs), workers, cache_dir)
