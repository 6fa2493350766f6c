"""Nothing raw on the terminal: model output, ground truth and file names that the commands and
the pytest plugin print show their control characters escaped (``\\x1b`` visible, not acted
on); JSON keeps the text as it is. The ``evalsuite ab`` and gate-failure paths are checked on a
hostile answer in tests/reports/test_ab.py (its degraded candidate answers with one)."""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalsuite.cli import main
from evalsuite.commands import data as data_command
from evalsuite.commands import trend as trend_command
from evalsuite.plugin import bench as bench_plugin
from evalsuite.records.history import append_history
from evalsuite.records.metadata import RunMetadata
from evalsuite.records.model import BenchmarkRecord, MetricSummary
from evalsuite.textformat import format_table, shorten, terminal_text
from tests.support.paths import TEST_FIXTURES

EVERY_CONTROL = "".join(chr(code) for code in (*range(0x20), *range(0x7F, 0xA0)))
HOSTILE = "\x1b[2J\x1b]0;PWNED\x07\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\\x9b31m"
"""Clears the screen, retitles the window, plants an OSC-8 link, and a one-byte C1 CSI."""
PLUGIN_DIR = Path(bench_plugin.__file__).parent
OLMOCR_BENCH = TEST_FIXTURES / "olmocr_bench" / "bench1"


def reference_escape(text: str, kept: str = "\n\t") -> str:
    """Character by character from Unicode's own class: every ``Cc`` character (C0, DEL, C1)
    not in ``kept`` as ``\\xNN``."""
    return "".join(
        f"\\x{ord(ch):02x}" if unicodedata.category(ch) == "Cc" and ch not in kept else ch
        for ch in text
    )


def raw_controls(text: str, kept: str = "\n") -> list[str]:
    return [ch for ch in text if unicodedata.category(ch) == "Cc" and ch not in kept]


texts = st.text(st.characters(codec=None, exclude_categories=("Cs",)) | st.sampled_from(
    EVERY_CONTROL), max_size=60)


@given(texts)
def test_terminal_text_escapes_every_control_but_newline_and_tab(text: str) -> None:
    shown = terminal_text(text)
    assert shown == reference_escape(text)
    assert not raw_controls(shown, kept="\n\t")
    assert terminal_text(shown) == shown  # idempotent: a second pass finds nothing


@given(texts, st.integers(min_value=2, max_value=100))
def test_a_one_line_quote_has_no_control_at_all(text: str, limit: int) -> None:
    quoted = shorten(text, limit)
    assert not raw_controls(quoted, kept="")
    assert len(quoted) <= limit
    if len(reference_escape(text)) <= limit and not any(ch.isspace() for ch in text):
        assert quoted == reference_escape(text)


def test_every_c0_and_c1_control_is_visible_in_a_quote_and_a_table() -> None:
    quoted = shorten("a" + EVERY_CONTROL + "b", 1000)
    layout = {"\t", "\n", "\x0b", "\x0c", "\r"}  # folded to one space, as every whitespace run
    for ch in EVERY_CONTROL:
        assert (f"\\x{ord(ch):02x}" in quoted) == (ch not in layout), repr(ch)
    table = format_table(["name", "n"], [[f"x{HOSTILE}", "1"], ["y", "22"]], align="lr")
    assert not raw_controls(table)
    rows = table.splitlines()
    assert len({len(row) for row in rows}) == 1, table  # widths measured on what is shown


def test_every_test_failure_of_the_plugin_goes_through_the_escaping_helper() -> None:
    """The plugin fails tests with messages that quote samples (a gate's worst samples, an
    engine's error): only ``bench._fail`` may call ``pytest.fail``, and it escapes."""
    callers = []
    for path in PLUGIN_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                for call in ast.walk(node):
                    if isinstance(call, ast.Call) and ast.unparse(call.func) == "pytest.fail":
                        callers.append((path.name, node.name))
    assert callers == [("bench.py", "_fail")]
    with pytest.raises(pytest.fail.Exception) as failed:
        bench_plugin._fail(f"s1: edit_precision=0.1; expected x; got {HOSTILE}\nnext line")
    assert not raw_controls(failed.value.msg) and "\\x1b[2J" in failed.value.msg
    assert failed.value.msg.endswith("\nnext line")


def test_score_prints_a_hostile_test_text_and_id_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = tmp_path / "tests"
    (tests / "pdfs").mkdir(parents=True)
    shutil.copy(OLMOCR_BENCH / "pdfs" / "blank.pdf", tests / "pdfs" / "b1.pdf")
    line = {"pdf": "b1.pdf", "page": 1, "id": f"t{HOSTILE}", "type": "present",
            "text": f"needle{HOSTILE}"}
    (tests / "a.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    predictions = tmp_path / "pred"
    predictions.mkdir()
    (predictions / "b1_pg1_repeat1.md").write_text("a page without it\n", encoding="utf-8")
    assert main(["score", "olmocr-bench", "--tests", str(tests), "--pred",
                 str(predictions)]) == 0
    out = capsys.readouterr().out
    assert "1 failed test" in out and not raw_controls(out)
    assert "\\x1b]0;PWNED\\x07" in out and "\\x9b31m" in out
    assert main(["score", "olmocr-bench", "--tests", str(tests), "--pred", str(predictions),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)  # JSON keeps the text as it is
    assert result["tests"][f"t{HOSTILE}"]["passed"] is False


def test_trend_shows_a_hostile_engine_label_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "history.jsonl"
    for day, value in ((1, 0.9), (2, 0.8)):
        meta = RunMetadata(run_id=f"run{day}", created_utc=f"2025-11-0{day}T00:00:00Z")
        record = BenchmarkRecord("fox", f"engine{HOSTILE}", "mode=tiny",
                                 {"edit_precision": MetricSummary(value, 10, value - 0.05,
                                                                  value + 0.05)})
        append_history(history, meta, [record])
    parser = argparse.ArgumentParser()
    trend_command.add_arguments(parser)
    for extra in ([], ["--all"]):
        assert trend_command.run(parser.parse_args(["--history", str(history), "--golden-dir",
                                            str(tmp_path), *extra])) == 0
        out = capsys.readouterr().out
        assert "engine\\x1b[2J" in out and not raw_controls(out), out


def test_data_list_shows_a_hostile_folder_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / f"data{HOSTILE.replace('/', '_')}"
    root.mkdir()
    parser = argparse.ArgumentParser()
    data_command.add_arguments(parser)
    assert data_command.run(parser.parse_args(["list", "--data-dir", str(root)])) == 0
    out = capsys.readouterr().out
    assert re.search(r"data folder: .*data\\x1b\[2J", out) and not raw_controls(out), out
