"""The OmniDocBench loader's schema check, the benchmark's samples and scorer, and DeepSeek's
post-processing; the gate's figures against the official evaluation of the same outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalsuite.benchmarks import omnidocbench
from evalsuite.datasets.omnidocbench import load_omnidocbench
from evalsuite.engines.base import InferenceResult
from evalsuite.errors import DatasetFormatError
from evalsuite.metrics.omnidocbench.evaluation import evaluate_pages
from evalsuite.runner import aggregate, aggregate_by, score_samples, with_output_health
from tests.support.paths import TEST_FIXTURES

FIXTURE = TEST_FIXTURES / "omnidocbench" / "fixture"
PAGES = json.loads((FIXTURE / "OmniDocBench.json").read_text())


def write(tmp_path: Path, pages: list) -> Path:
    (tmp_path / "OmniDocBench.json").write_text(json.dumps(pages))
    return tmp_path


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p[0].pop("layout_dets"), "page 0 (report_p1.jpg): layout_dets"),
    (lambda p: p[1]["layout_dets"][2].pop("latex"), "layout_dets[2]: a equation_isolated block "
                                                    "needs latex"),
    (lambda p: p[2]["layout_dets"][0].update(order="1"), "order must be an integer or null"),
    (lambda p: p[3]["extra"]["relation"][0].update(target_anno_id=99), "target_anno_id 99 "
                                                                       "names no block"),
    (lambda p: p[3]["page_info"].update(image_path="images/report_p1.jpg"),
     "image 'report_p1.jpg' is already the image of page 0"),
    (lambda p: p[0]["page_info"].pop("page_attribute"), "page_info.page_attribute"),
])
def test_the_loader_names_what_is_wrong(tmp_path, change, message):
    pages = json.loads(json.dumps(PAGES))
    change(pages)
    with pytest.raises(DatasetFormatError, match=r"OmniDocBench\.json: page") as error:
        load_omnidocbench(write(tmp_path, pages))
    assert message in str(error.value)


def test_the_loader_refuses_what_is_not_a_page_list(tmp_path):
    (tmp_path / "OmniDocBench.json").write_text('{"pages": []}')
    with pytest.raises(DatasetFormatError, match="expected a list of pages"):
        load_omnidocbench(tmp_path)


def test_samples_declare_their_elements_and_weights():
    bench = load_omnidocbench(FIXTURE)
    samples = {s.sample_id: s for s in omnidocbench.samples(bench, "gundam")}
    assert samples["report_p1.jpg"].measures == {
        "text_block_edit_dist", "reading_order_edit_dist", "overall_edit"}
    assert "table_teds" in samples["table_p3.jpg"].measures
    assert samples["table_p3.jpg"].details["table_samples"] == 1
    # 4 English pages with text, 1 with a formula, 1 with a table
    assert samples["paper_p2.jpg"].details["element_weights"] == {
        "text_block": 0.25, "reading_order": 0.25, "display_formula": 1.0}
    request = samples["paper_p2.jpg"].request
    assert request.prompt == "<image>\n<|grounding|>Convert the document to markdown."
    assert request.mode == "gundam"


def test_a_page_without_its_image_fails_alone(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "data")
    (tmp_path / "data" / "images" / "table_p3.jpg").unlink()
    samples = omnidocbench.samples(load_omnidocbench(tmp_path / "data"), "base")
    failed = [s.sample_id for s in samples if s.error]
    assert failed == ["table_p3.jpg"] and "does not exist" in samples[2].error
    results = [InferenceResult(text="", error=s.error) if s.error else InferenceResult(text="x")
               for s in samples]
    records = score_samples(samples, results, omnidocbench.scorer(),
                            with_output_health(omnidocbench.METRICS))
    # scored worst on its own elements only: no formula score for the table page
    assert records[2].scores["table_teds"] == 0.0 and records[2].scores["overall_edit"] == 1.0
    assert "display_formula_edit_dist" not in records[2].scores


def ground_truth_markdown(page: dict) -> str:
    """A perfect prediction: the page's blocks in order, formulas as display math."""
    parts = []
    for block in sorted(page["layout_dets"], key=lambda b: b["order"] or 0):
        content = block.get("html") or block.get("latex") or block.get("text")
        parts.append(content)
    return "\n\n".join(parts)


@pytest.mark.parametrize("predictions", ["ground truth", "degraded"])
def test_the_gate_figures_equal_the_official_evaluation(predictions):
    bench = load_omnidocbench(FIXTURE)
    texts = {omnidocbench.image_name(p): ground_truth_markdown(p) for p in bench.pages}
    if predictions == "degraded":
        texts = {name: text.replace("e", "a")[: len(text) * 2 // 3]
                 for name, text in texts.items()}
    samples = omnidocbench.samples(bench, "base")
    specs = with_output_health(omnidocbench.METRICS)
    records = score_samples(samples, [InferenceResult(text=texts[s.sample_id]) for s in samples],
                            omnidocbench.scorer(), specs)
    ours = aggregate(records, specs)
    official = evaluate_pages(bench.pages, texts.get, bench.page_info()).headline()
    for metric in ("text_block_edit_dist", "display_formula_edit_dist", "table_teds",
                   "table_teds_structure_only", "table_edit_dist", "reading_order_edit_dist"):
        assert ours[metric].value == pytest.approx(official[metric], abs=1e-12), metric
    by_language = aggregate_by(records, omnidocbench.language, specs)
    assert by_language["overall_edit[english]"].value == pytest.approx(
        official["overall_EN"], abs=1e-12)


def overlap_cdm(pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
    """A stand-in CDM: the share of the ground truth's characters the prediction has."""
    def f1(gt: str, pred: str) -> float:
        common = sum(min(gt.count(c), pred.count(c)) for c in set(gt))
        return 2 * common / (len(gt) + len(pred)) if gt or pred else 0.0

    return [{"F1_score": f1(gt, pred), "recall": 0.0, "precision": 0.0} for gt, pred in pairs]


@pytest.mark.parametrize("predictions", ["ground truth", "degraded"])
def test_the_v15_gate_figures_equal_the_official_evaluation(predictions):
    """From v1.5 on the gate takes the leaderboard's page means over the whole set; its overall
    is the leaderboard's, unrounded, with the official parts."""
    bench = load_omnidocbench(FIXTURE)
    texts = {omnidocbench.image_name(p): ground_truth_markdown(p) for p in bench.pages}
    if predictions == "degraded":
        texts = {name: text.replace("e", "a").replace("x", "y")[: len(text) * 3 // 4]
                 for name, text in texts.items()}
    samples = omnidocbench.samples(bench, "base", "1.5")
    specs = with_output_health(omnidocbench.metrics("1.5"))
    records = score_samples(samples, [InferenceResult(text=texts[s.sample_id]) for s in samples],
                            omnidocbench.scorer("1.5", overlap_cdm), specs)
    ours = aggregate(records, specs)
    official = evaluate_pages(bench.pages, texts.get, bench.page_info(), version="1.5",
                              formula_cdm=overlap_cdm).result
    text = official["text_block"]["all"]["Edit_dist"]["ALL_page_avg"]
    cdm = official["display_formula"]["page"]["CDM"]["ALL"]
    teds = official["table"]["page"]["TEDS"]["ALL"]
    assert ours["text_block_edit_dist"].value == pytest.approx(text, abs=1e-12)
    assert ours["display_formula_cdm"].value == pytest.approx(cdm, abs=1e-12)
    assert ours["table_teds"].value == pytest.approx(teds, abs=1e-12)
    assert ours["overall"].value == pytest.approx(
        ((1 - text) * 100 + cdm * 100 + teds * 100) / 3, abs=1e-9)
    assert 0 < cdm <= 1
    edits = [official[e]["all"]["Edit_dist"]["ALL_page_avg"]
             for e in ("text_block", "display_formula", "table", "reading_order")]
    assert ours["overall_edit"].value == pytest.approx(sum(edits) / 4, abs=1e-12)


def test_versions_scored_and_their_keys():
    bench = load_omnidocbench(FIXTURE)
    assert omnidocbench.scoring_versions(bench, None) == ("1.0", "1.5", "1.6")
    assert omnidocbench.scoring_versions(bench, ("1.5",)) == ("1.5",)
    assert omnidocbench.parameter("base", "1.0", bench) == "mode=base"
    assert omnidocbench.parameter("base", "1.5", bench) == "mode=base,scorer=v1.5"
    for pages, version in ((1355, "1.5"), (1651, "1.6")):
        release = type(bench)(FIXTURE, [bench.pages[0]] * pages)
        assert omnidocbench.scoring_versions(release, None) == (version,)
        assert omnidocbench.parameter("base", version, release) == "mode=base"
        assert omnidocbench.parameter("base", "1.0", release) == "mode=base,scorer=v1.0"
    with pytest.raises(omnidocbench.VersionChoiceError, match=r"v1\.7 cannot be scored here"):
        omnidocbench.scoring_versions(bench, ("1.7",))


def test_deepseek_post_processing():
    raw = ("<|ref|>title<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\n# Title\n\n\n\n"
           "<|ref|>image<|/ref|><|det|>[[5, 6, 7, 8]]<|/det|>\n\n\n<center>Figure</center>\n"
           "\\[ E = mc^2 \\quad (1) \\]\n\\[\na \\quad (2)\n\\]")
    assert omnidocbench.deepseek_markdown(raw) == (
        "\n# Title\n\nFigure\n\\[E = mc^2\\]\n\\[\na \\quad (2)\n\\]")
    assert omnidocbench.deepseek_markdown("plain <center>x</center>") == (
        "plain <center>x</center>")  # no grounding element: nothing else changes
