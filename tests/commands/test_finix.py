"""The FinixDocBench CLI: documented example output, failures without tracebacks, speed."""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalsuite.commands import finix
from tests.support.paths import REPOSITORY as REPO
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "finix"


def run_cli(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalsuite.finix", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def run_example(output: Path) -> subprocess.CompletedProcess[str]:
    """The documented quick check: the bundled example, names allowed to differ."""
    return run_cli(
        "--gt_dir",
        FIXTURES / "gt",
        "--pred_dir",
        FIXTURES / "pred",
        "--output_json",
        output,
        "--allow_name_mismatch",
    )


def assert_same_json(actual: Any, expected: Any, where: str = "$") -> None:
    """Equal structure and values; floats to 1e-9 relative (the last digits may vary by CPU)."""
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        assert math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12), where
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and list(actual) == list(expected), where
        for key in expected:
            assert_same_json(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same_json(a, e, f"{where}[{index}]")
    else:
        assert actual == expected and type(actual) is type(expected), where


def test_cli_reproduces_the_documented_example_output(tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    done = run_example(output)
    assert done.returncode == 0, done.stderr
    expected = json.loads((FIXTURES / "expected_output.json").read_text(encoding="utf-8"))
    assert_same_json(json.loads(output.read_text(encoding="utf-8")), expected)
    assert "finix: 5 pages in" in done.stdout and "pages/s" in done.stdout
    assert "1 missing, 1 unexpected" in done.stdout
    assert [path.name for path in tmp_path.iterdir()] == ["out.json"]  # no temp file left
    umask = os.umask(0)
    os.umask(umask)
    assert output.stat().st_mode & 0o777 == 0o666 & ~umask  # as a plain open() would create it


def test_expected_output_has_run_eval_keys_and_is_consistent() -> None:
    result = json.loads((FIXTURES / "expected_output.json").read_text(encoding="utf-8"))
    assert result["success"] is True
    assert set(result["metrics"]) == {
        "text_block_Edit_dist",
        "reading_order_Edit_dist",
        "table_TEDS",
        "overall",
        "num_samples",
        "score",
    }
    metrics, pages = result["metrics"], result["pages"]
    assert metrics["score"] == metrics["overall"] and metrics["num_samples"] == len(pages) == 5
    assert set(result["inputs"]) == {
        "gt_files",
        "pred_files",
        "missing_predictions",
        "unexpected_predictions",
    }
    # The dataset numbers are the page means, recomputed here from the per-page results.
    text = sum(page["text_block_Edit_dist"] for page in pages.values()) / 5
    order = sum(page["reading_order_Edit_dist"] for page in pages.values()) / 5
    tables = [page["table_TEDS"] for page in pages.values() if page["table_TEDS"] is not None]
    assert metrics["text_block_Edit_dist"] == pytest.approx(text)
    assert metrics["table_TEDS"] == pytest.approx(sum(tables) / len(tables))
    assert metrics["overall"] == pytest.approx(
        ((1 - text) * 100 + (1 - order) * 100 + sum(tables) / len(tables)) / 3
    )


def test_name_mismatch_fails_with_both_lists_and_no_traceback(tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    done = run_cli(
        "--gt_dir", FIXTURES / "gt", "--pred_dir", FIXTURES / "pred", "--output_json", output
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "page_04.md" in done.stderr and "page_06.md" in done.stderr
    result = json.loads(output.read_text(encoding="utf-8"))
    assert result["success"] is False and "page_04.md" in result["error"]


@pytest.mark.parametrize("case", ["missing_dir", "empty_gt", "non_utf8_gt", "gt_is_file"])
def test_bad_inputs_give_clear_errors(tmp_path: Path, case: str) -> None:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    pred.mkdir()
    (pred / "a.md").write_text("A", encoding="utf-8")
    if case != "missing_dir":
        gt.mkdir()
    if case == "non_utf8_gt":
        (gt / "a.md").write_bytes(b"\xff\xfeA")
    if case == "gt_is_file":
        gt.rmdir()
        gt.write_text("not a folder", encoding="utf-8")
    output = tmp_path / "out.json"
    done = run_cli("--gt_dir", gt, "--pred_dir", pred, "--output_json", output)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    message = {
        "missing_dir": "gt_dir does not exist",
        "empty_gt": "gt_dir has no .md files",
        "non_utf8_gt": "a.md is not valid UTF-8",
        "gt_is_file": "gt_dir is not a directory",
    }[case]
    assert message in done.stderr
    assert json.loads(output.read_text(encoding="utf-8")) == {
        "success": False,
        "error": done.stderr.removeprefix("error: ").strip(),
    }


def test_binary_and_huge_predictions_are_recorded_failed_pages(tmp_path: Path) -> None:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    gt.mkdir(), pred.mkdir()
    for name in ("binary.md", "huge.md", "fine.md"):
        (gt / name).write_text("# Title\n\nSome text.", encoding="utf-8")
    (pred / "binary.md").write_bytes(bytes(range(256)) * 8)
    (pred / "huge.md").write_text("y" * 20_000_000, encoding="utf-8")
    (pred / "fine.md").write_text("# Title\n\nSome text.", encoding="utf-8")
    output = tmp_path / "out.json"
    done = run_cli("--gt_dir", gt, "--pred_dir", pred, "--output_json", output)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "2 failed" in done.stdout
    pages = json.loads(output.read_text(encoding="utf-8"))["pages"]
    assert pages["binary.md"]["status"] == "failed" and "UTF-8" in pages["binary.md"]["reason"]
    assert pages["huge.md"]["status"] == "failed"
    assert "MAX_TOTAL_LENGTH" in pages["huge.md"]["reason"]
    assert pages["fine.md"]["text_block_Edit_dist"] == 0.0


def test_unwritable_output_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    done = run_example(blocker / "out.json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cannot write" in done.stderr


def test_subcommand_of_the_evalsuite_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalsuite.cli import main

    output = tmp_path / "out.json"
    argv = ["finix", "--gt_dir", str(FIXTURES / "gt"), "--pred_dir", str(FIXTURES / "pred")]
    assert (
        main([*argv, "--output_json", str(output), "--allow_name_mismatch", "--workers", "1"]) == 0
    )
    assert "pages/s" in capsys.readouterr().out
    expected = json.loads((FIXTURES / "expected_output.json").read_text(encoding="utf-8"))
    assert_same_json(json.loads(output.read_text(encoding="utf-8")), expected)


def test_safeguard_options_reach_the_evaluator(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    finix.add_arguments(parser)
    output = tmp_path / "out.json"
    args = parser.parse_args(
        [
            "--gt-dir",
            str(FIXTURES / "gt"),
            "--pred-dir",
            str(FIXTURES / "pred"),
            "--output-json",
            str(output),
            "--allow-name-mismatch",
            "--max_table_cells",
            "10",
            "--workers",
            "1",
        ]
    )
    assert finix.run(args) == 0
    pages = json.loads(output.read_text(encoding="utf-8"))["pages"]
    assert pages["page_01.md"]["table_TEDS"] == 0.0  # 15 cells > 10
    assert pages["page_05.md"]["table_TEDS"] == 100.0  # 9 cells
    args.max_pred_items = 0
    assert finix.run(args) == 1
    assert "max_pred_items must be positive" in json.loads(output.read_text())["error"]


def test_cli_module_does_not_import_torch() -> None:
    code = "import sys, evalsuite.finix; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.strip() == "False", done.stderr


# ---------------------------------------------------------------- performance

WORDS = (
    *("the", "group", "revenue", "profit", "margin", "cash", "debt", "share", "dividend"),
    *("board", "report", "year", "growth", "cost", "assets", "liabilities", "equity", "tax"),
    *("interest", "operating", "segment", "market", "customer", "statement"),
)


def pipe_table(rows: list[list[str]]) -> str:
    header = "| A | B | C | D | E |\n|---|---|---|---|---|\n"
    return header + "\n".join("| " + " | ".join(row) + " |" for row in rows)


def synthetic_page(rng: random.Random) -> tuple[str, str]:
    """About two printed pages (~6,500 characters): headings, paragraphs, a list and two 11x5
    tables; the prediction has typos, dropped blocks, two swapped blocks, and in one table of
    ten two merged cells, in another a row whose cells are shifted (which needs APTED)."""
    blocks: list[str] = []
    tables: list[str] = []  # the predicted tables, in page order
    for _ in range(2):
        blocks.append(f"## Section {rng.randint(1, 99)}")
        blocks += [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "." for _ in range(8)
        ]
        blocks.append("\n".join(f"- {' '.join(rng.choices(WORDS, k=8))}" for _ in range(4)))
        rows = [[f"{rng.randint(0, 99999) / 10:.1f}" for _ in range(5)] for _ in range(10)]
        blocks.append(pipe_table(rows))
        if rng.random() < 0.1:
            rows[3] = rows[3][1:] + rows[3][:1]
        tables.append(pipe_table(rows))
    predicted = []
    for block in blocks:
        if block.startswith("| A"):
            block = tables.pop(0)
        if rng.random() < 0.05:
            continue
        if block.startswith("| A") and rng.random() < 0.1:
            block = block.replace(" | ", " ", 1)  # merge two header cells
        chars = list(block)
        for _ in range(len(chars) // 60):
            index = rng.randrange(len(chars))
            if chars[index] not in "|\n-#":
                chars[index] = rng.choice("abcdefgh0123")
        predicted.append("".join(chars))
    predicted[1], predicted[2] = predicted[2], predicted[1]
    return "\n\n".join(blocks), "\n\n".join(predicted)


@pytest.mark.slow
def test_three_hundred_two_page_documents_in_under_a_minute(tmp_path: Path) -> None:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    gt.mkdir(), pred.mkdir()
    rng = random.Random(2024)
    for index in range(300):
        gt_text, pred_text = synthetic_page(rng)
        (gt / f"page_{index:03d}.md").write_text(gt_text, encoding="utf-8")
        (pred / f"page_{index:03d}.md").write_text(pred_text, encoding="utf-8")
    output = tmp_path / "out.json"
    start = time.perf_counter()
    done = run_cli(
        "--gt_dir", gt, "--pred_dir", pred, "--output_json", output, "--workers", "2", timeout=300
    )
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert elapsed < 60, f"300 pages took {elapsed:.1f} s"
    assert "finix: 300 pages in" in done.stdout and "pages/s" in done.stdout
    metrics = json.loads(output.read_text(encoding="utf-8"))["metrics"]
    assert 0 < metrics["text_block_Edit_dist"] < 0.2 and 50 < metrics["table_TEDS"] < 100
