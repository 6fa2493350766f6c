"""evalsuite as an installed package on a user's own bench folder: a toy benchmark added through
the registry alone (declaration module + bench module + fixtures, golden written by the run),
with the user's own engine (``--engine module:Class``), run by ``pytest -p
evalsuite.pytest_plugin`` from a folder outside this repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from PIL import Image, ImageDraw

PAGES = {
    "memo": ("Meeting moved to Friday", "Meeting moved to Friday"),
    "note": ("Bring the signed forms", "Bring the signed"),
}
"""page id: (what the page says, what the user's engine reads on it)."""

DECLARATION = '''\
    """toy: read short pages; the share read exactly and the share of characters read."""

    import json
    from pathlib import Path

    from evalsuite.benchmarks import Benchmark, DataSource, register
    from evalsuite.engines.base import InferenceRequest, InferenceResult
    from evalsuite.runner import MetricSpec, Sample

    HERE = Path(__file__).resolve().parent


    def load_pages(folder: Path) -> list[dict]:
        return json.loads((folder / "pages.json").read_text(encoding="utf-8"))


    BENCHMARK = register(
        Benchmark(
            name="toy",
            title="Toy pages",
            description="toy: short pages read by the user's engine",
            sources=(
                DataSource("fixtures", "pages made for the test", load_pages,
                           fixtures=HERE / "fixtures" / "toy"),
            ),
            cpu_engines=(),
        )
    )

    METRICS = (
        MetricSpec("exact", kind="proportion"),
        MetricSpec("chars_read", tolerance=0.05),
    )


    def samples(pages: list[dict], folder: Path, mode: str) -> list[Sample]:
        return [
            Sample(page["id"],
                   InferenceRequest(folder / page["image"], "Read the page.", mode, page["id"]),
                   reference=page["truth"])
            for page in pages
        ]


    def score(sample: Sample, result: InferenceResult) -> dict[str, float | bool]:
        return {
            "exact": result.text == sample.reference,
            "chars_read": len(result.text) / len(sample.reference),
        }
'''

BENCH_MODULE = '''\
    import toybench

    BENCHMARK = toybench.BENCHMARK


    def test_toy(bench):
        bench.evaluate(
            toybench.samples(bench.data, bench.location, bench.mode), toybench.score,
            toybench.METRICS,
        )
'''

ENGINE = '''\
    """The user's engine: "reads" a page from the sidecar text beside its image (TOY_TRUNCATE
    characters of it at most, to degrade it on purpose). The class is the factory
    (--engine toyengine:SidecarReader), so its kind and modes are known before it is created."""

    import os
    from pathlib import Path

    from evalsuite.engines.base import EngineBase, InferenceResult


    class SidecarReader(EngineBase):
        name = "sidecar-reader"
        kind = "ocr"
        supported_modes = ("native",)  # an OCR engine has one way to read a page
        default_label = "sidecar-reader"  # what results and goldens are keyed on

        def _infer(self, request):
            text = Path(request.image).with_suffix(".read.txt").read_text(encoding="utf-8")
            limit = int(os.environ.get("TOY_TRUNCATE", "0")) or None
            return InferenceResult(text=text[:limit])
'''


@pytest.fixture
def bench_folder(tmp_path: Path) -> Path:
    """A user's folder: declaration, bench module, engine, fixtures, pytest.ini; no golden."""
    fixtures = tmp_path / "fixtures" / "toy"
    fixtures.mkdir(parents=True)
    pages = []
    for page_id, (truth, read) in PAGES.items():
        image = Image.new("RGB", (360, 60), "white")
        ImageDraw.Draw(image).text((10, 20), truth, fill="black")
        image.save(fixtures / f"{page_id}.png")
        (fixtures / f"{page_id}.read.txt").write_text(read, encoding="utf-8")
        pages.append({"id": page_id, "image": f"{page_id}.png", "truth": truth})
    (fixtures / "pages.json").write_text(json.dumps(pages), encoding="utf-8")
    (tmp_path / "toybench.py").write_text(dedent(DECLARATION), encoding="utf-8")
    (tmp_path / "toyengine.py").write_text(dedent(ENGINE), encoding="utf-8")
    (tmp_path / "benches").mkdir()
    (tmp_path / "benches" / "test_toy.py").write_text(dedent(BENCH_MODULE), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nevalsuite_benchmarks = toybench\npythonpath = .\n", encoding="utf-8"
    )
    return tmp_path


def run(folder: Path, *args: str, truncate: int = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOY_TRUNCATE": str(truncate), "PYTHONUNBUFFERED": "1"}
    env.pop("EVALSUITE_DATA", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "evalsuite.pytest_plugin", "-p", "no:cacheprovider",
         "benches/test_toy.py", "--engine", "toyengine:SidecarReader", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300,
    )


def expected_scores(truncate: int = 0) -> dict[str, float]:
    """The toy metrics, computed here from the pages (not by evalsuite)."""
    read = {page: text[: truncate or None] for page, (_, text) in PAGES.items()}
    exact = [read[page] == truth for page, (truth, _) in PAGES.items()]
    ratios = [len(read[page]) / len(truth) for page, (truth, _) in PAGES.items()]
    return {"exact": sum(exact) / len(exact), "chars_read": sum(ratios) / len(ratios)}


def toy_record(folder: Path) -> dict:
    runs = sorted(p for p in (folder / "reports").iterdir() if p.is_dir())
    results = json.loads((runs[-1] / "results.json").read_text(encoding="utf-8"))
    (record,) = [r for r in results["records"] if r["benchmark"] == "toy"]
    return record


def test_a_toy_benchmark_runs_from_outside_the_repository(bench_folder: Path) -> None:
    assert not (bench_folder / "conftest.py").exists()
    golden = bench_folder / "golden"

    # no golden yet: the test fails, the measured entries wait beside the (absent) golden file
    first = run(bench_folder)
    assert first.returncode == 1, first.stdout[-3000:]
    assert "toy [sidecar-reader data=fixtures mode=native]: no golden entry" in first.stdout
    assert (golden / "toy.obtained.json").is_file() and not (golden / "toy.json").exists()
    assert "golden accept toy" in first.stdout

    # --update-golden writes them; the values are the toy metrics as computed here
    update = run(bench_folder, "--update-golden")
    assert update.returncode == 0, update.stdout[-3000:]
    entries = json.loads((golden / "toy.json").read_text(encoding="utf-8"))["entries"]
    values = {e["metric"]: e["value"] for e in entries}
    expected = expected_scores()
    assert values["exact"] == pytest.approx(expected["exact"])
    assert values["chars_read"] == pytest.approx(expected["chars_read"])

    # a plain run now passes and records the same scores
    plain = run(bench_folder, "-m", "toy", "--strict-markers")
    assert plain.returncode == 0, plain.stdout[-3000:]
    assert "1 passed" in plain.stdout
    record = toy_record(bench_folder)
    assert record["engine"] == "sidecar-reader" and record["data"] == "fixtures"
    assert record["metrics"]["chars_read"]["value"] == pytest.approx(expected["chars_read"])

    # the engine degrades: the gate fails and says which metric, golden and current
    degraded = run(bench_folder, truncate=5)
    assert degraded.returncode == 1, degraded.stdout[-3000:]
    worse = expected_scores(truncate=5)["chars_read"]
    assert "chars_read regressed (higher is better)" in degraded.stdout
    assert f"current {worse:.4g}" in degraded.stdout


def test_the_toy_benchmark_is_a_marker(bench_folder: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "evalsuite.pytest_plugin", "--markers"],
        cwd=bench_folder, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "@pytest.mark.toy: toy: short pages read by the user's engine" in done.stdout
    assert "@pytest.mark.fox:" in done.stdout  # the built-in ones are there too
