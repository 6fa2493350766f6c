"""olmOCR-bench data in its published layout (``bench_data``: ``*.jsonl`` tests per category,
``pdfs/<category>/*.pdf``), and its PDF pages as images.

The benchmark does not fix a resolution: each model runner of olmocr renders pages itself;
the default of olmocr's ``render_pdf_to_base64png`` is 2048 px on the longest side
(``olmocr/data/renderpdf.py``), which is used here (with PDFium rather than poppler).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pypdfium2
from PIL import Image

from evalsuite.datasets.pages import POINTS_PER_INCH, render_pdf_page
from evalsuite.errors import DatasetFormatError
from evalsuite.metrics.olmocr_bench import BenchLayoutError, BenchTest, load_bench

TARGET_LONGEST_SIDE_PX = 2048


@dataclass(frozen=True)
class OlmocrBench:
    """The tests (with their categories) and PDFs of one ``bench_data`` folder."""

    root: Path
    tests: list[BenchTest]
    pdfs: list[str]

    def page_image(
        self, pdf: str, page: int, longest_side: int = TARGET_LONGEST_SIDE_PX
    ) -> Image.Image:
        """Page ``page`` (1-based) of ``pdf`` rendered with its longest side ``longest_side`` px."""
        path = self.root / "pdfs" / pdf
        document = pypdfium2.PdfDocument(path)
        try:
            width, height = document[page - 1].get_size()
        finally:
            document.close()
        return render_pdf_page(path, page - 1, longest_side * POINTS_PER_INCH / max(width, height))


def load_olmocr_bench(folder: Path) -> OlmocrBench:
    """Read a ``bench_data`` folder; raises DatasetFormatError naming what is wrong."""
    try:
        tests, pdfs = load_bench(folder)
    except BenchLayoutError as error:
        raise DatasetFormatError(f"olmocr_bench: {error}") from error
    return OlmocrBench(folder, tests, pdfs)
