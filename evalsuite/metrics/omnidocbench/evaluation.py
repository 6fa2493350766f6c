"""A whole OmniDocBench end-to-end evaluation: ground-truth pages plus one markdown prediction
per page in, per-page figures and the official aggregates out, by the rules of version 1.0
(895837f), 1.5 (0f22218) or 1.6 (9dc1dec) (:mod:`.versions`; v1.6's page step and metric step
are :mod:`.v1_6.page` and :mod:`.v1_6.summary`).

- Prediction files are looked up as the official code does, first match wins: ``<stem>.md``,
  ``<stem less ".pdf">.mmd``, ``<stem less ".pdf">.md``, ``<image name>.md`` (stem: the image
  name less its last 4 characters).
- A page without a prediction is **skipped** by v1.0 and v1.5, as they skip it: it has no
  sample anywhere (its attributes still count as known pages); v1.6 scores it as an empty page.
  :attr:`Evaluation.missing` lists them.
- The table format (HTML or LaTeX predictions) is decided once for the run
  (:func:`.v1_0.page.run_samples`; always HTML from v1.5 on).
- CDM (the display-formula metric from v1.5 on) is computed only through the ``formula_cdm``
  hook of :func:`evaluate_pages`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from evalsuite.metrics.omnidocbench.common.formula_cdm import FormulaCdm, cdm_pair
from evalsuite.metrics.omnidocbench.common.match import MatchError
from evalsuite.metrics.omnidocbench.common.sample import ElementSample, values_by_page
from evalsuite.metrics.omnidocbench.common.summary import overall_table, sample_page, summarize
from evalsuite.metrics.omnidocbench.v1_0.page import PageMatches, match_page, run_samples
from evalsuite.metrics.omnidocbench.v1_6 import page as page_v16
from evalsuite.metrics.omnidocbench.v1_6 import summary as summary_v16
from evalsuite.metrics.omnidocbench.versions import RULES, Rules, rules_for
from evalsuite.textfiles import read_prediction

OFFICIAL_VERSION = {version: rules.label for version, rules in RULES.items()}
"""Per implemented version, the evaluation it reproduces (``OmniDocBench v1.5 end-to-end
evaluation (opendatalab/OmniDocBench 0f22218)``)."""

PAGE_FIELDS = {
    "text_block_edit_dist": "text_block_edit",
    "display_formula_edit_dist": "display_formula_edit",
    "table_teds": "table_TEDS",
    "table_teds_structure_only": "table_TEDS_structure_only",
    "table_edit_dist": "table_edit",
    "reading_order_edit_dist": "reading_order_edit",
}
"""The suite's per-page metric names and the per-page figure each one is."""


@dataclass(frozen=True)
class Evaluation:
    """``pages``: per scored page (by image stem) its figures, None where the page has no
    sample of that element; ``result``: the official metric result
    (:func:`.common.summary.summarize`); ``overall``: v1.0's "Overall" table (None from v1.5
    on, or when an element has no page figures); ``missing``: image names without a prediction
    (skipped before v1.6, empty pages in v1.6); ``table_format``: the run's table format;
    ``version``/``commit``: the official evaluation reproduced; ``leaderboard``: the
    leaderboard overall of v1.5 (:func:`leaderboard_overall`) or v1.6
    (:func:`leaderboard_overall_v16`), None in v1.0."""

    pages: dict[str, dict[str, float | None]]
    result: dict[str, dict[str, Any]]
    overall: dict[str, Any] | None
    missing: list[str]
    table_format: str
    version: str = "1.0"
    commit: str = RULES["1.0"].commit
    leaderboard: dict[str, Any] | None = None

    def headline(self) -> dict[str, Any]:
        """The run's figures under the suite's names: each element's ``all`` value, then v1.0's
        per-language overall edit distances or v1.5's formula CDM and leaderboard overall (None
        where the official value is missing)."""
        def value(element: str, metric: str, key: str) -> Any:
            found = self.result[element]["all"].get(metric, {}).get(key)
            return None if found == "NaN" else found

        figures = {
            "text_block_edit_dist": value("text_block", "Edit_dist", "ALL_page_avg"),
            "display_formula_edit_dist": value("display_formula", "Edit_dist", "ALL_page_avg"),
            "table_teds": value("table", "TEDS", "all"),
            "table_teds_structure_only": value("table", "TEDS_structure_only", "all"),
            "table_edit_dist": value("table", "Edit_dist", "ALL_page_avg"),
            "reading_order_edit_dist": value("reading_order", "Edit_dist", "ALL_page_avg"),
        }
        if not rules_for(self.version).leaderboard:
            for language in ("EN", "CH"):
                figures[f"overall_{language}"] = (self.overall or {}).get(f"overall_{language}")
        else:
            figures["display_formula_cdm"] = value("display_formula", "CDM", "all")
            figures["overall"] = (self.leaderboard or {}).get("overall")
        return figures

    def to_json(self) -> dict[str, Any]:
        """``{"version", "commit", "pages", "overall", "official", "missing_predictions",
        "table_format"}`` with NaN written as null (the official files write the non-JSON
        literal ``NaN``); ``overall``: v1.0: :meth:`headline` (with the per-language overall
        edit distances); v1.5: the leaderboard overall with its parts
        (:func:`leaderboard_overall`) and ``figures``: :meth:`headline` beside."""
        leaderboard = rules_for(self.version).leaderboard
        extra = {"figures": self.headline()} if leaderboard else {}
        return _without_nan({
            "version": self.version,
            "commit": self.commit,
            "pages": self.pages,
            **extra,
            "overall": self.leaderboard if leaderboard else self.headline(),
            "official": self.result,
            "missing_predictions": self.missing,
            "table_format": self.table_format,
        })


def _without_nan(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {key: _without_nan(value) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_without_nan(value) for value in tree]
    if isinstance(tree, float) and math.isnan(tree):
        return None
    return tree


def prediction_path(folder: Path, image: str) -> Path | None:
    """The prediction of page ``image`` in ``folder`` by the official naming, or None: the first
    name present, whatever it is (a folder or a dangling link there fails when it is read)."""
    stem = image[:-4]
    for name in (f"{stem}.md", f"{stem.replace('.pdf', '')}.mmd",
                 f"{stem.replace('.pdf', '')}.md", f"{image}.md"):
        if os.path.lexists(folder / name):
            return folder / name
    return None


def predictions_in(folder: Path) -> Callable[[str], str | None]:
    """The reader of ``folder``'s predictions for :func:`evaluate_pages`: a page's markdown by
    :func:`prediction_path`, None when it has none.

    Raises (when reading) DatasetFormatError naming the file: not a file, not UTF-8, or over
    :data:`~evalsuite.textfiles.MAX_PREDICTION_CHARS` (``textfiles.read_prediction``)."""

    def read(image: str) -> str | None:
        path = prediction_path(folder, image)
        return None if path is None else read_prediction(path)

    return read


def _with_cdm(samples: list[ElementSample], formula_cdm: FormulaCdm) -> list[ElementSample]:
    scores = formula_cdm([cdm_pair(str(sample.gt), str(sample.pred)) for sample in samples])
    if len(scores) != len(samples):
        raise ValueError(f"the CDM scorer gave {len(scores)} results for {len(samples)} pairs")
    return [replace(sample, cdm=score["F1_score"]) for sample, score in zip(samples, scores,
                                                                           strict=True)]


ROUNDED_PARTS = "v1.5 notebook: parts rounded to 3 places before the mean"
UNROUNDED_PARTS = "v1.6 eval_report: parts not rounded"
"""How each version's leaderboard overall treats its parts (its ``"rule"``)."""


def leaderboard_overall(result: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """v1.5's leaderboard overall (``tools/generate_result_tables.ipynb`` at 0f22218, cell 1):
    ``((1 - text) * 100 + cdm + teds) / 3`` with ``text`` = ``text_block.all.Edit_dist.
    ALL_page_avg``, ``cdm`` = ``display_formula.page.CDM.ALL`` x 100, ``teds`` =
    ``table.page.TEDS.ALL`` x 100, each rounded to 3 decimals first (``DataFrame.round(3)``).

    ``overall`` is None without CDM or without a text or table figure (the notebook counts a
    missing CDM or TEDS as 0); the parts are returned rounded, None where missing; ``rule``
    says so."""
    def found(element: str, part: str, metric: str, key: str) -> float | None:
        value = result[element][part].get(metric, {}).get(key)
        return None if not isinstance(value, float) or math.isnan(value) else value

    text = found("text_block", "all", "Edit_dist", "ALL_page_avg")
    cdm = found("display_formula", "page", "CDM", "ALL")
    teds = found("table", "page", "TEDS", "ALL")
    parts = {
        "text_block_edit_dist": None if text is None else float(np.round(text, 3)),
        "display_formula_cdm": None if cdm is None else float(np.round(cdm * 100, 3)),
        "table_teds": None if teds is None else float(np.round(teds * 100, 3)),
    }
    known = [value for value in parts.values() if value is not None]
    overall = None
    if len(known) == len(parts):
        rounded_text, rounded_cdm, rounded_teds = known
        overall = ((1 - rounded_text) * 100 + rounded_cdm + rounded_teds) / 3
    return {"overall": overall, **parts, "rule": ROUNDED_PARTS}


def leaderboard_overall_v16(run: summary_v16.RunResult) -> dict[str, Any]:
    """v1.6's leaderboard overall: eval_report's ``overall_notebook``
    (``((1 - text) * 100 + cdm * 100 + teds * 100) / 3`` on the same three figures as v1.5's,
    unrounded), with its parts as the notebook shows them (None where missing)."""
    summary = run.run_report("")["notebook_metric_summary"]
    metrics = summary["metrics"]
    return {
        "overall": summary["overall_notebook"],
        "text_block_edit_dist": metrics["text_block_Edit_dist"]["notebook_value"],
        "display_formula_cdm": metrics["display_formula_CDM"]["notebook_value"],
        "table_teds": metrics["table_TEDS"]["notebook_value"],
        "rule": UNROUNDED_PARTS,
    }


def score_page(
    gt_page: Mapping[str, Any],
    prediction: str,
    *,
    version: str = "1.0",
    formula_cdm: FormulaCdm | None = None,
) -> dict[str, float | None]:
    """One page scored alone by ``version``'s evaluation: :data:`PAGE_FIELDS`' figures plus
    ``display_formula_cdm``, the mean CDM F1 of the page's display formulas (None without
    ``formula_cdm`` or formulas).

    The page is its own run: the run-wide rules see this page only (the table format of v1.0;
    in v1.5 a formula matched to text joins the text samples unless the page has none)."""
    rules = rules_for(version)
    return CODE_BASES[rules.code_base].score_page(gt_page, prediction, rules, formula_cdm)


def _score_page_v10(
    gt_page: Mapping[str, Any], prediction: str, rules: Rules, formula_cdm: FormulaCdm | None
) -> dict[str, float | None]:
    page = match_page(gt_page, prediction, rules=rules)
    _, samples = run_samples([page], rules)
    if formula_cdm is not None and samples["display_formula"]:
        samples["display_formula"] = _with_cdm(samples["display_formula"], formula_cdm)
    values = values_by_page(samples, [page.image_name])[page.image_name]
    figures: dict[str, float | None] = {field: values[key] for field, key in PAGE_FIELDS.items()}
    cdm = [sample.cdm for sample in samples["display_formula"] if sample.cdm is not None]
    figures["display_formula_cdm"] = sum(cdm) / len(cdm) if cdm else None
    return figures


def _page_figures(
    samples: Mapping[str, Sequence[ElementSample]], image_names: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """:data:`PAGE_FIELDS`' figures of each page, by image stem."""
    return {name[:-4]: {field: page[key] for field, key in PAGE_FIELDS.items()}
            for name, page in values_by_page(samples, image_names).items()}


def evaluate_pages(
    pages: Sequence[Mapping[str, Any]],
    predictions: Callable[[str], str | None],
    page_info: Mapping[str, Mapping[str, Any]],
    *,
    version: str = "1.0",
    formula_cdm: FormulaCdm | None = None,
) -> Evaluation:
    """Score ``pages`` (ground-truth entries, in order) with ``predictions(image name)`` (None:
    no prediction: the page is skipped, in v1.6 scored as an empty page) by the official
    evaluation of ``version`` ("1.0", "1.5", "1.6"); ``page_info``: every page's attributes by
    image name (the whole ground truth, also when ``pages`` is a filtered part of it);
    ``formula_cdm``: the version's CDM scorer (:func:`.common.formula_cdm.cdm_hook`; None: no CDM
    figures; v1.0 has none).

    Raises:
        ValueError: an unknown version, or ``formula_cdm`` with version "1.0".
        MatchError: a page the official evaluation stops on."""
    rules = rules_for(version)
    if formula_cdm is not None and rules.cdm_version is None:
        raise ValueError(f"CDM is part of the evaluation from v1.5 on, not of v{rules.version}")
    return CODE_BASES[rules.code_base].evaluate(pages, predictions, page_info, rules, formula_cdm)


def _evaluate_v10(
    pages: Sequence[Mapping[str, Any]],
    predictions: Callable[[str], str | None],
    page_info: Mapping[str, Mapping[str, Any]],
    rules: Rules,
    formula_cdm: FormulaCdm | None,
) -> Evaluation:
    """:func:`evaluate_pages` by v1.0's code (v1.0, v1.5): a page without a prediction is
    skipped."""
    matched: list[PageMatches] = []
    missing = []
    for page in pages:
        name = Path(page["page_info"]["image_path"]).name
        text = predictions(name)
        if text is None:
            missing.append(name)
            continue
        try:
            matched.append(match_page(page, text, rules=rules))
        except MatchError as error:
            raise MatchError(f"page {name}: {error} (the official evaluation stops on this "
                             "page too)") from error
    table_format, samples = run_samples(matched, rules)
    if formula_cdm is not None:
        samples["display_formula"] = _with_cdm(samples["display_formula"], formula_cdm)
    figures = _page_figures(samples, [page.image_name for page in matched])
    result = summarize(page_info, samples, rules, with_cdm=formula_cdm is not None)
    if rules.leaderboard:
        return Evaluation(figures, result, None, missing, table_format, rules.version,
                          rules.commit, leaderboard_overall(result))
    return Evaluation(figures, result, overall_table(result), missing, table_format)


def _evaluate_v16(
    pages: Sequence[Mapping[str, Any]],
    predictions: Callable[[str], str | None],
    page_info: Mapping[str, Mapping[str, Any]],
    rules: Rules,
    formula_cdm: FormulaCdm | None,
) -> Evaluation:
    """:func:`evaluate_pages` by v1.6: every page scored, one without a prediction as empty."""
    outputs, missing, names = [], [], []
    for page in pages:
        name = Path(page["page_info"]["image_path"]).name
        text = predictions(name)
        if text is None:
            missing.append(name)
        names.append(name)
        outputs.append(page_v16.match_page(page, text or "", name))
    run = summary_v16.evaluate_run(outputs, page_info, summary_v16.gt_pages_by_element(pages),
                                   formula_cdm=formula_cdm,
                                   match_debug=summary_v16.match_debug_section(len(pages)))
    by_page = {element: [replace(sample, img_id=sample_page(sample.img_id, rules))
                         for sample in members]
               for element, members in run.samples.items()}
    return Evaluation(_page_figures(by_page, names), run.metric_result, None, missing, "html",
                      rules.version, rules.commit, leaderboard_overall_v16(run))


def _score_page_v16(
    gt_page: Mapping[str, Any], prediction: str, rules: Rules, formula_cdm: FormulaCdm | None
) -> dict[str, float | None]:
    name = Path(gt_page["page_info"]["image_path"]).name
    evaluation = _evaluate_v16([gt_page], lambda _: prediction,
                               {name: gt_page["page_info"].get("page_attribute", {})}, rules,
                               formula_cdm)
    figures: dict[str, float | None] = dict(evaluation.pages[name[:-4]])
    cdm = evaluation.result["display_formula"]["all"].get("CDM", {}).get("all")
    figures["display_formula_cdm"] = cdm if isinstance(cdm, float) else None
    return figures


@dataclass(frozen=True)
class CodeBase:
    """One official code base's whole-run and one-page evaluation (``Rules.code_base``)."""

    evaluate: Callable[[Sequence[Mapping[str, Any]], Callable[[str], str | None],
                        Mapping[str, Mapping[str, Any]], Rules, FormulaCdm | None], Evaluation]
    score_page: Callable[[Mapping[str, Any], str, Rules, FormulaCdm | None],
                         dict[str, float | None]]


CODE_BASES = {"1.0": CodeBase(_evaluate_v10, _score_page_v10),
              "1.6": CodeBase(_evaluate_v16, _score_page_v16)}
"""``Rules.code_base`` -> its :class:`CodeBase`."""
