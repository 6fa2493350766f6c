"""Surya's text-line benchmarks, in the Hugging Face dataset layouts its benchmark scripts read.

Detection rows (vikp/doclaynet_bench): ``image`` and ``bboxes`` (line boxes on a 0–1000 scale of
the image's width and height; ``labels``, ``words`` and ``split`` are not read). Recognition rows
(vikp/rec_bench): ``image``, ``bboxes`` (line boxes in pixels), ``text`` (one string per box) and
``language``. Both load from Parquet files or a ``save_to_disk`` folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from evalsuite.datasets import Schema, load_table
from evalsuite.errors import DatasetFormatError, ImageInputError
from evalsuite.images import open_image
from evalsuite.metrics.boxes import Box

DETECTION_SCHEMA = Schema("Surya detection benchmark (vikp/doclaynet_bench)", ("image", "bboxes"))
RECOGNITION_SCHEMA = Schema(
    "Surya recognition benchmark (vikp/rec_bench)", ("image", "bboxes", "text", "language")
)

DETECTION_SCALE = 1000


@dataclass(frozen=True)
class DetectionPage:
    """A page and its line boxes; ``error`` (and no image, no boxes) when its image cannot be
    read: its sample then fails with that message, the other pages run."""

    page_id: str
    image: Image.Image | None
    boxes: list[Box]  # pixels
    error: str | None = None


@dataclass(frozen=True)
class RecognitionPage:
    """A page, its line boxes and texts; ``error`` (and no image) when its image cannot be
    read: its line samples then fail with that message, the other pages run."""

    page_id: str
    image: Image.Image | None
    boxes: list[Box]  # pixels
    texts: list[str]
    language: str
    error: str | None = None


def _load_rows(path: Path, benchmark: str, schema: Schema) -> Any:
    import datasets

    # Undecoded: the images are opened by _page_image, with the pixel limit and clear errors.
    return load_table(path, benchmark, schema).cast_column("image", datasets.Image(decode=False))


def _page_image(
    row: Mapping[str, Any], path: Path, index: int
) -> tuple[Image.Image | None, str | None]:
    """Row ``index``'s image in RGB, or None and the ImageInputError's message naming the row."""
    stored = row["image"]
    source = stored["bytes"] if stored["bytes"] is not None else stored["path"]
    try:
        with open_image(source, what=f"{path} row {index} image") as image:
            return image.convert("RGB"), None
    except ImageInputError as exc:
        return None, str(exc)


def scale_box(box: Any, width: int, height: int) -> Box:
    """A 0–1000 box scaled to pixels: (x1·w/1000, y1·h/1000, x2·w/1000, y2·h/1000)."""
    x1, y1, x2, y2 = (float(v) for v in box)
    return (
        x1 * width / DETECTION_SCALE,
        y1 * height / DETECTION_SCALE,
        x2 * width / DETECTION_SCALE,
        y2 * height / DETECTION_SCALE,
    )


def load_detection(path: Path, limit: int | None = None) -> list[DetectionPage]:
    rows = _load_rows(path, "surya_detection", DETECTION_SCHEMA)
    pages = []
    for index, row in enumerate(rows):
        if limit is not None and index >= limit:
            break
        image, error = _page_image(row, path, index)
        if image is None:
            pages.append(DetectionPage(str(row.get("id", index)), None, [], error))
            continue
        boxes = [scale_box(b, image.width, image.height) for b in row["bboxes"]]
        pages.append(DetectionPage(str(row.get("id", index)), image, boxes))
    return pages


def load_recognition(path: Path, limit: int | None = None) -> list[RecognitionPage]:
    rows = _load_rows(path, "surya_recognition", RECOGNITION_SCHEMA)
    pages = []
    for index, row in enumerate(rows):
        if limit is not None and index >= limit:
            break
        if len(row["bboxes"]) != len(row["text"]):
            raise DatasetFormatError(
                f"{path} row {index}: {len(row['bboxes'])} bboxes but {len(row['text'])} texts"
            )
        language = row["language"]
        if isinstance(language, list):
            language = language[0] if language else "unknown"
        image, error = _page_image(row, path, index)
        pages.append(
            RecognitionPage(
                str(row.get("id", index)),
                image,
                [tuple(float(v) for v in b) for b in row["bboxes"]],
                list(row["text"]),
                str(language),
                error,
            )
        )
    return pages
