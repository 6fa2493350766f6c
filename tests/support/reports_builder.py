"""Builds realistic run records for the report tests: several nightly runs of fox,
render_configs and quality with engines, modes, per-sample texts and scores, deterministic,
laid out as the benchmarks write them (``mode=small,config=x,condition=vision`` parameters,
``edit_precision[600-700]`` per-bin aggregates, ``gt_compression`` per page).

Scores come from the real metric functions on generated texts, aggregates from evalsuite.stats.
The newest run has a built-in regression (fox, tiny-deepseek-ocr-2 mode=tiny: OCR quality
drops) and an improvement (render_configs replay color_low_contrast: vision answers improve).
Longer histories repeat the first five nights' patterns before that newest run; ``bench_like``
adds what a ``make bench`` run with the shared data has besides: fox on the study documents and
the descriptive ``valid_vision_tokens``.

Run as a script, it writes the README's screenshots of the dashboard of a 20-run history
(headless Chromium, 1,280 px wide): ``python tests/support/reports_builder.py docs``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import jsonschema
from referencing import Registry, Resource

from evalsuite import browser
from evalsuite.metrics import edit_precision
from evalsuite.records.history import append_history
from evalsuite.records.model import BenchmarkRecord, SampleRecord
from evalsuite.records.results import RunMetadata, write_results
from evalsuite.stats import summarize_mean, summarize_proportion
from tests.support.paths import TEST_FIXTURES

SENTENCES = (
    "The committee approved the annual budget after a short debate on travel costs.",
    "Invoice INV-2024-001 lists three items with a total of 1,250.00 dollars due in May.",
    "Employees must submit their timesheets by Friday at five in the afternoon.",
    "The new scanner renders each page at two hundred dots per inch in grey scale.",
    "Section 4 of the act defines a public record as any writing prepared by a body.",
    "Meeting minutes were recorded by the secretary and approved without changes.",
    "Product specifications include a weight of 2.4 kilograms and a steel frame.",
    "The library keeps a copy of every report in its archive for ten years.",
    "Requests for information shall be answered within five business days.",
    "A person may inspect the records during the usual business hours of the office.",
)
FOX_PAGES = 8
QUESTIONS = 30
RENDER_CONFIGS = ("color_default", "color_low_contrast", "font_mono", "font_serif", "size_small")
VISION_TOKENS = {"tiny": 64, "small": 100}
START = datetime(2025, 11, 1, 2, 0, tzinfo=UTC)
STUDY_DATA = "study@5f0c2a91"
PATTERNS = 6  # the nights the score tables below describe; the last one is the newest run

# Per-run OCR word error rates: stable, with the newest run's tiny mode degraded.
FOX_ERROR = {
    ("tiny-deepseek-ocr-2", "mode=tiny"): (0.10, 0.10, 0.09, 0.10, 0.09, 0.30),
    ("tiny-deepseek-ocr-2", "mode=small"): (0.05, 0.05, 0.04, 0.05, 0.04, 0.04),
    ("tesseract", "mode=native"): (0.03, 0.03, 0.03, 0.03, 0.03, 0.03),
}
# Per-run answer accuracy of the vision condition; the low-contrast rendering improves at the end.
VISION_ACCURACY = {
    "color_default": (0.80, 0.80, 0.83, 0.80, 0.80, 0.83),
    "color_low_contrast": (0.40, 0.43, 0.40, 0.40, 0.43, 0.90),
    "font_mono": (0.77, 0.77, 0.80, 0.77, 0.77, 0.77),
    "font_serif": (0.80, 0.80, 0.80, 0.83, 0.80, 0.80),
    "size_small": (0.60, 0.63, 0.60, 0.60, 0.63, 0.60),
}
TEXT_ACCURACY = 0.90


@dataclass
class BuiltRun:
    metadata: RunMetadata
    records: list[BenchmarkRecord]


def build_runs(count: int = 6, *, bench_like: bool = False) -> list[BuiltRun]:
    """``count`` nightly runs, oldest first: the newest one the last pattern of the score
    tables, the ones before cycling through the others."""
    return [
        _build_run(index, PATTERNS - 1 if index == count - 1 else index % (PATTERNS - 1),
                   bench_like)
        for index in range(count)
    ]


def write_reports(folder: Path, runs: list[BuiltRun]) -> Path:
    """results.json per run and history.jsonl, as a benchmark session writes them; returns the
    history path."""
    history = folder / "history.jsonl"
    for run in runs:
        run_dir = folder / run.metadata.run_id
        write_results(run_dir, run.metadata, run.records)
        append_history(history, run.metadata, run.records,
                       results_path=f"{run.metadata.run_id}/results.json")
    return history


def _build_run(index: int, pattern: int, bench_like: bool) -> BuiltRun:
    created = START + timedelta(days=index)
    metadata = RunMetadata(
        run_id=f"{created:%Y%m%dT%H%M%SZ}-{index:06x}",
        created_utc=created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        git_commit=f"{index + 1:x}" * 40,
        git_dirty=index == 5,
        engines=["replay", "tesseract", "tiny-deepseek-ocr-2"],
        engine_details={
            "replay": {"engine": "replay"},
            "tesseract": {"engine": "tesseract", "version": "5.3.0"},
            "tiny-deepseek-ocr-2": {"engine": "tiny-deepseek-ocr-2"},
        },
        modes=["tiny", "small"],
        versions={"python": "3.11.9", "evalsuite": "0.1.0", "torch": "2.13.0",
                  "transformers": "5.0.0"},
        device="cpu (x86_64)",
        seed=1234,
        command="pytest benches -n 2",
        duration_s=412.0 + index,
    )
    records = [*_fox(pattern, "fixtures"), *_render_configs(pattern), *_quality(pattern)]
    if bench_like:
        records += _fox(pattern, STUDY_DATA)
    return BuiltRun(metadata, records)


def _perturb(text: str, error_rate: float, rng: random.Random) -> str:
    words = []
    for word in text.split():
        roll = rng.random()
        if roll < error_rate / 3:
            continue
        if roll < 2 * error_rate / 3 and len(word) > 2:
            i = rng.randrange(len(word) - 1)
            word = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        elif roll < error_rate:
            word = word.upper()
        words.append(word)
    return " ".join(words)


def _fox(run: int, data: str) -> list[BenchmarkRecord]:
    records = []
    for (engine, parameter), rates in FOX_ERROR.items():
        # Deterministic engines: the same error rate reads the same pages the same way.
        seed = f"fox-{engine}-{parameter}-{rates[run]}"
        rng = random.Random(seed if data == "fixtures" else f"{seed}-{data}")
        mode = parameter.removeprefix("mode=")
        samples = []
        for page in range(FOX_PAGES):
            reference = " ".join(SENTENCES[(page + k) % len(SENTENCES)] for k in range(2 + page))
            text_tokens = 600 + 90 * page  # Fox pages hold 600-1300 text tokens
            # Denser pages are harder to read back from few vision tokens.
            rate = rates[run] * (0.5 + 0.15 * page) if mode in VISION_TOKENS else rates[run]
            prediction = _perturb(reference, rate, rng)
            scores: dict[str, float | bool] = {
                "edit_precision": round(edit_precision(prediction, reference), 6)
            }
            if mode in VISION_TOKENS:
                scores["gt_compression"] = round(text_tokens / VISION_TOKENS[mode], 6)
            scores["empty_output_rate"] = not prediction
            scores["degenerate_output_rate"] = False
            details = {"gt_tokens": text_tokens, "vision_tokens": VISION_TOKENS.get(mode)}
            samples.append(SampleRecord(f"en_{page}", scores, None, prediction, reference,
                                        details))
        if engine == "tiny-deepseek-ocr-2" and mode == "small" and run == 2:
            failed = {"edit_precision": 0.0, "empty_output_rate": False,
                      "degenerate_output_rate": False}
            samples[3] = SampleRecord("en_3", failed, "CUDA out of memory", None,
                                      samples[3].reference, samples[3].details)
        metrics = {
            "edit_precision": summarize_mean([s.scores["edit_precision"] for s in samples])
        }
        ratios = [s.scores["gt_compression"] for s in samples if "gt_compression" in s.scores]
        if ratios:
            metrics["gt_compression"] = summarize_mean(ratios)
            if data != "fixtures":  # as fox reports it: a token count, no better side
                metrics["valid_vision_tokens"] = summarize_mean(
                    [float(VISION_TOKENS[mode])] * len(samples), None)
        for name in ("empty_output_rate", "degenerate_output_rate"):
            metrics[name] = summarize_proportion([bool(s.scores[name]) for s in samples], "lower")
        bins: dict[str, list[float]] = {}
        for sample in samples:
            low = sample.details["gt_tokens"] // 100 * 100
            bins.setdefault(f"{low}-{low + 100}", []).append(sample.scores["edit_precision"])
        for group, values in sorted(bins.items()):
            metrics[f"edit_precision[{group}]"] = summarize_mean(values)
        records.append(BenchmarkRecord("fox", engine, parameter, metrics, samples, {"mode": mode},
                                       data))
    return records


def _answers(accuracy: float, rng: random.Random) -> list[bool]:
    correct = round(accuracy * QUESTIONS)
    outcomes = [True] * correct + [False] * (QUESTIONS - correct)
    rng.shuffle(outcomes)
    return outcomes


def _qa_record(
    benchmark: str, engine: str, parameter: str, condition: str, outcomes: list[bool]
) -> BenchmarkRecord:
    """A context-QA record of one condition: the answers, tokens of the context, compression."""
    tokens = 100.0 if condition == "vision" else 183.0
    samples = [
        SampleRecord(
            f"{condition}/invoice/{q}",
            {"accuracy": outcome, "context_tokens": tokens},
            None,
            "1,250.00 dollars" if outcome else "1,520.00 dollars",
            "1,250.00 dollars",
        )
        for q, outcome in enumerate(outcomes)
    ]
    metrics = {
        "accuracy": summarize_proportion(outcomes),
        "context_tokens": summarize_mean([tokens] * len(outcomes), "lower"),
    }
    if condition == "vision":
        metrics["compression"] = summarize_mean([1.83] * len(outcomes))
    return BenchmarkRecord(benchmark, engine, f"{parameter},condition={condition}", metrics,
                           samples, {"mode": "small"})


def _render_configs(run: int) -> list[BenchmarkRecord]:
    records = []
    for config in RENDER_CONFIGS:
        parameter = f"mode=small,config={config}"
        rng = random.Random(f"render-{config}")
        ocr_samples = []
        for index, sentence in enumerate(SENTENCES[:4]):
            prediction = _perturb(sentence, 0.05, rng)
            scores = {"edit_precision": round(edit_precision(prediction, sentence), 6),
                      "gt_compression": round((18 + index) / 10, 6)}
            ocr_samples.append(SampleRecord(f"{config}/doc{index}", scores, None, prediction,
                                            sentence))
        metrics = {
            name: summarize_mean([s.scores[name] for s in ocr_samples])
            for name in ("edit_precision", "gt_compression")
        }
        records.append(BenchmarkRecord("render_configs", "replay", parameter, metrics,
                                       ocr_samples, {"mode": "small"}))
        rng = random.Random(f"render-{config}-{run}")
        vision = _answers(VISION_ACCURACY[config][run], rng)
        text = _answers(TEXT_ACCURACY, rng)
        records.append(_qa_record("render_configs", "replay", parameter, "text", text))
        records.append(_qa_record("render_configs", "replay", parameter, "vision", vision))
    return records


def _quality(run: int) -> list[BenchmarkRecord]:
    rng = random.Random(f"quality-{run}")
    vision = _answers(0.47 + 0.03 * (run % 2), rng)
    text = _answers(0.63, rng)
    return [
        _qa_record("quality", "tiny-deepseek-ocr-2", "mode=small", condition, outcomes)
        for condition, outcomes in (("text", text), ("vision", vision))
    ]


# --- helpers of several report tests ------------------------------------------------------


def schema_validator(name: str) -> jsonschema.Draft202012Validator:
    """A validator of ``schema/<name>.schema.json`` that resolves references to its sibling."""
    folder = resources.files("evalsuite.records").joinpath("schema")
    schemas = {
        item: json.loads(folder.joinpath(f"{item}.schema.json").read_text("utf-8"))
        for item in ("results", "history")
    }
    registry = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values()
    )
    jsonschema.Draft202012Validator.check_schema(schemas[name])
    return jsonschema.Draft202012Validator(schemas[name], registry=registry)


def expected_charts(runs: list) -> dict[str, int]:
    """Charts per benchmark, counted from the built records: a trend chart per metric (not per
    group) and per engine x data x condition that has it, except health metrics that are 0
    everywhere; a compression curve where pages have one; a bar chart per metric that both QA
    conditions have; a bar chart per metric aggregated per group. (No panel here has more
    than six series.)"""
    counts = {}
    for benchmark in ("fox", "render_configs", "quality"):
        records = [r for run in runs for r in run.records if r.benchmark == benchmark]
        panels = {
            (name, r.engine, r.data, r.parameter.partition("condition=")[2])
            for r in records for name, summary in r.metrics.items()
            if "[" not in name and not (name.endswith("_output_rate") and all(
                o.metrics[name].value == 0 for o in records if name in o.metrics))
        }
        grouped = {name.split("[")[0] for r in records for name in r.metrics if "[" in name}
        text = {n for r in records if r.parameter.endswith("condition=text") for n in r.metrics}
        vision = {n for r in records if r.parameter.endswith("condition=vision")
                  for n in r.metrics}
        curve = any("gt_compression" in s.scores for r in records for s in r.samples)
        counts[benchmark] = len(panels) + len(text & vision) + len(grouped) + int(curve)
    return counts


# --- headless Chromium, for the browser tests and the README's screenshots -----------------

VIEWPORT = (1280, 900)
"""The window the layout is checked in and the screenshots are taken at (CSS px)."""


def start_chromium(profile: Path, downloads: Path | None = None):  # -> WebDriver
    """Headless Chromium :data:`VIEWPORT` wide inside, console logging on."""
    return browser.start_chromium(VIEWPORT, profile=profile, downloads=downloads,
                                  console_log=True)


def write_screenshots(folder: Path, runs: int = 20) -> list[Path]:
    """``dashboard.png`` (the top of the page) and ``dashboard-ranking.png`` (fox's ranking
    and first trend charts) of the dashboard of a ``runs``-run bench-like history."""
    import tempfile

    from evalsuite.reports import dashboard

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        history = write_reports(work, build_runs(runs, bench_like=True))
        golden = TEST_FIXTURES / "reports" / "golden"
        page, _ = dashboard.write_dashboard(history, work / "index.html", golden_dir=golden,
                                            png=False)
        driver = start_chromium(work / "profile")
        try:
            driver.get(page.resolve().as_uri())
            shots = [folder / "dashboard.png", folder / "dashboard-ranking.png"]
            driver.save_screenshot(str(shots[0]))
            browser.set_viewport(driver, VIEWPORT[0], 1300)  # the rankings and a row of charts
            driver.execute_script(
                "document.documentElement.style.scrollBehavior = 'auto';"
                "window.scrollTo(0, document.querySelector('#bench-fox h3').offsetTop - 80);"
            )
            driver.save_screenshot(str(shots[1]))
        finally:
            driver.quit()
    return shots


if __name__ == "__main__":
    import sys

    for shot in write_screenshots(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")):
        print(f"screenshot: {shot}")
