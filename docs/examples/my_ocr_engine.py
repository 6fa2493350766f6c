"""An example engine of your own: the tesseract command line as a page-to-text OCR engine.

Run the suite on it with ``--engine my_ocr_engine:CommandLineOCR`` (this folder on PYTHONPATH).
"""

import subprocess

from PIL import Image

from evalsuite.engines.base import EngineBase, InferenceRequest, InferenceResult


class CommandLineOCR(EngineBase):
    name = "cli-ocr"
    kind = "ocr"  # page in, text out: one mode ("native"), no prompt
    default_label = "cli-ocr"  # the key of its goldens and history series

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        if isinstance(request.image, Image.Image):  # some benchmarks hand over decoded pages
            raise TypeError("this engine reads page files, not decoded images")
        done = subprocess.run(["tesseract", str(request.image), "-", "--psm", "6"],
                              capture_output=True, text=True, check=True)
        return InferenceResult(text=done.stdout.strip())
