"""evalsuite as an installed package on a user's own bench folder, outside this repository.

A toy benchmark is added through the registry alone: a declaration module named in the
``evalsuite_benchmarks`` ini option, a thin bench module, three rendered pages as fixtures, a
golden file, and the user's own engine given as ``--engine module:factory``. Each run is a
``python -m pytest -p evalsuite.pytest_plugin`` subprocess started in ``tmp_path``, so this
repository's conftest.py and pyproject.toml play no part. docs/add_a_benchmark.md walks through
the same files.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from PIL import Image, ImageDraw

PAGES = {
    "receipt": "paid in full",
    "invoice": "Total due: 310 EUR",
    "address": "Ship to Oslo",
}
"""page id: the text drawn on the page (its ground truth)."""

ENGINE_FACTORY = "toy_engine:LowercaseReader"
LABEL = "lowercase-reader"
KEY = f"toy [{LABEL} data=fixtures mode=native]"
"""How evalsuite names the one parametrization: engine label, data source, parameter."""

DECLARATION = '''\
    """toy: short printed lines, read back by an engine."""

    from pathlib import Path

    from evalsuite.benchmarks import Benchmark, DataSource, register
    from evalsuite.engines.base import InferenceRequest, InferenceResult
    from evalsuite.runner import MetricSpec, Sample

    FIXTURES = Path(__file__).resolve().parent / "fixtures"


    def load_pages(folder: Path) -> list[tuple[str, Path, str]]:
        """(page id, image, ground truth) of every PNG with a .txt beside it."""
        return [
            (image.stem, image, image.with_suffix(".txt").read_text(encoding="utf-8"))
            for image in sorted(folder.glob("*.png"))
        ]


    BENCHMARK = register(
        Benchmark(
            name="toy",
            title="Toy lines",
            description="toy: short printed lines read back by an engine",
            sources=(
                DataSource("fixtures", "three rendered lines", load_pages, fixtures=FIXTURES),
            ),
            cpu_engines=(),  # nothing runs it by default: --engine names the engine
            gpu_engines=(),
        )
    )

    METRICS = (
        MetricSpec("exact", kind="proportion"),
        MetricSpec("char_accuracy", tolerance=0.02),
    )


    def samples(pages: list[tuple[str, Path, str]], mode: str) -> list[Sample]:
        return [
            Sample(page_id, InferenceRequest(image, "Read the text.", mode, page_id),
                   reference=truth)
            for page_id, image, truth in pages
        ]


    def score(sample: Sample, result: InferenceResult) -> dict[str, float | bool]:
        truth, text = sample.reference, result.text
        same = sum(a == b for a, b in zip(text, truth, strict=False))
        return {"exact": text == truth, "char_accuracy": same / max(len(truth), len(text))}
'''

BENCH_MODULE = '''\
    """toy; declared in toy_bench.declaration."""

    from toy_bench import declaration as toy

    BENCHMARK = toy.BENCHMARK


    def test_toy(bench):
        bench.evaluate(toy.samples(bench.data, bench.mode), toy.score, toy.METRICS)
'''

ENGINE = '''\
    """The user's engine: "reads" a page as its ground truth (the .txt beside the image) in
    lower case. The class is the factory, so evalsuite sees its kind before creating it."""

    from pathlib import Path

    from evalsuite.engines.base import EngineBase, InferenceResult


    class LowercaseReader(EngineBase):
        name = "lowercase-reader"
        kind = "ocr"  # page to text only: one mode, "native"
        default_label = "lowercase-reader"  # what results and goldens are keyed on

        def _infer(self, request):
            truth = Path(request.image).with_suffix(".txt").read_text(encoding="utf-8")
            return InferenceResult(text=truth.lower())
'''


def expected_scores() -> dict[str, float]:
    """The toy metrics worked out here, not by evalsuite: lower-casing leaves a page exact when
    it has no capital, and costs one character per capital letter."""
    exact = [truth == truth.lower() for truth in PAGES.values()]
    accuracy = [1 - sum(c.isupper() for c in truth) / len(truth) for truth in PAGES.values()]
    return {"exact": sum(exact) / len(exact), "char_accuracy": sum(accuracy) / len(accuracy)}


def test_expected_scores_by_hand() -> None:
    # receipt exact; invoice loses T, E, U, R of 18; address loses S, O of 12
    assert expected_scores() == pytest.approx(
        {"exact": 1 / 3, "char_accuracy": (1 + 14 / 18 + 10 / 12) / 3}
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A user's bench folder: declaration package with its fixtures, bench module, engine
    module, pytest.ini naming the declaration; no golden yet."""
    package = tmp_path / "toy_bench"
    fixtures = package / "fixtures"
    fixtures.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "declaration.py").write_text(dedent(DECLARATION), encoding="utf-8")
    for page_id, truth in PAGES.items():
        image = Image.new("L", (240, 40), 255)
        ImageDraw.Draw(image).text((8, 12), truth, fill=0)
        image.save(fixtures / f"{page_id}.png")
        (fixtures / f"{page_id}.txt").write_text(truth, encoding="utf-8")
    (tmp_path / "toy_engine.py").write_text(dedent(ENGINE), encoding="utf-8")
    (tmp_path / "benches").mkdir()
    (tmp_path / "benches" / "test_toy.py").write_text(dedent(BENCH_MODULE), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nevalsuite_benchmarks = toy_bench.declaration\n", encoding="utf-8"
    )
    return tmp_path


def environment(folder: Path, *, autoload: bool = False) -> dict[str, str]:
    """This environment with ``folder`` importable, without what would leak this session in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "EVALSUITE_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "200"
    if not autoload:  # only what -p names: evalsuite's plugin, nothing else installed
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def run_toy(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest -p evalsuite.pytest_plugin benches/test_toy.py`` with the user's engine."""
    command = [
        sys.executable, "-m", "pytest", "-p", "evalsuite.pytest_plugin", "-p", "no:cacheprovider",
        "benches/test_toy.py", "--engine", ENGINE_FACTORY,
        "--golden-dir", str(folder / "golden"), "--report-dir", str(folder / "reports"), *args,
    ]
    done = subprocess.run(
        command, cwd=folder, env=environment(folder), capture_output=True, text=True, timeout=120
    )
    assert f"rootdir: {folder}" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def write_golden(folder: Path, values: dict[str, float], data: str = "fixtures") -> Path:
    """A golden file written by hand (format 2): the toy metrics plus the output-health rates
    that every benchmark gates."""
    entry = {"engine": LABEL, "data": data, "parameter": "mode=native", "n": len(PAGES)}
    entries = [
        {**entry, "metric": "exact", "value": values["exact"], "direction": "higher",
         "tolerance": 0.0, "kind": "proportion"},
        {**entry, "metric": "char_accuracy", "value": values["char_accuracy"],
         "direction": "higher", "tolerance": 0.02, "kind": "mean"},
        *({**entry, "metric": name, "value": 0.0, "direction": "lower", "tolerance": 0.0,
           "kind": "proportion"} for name in ("empty_output_rate", "degenerate_output_rate")),
    ]
    path = folder / "golden" / "toy.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"benchmark": "toy", "format": 2, "entries": entries}),
                    encoding="utf-8")
    return path


def results_of(done: subprocess.CompletedProcess[str], folder: Path) -> dict:
    """The results.json the run names, which must lie in --report-dir."""
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("results: ")]
    path = Path(line.removeprefix("results: "))
    assert path.parent.parent == folder / "reports" and path.name == "results.json"
    return json.loads(path.read_text(encoding="utf-8"))


def values_by_metric(entries: list[dict]) -> dict[str, float]:
    return {entry["metric"]: entry["value"] for entry in entries}


def test_a_matching_golden_passes_and_one_the_engine_falls_short_of_fails(folder: Path) -> None:
    expected = expected_scores()
    write_golden(folder, expected)

    passed = run_toy(folder)
    assert passed.returncode == 0, passed.stdout[-3000:]
    assert "1 passed" in passed.stdout
    (record,) = [r for r in results_of(passed, folder)["records"] if r["benchmark"] == "toy"]
    assert (record["engine"], record["data"], record["parameter"]) == (
        LABEL, "fixtures", "mode=native"
    )
    assert record["params"]["engine"] == ENGINE_FACTORY
    assert record["metrics"]["exact"]["value"] == pytest.approx(expected["exact"])
    assert record["metrics"]["char_accuracy"]["value"] == pytest.approx(expected["char_accuracy"])
    assert record["metrics"]["char_accuracy"]["n"] == len(PAGES)
    assert {s["sample_id"]: s["prediction"] for s in record["samples"]} == {
        page: truth.lower() for page, truth in PAGES.items()
    }
    assert {gate["status"] for gate in record["params"]["gates"].values()} == {"ok"}

    higher = {**expected, "char_accuracy": expected["char_accuracy"] + 0.1}
    write_golden(folder, higher)
    failed = run_toy(folder)
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "1 failed" in failed.stdout
    message = failed.stdout
    assert f"{KEY} char_accuracy regressed (higher is better)" in message
    assert re.search(rf"golden +{higher['char_accuracy']:.4f}", message), message[-3000:]
    assert re.search(rf"current +{expected['char_accuracy']:.4f} \(n=3\)", message)
    assert f"{KEY} exact regressed" not in message  # the proportion still meets its golden


def test_a_missing_golden_fails_writes_the_obtained_file_and_update_golden_writes_it(
    folder: Path,
) -> None:
    expected = expected_scores()
    golden = folder / "golden" / "toy.json"
    obtained = folder / "golden" / "toy.obtained.json"
    # entries of other data (a real data set's revision) are no golden for the fixtures
    write_golden(folder, expected, data="toy@0123abcd")

    first = run_toy(folder)
    assert first.returncode == 1, first.stdout[-3000:]
    assert f"{KEY}: no golden entry for exact, char_accuracy" in first.stdout
    assert "golden accept toy" in first.stdout and "--update-golden" in first.stdout
    assert obtained.is_file()
    measured = json.loads(obtained.read_text(encoding="utf-8"))
    assert measured["format"] == 2
    assert {e["data"] for e in measured["entries"]} == {"fixtures"}
    assert values_by_metric(measured["entries"]) == pytest.approx(
        {**expected, "empty_output_rate": 0.0, "degenerate_output_rate": 0.0}
    )
    assert {e["data"] for e in json.loads(golden.read_text())["entries"]} == {"toy@0123abcd"}

    update = run_toy(folder, "--update-golden", "-m", "toy", "--strict-markers")
    assert update.returncode == 0, update.stdout[-3000:]
    assert "1 passed" in update.stdout
    assert f"{KEY} char_accuracy: new, value" in update.stdout  # the "golden updates" section
    entries = json.loads(golden.read_text(encoding="utf-8"))["entries"]
    assert {e["data"] for e in entries} == {"fixtures", "toy@0123abcd"}  # others are kept
    written = [e for e in entries if e["data"] == "fixtures"]
    assert {(e["engine"], e["parameter"]) for e in written} == {(LABEL, "mode=native")}
    assert values_by_metric(written)["exact"] == pytest.approx(expected["exact"])
    assert values_by_metric(written)["char_accuracy"] == pytest.approx(expected["char_accuracy"])
    tolerances = {e["metric"]: e["tolerance"] for e in written}
    assert tolerances["char_accuracy"] == 0.02  # the MetricSpec's tolerance


def test_the_toy_marker_is_registered_from_the_ini_option(folder: Path) -> None:
    # no -p and autoloading on: the installed package's pytest11 entry point loads the plugin
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--markers"],
        cwd=folder, env=environment(folder, autoload=True), capture_output=True, text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "@pytest.mark.toy: toy: short printed lines read back by an engine" in done.stdout
    assert "@pytest.mark.fox:" in done.stdout  # the built-in benchmarks are there too

