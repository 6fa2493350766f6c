"""olmOCR-bench scores of a folder of markdown pages, as olmocr 0.4.27's ``benchmark.py`` counts.

The tests come from :func:`evalsuite.datasets.olmocr_bench.load_olmocr_bench` (a category per
JSONL file, plus an automatic ``baseline`` test per PDF); predictions are
``<pdf path less .pdf>_pg<page>_repeat<n>.md`` under the prediction folder
(:func:`prediction_file_name`).

- A test passes when more than half of its page's repeats pass (1 of 2 fails); its explanation
  is the first failing repeat's, else "All repeats passed".
- Category score = passed tests / tests; ``overall`` = unweighted mean over categories;
  ``per_type`` = mean over the tests of a type of their fraction of passing repeats.
- Confidence interval: ``n_bootstrap`` resamples, each the mean over categories of a resample
  with replacement within the category, then the ``(1 - level) / 2`` percentiles (numpy's
  linear interpolation). The reference draws from numpy's unseeded global generator in thread
  completion order, so its interval changes from run to run; here categories are in file-name
  order (``baseline`` last), tests in file order, and draws come from
  ``numpy.random.RandomState(seed)``: the same numbers the reference function gives for the
  same scores, splits and seed.
- A page with no prediction file: its tests fail with "Missing MD files", and, as in the
  reference (which then prints "FAILED (errors)" instead of a score), the result carries an
  error; so does a test that raised (its explanation is the exception's message).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalsuite.metrics.olmocr_tests import PageTest
from evalsuite.textfiles import read_prediction

BASELINE_CATEGORY = "baseline"
MISSING_EXPLANATION = "Missing MD files"


@dataclass(frozen=True)
class BenchTest:
    """A test, the category (JSONL file name, or ``baseline``) it counts in, and its line as
    read (:func:`evalsuite.metrics.olmocr_tests.parse_test` of it gives the test again)."""

    test: PageTest
    category: str
    line: Mapping[str, Any]


@dataclass(frozen=True)
class TestOutcome:
    """A test's result on a candidate: majority verdict, fraction of passing repeats, and the
    official explanation."""

    __test__ = False

    id: str
    category: str
    type: str
    pdf: str
    page: int
    passed: bool
    average: float
    explanation: str
    repeats: int


@dataclass
class BenchScores:
    """Per-test outcomes and the aggregates; ``errors`` non-empty means the reference would
    report the candidate as "FAILED (errors)"."""

    outcomes: list[TestOutcome]
    per_category: dict[str, float]
    per_type: dict[str, float]
    overall: float
    ci: tuple[float, float]
    missing_pages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def category_counts(self) -> dict[str, tuple[int, int]]:
        """Per category (in :attr:`per_category`'s order): tests passed, tests."""
        groups = _categories(self.outcomes)
        return {name: (sum(o.passed for o in groups[name]), len(groups[name]))
                for name in self.per_category}

    def to_json(self) -> dict[str, object]:
        return {
            "tests": {o.id: {"passed": o.passed, "explanation": o.explanation}
                      for o in self.outcomes},
            "per_category": self.per_category,
            "per_type": self.per_type,
            "overall": self.overall,
            "ci": list(self.ci),
            "missing_pages": self.missing_pages,
            "errors": self.errors,
            "status": "FAILED (errors)" if self.errors else "ok",
        }


def prediction_file_name(pdf: str, page: int | str, repeat: int | str = 1) -> str:
    """olmOCR-bench's candidate naming: ``<pdf path less .pdf>_pg<page>_repeat<repeat>.md``."""
    return f"{pdf.removesuffix('.pdf')}_pg{page}_repeat{repeat}.md"


def prediction_files(
    pred_dir: str | Path, pdfs: Sequence[str]
) -> dict[tuple[str, int], list[Path]]:
    """(pdf, page) → its repeat files (:func:`prediction_file_name`), sorted.

    FileNotFoundError when ``pred_dir`` is not a folder."""
    root = Path(pred_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"prediction folder {root} does not exist")
    found: dict[tuple[str, int], list[Path]] = defaultdict(list)
    by_stem = {pdf.removesuffix(".pdf"): pdf for pdf in pdfs}
    pattern = re.compile(r"^(?P<stem>.+)_pg(?P<page>\d+)_repeat\d+\.md$")
    for path in sorted(root.rglob("*.md")):
        match = pattern.match(path.relative_to(root).as_posix())
        if match and match["stem"] in by_stem:
            found[(by_stem[match["stem"]], int(match["page"]))].append(path)
    return found


def score_predictions(
    tests: Sequence[BenchTest],
    pdfs: Sequence[str],
    pred_dir: str | Path,
    *,
    n_bootstrap: int = 1000,
    ci_level: float = 0.95,
    seed: int = 0,
) -> BenchScores:
    """Run every test on its page's repeats and aggregate as the reference does."""
    files = prediction_files(pred_dir, pdfs)
    outcomes, errors, missing = [], [], []
    pages: dict[Path, str] = {}
    for item in tests:
        test = item.test
        repeats = files.get((test.pdf, test.page), [])
        if not repeats:
            label = f"{test.pdf} page {test.page}"
            if label not in missing:
                missing.append(label)
                expected = prediction_file_name(test.pdf, test.page, "*")
                errors.append(f"missing prediction for {label} (expected {expected})")
            outcomes.append(TestOutcome(test.id, item.category, test.type, test.pdf, test.page,
                                        False, 0.0, MISSING_EXPLANATION, 0))
            continue
        passes, explanations = 0, []
        for path in repeats:
            if path not in pages:
                pages[path] = read_prediction(path)
            try:
                verdict = test.run(pages[path])
            except Exception as error:  # the reference counts any exception as a failed repeat
                errors.append(f"test {test.id} raised on {path.name}: {error}")
                explanations.append(str(error))
                continue
            if verdict.passed:
                passes += 1
            else:
                explanations.append(verdict.explanation)
        average = passes / len(repeats)
        outcomes.append(TestOutcome(
            test.id, item.category, test.type, test.pdf, test.page, average > 0.5, average,
            explanations[0] if explanations else "All repeats passed", len(repeats),
        ))
    categories = _categories(outcomes)
    per_category = {name: sum(o.passed for o in group) / len(group)
                    for name, group in categories.items()}
    by_type: dict[str, list[float]] = defaultdict(list)
    for outcome in outcomes:
        by_type[outcome.type].append(outcome.average)
    per_type = {name: sum(values) / len(values) for name, values in sorted(by_type.items())}
    overall = sum(per_category.values()) / len(per_category) if per_category else 0.0
    scores = [float(o.passed) for group in categories.values() for o in group]
    splits = [len(group) for group in categories.values()]
    ci = bootstrap_ci(scores, splits, n_bootstrap=n_bootstrap, ci_level=ci_level,
                      rng=np.random.RandomState(seed))
    return BenchScores(outcomes, per_category, per_type, overall, ci, missing, errors)


def _categories(outcomes: Sequence[TestOutcome]) -> dict[str, list[TestOutcome]]:
    """Outcomes grouped by category, categories in name order with ``baseline`` last."""
    groups: dict[str, list[TestOutcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[outcome.category].append(outcome)
    order = sorted(groups, key=lambda name: (name == BASELINE_CATEGORY, name))
    return {name: groups[name] for name in order}


def bootstrap_ci(
    scores: Sequence[float],
    splits: Sequence[int] | None,
    *,
    n_bootstrap: int,
    ci_level: float,
    rng: np.random.RandomState,
) -> tuple[float, float]:
    """olmOCR-bench's bootstrap interval of the mean of category means (of the overall mean
    when ``splits`` is None): resample each category (consecutive ``splits`` of ``scores``)
    with replacement ``n_bootstrap`` times, take the ``(1 - ci_level) / 2`` and
    ``(1 + ci_level) / 2`` percentiles. (0, 0) for no scores. Draws in the reference's order."""
    if not scores:
        return (0.0, 0.0)
    values = np.array(scores)
    if splits is not None and sum(splits) != len(values):
        raise ValueError(f"splits sum to {sum(splits)}, not the {len(values)} scores")
    groups = [values]
    if splits is not None:
        bounds = np.cumsum([0, *splits])
        groups = [values[start:end] for start, end in itertools.pairwise(bounds)]
    means = []
    for _ in range(n_bootstrap):
        group_means = [np.mean(rng.choice(group, size=len(group), replace=True))
                       for group in groups if len(group) > 0]
        if group_means:
            means.append(np.mean(group_means) if splits is not None else group_means[0])
    alpha = (1 - ci_level) / 2
    lower, upper = np.percentile(means, alpha * 100), np.percentile(means, (1 - alpha) * 100)
    return (float(lower), float(upper))
