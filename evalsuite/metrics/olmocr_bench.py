"""olmOCR-bench scores of a folder of markdown pages, as olmocr 0.4.27's ``benchmark.py`` counts.

Layout (the published ``bench_data``): ``*.jsonl`` test files (a category each, named by the
file), ``pdfs/**/*.pdf``; predictions ``<pdf path less .pdf>_pg<page>_repeat<n>.md`` under the
prediction folder (the same sub-folders as the PDFs). Each PDF without a ``baseline`` test gets
one (``<pdf>_baseline``, page 1, category ``baseline``).

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
import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pypdfium2

from evalsuite.metrics.olmocr_tests import PageTest, TestDefinitionError, parse_test

BASELINE_CATEGORY = "baseline"
MISSING_EXPLANATION = "Missing MD files"


class BenchLayoutError(ValueError):
    """The tests folder or the predictions folder is not laid out as olmOCR-bench's."""


@dataclass(frozen=True)
class BenchTest:
    """A test, the category (JSONL file name, or ``baseline``) it counts in, and its line as
    read (``parse_test(line)`` gives the test again)."""

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


def load_bench(tests_dir: str | Path, *, force: bool = False) -> tuple[list[BenchTest], list[str]]:
    """The tests of every ``*.jsonl`` in ``tests_dir`` (file-name order, lines in order) plus
    the automatic baselines, and the PDFs (paths under ``pdfs/``, sorted).

    Raises BenchLayoutError naming what is wrong: no ``pdfs`` folder or PDF, no JSONL, a line
    that is not a valid test (with file and line), a duplicate id, or (unless ``force``) a PDF
    page without any test, which the reference also refuses.
    """
    root = Path(tests_dir)
    pdf_root = root / "pdfs"
    if not pdf_root.is_dir():
        raise BenchLayoutError(f"{root} has no pdfs/ folder (the bench_data layout)")
    pdfs = sorted(path.relative_to(pdf_root).as_posix() for path in pdf_root.rglob("*.pdf"))
    if not pdfs:
        raise BenchLayoutError(f"no PDF under {pdf_root}")
    files = sorted(root.glob("*.jsonl"))
    if not files:
        raise BenchLayoutError(f"no .jsonl test file in {root}")
    tests: list[BenchTest] = []
    seen: set[str] = set()
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                fields = json.loads(line)
                test = parse_test(fields)
            except (json.JSONDecodeError, TestDefinitionError) as error:
                raise BenchLayoutError(f"{path}:{number}: {error}") from error
            if test.id in seen:
                raise BenchLayoutError(f"{path}:{number}: duplicate test id {test.id!r}")
            seen.add(test.id)
            tests.append(BenchTest(test, path.name, fields))
    for pdf in pdfs:
        if not any(item.test.type == "baseline" and item.test.pdf == pdf for item in tests):
            fields = {"pdf": pdf, "page": 1, "id": f"{pdf}_baseline", "type": "baseline"}
            tests.append(BenchTest(parse_test(fields), BASELINE_CATEGORY, fields))
    if not force:
        tested = {(item.test.pdf, item.test.page) for item in tests}
        untested = [f"{pdf} page {page}" for pdf in pdfs
                    for page in range(1, _page_count(pdf_root / pdf) + 1)
                    if (pdf, page) not in tested]
        if untested:
            raise BenchLayoutError(
                f"no test for {', '.join(untested[:5])}"
                f"{' …' if len(untested) > 5 else ''} (force to score anyway)"
            )
    return tests, pdfs


def _page_count(path: Path) -> int:
    document = pypdfium2.PdfDocument(str(path))
    try:
        return len(document)
    finally:
        document.close()


def prediction_files(
    pred_dir: str | Path, pdfs: Sequence[str]
) -> dict[tuple[str, int], list[Path]]:
    """(pdf, page) → its repeat files ``<pdf less .pdf>_pg<page>_repeat<n>.md``, sorted."""
    root = Path(pred_dir)
    if not root.is_dir():
        raise BenchLayoutError(f"prediction folder {root} does not exist")
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
                errors.append(f"missing prediction for {label} (expected "
                              f"{test.pdf.removesuffix('.pdf')}_pg{test.page}_repeat*.md)")
            outcomes.append(TestOutcome(test.id, item.category, test.type, test.pdf, test.page,
                                        False, 0.0, MISSING_EXPLANATION, 0))
            continue
        passes, explanations = 0, []
        for path in repeats:
            if path not in pages:
                pages[path] = path.read_text(encoding="utf-8")
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
