"""olmOCR-bench data in its published layout (``bench_data``: ``*.jsonl`` tests, a category
each, named by the file; ``pdfs/**/*.pdf``), and its PDF pages as images.

Each PDF without a ``baseline`` test gets one (``<pdf>_baseline``, page 1, category
``baseline``), as olmocr's ``benchmark.py`` adds it. The benchmark does not fix a resolution:
each model runner of olmocr renders pages itself; the default of olmocr's
``render_pdf_to_base64png`` is 2048 px on the longest side (``olmocr/data/renderpdf.py``), which
is used here (with PDFium rather than poppler).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from evalsuite.datasets.pages import pdf_page_count, render_pdf_page
from evalsuite.errors import DatasetFormatError
from evalsuite.metrics.olmocr_bench import BASELINE_CATEGORY, BenchTest
from evalsuite.metrics.olmocr_tests import TestDefinitionError, parse_test
from evalsuite.textfiles import found, read_text

TARGET_LONGEST_SIDE_PX = 2048


@dataclass(frozen=True)
class OlmocrBench:
    """The tests (with their categories) and PDFs (paths under ``pdfs/``) of a ``bench_data``
    folder."""

    root: Path
    tests: list[BenchTest]
    pdfs: list[str]

    def page_image(
        self, pdf: str, page: int, longest_side: int = TARGET_LONGEST_SIDE_PX
    ) -> Image.Image:
        """Page ``page`` (1-based) of ``pdf`` rendered with its longest side ``longest_side`` px."""
        return render_pdf_page(self.root / "pdfs" / pdf, page - 1, longest_side=longest_side)


def load_olmocr_bench(folder: Path, *, force: bool = False) -> OlmocrBench:
    """The tests of every ``*.jsonl`` in ``folder`` (file-name order, lines in order) plus the
    automatic baselines, and the PDFs (sorted).

    Raises DatasetFormatError naming what is wrong: no ``pdfs`` folder or PDF, no JSONL, a line
    that is not a valid test (with file and line), a duplicate id, or (unless ``force``) a PDF
    page without any test, which the official benchmark also refuses.
    """
    root = Path(folder)
    pdf_root = root / "pdfs"
    if not pdf_root.is_dir():
        raise DatasetFormatError(f"{root} has no pdfs/ folder (the bench_data layout)")
    pdfs = sorted(path.relative_to(pdf_root).as_posix() for path in pdf_root.rglob("*.pdf"))
    if not pdfs:
        raise DatasetFormatError(f"no PDF under {pdf_root}")
    files = sorted(root.glob("*.jsonl"))
    if not files:
        raise DatasetFormatError(f"no .jsonl test file in {root}")
    tests: list[BenchTest] = []
    seen: set[str] = set()
    for path in files:
        for number, line in enumerate(read_text(path, "tests file").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                fields = json.loads(line)
                if not isinstance(fields, dict):
                    raise TestDefinitionError(f"expected a JSON object (one test), found "
                                              f"{found(fields)}")
                test = parse_test(fields)
            except (json.JSONDecodeError, TestDefinitionError) as error:
                raise DatasetFormatError(f"{path}:{number}: {error}") from error
            if test.id in seen:
                raise DatasetFormatError(f"{path}:{number}: duplicate test id {test.id!r}")
            seen.add(test.id)
            tests.append(BenchTest(test, path.name, fields))
    for pdf in pdfs:
        if not any(item.test.type == "baseline" and item.test.pdf == pdf for item in tests):
            fields = {"pdf": pdf, "page": 1, "id": f"{pdf}_baseline", "type": "baseline"}
            tests.append(BenchTest(parse_test(fields), BASELINE_CATEGORY, fields))
    if not force:
        tested = {(item.test.pdf, item.test.page) for item in tests}
        untested = [f"{pdf} page {page}" for pdf in pdfs
                    for page in range(1, pdf_page_count(pdf_root / pdf) + 1)
                    if (pdf, page) not in tested]
        if untested:
            raise DatasetFormatError(
                f"no test for {', '.join(untested[:5])}"
                f"{' …' if len(untested) > 5 else ''} (force to score anyway)"
            )
    return OlmocrBench(root, tests, pdfs)
