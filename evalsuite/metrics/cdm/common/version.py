"""One official CDM version as data: the row each version package exports as ``VERSION``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalsuite.metrics.cdm.common.matching import CdmScore
from evalsuite.metrics.cdm.common.render import RenderJob

PrepareFn = Callable[[str], "RenderJob | None"]
"""A preparation stage: LaTeX string -> colour-coded formula (None: cannot prepare)."""


@dataclass(frozen=True)
class CdmVersion:
    """One official CDM version as data: the files of its own it needs besides the programs
    (checked up front; raises naming the fix) and how it scores (gt, pred) LaTeX pairs."""

    check_files: Callable[[], object]
    score_pairs: Callable[[list[tuple[str, str]], int | None, Path | None], list[CdmScore]]
    prepare: PrepareFn | None = None
    """Its preparation stage where it renders through
    :func:`~evalsuite.metrics.cdm.v1_6.score.score_jobs` (v1.6)."""
