"""The implemented versions of OmniDocBench's official end-to-end evaluation, as data.

One scorer serves every version: what differs between them is a :class:`Rules` value read by
the extraction, normalisation, matching and aggregation steps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from evalsuite.errors import EvalsuiteError

__all__ = [
    "DATASET_VERSIONS",
    "RULES",
    "V10",
    "V15",
    "V16",
    "Rules",
    "VersionNotImplemented",
    "rules_for",
    "version_for_pages",
]


class VersionNotImplemented(EvalsuiteError, ValueError):
    """An OmniDocBench evaluation version this scorer does not implement."""


@dataclass(frozen=True)
class Rules:
    """What one official version does where the versions differ.

    ``fence_languages``: the ```` ```lang ```` openings deleted at line starts;
    ``collapse_symbol_runs``: runs of 11+ of one non-alphanumeric character shortened to 4;
    ``strip_page_tags``: ``<html>``/``<body>`` tags deleted from predictions;
    ``formula_lines_joined``: a predicted formula's lines joined with a space (else all its
    whitespace deleted); ``formula_extra_deletions``: strings the formula normalisation also
    deletes (after stripping ``$`` and newlines at both ends when any);
    ``hybrid_match``: text and display formulas matched together, tables first
    (else each on its own); ``png_pages``: a sample id ending in ``.png`` names a page, as one
    ending in ``.jpg`` does; ``edit_whole``: the edit-distance summary also reports
    ``edit_whole`` and ``edit_sample_avg``; ``reports_variance``: the per-attribute summary
    reports ``Edit_dist_var``; ``tables_always_html``: a run's tables are scored as HTML, its
    LaTeX-table matches and formulas matched to text joined run-wide (else the run's format is
    chosen from its predictions); ``leaderboard``: the run's overall is the leaderboard's (else
    v1.0's overall table with per-language figures); ``cdm_version``: the CDM version its
    formulas are scored with (None: no CDM); ``missing_pages_scored_empty``: a page without a
    prediction is scored as an empty page (else skipped); ``summary_file``: the file among the
    predictions the suite writes the official summary to; ``max_run``: the most consecutive
    predictions the quick match joins into one run (None: no limit); ``formulas_found_in_text``:
    the quick match's step 3 looks for ground-truth display formulas inside predictions too;
    ``code_base``: the official code base whose page and metric steps score the version ("1.0":
    v1.0's, which v1.5 changes only through these flags; "1.6": v1.6's own modules).
    """

    version: str
    commit: str
    fence_languages: tuple[str, ...]
    collapse_symbol_runs: bool
    strip_page_tags: bool
    formula_lines_joined: bool
    formula_extra_deletions: tuple[str, ...]
    hybrid_match: bool
    png_pages: bool
    edit_whole: bool
    reports_variance: bool
    tables_always_html: bool
    leaderboard: bool
    cdm_version: str | None
    summary_file: str
    missing_pages_scored_empty: bool = False
    max_run: int | None = None
    formulas_found_in_text: bool = True
    code_base: str = "1.0"

    @property
    def label(self) -> str:
        """``OmniDocBench v1.5 end-to-end evaluation (opendatalab/OmniDocBench 0f22218)``."""
        return (f"OmniDocBench v{self.version} end-to-end evaluation "
                f"(opendatalab/OmniDocBench {self.commit[:7]})")


V10 = Rules(
    version="1.0",
    commit="895837f67935dcad9035160a1fab71cf071108e2",
    fence_languages=("markdown",),
    collapse_symbol_runs=True,
    strip_page_tags=False,
    formula_lines_joined=False,
    formula_extra_deletions=(),
    hybrid_match=False,
    png_pages=False,
    edit_whole=False,
    reports_variance=True,
    tables_always_html=False,
    leaderboard=False,
    cdm_version=None,
    summary_file="omnidocbench_summary.json",
)
V15 = Rules(
    version="1.5",
    commit="0f222180a241709c9db620fc63880a540d0114a7",
    fence_languages=("markdown", "html", "latex"),
    collapse_symbol_runs=False,
    strip_page_tags=True,
    formula_lines_joined=True,
    formula_extra_deletions=("$$", "\\left", "\\right", "\\displaystyle", "\\text"),
    hybrid_match=True,
    png_pages=True,
    edit_whole=True,
    reports_variance=False,
    tables_always_html=True,
    leaderboard=True,
    cdm_version="1.5",
    summary_file="omnidocbench_summary_v1.5.json",
)
V16 = replace(
    V15,
    version="1.6",
    commit="9dc1decf8f5eb6eade469371c89d264e5e635d80",
    cdm_version="1.6",
    summary_file="omnidocbench_summary_v1.6.json",
    missing_pages_scored_empty=True,
    max_run=160,
    formulas_found_in_text=False,
    code_base="1.6",
)
"""v1.6's rules: its quick match (:mod:`.v1_6.mgam`) reads ``max_run`` and
``formulas_found_in_text``; its page step (:mod:`.v1_6.page`) and metric step
(:mod:`.v1_6.summary`) are its own modules (its formula normalisation is
:mod:`.v1_6.normalize`'s, not ``formula_extra_deletions``)."""
RULES = {rules.version: rules for rules in (V10, V15, V16)}


def rules_for(version: str) -> Rules:
    """The rules of ``version`` ("1.0", "1.5" or "1.6").

    Raises:
        VersionNotImplemented: another version."""
    try:
        return RULES[version]
    except KeyError:
        raise VersionNotImplemented(
            f"OmniDocBench v{version} scoring is not implemented yet; implemented: "
            f"{', '.join(RULES)} (pass --version {max(RULES)} to use the newest)") from None


DATASET_VERSIONS = {981: "1.0", 1355: "1.5", 1651: "1.6"}
"""The evaluation version of each published release's page count (the data loader names a
ground truth's release from it)."""


def version_for_pages(page_count: int) -> str:
    """The evaluation version of a ground truth with ``page_count`` pages: its release's
    (:data:`DATASET_VERSIONS`, which may name one not implemented here), else the newest
    implemented."""
    newest = max(RULES, key=lambda version: tuple(map(int, version.split("."))))
    return DATASET_VERSIONS.get(page_count, newest)
