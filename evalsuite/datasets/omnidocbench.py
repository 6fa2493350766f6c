"""OmniDocBench data in its published layout: ``OmniDocBench.json`` (a list of pages, each
``{"layout_dets": [...], "page_info": {...}, "extra": {"relation": [...]}}``) with the page
images beside it in ``images/`` (named by ``page_info.image_path``'s file name).

The loader checks the structure the end-to-end evaluation reads and names the page and field
that is wrong. The published versions differ in page count (v1.0: 981 pages, v1.5: 1355, v1.6:
1651), which :attr:`OmniDocBench.version` reports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.datasets import read_json
from evalsuite.errors import DatasetFormatError
from evalsuite.metrics.omnidocbench.versions import DATASET_VERSIONS
from evalsuite.textfiles import expected

GROUND_TRUTH_FILE = "OmniDocBench.json"
IMAGES_FOLDER = "images"
VERSIONS_BY_PAGE_COUNT = {count: f"v{version}" for count, version in DATASET_VERSIONS.items()}
CONTENT_FIELDS = {"table": ("html", "latex"), "equation_isolated": ("latex",)}
"""Where a block keeps its content: tables their HTML (and LaTeX), display formulas LaTeX,
every other block ``text``."""
RELATION_TYPES = ("truncated", "parent_son")


@dataclass(frozen=True)
class OmniDocBench:
    """The pages of an ``OmniDocBench.json`` (entries as published) and the folder of images."""

    ground_truth: Path
    pages: tuple[Mapping[str, Any], ...]

    @property
    def images(self) -> Path:
        return self.ground_truth.parent / IMAGES_FOLDER

    @property
    def version(self) -> str | None:
        """The published version this page count belongs to, None for another count."""
        return VERSIONS_BY_PAGE_COUNT.get(len(self.pages))

    def identity(self) -> str:
        """``v1.0``-style version when the page count is a published one, else ``sha256:``
        and 12 hex digits of the ground-truth file."""
        if self.version is not None:
            return self.version
        return f"sha256:{hashlib.sha256(self.ground_truth.read_bytes()).hexdigest()[:12]}"

    def page_info(self) -> dict[str, Mapping[str, Any]]:
        """Each page's ``page_attribute`` by image file name (what the official breakdowns read)."""
        return {image_name(page): page["page_info"]["page_attribute"] for page in self.pages}

    def image_path(self, page: Mapping[str, Any]) -> Path:
        return self.images / image_name(page)


def data_version(location: Path) -> str:
    """The release of the data at ``location`` (:meth:`OmniDocBench.identity`)."""
    return load_omnidocbench(location).identity()


def image_name(page: Mapping[str, Any]) -> str:
    """The page's image file name (``page_info.image_path`` without folders)."""
    return Path(page["page_info"]["image_path"]).name


def load_omnidocbench(location: Path) -> OmniDocBench:
    """``location``: the ``OmniDocBench.json`` file or the folder holding it.

    Raises DatasetFormatError naming the page (by index and image) and the field that is wrong:
    not a list of pages, a page without ``page_info.image_path`` / ``page_attribute`` or
    ``layout_dets``, a block without ``category_type``, with a non-integer ``order`` or without
    its content field, a relation naming an unknown block, two pages with one image name.
    """
    location = Path(location)
    path = location / GROUND_TRUTH_FILE if location.is_dir() else location
    if not path.is_file():
        raise DatasetFormatError(f"{path} does not exist (the OmniDocBench layout has "
                                 f"{GROUND_TRUTH_FILE} beside an {IMAGES_FOLDER}/ folder)")
    pages = read_json(path, list, "a list of pages")
    seen: dict[str, int] = {}
    for index, page in enumerate(pages):
        where = f"{path.name}: page {index}"
        _check_page(page, where)
        name = image_name(page)
        if name in seen:
            raise DatasetFormatError(
                f"{where}: image {name!r} is already the image of page {seen[name]}"
            )
        seen[name] = index
    return OmniDocBench(path, tuple(pages))


def _check_page(page: Any, where: str) -> None:
    if not isinstance(page, dict):
        raise DatasetFormatError(f"{where}: expected an object, got {type(page).__name__}")
    problem = expected(page, "page_info", dict, "an object")
    if problem is None:
        problem = expected(page["page_info"], "image_path", str, "a string")
        problem = problem and f"page_info.{problem}"
    if problem is not None:
        raise DatasetFormatError(f"{where}: {problem}")
    info = page["page_info"]
    where = f"{where} ({Path(info['image_path']).name})"
    problem = expected(info, "page_attribute", dict, "an object")
    if problem is not None:
        raise DatasetFormatError(f"{where}: page_info.{problem}")
    problem = expected(page, "layout_dets", list, "a list of blocks")
    if problem is not None:
        raise DatasetFormatError(f"{where}: {problem}")
    blocks = page["layout_dets"]
    ids = set()
    for number, block in enumerate(blocks):
        _check_block(block, f"{where}, layout_dets[{number}]")
        ids.add(block.get("anno_id"))
    relations = (page.get("extra") or {}).get("relation", [])
    if not isinstance(relations, list):
        raise DatasetFormatError(f"{where}: extra.relation must be a list")
    for number, relation in enumerate(relations):
        at = f"{where}, extra.relation[{number}]"
        if not isinstance(relation, dict) or relation.get("relation_type") not in RELATION_TYPES:
            raise DatasetFormatError(f"{at}: relation_type must be one of {RELATION_TYPES}")
        for end in ("source_anno_id", "target_anno_id"):
            if relation.get(end) not in ids:
                raise DatasetFormatError(f"{at}: {end} {relation.get(end)!r} names no block")


def _check_block(block: Any, where: str) -> None:
    if not isinstance(block, dict) or not isinstance(block.get("category_type"), str):
        raise DatasetFormatError(f"{where}: category_type (a string) is missing")
    order = block.get("order")
    if order is not None and (not isinstance(order, int) or isinstance(order, bool)):
        raise DatasetFormatError(f"{where}: order must be an integer or null, got {order!r}")
    if "attribute" in block and not isinstance(block["attribute"], dict):
        raise DatasetFormatError(f"{where}: attribute must be an object")
    fields = CONTENT_FIELDS.get(block["category_type"])
    if fields is None:
        if "text" in block and not isinstance(block["text"], str):
            raise DatasetFormatError(f"{where}: text must be a string")
        return
    if not any(isinstance(block.get(name), str) for name in fields):
        raise DatasetFormatError(
            f"{where}: a {block['category_type']} block needs {' or '.join(fields)} (a string)"
        )
