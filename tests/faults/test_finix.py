"""Fault battery, FinixDocBench CLI: missing or empty folders, undecodable predictions, broken
and huge HTML tables, an output folder it may not write to. Each case asserts the exact outcome.
(Missing/empty ground truth, binary and 20 MB predictions: tests/commands/test_finix.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.support.subprocess_runs import REPO

pytestmark = pytest.mark.faults

GT_PAGE = "# Results\n\n<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>\n"


def finix(
    gt: Path, pred: Path, output: Path, *extra: str, prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "evalsuite.finix", "--gt_dir", str(gt), "--pred_dir",
         str(pred), "--output_json", str(output), "--workers", "1", *extra],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )


def folders(root: Path, pages: dict[str, str | bytes]) -> tuple[Path, Path]:
    """``gt/`` with GT_PAGE under every name of ``pages`` and ``pred/`` with ``pages``."""
    gt, pred = root / "gt", root / "pred"
    gt.mkdir(), pred.mkdir()
    for name, content in pages.items():
        (gt / name).write_text(GT_PAGE, encoding="utf-8")
        if isinstance(content, bytes):
            (pred / name).write_bytes(content)
        else:
            (pred / name).write_text(content, encoding="utf-8")
    return gt, pred


def assert_failed_with(done: subprocess.CompletedProcess[str], output: Path, message: str) -> None:
    """Exit 1, one ``error:`` line naming the problem, the same error in the JSON."""
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert json.loads(output.read_text(encoding="utf-8")) == {
        "success": False, "error": done.stderr.removeprefix("error: ").strip()
    }


def test_missing_prediction_folder_is_named(tmp_path: Path) -> None:
    gt, pred = folders(tmp_path, {"a.md": "x"})
    shutil.rmtree(pred)
    output = tmp_path / "out.json"
    assert_failed_with(finix(gt, pred, output), output, f"pred_dir does not exist: {pred}")


def test_empty_prediction_folder_lists_every_missing_page(tmp_path: Path) -> None:
    gt, pred = folders(tmp_path, {"a.md": "x", "b.md": "y"})
    for page in pred.iterdir():
        page.unlink()
    output = tmp_path / "out.json"
    done = finix(gt, pred, output)
    assert_failed_with(done, output, "a.md")
    assert "b.md" in done.stderr
    # told to go on, the missing pages are scored as empty pages, not dropped
    done = finix(gt, pred, output, "--allow_name_mismatch")
    assert done.returncode == 0, done.stderr
    assert "2 missing" in done.stdout
    result = json.loads(output.read_text(encoding="utf-8"))
    assert {page["status"] for page in result["pages"].values()} == {"missing"}
    assert result["metrics"]["num_samples"] == 2 and result["metrics"]["table_TEDS"] == 0.0


def test_non_utf8_prediction_is_a_failed_page_naming_the_byte(tmp_path: Path) -> None:
    gt, pred = folders(tmp_path, {"latin1.md": "Caf\xe9 r\xe9sum\xe9".encode("latin-1"),
                                  "fine.md": GT_PAGE})
    output = tmp_path / "out.json"
    done = finix(gt, pred, output)
    assert done.returncode == 0 and "1 failed" in done.stdout, done.stderr
    pages = json.loads(output.read_text(encoding="utf-8"))["pages"]
    assert pages["latin1.md"]["status"] == "failed"
    assert pages["latin1.md"]["reason"] == (
        f"{pred / 'latin1.md'} is not valid UTF-8 (byte 3: invalid continuation byte)"
    )
    assert pages["latin1.md"]["table_TEDS"] == 0.0  # scored as an empty page, not skipped
    assert pages["fine.md"]["status"] == "ok" and pages["fine.md"]["table_TEDS"] == 100.0


def html_table(rows: int, columns: int, cell: Callable[[int, int], str]) -> str:
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(r, c)}</td>" for c in range(columns)) + "</tr>"
        for r in range(rows)
    )
    return f"<table>{body}</table>"


def spanned(attributes: str) -> str:
    """A two-row table whose first cell carries ``attributes``."""
    return f"<table><tr><td {attributes}>a</td><td>b</td></tr><tr><td>c</td></tr></table>"


MALFORMED_TABLES = {
    "unclosed.md": "<table><tr><td>a<td>b<tr><td>c",
    "rowspan_zero.md": spanned('rowspan="0"'),
    "rowspan_negative.md": spanned('rowspan="-3" colspan="-1"'),
    "rowspan_huge.md": spanned('rowspan="1000000000" colspan="1000000000"'),
    "span_not_a_number.md": spanned('rowspan="x" colspan="2.5"'),
    "cells_10k.md": html_table(100, 100, lambda r, c: f"{r}.{c}"),
}


def test_malformed_and_huge_tables_are_scored_not_crashed(tmp_path: Path) -> None:
    gt, pred = folders(tmp_path, {name: f"# Results\n\n{table}\n"
                                  for name, table in MALFORMED_TABLES.items()})
    output = tmp_path / "out.json"
    done = finix(gt, pred, output)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert f"finix: {len(MALFORMED_TABLES)} pages in" in done.stdout
    pages = json.loads(output.read_text(encoding="utf-8"))["pages"]
    assert set(pages) == set(MALFORMED_TABLES)
    for name, page in pages.items():
        assert page["status"] == "ok", name
        assert 0.0 <= page["table_TEDS"] < 100.0, name  # a table, matched and scored
        assert page["text_block_Edit_dist"] == 0.0, name  # the heading still matches
    # an unclosed table parses (its cells are recovered) but is not a valid prediction
    assert pages["unclosed.md"]["valid_prediction"] is False
    assert pages["cells_10k.md"]["valid_prediction"] is True


def test_table_above_the_cell_limit_scores_zero(tmp_path: Path) -> None:
    gt, pred = folders(tmp_path, {"big.md": html_table(100, 100, lambda r, c: "x")})
    (gt / "big.md").write_text(html_table(100, 100, lambda r, c: "x"), encoding="utf-8")
    output = tmp_path / "out.json"
    done = finix(gt, pred, output, "--max_table_cells", "9999")
    assert done.returncode == 0, done.stderr
    page = json.loads(output.read_text(encoding="utf-8"))["pages"]["big.md"]
    assert page["status"] == "ok" and page["table_TEDS"] == 0.0  # 10,000 cells > 9,999


def without_root_override() -> list[str]:
    """A command prefix under which permission bits hold: as root, drop the capabilities that
    override them (setpriv, util-linux); nothing otherwise."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root, this test needs setpriv (util-linux) to honour read-only")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def test_read_only_output_folder_is_an_error_and_keeps_the_old_file(tmp_path: Path) -> None:
    gt, pred = folders(tmp_path, {"a.md": GT_PAGE})
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    previous = out_dir / "out.json"
    previous.write_text('{"earlier": "result"}\n', encoding="utf-8")
    out_dir.chmod(0o555)
    try:
        done = finix(gt, pred, previous, prefix=without_root_override())
    finally:
        out_dir.chmod(0o755)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"error: cannot write {previous}: ")
    assert "Permission denied" in done.stderr
    assert previous.read_text(encoding="utf-8") == '{"earlier": "result"}\n'
    assert sorted(path.name for path in out_dir.iterdir()) == ["out.json"]  # no temp file left
