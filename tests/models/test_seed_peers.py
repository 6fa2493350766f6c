"""golden/seed_peers.py: the peers' published figures it seeds are the ones in golden/, each in
a series of its own (``<label> (published)``) named after a registered model profile, within
the metric's bounds, and as the source tables print them."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from evalsuite.golden import GoldenEntry, GoldenStore
from evalsuite.models import available_models
from tests.support.paths import REPOSITORY as REPO

GOLDEN = REPO / "golden"
BENCHMARKS = ("olmocr_bench", "omnidocbench")
SUFFIX = " (published)"


@pytest.fixture(scope="module")
def seed() -> Iterator[ModuleType]:
    """golden/seed_peers.py as a module (it imports seed_deepseek_ocr from beside it)."""
    sys.path.insert(0, str(GOLDEN))
    try:
        yield importlib.import_module("seed_peers")
    finally:
        sys.path.remove(str(GOLDEN))


def published(benchmark: str) -> list[GoldenEntry]:
    return [entry for entry in GoldenStore(GOLDEN).load(benchmark).entries.values()
            if entry.engine.endswith(SUFFIX)]


def value(benchmark: str, engine: str, data: str, metric: str) -> float:
    entry = GoldenStore(GOLDEN).load(benchmark).entries[(engine + SUFFIX, data, "mode=native",
                                                         metric)]
    return entry.value


def test_the_seed_reproduces_the_golden_files(seed: ModuleType, tmp_path: Path) -> None:
    """Run on a copy of golden/ without the published entries, the script writes back exactly
    the files in golden/: every published entry comes from it, no other entry changes."""
    copy = tmp_path / "golden"
    shutil.copytree(GOLDEN, copy, ignore=shutil.ignore_patterns("*.lock", "*.py", "__pycache__"))
    for benchmark in BENCHMARKS:
        path = copy / f"{benchmark}.json"
        document = json.loads(path.read_text(encoding="utf-8"))
        kept = [e for e in document["entries"] if not e["engine"].endswith(SUFFIX)]
        assert len(kept) < len(document["entries"]), f"{benchmark}: no published entry"
        path.write_text(json.dumps({**document, "entries": kept}), encoding="utf-8")
    seed.main(copy)
    for benchmark in BENCHMARKS:
        name = f"{benchmark}.json"
        assert (copy / name).read_text(encoding="utf-8") == (GOLDEN / name).read_text(
            encoding="utf-8"), f"golden/{name} is not what golden/seed_peers.py writes"
    seed.main(copy)  # a second run changes nothing
    assert all((copy / f"{b}.json").read_bytes() == (GOLDEN / f"{b}.json").read_bytes()
               for b in BENCHMARKS)


def test_published_series_are_named_after_registered_profiles(seed: ModuleType) -> None:
    profiles = {name.lower() for name in available_models()}
    seeded = {row.label for row in seed.OLMOCR_ROWS} | {
        row.label for _, row in seed.OMNIDOCBENCH_ROWS}
    assert seeded <= profiles, seeded - profiles
    for benchmark in BENCHMARKS:
        entries = published(benchmark)
        assert entries
        for entry in entries:
            assert entry.engine.removesuffix(SUFFIX) in profiles, entry.engine
            assert entry.source in ("paper", "leaderboard"), entry
            assert entry.parameter == "mode=native", entry
            assert re.fullmatch(r"[0-9a-f]{7}", entry.commit), entry
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry.set_at), entry
            assert entry.n == 0 and "n: no page count published" in entry.note, entry
            assert f"@{entry.commit} " in entry.note and " row " in entry.note, entry.note
    # each seeded entry is a published one, never a measured series
    for entry in seed.olmocr_entries() + seed.omnidocbench_entries():
        assert entry.engine.endswith(SUFFIX), entry.engine


def test_values_lie_in_their_bounds_and_directions(seed: ModuleType) -> None:
    olmocr = published("olmocr_bench")
    revision = seed.OLMOCR_SOURCE.fetch.revision
    assert {e.data for e in olmocr} == {f"olmocr_bench@{revision}"}
    categories = {"arxiv_math", "old_scans_math", "table_tests", "old_scans", "headers_footers",
                  "multi_column", "long_tiny_text", "baseline"}
    assert {e.metric for e in olmocr} == {"overall"} | {f"pass_rate[{c}]" for c in categories}
    for entry in olmocr:
        assert 0.0 <= entry.value <= 1.0, entry
        assert entry.direction == "higher" and entry.tolerance == 0.03, entry
        assert entry.kind == ("mean" if entry.metric == "overall" else "proportion"), entry
    omnidocbench = published("omnidocbench")
    assert {e.data for e in omnidocbench} == {"omnidocbench@v1.5", "omnidocbench@v1.6"}
    for entry in omnidocbench:
        edit = entry.metric.endswith("edit_dist")
        assert entry.direction == ("lower" if edit else "higher"), entry
        assert 0.0 <= entry.value <= (100.0 if entry.metric == "overall" else 1.0), entry
        assert entry.tolerance == {"overall": 1.0, "text_block_edit_dist": 0.02,
                                   "reading_order_edit_dist": 0.02}.get(entry.metric, 0.03)
    # every series has all its metrics
    for entries, size in ((olmocr, 9), (omnidocbench, 6)):
        series: dict[tuple[str, str], int] = {}
        for entry in entries:
            series[(entry.engine, entry.data)] = series.get((entry.engine, entry.data), 0) + 1
        assert set(series.values()) == {size}, series


def test_spot_values_as_the_sources_print_them() -> None:
    """A few cells read off the tables: olmocr README.md @f7cfe4c and olmocr/bench/README.md
    @ab7b02a; OmniDocBench README.md @b69545b (v1.5) and @9dc1dec (v1.6_full)."""
    data = next(e.data for e in published("olmocr_bench"))
    assert value("olmocr_bench", "chandra", data, "overall") == 0.831  # 83.1±0.9
    assert value("olmocr_bench", "chandra", data, "pass_rate[old_scans]") == 0.504
    assert value("olmocr_bench", "nanonets-ocr2", data, "pass_rate[headers_footers]") == 0.321
    assert value("olmocr_bench", "olmocr-2", data, "pass_rate[baseline]") == 0.997
    assert value("olmocr_bench", "mineru2.5", data, "pass_rate[table_tests]") == 0.849
    assert value("olmocr_bench", "paddleocr-vl", data, "overall") == 0.8  # 80.0±1.0
    assert value("olmocr_bench", "got-ocr2", data, "pass_rate[table_tests]") == 0.002  # 0.20
    assert value("olmocr_bench", "gpt-4o", data, "pass_rate[old_scans_math]") == 0.755
    v15, v16 = "omnidocbench@v1.5", "omnidocbench@v1.6"
    assert value("omnidocbench", "paddleocr-vl", v15, "overall") == 92.86
    assert value("omnidocbench", "paddleocr-vl", v15, "display_formula_cdm") == 0.9122
    assert value("omnidocbench", "dots.ocr", v15, "table_teds_structure_only") == 0.9062
    assert value("omnidocbench", "gpt-4o", v15, "text_block_edit_dist") == 0.217
    assert value("omnidocbench", "qwen2.5-vl", v15, "reading_order_edit_dist") == 0.102
    assert value("omnidocbench", "qwen3-vl", v15, "table_teds") == 0.8621
    assert value("omnidocbench", "mineru2.5", v16, "overall") == 93.04
    assert value("omnidocbench", "dots.ocr", v16, "table_teds") == 0.8718
    assert value("omnidocbench", "qwen3-vl", v16, "reading_order_edit_dist") == 0.166


def test_models_without_a_matching_row_are_left_out() -> None:
    """Gemini Flash 2 is not Gemini 2.5 Flash, GPT-5.2 not GPT-5, Nanonets-OCR-s not
    Nanonets-OCR2, OmniDocBench's olmOCR not olmOCR 2; Chandra has no OmniDocBench row and
    dots.ocr's olmOCR-bench row never reached a main-branch README."""
    olmocr = {e.engine for e in published("olmocr_bench")}
    omnidocbench = {(e.engine, e.data) for e in published("omnidocbench")}
    for label in ("gemini-2.5-flash", "gpt-5", "qwen3-vl", "qwen2.5-vl", "dots.ocr"):
        assert label + SUFFIX not in olmocr
    for label in ("gemini-2.5-flash", "gpt-5", "nanonets-ocr2", "olmocr-2", "chandra",
                  "got-ocr2"):
        assert not any(engine == label + SUFFIX for engine, _ in omnidocbench)
    assert ("gpt-4o" + SUFFIX, "omnidocbench@v1.6") not in omnidocbench
