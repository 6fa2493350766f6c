"""OmniDocBench v1.6's CDM (commit 9dc1dec): pylatexenc 2.10 tokenizer (:mod:`.tokenizer`,
:mod:`.katex_like`), then the shared colouring, pdflatex rendering and matching
(:mod:`..common`), put together in :mod:`.score`; :data:`VERSION` is its row."""

from __future__ import annotations

from evalsuite.metrics import pylatexenc_v210
from evalsuite.metrics.cdm.common.version import CdmVersion
from evalsuite.metrics.cdm.v1_6.score import cdm_scores, prepare

VERSION = CdmVersion(pylatexenc_v210.module, cdm_scores, prepare=prepare)
"""v1.6 as a row of :data:`evalsuite.metrics.cdm.VERSIONS`."""
