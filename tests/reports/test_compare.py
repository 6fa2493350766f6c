"""``evalsuite compare``: folders of OCR outputs ranked against gt.txt, in text, CSV and HTML."""

from __future__ import annotations

import argparse
import csv
import io
import math
import shutil
from collections import Counter
from pathlib import Path

import pytest

from evalsuite.commands import compare as compare_command
from evalsuite.metrics import edit_precision, word_metrics
from evalsuite.reports import compare
from evalsuite.reports.compare import WordOptions, find_documents, rank_models
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data

FIXTURES = TEST_FIXTURES / "reports"
COMPARE = FIXTURES / "compare"


def run_compare(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    compare_command.add_arguments(parser)
    return compare_command.run(parser.parse_args(list(argv)))


def fixture_documents() -> list[compare.Document]:
    with pytest.warns(UserWarning, match="counted as model"):
        return find_documents(COMPARE)


def per_document(options: WordOptions | None = None) -> dict[str, dict[str, dict[str, float]]]:
    results = rank_models(fixture_documents(), options or WordOptions())
    return {result.model: result.per_document for result in results}


def test_word_scores_match_hand_counts() -> None:
    """doc_a: beta reads "quikc" and repeats "dog" (7 of 9 words match each way); doc_b: alpha
    joins "1,250.00" into "1250" and "00" (7 of its 8 words are among the 9 of the gt)."""
    scores = per_document()
    assert scores["alpha"]["doc_a"]["f1"] == 1.0
    assert scores["beta.1"]["doc_a"]["precision"] == pytest.approx(7 / 9)
    assert scores["beta.1"]["doc_a"]["recall"] == pytest.approx(7 / 9)
    assert scores["alpha"]["doc_b"]["precision"] == pytest.approx(7 / 8)
    assert scores["alpha"]["doc_b"]["recall"] == pytest.approx(7 / 9)
    assert scores["alpha"]["doc_b"]["f1"] == pytest.approx(14 / 17)
    assert scores["beta.1"]["doc_b"]["f1"] == 1.0


def test_word_options_change_what_counts_as_the_same_word() -> None:
    case = per_document(WordOptions(case_sensitive=True))
    assert case["beta.1"]["doc_a"]["precision"] == pytest.approx(6 / 9)  # "The" != "the"
    kept = per_document(WordOptions(ignore_punctuation=False))
    # gt words: invoice, inv-2024-001, total:, 1,250.00, dollars. -- only "invoice" survives
    assert kept["alpha"]["doc_b"]["precision"] == pytest.approx(1 / 7)
    assert kept["alpha"]["doc_b"]["recall"] == pytest.approx(1 / 5)


def test_models_are_ranked_by_mean_f1_over_documents() -> None:
    results = rank_models(fixture_documents(), WordOptions())
    assert [r.model for r in results] == ["alpha", "beta.1"]
    assert results[0].mean["f1"] == pytest.approx((1 + 14 / 17) / 2)
    assert results[1].mean["f1"] == pytest.approx((7 / 9 + 1) / 2)


def test_spellings_of_one_model_are_unified_with_a_warning() -> None:
    with pytest.warns(UserWarning, match="beta_1_out.txt counted as model beta.1"):
        documents = find_documents(COMPARE)
    assert [d.name for d in documents] == ["doc_a", "doc_b"]  # notes/ has no gt.txt
    assert all(set(d.outputs) == {"alpha", "beta.1"} for d in documents)


def test_terminal_output_matches_the_golden_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(FIXTURES)
    assert run_compare("compare") == 0
    captured = capsys.readouterr()
    assert captured.out == (FIXTURES / "compare_expected.txt").read_text("utf-8")
    assert "beta_1_out.txt counted as model beta.1" in captured.err


def test_csv_and_html_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path, html_path = tmp_path / "out" / "ranking.csv", tmp_path / "ranking.html"
    assert run_compare(str(COMPARE), "--csv", str(csv_path), "--html", str(html_path)) == 0
    out = capsys.readouterr().out
    assert f"csv: {csv_path}" in out and f"html: {html_path}" in out

    rows = list(csv.DictReader(io.StringIO(csv_path.read_text("utf-8"))))
    assert [(r["rank"], r["model"], r["documents"]) for r in rows] == [
        ("1", "alpha", "2"), ("2", "beta.1", "2")
    ]
    assert float(rows[0]["f1"]) == pytest.approx((1 + 14 / 17) / 2, abs=1e-15)
    assert {"crr", "edit_precision", "order_wer", "order_bigram_overlap"} <= set(rows[0])

    html = html_path.read_text("utf-8")
    assert html.count('<table class="sortable"') == 3  # ranking + one per document
    assert 'class="medal gold"' in html and 'class="medal silver"' in html
    assert 'id="compare-drill-data"' in html
    assert "https://" not in html and "<link" not in html  # self-contained


def test_a_single_document_folder_is_one_document(tmp_path: Path) -> None:
    shutil.copytree(COMPARE / "doc_a", tmp_path / "doc")
    [document] = find_documents(tmp_path / "doc")
    assert document.name == "doc" and set(document.outputs) == {"alpha", "beta.1"}


def test_unusable_folders_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_compare(str(tmp_path)) == 2
    assert "no gt.txt" in capsys.readouterr().err
    (tmp_path / "gt.txt").write_text("text")
    assert run_compare(str(tmp_path)) == 2
    assert "_out.txt" in capsys.readouterr().err
    (tmp_path / "bad_out.txt").write_bytes(b"\xff\xfe\x00broken")
    with pytest.raises(ValueError, match=r"bad_out\.txt is not UTF-8"):
        find_documents(tmp_path)


def test_real_outputs_of_four_models_on_three_photos() -> None:
    """The OCR Metrics Evaluator's examples: one qwen2.5 file is spelled qwen2.5, the others
    qwen2_5; all four models cover all three documents."""
    folder = shared_data("ocrmetrics_examples")
    with pytest.warns(UserWarning, match="qwen2.5_out.txt counted as model qwen2_5"):
        documents = find_documents(folder)
    results = rank_models(documents, WordOptions())
    assert sorted(r.model for r in results) == ["deepseek", "parseq", "qwen2_5", "qwen3"]
    assert all(len(r.per_document) == 3 for r in results)
    f1s = [r.mean["f1"] for r in results]
    assert f1s == sorted(f1s, reverse=True)

    for result in results:  # the means are plain averages of the per-file metrics
        names = {"qwen2_5": ("qwen2_5", "qwen2.5")}.get(result.model, (result.model,))
        f1, ep = [], []
        for doc in sorted(p for p in folder.iterdir() if p.is_dir()):
            [path] = [doc / f"{n}_out.txt" for n in names if (doc / f"{n}_out.txt").exists()]
            prediction, truth = path.read_text("utf-8"), (doc / "gt.txt").read_text("utf-8")
            f1.append(word_metrics(prediction, truth)["f1"])
            ep.append(edit_precision(prediction, truth))
        assert result.mean["f1"] == pytest.approx(math.fsum(f1) / 3, abs=1e-12)
        assert result.mean["edit_precision"] == pytest.approx(math.fsum(ep) / 3, abs=1e-12)


def write_files(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, "utf-8")


TRUTHS = {"a": "the quick brown fox jumps", "b": "invoice total 12 dollars"}
OUTPUTS = {
    "alpha": {"a": "the quick brown fox jumps", "b": "invoice total 13 dollars"},
    "beta": {"a": "the quik brown fox", "b": "invoice total 12 dollars"},
}


def test_both_layouts_of_the_same_texts_give_the_same_ranking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    per_document, per_model = tmp_path / "per_document", tmp_path / "per_model"
    for doc, truth in TRUTHS.items():
        write_files(per_document / doc, {"gt.txt": truth})
        write_files(per_model, {f"gt/{doc}.txt": truth})
        for model, texts in OUTPUTS.items():
            write_files(per_document / doc, {f"{model}_out.txt": texts[doc]})
            write_files(per_model, {f"{model}/{doc}.txt": texts[doc]})
    assert compare.detect_layout(per_document) == compare.PER_DOCUMENT
    assert compare.detect_layout(per_model) == compare.FOLDER_PER_MODEL
    ranked = [
        [(r.model, r.per_document) for r in rank_models(find_documents(folder), WordOptions())]
        for folder in (per_document, per_model)
    ]
    assert ranked[0] == ranked[1]
    # the metric library on each file is the oracle for the per-document scores
    for model, scores in ranked[1]:
        for doc, truth in TRUTHS.items():
            assert scores[doc]["f1"] == word_metrics(OUTPUTS[model][doc], truth)["f1"]

    assert run_compare(str(per_model)) == 0
    assert "layout: ground-truth folder + one folder per model" in capsys.readouterr().out
    assert run_compare(str(per_document)) == 0
    assert "layout: gt.txt + <model>_out.txt" in capsys.readouterr().out


def test_folder_per_model_pairs_files_by_stem_and_says_what_it_left_out(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "ground_truth/p1.md": "# Title\n\nbody text", "ground_truth/p2.txt": "second page",
        "ground_truth/p3.txt": "nobody read this",
        "model-x/p1.md": "# Title\n\nbody text", "model-x/p2.txt": "second page",
        "model_y/p2.txt": "second", "model_y/stray.txt": "no truth for me",
    })
    with pytest.warns(UserWarning) as caught:
        documents = find_documents(tmp_path)
    messages = " | ".join(str(w.message) for w in caught)
    assert "p3.txt: no model folder has p3.txt, skipped" in messages
    assert "model_y/stray.txt: no ground truth stray.txt in ground_truth/, ignored" in messages
    assert [(d.name, sorted(d.outputs)) for d in documents] == [
        ("p1", ["model-x"]), ("p2", ["model-x", "model_y"])
    ]
    assert documents[0].ground_truth == "# Title\n\nbody text"


def test_a_folder_in_neither_layout_names_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(tmp_path, {"model_a/doc.txt": "text"})
    assert run_compare(str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "no gt.txt" in err and "ground-truth folder (gt/, gts/" in err
    write_files(tmp_path, {"gt/doc.txt": "text", "gts/doc.txt": "text"})
    assert run_compare(str(tmp_path)) == 2
    assert "several ground-truth folders (gt, gts)" in capsys.readouterr().err
    (tmp_path / "gts" / "doc.txt").unlink()
    (tmp_path / "gts").rmdir()
    write_files(tmp_path, {"model_a/doc.md": "same document twice"})
    assert run_compare(str(tmp_path)) == 2
    assert "doc.md and doc.txt are one document" in capsys.readouterr().err


LOOP = "the same three words " * 40  # 40 repeats of "the same three" > 30


def test_empty_and_degenerate_outputs_are_flagged_in_table_csv_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(tmp_path / "docs", {
        "d1/gt.txt": "a short ground truth", "d1/good_out.txt": "a short ground truth",
        "d1/loopy_out.txt": LOOP, "d1/blank_out.txt": " \n",
        "d2/gt.txt": "another page", "d2/good_out.txt": "another page",
        "d2/loopy_out.txt": "another page", "d2/blank_out.txt": "another page",
    })
    html, table = tmp_path / "r.html", tmp_path / "r.csv"
    assert run_compare(str(tmp_path / "docs"), "--html", str(html), "--csv", str(table)) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line for line in out.splitlines() if line[:4].strip().isdigit()}
    assert "  -  " in rows["good"]
    assert "1 empty" in rows["blank"] and "degenerate" not in rows["blank"]
    assert "1 degenerate" in rows["loopy"] and "empty" not in rows["loopy"]
    assert "loopy: degenerate output on d1" in out and "blank: empty output on d1" in out
    assert "repeated more than 30 times" in out

    shares = {r["model"]: r for r in csv.DictReader(io.StringIO(table.read_text("utf-8")))}
    assert float(shares["loopy"]["degenerate_output_rate"]) == 0.5
    assert float(shares["blank"]["empty_output_rate"]) == 0.5
    assert float(shares["good"]["degenerate_output_rate"]) == 0.0

    page = html.read_text("utf-8")
    assert ">1 degenerate<" in page and ">1 empty<" in page  # ranking
    assert ">degenerate<" in page and ">empty<" in page  # the d1 table
    assert "loopy — F1" in page and "— degenerate" in page  # drill-down label


def test_a_loop_at_the_threshold_is_not_flagged() -> None:
    at_limit = "one two three " * 30  # "one two three" occurs exactly 30 times
    scores = compare.score_output(at_limit, "one two three", WordOptions())
    assert scores["degenerate_output_rate"] == 0.0
    over = compare.score_output(at_limit + "one two three", "one two three", WordOptions())
    assert over["degenerate_output_rate"] == 1.0


def test_the_real_deepseek_repetition_loop_is_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DeepSeek-OCR's 32 KB output on the Cymbeline page repeats its lines: flagged."""
    folder = shared_data("ocrmetrics_examples")
    loop = folder / "1e0936a669a69c45" / "deepseek_out.txt"
    lines = [line for line in loop.read_text("utf-8").splitlines() if line.strip()]
    assert loop.stat().st_size > 30_000
    assert Counter(lines).most_common(1)[0][1] > 30  # independent of the n-gram rule

    html = tmp_path / "r.html"
    assert run_compare(str(folder), "--html", str(html)) == 0
    out = capsys.readouterr().out
    assert "deepseek: degenerate output on 1e0936a669a69c45" in out
    [row] = [line for line in out.splitlines() if " deepseek " in line]
    assert "1 degenerate" in row
    assert "deepseek — F1" in html.read_text("utf-8")
    assert "— degenerate" in html.read_text("utf-8")
    with pytest.warns(UserWarning, match="counted as model qwen2_5"):
        documents = find_documents(folder)
    [deepseek] = [r for r in rank_models(documents, WordOptions()) if r.model == "deepseek"]
    assert deepseek.flagged(compare.DEGENERATE) == ["1e0936a669a69c45"]
    assert deepseek.flagged(compare.EMPTY) == []
