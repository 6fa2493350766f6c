"""OmniDocBench v1.5's CDM (commit 0f22218): KaTeX normaliser in Node (:mod:`.katex`), its token
rules (:mod:`.latex`), xelatex rendering (:mod:`.render`), scikit-image RANSAC matching
(:mod:`.match`), put together in :mod:`.score`; :data:`VERSION` is its row."""

from __future__ import annotations

from evalsuite.metrics.cdm.common.version import CdmVersion
from evalsuite.metrics.cdm.v1_5.katex import normaliser_dir
from evalsuite.metrics.cdm.v1_5.score import cdm_scores

VERSION = CdmVersion(
    normaliser_dir, lambda pairs, workers, _cache_dir: cdm_scores(pairs, workers=workers))
"""v1.5 as a row of :data:`evalsuite.metrics.cdm.VERSIONS` (its renderings are not cached)."""
