"""olmOCR-bench's test types against the official code: every verdict and explanation of the
cases ``tests/fixtures/olmocr_bench/gen_cases.py`` recorded by running olmocr 0.4.27's
``olmocr.bench.tests`` (1,641 tests on generated pages, their normalisation, table parsing and
repetition helpers), plus laws against slow independent references."""

from __future__ import annotations

import gzip
import json
import re
import time
from collections import Counter
from functools import cache
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.cli import main
from evalsuite.datasets.olmocr_bench import load_olmocr_bench
from evalsuite.errors import DatasetFormatError
from evalsuite.metrics.olmocr_bench import bootstrap_ci, score_predictions
from evalsuite.metrics.olmocr_tables import html_tables, markdown_tables
from evalsuite.metrics.olmocr_tests import (
    OLMOCR_VERSION,
    BaselineTest,
    TestDefinitionError,
    normalize_text,
    parse_test,
    trailing_repeats,
)
from evalsuite.render.katex import Glyph, RenderedEquation, renders_match
from tests.support.paths import TEST_FIXTURES

CASES = TEST_FIXTURES / "olmocr_bench" / "release_cases.json.gz"


@cache
def reference() -> dict[str, Any]:
    with gzip.open(CASES, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def cases_of(group: str) -> list[dict[str, Any]]:
    return [case for case in reference()["cases"] if case["group"] == group]


GROUPS = sorted({case["group"] for case in reference()["cases"]})


def test_the_cases_are_the_release_this_module_reproduces() -> None:
    meta = reference()["meta"]
    assert meta["versions"]["olmocr"] == OLMOCR_VERSION
    assert len(reference()["cases"]) == 1641
    assert len(cases_of("math")) == 65


@pytest.mark.parametrize(
    "group", [pytest.param(g, marks=pytest.mark.browser) if g == "math" else g for g in GROUPS]
)
def test_verdicts_and_explanations_equal_the_official_code(group: str) -> None:
    mismatches = []
    for case in cases_of(group):
        official_error = case["construct_error"]
        try:
            test = parse_test(case["test"])
        except TestDefinitionError as error:
            official_message = official_error and official_error.partition(": ")[2]
            if not official_error:
                mismatches.append((case["id"], "refused", str(error)))
            elif official_error.startswith("ValidationError") and str(error) != official_message:
                mismatches.append((case["id"], official_error, str(error)))
            continue
        if official_error:
            mismatches.append((case["id"], official_error, "accepted"))
            continue
        try:
            verdict = test.run(case["candidate"])
        except ValueError as error:
            if not case["run_error"]:
                mismatches.append((case["id"], "ran", repr(error)))
            continue
        official = (case["passed"], case["explanation"])
        if (verdict.passed, verdict.explanation) != official:
            mismatches.append((case["id"], official, (verdict.passed, verdict.explanation)))
    assert mismatches == [], f"{len(mismatches)} differ, e.g. {mismatches[:3]}"


def test_normalize_text_equals_the_official_function() -> None:
    for item in reference()["helpers"]["normalize_text"]:
        assert normalize_text(item["input"]) == item["output"], item["input"]


def test_trailing_repeats_equal_the_official_detector() -> None:
    for item in reference()["helpers"]["repeat_detector"]:
        assert trailing_repeats(item["input"], item["max_ngram_size"]) == item["ngram_repeats"]


def table_record(table: Any) -> dict[str, Any]:
    return {
        "data": table.grid,
        "header_rows": sorted(table.header_rows),
        "header_cols": sorted(table.header_cols),
        "col_headers": {str(k): [list(h) for h in v] for k, v in table.col_headers.items()},
        "row_headers": {str(k): [list(h) for h in v] for k, v in table.row_headers.items()},
    }


def official_record(item: dict[str, Any]) -> dict[str, Any]:
    return {key: item[key] for key in ("data", "header_rows", "header_cols", "col_headers",
                                       "row_headers")}


def test_table_parsing_equals_the_official_parsers() -> None:
    documents = reference()["helpers"]["table_parsing"]
    assert Counter(bool(d["markdown"]) + 2 * bool(d["html"]) for d in documents) == {
        1: 9, 2: 11, 3: 1, 0: 1
    }
    for document in documents:
        content = document["content"]
        assert [table_record(t) for t in markdown_tables(content)] == [
            official_record(t) for t in document["markdown"]
        ], document["doc"]
        if isinstance(document["html"], dict):  # the official parser raised
            with pytest.raises(ValueError, match=re.escape(document["html"]["error"][12:])):
                html_tables(content)
            continue
        assert [table_record(t) for t in html_tables(content)] == [
            official_record(t) for t in document["html"]
        ], document["doc"]


# ---------------------------------------------------------------- laws, independent references


def slow_trailing_repeats(text: str, max_size: int) -> list[int]:
    """Reference: the largest k such that the text (whitespace runs as one space) ends in k
    copies of its last n characters, by trying every k."""
    text = " ".join(re.split(r"\s+", text)) if text else text
    counts = []
    for size in range(1, max_size + 1):
        if len(text) < size:
            counts.append(0)
            continue
        tail = text[-size:]
        counts.append(max(k for k in range(1, len(text) // size + 1) if text.endswith(tail * k)))
    return counts


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \n", max_size=40), st.integers(1, 6))
def test_trailing_repeats_equal_a_brute_force_count(text: str, max_size: int) -> None:
    assert trailing_repeats(text, max_size) == slow_trailing_repeats(text, max_size)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab*_<>/ibr\n\t —’", max_size=30))
def test_normalize_text_is_idempotent_on_plain_text_and_leaves_no_whitespace_runs(text: str):
    once = normalize_text(text)
    # whitespace runs collapse before tags and emphasis markers go (the official order), so a
    # removed "<b>" between spaces leaves two (hypothesis found ' <b> ' -> '  ')
    assert ("  " not in once.replace("*", "").replace("_", "")
            or "*" in text or "_" in text or "<" in text)
    assert not re.search(r"\s\s", once) or "*" in text or "_" in text or "<" in text
    if not re.search(r"[*_<]", text):
        assert normalize_text(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab1 ", min_size=1, max_size=20), st.integers(0, 20))
def test_blank_page_check_counts_alphanumeric_characters(text: str, limit: int) -> None:
    test = BaselineTest(pdf="p.pdf", page=1, id="t", type="baseline", max_length=limit)
    assert test.run(text).passed == (sum(c.isalnum() for c in text) <= limit)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"type": "present", "pdf": "a.pdf", "page": 1, "id": "x", "text": "a", "colour": 1},
         "unexpected field 'colour'"),
        ({"type": "order", "pdf": "a.pdf", "page": 1, "id": "x", "before": "a"},
         "needs the field 'after'"),
        ({"type": "table", "pdf": "a.pdf", "page": 1, "id": "x", "cell": "a", "max_diffs": 1.0},
         "Max diffs must be positive number or 0"),
        ({"type": "colour", "pdf": "a.pdf", "page": 1, "id": "x"}, "Unknown test type: colour"),
        ({"type": "present", "pdf": "a.pdf", "page": 1, "id": "x", "text": None},
         "'text' of a present test must be a string, got NoneType"),
        ({"type": "table", "pdf": "a.pdf", "page": 1, "id": "x", "cell": "a", "up": 3},
         "'up' of a table test must be a string, got int"),
    ],
)
def test_bad_test_lines_are_refused_with_the_reason(line: dict[str, Any], message: str) -> None:
    with pytest.raises(TestDefinitionError, match=message):
        parse_test(line)


def rendered(*spans: tuple[str, float, float], mathml: str | None = None) -> RenderedEquation:
    """Spans (text, x, y), each character 10 px wide and 20 px high; unless given, a MathML
    naming the spans, which no other layout's contains, so that only the spans decide."""
    if mathml is None:
        mathml = f"<math><mtext>{escape(repr(spans))}</mtext></math>"
    return RenderedEquation(
        mathml, tuple(Glyph(text, x, y, 10.0 * len(text), 20.0) for text, x, y in spans)
    )


@pytest.mark.parametrize(("shift", "matches"), [(0.0, True), (5.0, True), (5.5, False)])
def test_span_matching_needs_each_neighbour_within_five_pixels(shift: float, matches: bool):
    # reference: "a" with "b" to its right; hypothesis: the same with "b" moved down by shift
    reference = rendered(("ab", 0.0, 0.0))
    hypothesis = rendered(("a", 0.0, 0.0), ("b", 10.0, shift))
    assert renders_match(reference, hypothesis) is matches


def test_span_matching_maps_characters_one_to_one_and_ignores_extra_neighbours() -> None:
    fraction = rendered(("x", 0.0, 0.0), ("y", 0.0, 30.0), mathml="<math><mi>f</mi></math>")
    assert renders_match(rendered(("x", 0.0, 0.0)), fraction)  # extra neighbours are fine
    assert not renders_match(fraction, rendered(("xy", 0.0, 0.0)))  # y is not below x
    assert not renders_match(rendered(("xx", 0.0, 0.0)), rendered(("x", 0.0, 0.0)))
    # a zero-width space takes no character; MathML containment wins before any span
    assert renders_match(rendered(("\u200b", 0.0, 0.0), ("q", 0.0, 0.0), mathml="<math/>"),
                         rendered(("q", 9, 9), mathml="<math><mi>p</mi></math>"))
    semantics = "<math><semantics>{}<annotation>{}</annotation></semantics></math>"
    assert renders_match(
        rendered(("z", 0, 0), mathml=semantics.format("<mi>z</mi>", "z")),
        rendered(mathml=semantics.format("<mrow><mi>z</mi><mo>+</mo></mrow>", "z+")),
    )


# ---------------------------------------------------------------- whole benchmark folders

BENCH = TEST_FIXTURES / "olmocr_bench" / "bench1"


def official_runs() -> list[dict[str, Any]]:
    return reference()["benchmarks"]["runs"]


def test_bootstrap_interval_equals_the_official_function_draw_for_draw() -> None:
    for item in reference()["helpers"]["bootstrap_ci_seeded"]:
        interval = bootstrap_ci(item["scores"], item["splits"], n_bootstrap=item["n_bootstrap"],
                                ci_level=item["ci_level"], rng=np.random.RandomState(item["seed"]))
        assert interval == (item["lower"], item["upper"])
    for run in official_runs():  # one global generator seeded 0, calls in a row
        rng = np.random.RandomState(0)
        for call in run["log"]["ci_calls"]:
            interval = bootstrap_ci(call["test_scores"], call["splits"],
                                    n_bootstrap=call["n_bootstrap"], ci_level=call["ci_level"],
                                    rng=rng)
            assert interval == tuple(call["result"])


@pytest.mark.browser  # the fixture holds a math test
@pytest.mark.parametrize("candidate", ["candA", "candD"])
def test_a_complete_candidate_scores_as_the_official_benchmark(candidate: str) -> None:
    official = official_runs()[0]["log"]["evaluate_candidate"][candidate]
    bench = load_olmocr_bench(BENCH)
    official_ids = sorted(t[0] for t in official["all_tests_order"])
    assert sorted(item.test.id for item in bench.tests) == official_ids
    scores = score_predictions(bench.tests, bench.pdfs, BENCH / candidate)
    assert scores.errors == [] and scores.missing_pages == []
    assert {o.id: {"passed": o.passed, "explanation": o.explanation} for o in scores.outcomes} == {
        test_id: {"passed": r["passed"], "explanation": r["explanation"]}
        for test_id, r in official["per_test"].items()
    }
    stdout = official_runs()[0]["stdout"]
    block = stdout[stdout.index(f"{candidate:20s} : Average Score"):]
    assert f"Average Score: {scores.overall * 100:0.1f}%" in block.splitlines()[0]
    for name, rate in scores.per_type.items():
        assert f"    {name:8s}: {rate * 100:0.1f}% average pass rate" in block
    for name, rate in scores.per_category.items():
        assert re.search(rf"{re.escape(name)}\s+: {rate * 100:0.1f}% ", block), name


@pytest.mark.browser
@pytest.mark.parametrize("candidate", ["candB", "candC"])
def test_missing_pages_fail_their_tests_and_the_candidate(candidate: str) -> None:
    bench = load_olmocr_bench(BENCH)
    scores = score_predictions(bench.tests, bench.pdfs, BENCH / candidate)
    assert scores.missing_pages and scores.to_json()["status"] == "FAILED (errors)"
    missing = [o for o in scores.outcomes if o.explanation == "Missing MD files"]
    assert missing and all(not o.passed for o in missing)
    assert {f"{o.pdf} page {o.page}" for o in missing} == set(scores.missing_pages)
    assert "FAILED (errors)" in official_runs()[0]["stdout"].split(f"{candidate:20s} :")[1][:60]


def test_bench_layout_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(DatasetFormatError, match="no pdfs/ folder"):
        load_olmocr_bench(tmp_path)
    (tmp_path / "pdfs").mkdir()
    with pytest.raises(DatasetFormatError, match="no PDF under"):
        load_olmocr_bench(tmp_path)
    for name in ("b1.pdf", "blank.pdf"):
        (tmp_path / "pdfs" / name).write_bytes((BENCH / "pdfs" / name).read_bytes())
    with pytest.raises(DatasetFormatError, match=r"no \.jsonl test file"):
        load_olmocr_bench(tmp_path)
    line = {"pdf": "b1.pdf", "page": 1, "id": "t1", "type": "present", "text": "x"}
    (tmp_path / "a.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(DatasetFormatError, match=r"a\.jsonl:2: duplicate test id 't1'"):
        load_olmocr_bench(tmp_path)
    (tmp_path / "a.jsonl").write_text(json.dumps({**line, "type": "presnt"}) + "\n")
    with pytest.raises(DatasetFormatError, match=r"a\.jsonl:1: Unknown test type: presnt"):
        load_olmocr_bench(tmp_path)
    (tmp_path / "a.jsonl").write_text(json.dumps(line) + "\n")
    bench = load_olmocr_bench(tmp_path)  # blank.pdf's page 1 has its automatic baseline
    assert bench.pdfs == ["b1.pdf", "blank.pdf"]
    assert [(t.test.id, t.category) for t in bench.tests] == [
        ("t1", "a.jsonl"), ("b1.pdf_baseline", "baseline"), ("blank.pdf_baseline", "baseline")
    ]
    with pytest.raises(FileNotFoundError, match=r"prediction folder .* does not exist"):
        score_predictions(bench.tests, bench.pdfs, tmp_path / "nowhere")


@pytest.mark.browser
def test_score_command_prints_the_official_numbers_and_each_failed_test(capsys) -> None:
    code = main(["score", "olmocr-bench", "--tests", str(BENCH), "--pred", str(BENCH / "candD")])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("olmOCR-bench (olmocr 0.4.27 rules): 47.0% (95% CI ")
    assert "text_tests.jsonl   14.3%     1/7" in out and "9 failed tests:" in out
    assert "a1_o1" in out and "'before' text 'The quick brown fox...' not found" in out

    code = main(["score", "olmocr-bench", "--tests", str(BENCH), "--pred", str(BENCH / "candB"),
                 "--json"])
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert code == 1 and "FAILED (errors)" in captured.err
    assert result["status"] == "FAILED (errors)" and result["missing_pages"] == [
        "alpha/a2.pdf page 2"
    ]
    assert result["tests"]["a2_p2"] == {"passed": False, "explanation": "Missing MD files"}
    assert set(result) >= {"tests", "per_type", "per_category", "overall", "ci"}


def test_score_command_refuses_a_folder_that_is_not_a_benchmark(tmp_path: Path, capsys) -> None:
    code = main(["score", "olmocr-bench", "--tests", str(tmp_path), "--pred", str(tmp_path)])
    assert code == 2 and "has no pdfs/ folder" in capsys.readouterr().err


def test_katex_is_fetched_once_into_a_fresh_user_cache(tmp_path: Path, monkeypatch) -> None:
    """On a machine without the cache, npm pack fills it with the files olmocr ships."""
    import hashlib

    from evalsuite.render.katex import KATEX_DIR_VARIABLE, katex_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(KATEX_DIR_VARIABLE, raising=False)
    folder = katex_dir()
    assert folder == tmp_path / ".cache" / "evalsuite" / "katex-0.16.21"
    script = hashlib.sha1((folder / "katex.min.js").read_bytes()).hexdigest()
    assert script == "c2303db4de66c51e090c3efdacf2d1b9e4c76ae7"  # olmocr 0.4.27's katex.min.js
    assert sorted(p.name for p in folder.parent.iterdir()) == ["katex-0.16.21"]  # no staging left
    assert katex_dir() == folder


@pytest.mark.browser
def test_the_equation_page_reaches_no_network_and_no_file(tmp_path: Path) -> None:
    """Equations are model answers: ``\\href``, ``\\url`` and ``\\includegraphics`` aimed at a
    local listener of ours make no connection, and neither does the page's own ``fetch`` of it
    (offline) nor of a local file (about:blank has no file access); ordinary rendering works."""
    import socket

    from evalsuite.render.katex import shared_renderer

    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-e41c")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/x.png"
    renderer = shared_renderer()
    for latex in (rf"\href{{{url}}}{{x}}", rf"\url{{{url}}}",
                  rf"\includegraphics[height=1em]{{{url}}}"):
        renderer.render(latex)
    fetched = renderer._driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.allSettled([fetch(arguments[0]), fetch(arguments[1])])"
        ".then(r => done(r.map(x => x.status + (x.value ? x.value.status : ''))));",
        url, secret.as_uri())
    assert fetched == ["rejected", "rejected"]
    time.sleep(0.5)
    with pytest.raises(BlockingIOError):
        listener.accept()
    listener.close()
    assert renderer.render("x^2").error is None
