"""OmniDocBench end-to-end: each page converted to markdown, scored as OmniDocBench's official
evaluation of a chosen version scores it (:mod:`evalsuite.metrics.omnidocbench`: v1.0, v1.5,
v1.6), with DeepSeek-OCR's own OmniDocBench request settings (``run_dpsk_ocr_eval_batch.py``:
the grounding markdown prompt, the 40/90 n-gram rule with ``<td>``/``</td>`` allowed,
temperature 0, up to 8192 tokens) and its post-processing of the output
(:func:`deepseek_markdown`); a peer model's answer (``--model``) is its profile's converted
markdown, scored as it is (:func:`scored_markdown`).

Versions (:func:`scoring_versions`): by default the data's own release (by its page count:
v1.0 981 pages, v1.5 1355, v1.6 1651); a set of pages that is no release (the project's
fixtures, a set of your own) is scored by every implemented version; ``--omnidocbench-version``
chooses. Each version is its own record, keyed ``mode=M`` for the data's own version (v1.0 for
a set that is no release) and ``mode=M,scorer=vX`` for another (:func:`parameter`).

One sample per page. Per-page metrics (lower is better for edit distances): the page's text
block, display formula, table and reading-order edit distances (``Σ edits / Σ max length`` over
the page's matched blocks), its mean table TEDS, and from v1.5 on its mean formula CDM; a metric
is absent on a page without that element.

- v1.0: aggregated as the official ``all`` figures: edit distances as means over pages, TEDS as
  a mean over tables (weight: the page's tables). ``overall_edit``, per language
  (``overall_edit[english]``), is the DeepSeek-OCR paper's "Overall": the mean of the four
  per-language page means (text, formula, table, order), as a weighted mean over pages (each
  element of a page weighs 1 / the language's pages with that element).
- v1.5 on: the leaderboard's figures, all page means over the whole run (no language split):
  ``overall`` = ((1 - text edit) x 100 + formula CDM x 100 + table TEDS x 100) / 3 as a weighted
  mean over pages in the same way (each weighs 1 / the run's pages with that element), without
  the notebook's rounding of the parts; ``overall_edit`` the mean of the four page means.

Deliberate deviations from the official script, for the gate (``evalsuite score omnidocbench``
and the ``omnidocbench_summary*.json`` artifacts follow the official code exactly):
- a page whose engine call failed counts worst (edit 1, TEDS 0, CDM 0) on its elements, where
  the official evaluation would skip a page without prediction file;
- every page is scored as a run of its own (:func:`.evaluation.score_page`): v1.0's table
  format (LaTeX-table predictions when a page has more of them than HTML tables) and the
  formulas-read-as-text rules of v1.5 and v1.6 are decided per page, not once per run.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.datasets.fetch import HubFiles
from evalsuite.datasets.omnidocbench import (
    OmniDocBench,
    data_version,
    image_name,
    load_omnidocbench,
)
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.omnidocbench.common.formula_cdm import FormulaCdm
from evalsuite.metrics.omnidocbench.common.ground_truth import IGNORED_CATEGORIES, TEXT_CATEGORIES
from evalsuite.metrics.omnidocbench.evaluation import (
    OFFICIAL_VERSION,
    Evaluation,
    evaluate_pages,
    predictions_in,
    score_page,
)
from evalsuite.metrics.omnidocbench.v1_0.page import page_blocks
from evalsuite.metrics.omnidocbench.versions import rules_for
from evalsuite.prompts import MARKDOWN
from evalsuite.records.model import BenchmarkRecord, SampleRecord
from evalsuite.runner import UNIT, MetricSpec, Sample, Scored

OVERALL_WEIGHT = "overall_weight"
LEADERBOARD_WEIGHT = "leaderboard_weight"
TABLE_WEIGHT = "table_samples"
ELEMENT_METRICS = {
    "text_block": ("text_block_edit_dist",),
    "display_formula": ("display_formula_edit_dist",),
    "table": ("table_teds", "table_teds_structure_only", "table_edit_dist"),
    "reading_order": ("reading_order_edit_dist",),
}
"""v1.0's metrics per element: a page carries those of the elements it has."""
CDM_METRIC = "display_formula_cdm"
LEADERBOARD_PARTS = {
    "text_block": ("text_block_edit_dist", lambda edit: (1.0 - edit) * 100.0),
    "display_formula": (CDM_METRIC, lambda cdm: cdm * 100.0),
    "table": ("table_teds", lambda teds: teds * 100.0),
}
"""v1.5 on: the three parts of the leaderboard's overall, each as (metric, points of 100)."""
OVERALL_PARTS = {
    "text_block": "text_block_edit_dist",
    "display_formula": "display_formula_edit_dist",
    "table": "table_edit_dist",
    "reading_order": "reading_order_edit_dist",
}
"""The four edit distances whose per-language means make the paper's "Overall"."""

METRICS = (
    MetricSpec("overall_edit", direction="lower", bounds=UNIT, tolerance=0.02,
               weight=OVERALL_WEIGHT),
    MetricSpec("text_block_edit_dist", direction="lower", bounds=UNIT, tolerance=0.02),
    MetricSpec("display_formula_edit_dist", direction="lower", bounds=UNIT, tolerance=0.03),
    MetricSpec("table_teds", bounds=UNIT, tolerance=0.03, weight=TABLE_WEIGHT),
    MetricSpec("table_teds_structure_only", bounds=UNIT, tolerance=0.03, weight=TABLE_WEIGHT),
    MetricSpec("table_edit_dist", direction="lower", bounds=UNIT, tolerance=0.03),
    MetricSpec("reading_order_edit_dist", direction="lower", bounds=UNIT, tolerance=0.02),
)
GATED_PER_GROUP = ("overall_edit",)
RELEASE_METRICS = (
    MetricSpec("overall", bounds=(0.0, 100.0), tolerance=1.0, weight=LEADERBOARD_WEIGHT),
    MetricSpec("text_block_edit_dist", direction="lower", bounds=UNIT, tolerance=0.02),
    MetricSpec(CDM_METRIC, bounds=UNIT, tolerance=0.03),
    MetricSpec("table_teds", bounds=UNIT, tolerance=0.03),
    MetricSpec("table_teds_structure_only", bounds=UNIT, tolerance=0.03),
    MetricSpec("reading_order_edit_dist", direction="lower", bounds=UNIT, tolerance=0.02),
    MetricSpec("display_formula_edit_dist", direction="lower", bounds=UNIT, tolerance=0.03),
    MetricSpec("table_edit_dist", direction="lower", bounds=UNIT, tolerance=0.03),
    MetricSpec("overall_edit", direction="lower", bounds=UNIT, tolerance=0.02,
               weight=OVERALL_WEIGHT),
)
"""v1.5 on: the leaderboard's overall and its parts (TEDS as a mean over pages, as the
leaderboard takes it), then the edit distances and their mean."""

BENCHMARK = register(
    Benchmark(
        name="omnidocbench",
        title="OmniDocBench",
        description="OmniDocBench end-to-end page parsing, scored as its official v1.0, v1.5 "
        "or v1.6 evaluation",
        sources=(
            DataSource(
                "fixtures",
                "four pages written for the project and rendered, in the published layout",
                load_omnidocbench,
                fixtures=FIXTURES_DIR / "omnidocbench" / "fixture",
            ),
            DataSource(
                "omnidocbench",
                "OmniDocBench (opendatalab/OmniDocBench): OmniDocBench.json and images/",
                load_omnidocbench,
                folder="omnidocbench",
                requires=("OmniDocBench.json", "images"),
                version=data_version,
                fetch=HubFiles(
                    "opendatalab/OmniDocBench",
                    "main",
                    patterns=("OmniDocBench.json", "images/*"),
                ),
            ),
        ),
        cpu_engines=("tesseract", "tiny-deepseek-ocr-2"),
        default_modes=("gundam",),
        order=78,
        sample_caps=MappingProxyType({"tiny-deepseek-ocr-2": 2}),
        metrics=METRICS,
    )
)

_GROUNDING = re.compile(r"(<\|ref\|>(.*?)<\|/ref\|><\|det\|>(.*?)<\|/det\|>)", re.DOTALL)
_DISPLAY_FORMULA = re.compile(r"\\\[(.*?)\\\]")
_EQUATION_NUMBER = re.compile(r"\\quad\s*\([^)]*\)")


def deepseek_markdown(text: str) -> str:
    """DeepSeek-OCR's OmniDocBench post-processing (``run_dpsk_ocr_eval_batch.py``): inside
    each single-line ``\\[…\\]`` equation numbers ``\\quad (…)`` are removed and the formula
    stripped; then every grounding element ``<|ref|>…<|/ref|><|det|>…<|/det|>`` (images
    included) is deleted, each deletion followed by folding 4 then 3 newlines into 2 and
    removing ``<center>``/``</center>``."""
    text = _DISPLAY_FORMULA.sub(
        lambda match: r"\[" + _EQUATION_NUMBER.sub("", match.group(1)).strip() + r"\]", text
    )
    for element, _, _ in _GROUNDING.findall(text):
        text = (text.replace(element, "").replace("\n\n\n\n", "\n\n").replace("\n\n\n", "\n\n")
                .replace("<center>", "").replace("</center>", ""))
    return text


def scored_markdown(text: str, settings: Mapping[str, Any] | None) -> str:
    """The page the official evaluation reads: a peer model's converted markdown as it is
    (its settings name a ``model_profile``), else DeepSeek's post-processing of the answer."""
    return text if settings and "model_profile" in settings else deepseek_markdown(text)


def expected_elements(page: Mapping[str, Any]) -> tuple[str, ...]:
    """The elements a page is scored on, from its ground truth: text blocks and reading order
    when it has a scored text block, display formulas, tables."""
    blocks = page_blocks(page)
    scored_text = any(blocks.get(category) for category in TEXT_CATEGORIES
                      if category not in IGNORED_CATEGORIES)
    return (("text_block", "reading_order") if scored_text else ()) + tuple(
        element for element, category in (("display_formula", "equation_isolated"),
                                           ("table", "table"))
        if blocks.get(category)
    )


def language(sample: SampleRecord) -> str:
    """The page's ``language`` attribute (``english``, ``simplified_chinese``, …)."""
    return sample.details["language"]


class VersionChoiceError(EvalsuiteError, ValueError):
    """``--omnidocbench-version`` names a version the suite cannot score."""


def scoring_versions(bench: OmniDocBench, requested: Sequence[str] | None) -> tuple[str, ...]:
    """The evaluation versions to score ``bench`` by: ``requested`` (``--omnidocbench-version``),
    else the data's release (by its page count), else every implemented version.

    Raises:
        VersionChoiceError: a requested version, or the data's release, is not implemented."""
    release = _release(bench)
    versions = tuple(requested) if requested else (release,) if release else tuple(OFFICIAL_VERSION)
    unknown = [version for version in versions if version not in OFFICIAL_VERSION]
    if unknown:
        raise VersionChoiceError(
            f"OmniDocBench v{', v'.join(unknown)} cannot be scored here; implemented: "
            f"{', '.join(OFFICIAL_VERSION)} (choose with --omnidocbench-version)")
    return versions


def parameter(mode: str, version: str, bench: OmniDocBench) -> str:
    """The record's parameter: ``mode=M`` when ``version`` is the data's own (its release, v1.0
    for a set that is no release), else ``mode=M,scorer=vX``."""
    own = _release(bench) or "1.0"
    return f"mode={mode}" if version == own else f"mode={mode},scorer=v{version}"


def _release(bench: OmniDocBench) -> str | None:
    """The data's release as an evaluation version ("1.5"), None for a set that is no release."""
    return None if bench.version is None else bench.version.removeprefix("v")


def metrics(version: str) -> tuple[MetricSpec, ...]:
    """The gated metrics of ``version``'s records."""
    return RELEASE_METRICS if rules_for(version).leaderboard else METRICS


def gated_per_group(version: str) -> tuple[str, ...]:
    """The metrics gated per language: v1.0's overall; none from v1.5 on (the leaderboard
    dropped the language split)."""
    return () if rules_for(version).leaderboard else GATED_PER_GROUP


def samples(bench: OmniDocBench, mode: str, version: str = "1.0") -> list[Sample]:
    """One markdown request per page; a page whose image is missing fails by itself. Each
    element of a page weighs 1 / the pages with that element in its group: its language in
    v1.0, the whole set from v1.5 on."""
    leaderboard = rules_for(version).leaderboard
    elements = {image_name(page): expected_elements(page) for page in bench.pages}

    def group(page: Mapping[str, Any]) -> str:
        return "all" if leaderboard else _attribute(page, "language")

    pages_with = Counter(
        (group(page), element) for page in bench.pages for element in elements[image_name(page)]
    )
    result = []
    for page in bench.pages:
        name = image_name(page)
        path = bench.image_path(page)
        weights = {e: 1.0 / pages_with[(group(page), e)] for e in elements[name]}
        measures = {metric for e in elements[name] for metric in ELEMENT_METRICS[e]}
        details = {
            "language": _attribute(page, "language"),
            "data_source": _attribute(page, "data_source"),
            "layout": _attribute(page, "layout"),
            TABLE_WEIGHT: len(page_blocks(page).get("table", ())),
            "element_weights": weights,
            OVERALL_WEIGHT: sum(weights.values()),
        }
        if weights:
            measures.add("overall_edit")
        if leaderboard:
            details[LEADERBOARD_WEIGHT] = sum(weights.get(e, 0.0) for e in LEADERBOARD_PARTS)
            if "display_formula" in weights:
                measures.add(CDM_METRIC)
            if details[LEADERBOARD_WEIGHT]:
                measures.add("overall")
        request = InferenceRequest(
            path, MARKDOWN, mode, name, {"benchmark": "omnidocbench", "page": name}
        )
        result.append(Sample(
            name, request, reference=page, details=details,
            error=None if path.is_file() else f"page image {path} does not exist",
            measures=frozenset(measures),
        ))
    return result


def scorer(version: str = "1.0", formula_cdm: FormulaCdm | None = None
           ) -> Callable[[Sample, InferenceResult], Scored]:
    """The page scorer of ``version``: the page's official figures on the post-processed
    markdown (:func:`.evaluation.score_page`; CDM through ``formula_cdm``), then
    ``overall_edit``, the weighted mean of its four edit distances, and from v1.5 on
    ``overall``, the weighted mean of its leaderboard parts (weights in ``element_weights``)."""
    leaderboard = rules_for(version).leaderboard

    def score(sample: Sample, result: InferenceResult) -> Scored:
        figures = score_page(sample.reference, scored_markdown(result.text, result.settings),
                             version=version, formula_cdm=formula_cdm)
        scores: dict[str, float | None] = {
            name: value for name, value in figures.items() if value is not None
        }
        weights = sample.details["element_weights"]
        _weighted(scores, "overall_edit", OVERALL_WEIGHT, [
            (weights[e], scores[metric]) for e, metric in OVERALL_PARTS.items()
            if e in weights and scores.get(metric) is not None])
        if leaderboard:
            _weighted(scores, "overall", LEADERBOARD_WEIGHT, [
                (weights[e], points(scores[metric]))
                for e, (metric, points) in LEADERBOARD_PARTS.items()
                if e in weights and scores.get(metric) is not None])
        worst = max(((scores[m], m) for m in OVERALL_PARTS.values() if m in scores),
                    default=None)
        return Scored(scores, {"worst": f"{worst[1]} {worst[0]:.3f}"} if worst else {})

    return score


def _weighted(scores: dict[str, float | None], name: str, weight_name: str,
              parts: list[tuple[float, float]]) -> None:
    """``scores[name]`` = Σ weight·value / Σ weight over ``parts`` and ``scores[weight_name]``
    = Σ weight; nothing when there are no parts."""
    if parts:
        total = sum(weight for weight, _ in parts)
        scores[name] = sum(weight * value for weight, value in parts) / total
        scores[weight_name] = total


def write_predictions(folder: Path, record: BenchmarkRecord) -> None:
    """Each page's post-processed markdown as ``<image stem>.md`` (the official naming), to
    re-score with ``evalsuite score omnidocbench``; failed pages get no file."""
    folder.mkdir(parents=True, exist_ok=True)
    for sample in record.samples:
        if sample.error is None and sample.prediction is not None:
            target = folder / f"{sample.sample_id[:-4]}.md"
            markdown = scored_markdown(sample.prediction, sample.details.get("settings"))
            target.write_text(markdown, encoding="utf-8")


def official_summary(bench: OmniDocBench, predictions: Path, version: str = "1.0",
                     formula_cdm: FormulaCdm | None = None) -> Evaluation:
    """``version``'s official evaluation of the written predictions (the run-wide rules
    included; CDM through ``formula_cdm``)."""
    return evaluate_pages(bench.pages, predictions_in(predictions), bench.page_info(),
                          version=version, formula_cdm=formula_cdm)


def summary_name(version: str) -> str:
    """The official evaluation's file among the predictions: ``omnidocbench_summary.json``
    for v1.0 (as before versions), ``omnidocbench_summary_v1.5.json`` for another."""
    return rules_for(version).summary_file


def write_summary(path: Path, evaluation: Evaluation) -> None:
    """The official evaluation as JSON (the ``evalsuite score omnidocbench --json`` layout)."""
    text = json.dumps(evaluation.to_json(), ensure_ascii=False, indent=1)
    path.write_text(text, encoding="utf-8")


def _attribute(page: Mapping[str, Any], key: str) -> str:
    return str(page["page_info"]["page_attribute"].get(key, "unknown"))
