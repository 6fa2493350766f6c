"""``tesseract``: the Tesseract OCR binary as a CPU baseline (page text plus line boxes).

One ``tesseract IMAGE OUT -l LANG --oem OEM --psm PSM txt tsv`` run per page writes both the
text (``OUT.txt``) and the word boxes (``OUT.tsv``); words are grouped by
(page, block, paragraph, line) into line boxes for the detection benchmarks.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from evalsuite.engines.base import EngineBase, InferenceRequest, InferenceResult, register_engine
from evalsuite.errors import EngineUnavailableError
from evalsuite.images import open_image

INSTALL_HINT = (
    "install Tesseract: `apt-get install tesseract-ocr` on Debian/Ubuntu (`make setup` does it "
    "when run as root), `brew install tesseract` on macOS, or pass binary=PATH"
)
_WORD_LEVEL = "5"
_TSV_COLUMNS = 12


@dataclass(frozen=True)
class OcrLine:
    """One recognised text line: its words joined by spaces and its box ``(x1, y1, x2, y2)``."""

    text: str
    box: tuple[int, int, int, int]


def parse_tsv_lines(tsv: str) -> list[OcrLine]:
    """Line boxes from Tesseract's TSV output, in reading order.

    Word rows (level 5) with non-blank text are grouped by (page, block, paragraph, line); a
    line's box is the union of its word boxes, ``x2 = left + width`` and ``y2 = top + height``
    (pixels, exclusive end as Tesseract reports widths).
    """
    if not isinstance(tsv, str):
        raise TypeError(f"tsv must be str, got {type(tsv).__name__}")
    words: dict[tuple[str, str, str, str], list[tuple[str, int, int, int, int]]] = {}
    for row_number, row in enumerate(tsv.splitlines()[1:], start=2):
        fields = row.split("\t")
        if len(fields) < _TSV_COLUMNS - 1:
            raise ValueError(f"tsv row {row_number} has {len(fields)} columns: {row!r}")
        if fields[0] != _WORD_LEVEL or len(fields) < _TSV_COLUMNS or not fields[11].strip():
            continue
        left, top, width, height = (int(value) for value in fields[6:10])
        line_id = (fields[1], fields[2], fields[3], fields[4])
        words.setdefault(line_id, []).append(
            (fields[11].strip(), left, top, left + width, top + height)
        )
    return [
        OcrLine(
            " ".join(word[0] for word in line),
            (
                min(word[1] for word in line),
                min(word[2] for word in line),
                max(word[3] for word in line),
                max(word[4] for word in line),
            ),
        )
        for line in words.values()
    ]


@register_engine("tesseract")
class TesseractEngine(EngineBase):
    """Tesseract through its command-line binary; the prompt and mode are ignored.

    ``lang`` is a Tesseract language spec (``eng``, ``eng+deu``); ``psm`` the page segmentation
    mode (3 = fully automatic, Tesseract's default); ``oem`` the engine mode (3 = default);
    ``timeout_s`` bounds one page.
    """

    name = "tesseract"
    kind = "ocr"
    supported_modes: tuple[str, ...] = ("native",)  # an OCR-only engine has one way to read a page
    needs_image = True
    model_family = "none"  # no vision tokens

    def __init__(
        self,
        *,
        lang: str = "eng",
        psm: int = 3,
        oem: int = 3,
        binary: str = "tesseract",
        timeout_s: float = 300.0,
    ) -> None:
        if not isinstance(lang, str) or not lang:
            raise ValueError(f"lang must be a non-empty Tesseract language spec, got {lang!r}")
        _require_int_in(psm, "psm", 0, 13)
        _require_int_in(oem, "oem", 0, 3)
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        resolved = shutil.which(binary)
        if resolved is None:
            raise EngineUnavailableError(f"tesseract binary {binary!r} not found; {INSTALL_HINT}")
        self.binary = resolved
        self.version = _tesseract_version(resolved)
        missing = sorted(set(lang.split("+")) - _installed_languages(resolved))
        if missing:
            raise EngineUnavailableError(
                f"tesseract has no language data for {', '.join(missing)}; install e.g. "
                f"`apt-get install tesseract-ocr-{missing[0]}`"
            )
        self.lang, self.psm, self.oem, self.timeout_s = lang, psm, oem, timeout_s

    @property
    def settings(self) -> dict[str, object]:
        return {
            "binary": self.binary,
            "version": self.version,
            "lang": self.lang,
            "psm": self.psm,
            "oem": self.oem,
        }

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        with tempfile.TemporaryDirectory(prefix="evalsuite-tesseract-") as workdir:
            image_path = _image_file(request.image, Path(workdir))
            out_base = Path(workdir) / "out"
            command = [
                self.binary, str(image_path), str(out_base),
                "-l", self.lang, "--oem", str(self.oem), "--psm", str(self.psm),
                "-c", "page_separator=", "txt", "tsv",
            ]  # fmt: skip
            completed = subprocess.run(
                command, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
            if completed.returncode != 0:
                detail = completed.stderr.strip().splitlines()
                raise RuntimeError(
                    f"tesseract exited with {completed.returncode}: "
                    f"{detail[-1] if detail else 'no message'}"
                )
            text = out_base.with_suffix(".txt").read_text(encoding="utf-8")
            lines = parse_tsv_lines(out_base.with_suffix(".tsv").read_text(encoding="utf-8"))
        return InferenceResult(
            text=text.strip(),
            vision_tokens=None,
            output_tokens=None,
            settings=self.settings,
            boxes=[line.box for line in lines],
        )


def _image_file(image: object, workdir: Path) -> Path:
    """A file Tesseract can read: the given path (once :func:`open_image` has decoded it), or a
    PIL image saved as PNG in ``workdir``."""
    if image is None:
        raise ValueError("request.image is None; tesseract needs a page image")
    if isinstance(image, Image.Image):
        path = workdir / "page.png"
        image.save(path)
        return path
    if isinstance(image, (str, Path)):
        open_image(image).close()  # a bad file fails the sample with a clear reason
        return Path(image)
    raise TypeError(f"request.image must be a path or a PIL image, got {type(image).__name__}")


def _tesseract_version(binary: str) -> str:
    completed = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    first = (completed.stdout or completed.stderr).strip().splitlines()
    if completed.returncode != 0 or not first:
        raise EngineUnavailableError(f"{binary} --version failed; {INSTALL_HINT}")
    return first[0].removeprefix("tesseract").strip()


def _installed_languages(binary: str) -> set[str]:
    completed = subprocess.run(
        [binary, "--list-langs"], capture_output=True, text=True, timeout=60, check=False
    )
    # The first line names the tessdata folder; each further line is one language.
    return {line.strip() for line in completed.stdout.splitlines()[1:] if line.strip()}


def _require_int_in(value: object, name: str, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
