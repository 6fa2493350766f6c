"""A display formula's CDM as OmniDocBench's evaluations run it: the scorer hook each version's
evaluation takes (:func:`cdm_hook`) and the preparation of a (ground truth, prediction) pair."""

from __future__ import annotations

from collections.abc import Callable

from evalsuite.metrics.cdm import cdm_scores, ensure_toolchain
from evalsuite.metrics.cdm.common.toolchain import default_cache_dir
from evalsuite.metrics.omnidocbench.versions import rules_for

__all__ = ["FormulaCdm", "cdm_hook", "cdm_pair", "unwrap_dollars"]

FormulaCdm = Callable[[list[tuple[str, str]]], list[dict[str, float]]]
"""A CDM scorer: (ground truth, prediction) pairs, prepared as :func:`cdm_pair` does, to one
``{"F1_score", "recall", "precision"}`` per pair (only ``F1_score`` is read)."""


def cdm_hook(version: str, *, workers: int | None = None) -> FormulaCdm | None:
    """``version``'s CDM (:func:`evalsuite.metrics.cdm.cdm_scores`) as
    :func:`..evaluation.evaluate_pages` takes it; None for v1.0, which has no CDM. The toolchain
    is checked now, before any page.

    Raises:
        CdmToolchainUnavailableError: a program CDM needs is absent (names the install command)."""
    cdm_version = rules_for(version).cdm_version
    if cdm_version is None:
        return None
    ensure_toolchain(cdm_version)
    cache_dir = default_cache_dir()

    def score(pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        return [{"F1_score": s.F1_score, "recall": s.recall, "precision": s.precision}
                for s in cdm_scores(pairs, version=cdm_version, workers=workers,
                                    cache_dir=cache_dir)]

    return score


def cdm_pair(gt: str, pred: str) -> tuple[str, str]:
    """A display-formula sample as v1.5 hands it to CDM (``_process_single_cdm_sample``): both
    sides lose leading and trailing ``$`` then whitespace, twice; the prediction is first cut
    to what follows its last ```` ```latex ```` and precedes the next ```` ``` ````."""
    pred = pred.split("```latex")[-1].split("```")[0]
    return unwrap_dollars(gt), unwrap_dollars(pred)


def unwrap_dollars(latex: str) -> str:
    for _ in range(2):  # "$$" then "$" officially: each strips every leading/trailing "$"
        latex = latex.lstrip("$").rstrip("$").strip()
    return latex
