"""A whole OmniDocBench end-to-end evaluation: ground-truth pages plus one markdown prediction
per page in, per-page figures and the official aggregates out (v1.0 rules throughout).

- Prediction files are looked up as the official code does, first match wins: ``<stem>.md``,
  ``<stem less ".pdf">.mmd``, ``<stem less ".pdf">.md``, ``<image name>.md`` (stem: the image
  name less its last 4 characters).
- A page without a prediction is **skipped**, as v1.0 skips it: it has no sample anywhere (its
  attributes still count as known pages). :attr:`Evaluation.missing` lists them.
- The table format (HTML or LaTeX predictions) is decided once for the run
  (:func:`.page.choose_table_format`), as v1.0 does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.metrics.omnidocbench.match import MatchError
from evalsuite.metrics.omnidocbench.page import (
    PageMatches,
    choose_table_format,
    match_page,
    page_values,
)
from evalsuite.metrics.omnidocbench.summary import ELEMENTS, overall_table, summarize

OFFICIAL_VERSION = "OmniDocBench v1.0 end-to-end evaluation (opendatalab/OmniDocBench 895837f)"
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
    sample of that element; ``result``: the official metric result (:func:`.summary.summarize`);
    ``overall``: the official "Overall" table or None; ``missing``: image names without a
    prediction; ``table_format``: the run's table format."""

    pages: dict[str, dict[str, float | None]]
    result: dict[str, dict[str, Any]]
    overall: dict[str, Any] | None
    missing: list[str]
    table_format: str

    def headline(self) -> dict[str, Any]:
        """The run's figures under the suite's names: each element's ``all`` value and the
        per-language overall edit distances (None where the official value is missing)."""
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
        for language in ("EN", "CH"):
            figures[f"overall_{language}"] = (self.overall or {}).get(f"overall_{language}")
        return figures

    def to_json(self) -> dict[str, Any]:
        """``{"pages", "overall", "official", "missing_predictions", "table_format"}`` with
        NaN written as null (the official files write the non-JSON literal ``NaN``)."""
        return _without_nan({
            "pages": self.pages,
            "overall": self.headline(),
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
    """The prediction file of page ``image`` in ``folder`` by the official naming, or None."""
    stem = image[:-4]
    for name in (f"{stem}.md", f"{stem.replace('.pdf', '')}.mmd",
                 f"{stem.replace('.pdf', '')}.md", f"{image}.md"):
        if (folder / name).is_file():
            return folder / name
    return None


def predictions_in(folder: Path) -> Callable[[str], str | None]:
    """The reader of ``folder``'s predictions for :func:`evaluate_pages`: a page's markdown by
    :func:`prediction_path`, None when it has none."""

    def read(image: str) -> str | None:
        path = prediction_path(folder, image)
        return None if path is None else path.read_text(encoding="utf-8")

    return read


def evaluate_pages(
    pages: Sequence[Mapping[str, Any]],
    predictions: Callable[[str], str | None],
    page_info: Mapping[str, Mapping[str, Any]],
) -> Evaluation:
    """Score ``pages`` (ground-truth entries, in order) with ``predictions(image name)`` (None:
    no prediction, the page is skipped); ``page_info``: every page's attributes by image name
    (the whole ground truth, also when ``pages`` is a filtered part of it)."""
    matched: list[PageMatches] = []
    missing = []
    for page in pages:
        name = Path(page["page_info"]["image_path"]).name
        text = predictions(name)
        if text is None:
            missing.append(name)
            continue
        try:
            matched.append(match_page(page, text))
        except MatchError as error:
            raise MatchError(f"page {name}: {error} (the official evaluation stops on this "
                             "page too)") from error
    table_format = choose_table_format(matched)
    samples: dict[str, list[Any]] = {element: [] for element in ELEMENTS}
    figures = {}
    for page in matched:
        for element in ELEMENTS:
            samples[element] += (page.table_samples(table_format) if element == "table"
                                 else page.elements[element])
        values = page_values(page, table_format)
        figures[page.image_name[:-4]] = {name: values[key] for name, key in PAGE_FIELDS.items()}
    result = summarize(page_info, samples)
    return Evaluation(figures, result, overall_table(result), missing, table_format)
