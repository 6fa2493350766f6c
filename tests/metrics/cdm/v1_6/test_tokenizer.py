"""CDM v1.6 tokenizer against the unmodified official one, then CDM v1.6 end to end.

* fixtures/cdm/cdm_v16_tokenizer_cases.json.gz (gen_cdm_v16_tokenizer_cases.py): what the
  official ``tokenize_latex`` returns for a few thousand inputs (hand-written branch cases,
  adversarial fixture strings and their halves, the official demo formulas);
* fixtures/cdm/cdm_v16_cases.json.gz (gen_cdm_v16_cases.py): the tokenizer's input and output
  on every side of 177 official CDM pairs, the coloured formulas and the official scores.
"""

from __future__ import annotations

import gzip
import json
import re
import signal
import time
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalsuite.metrics import pylatexenc_v210
from evalsuite.metrics.cdm import VERSIONS, cdm_scores
from evalsuite.metrics.cdm.common.colouring import prepare
from evalsuite.metrics.cdm.common.render import RenderJob
from evalsuite.metrics.cdm.v1_6 import tokenizer
from tests.metrics.cdm.v1_6.test_cdm import _official, _scores, cases, needs_toolchain, side_job
from tests.support.paths import TEST_FIXTURES

TOKENIZER_CASES = TEST_FIXTURES / "cdm" / "cdm_v16_tokenizer_cases.json.gz"


@cache
def tokenizer_cases() -> list[tuple[str, bool, str]]:
    with gzip.open(TOKENIZER_CASES, "rt", encoding="utf-8") as handle:
        return [tuple(case) for case in json.load(handle)["cases"]]


def test_tokenizer_cases_cover_the_paths() -> None:
    recorded = tokenizer_cases()
    assert len(recorded) > 4000
    assert sum(bool(ok and out) for _, ok, out in recorded) > 1500  # tokenized
    assert sum(bool(ok and not out) for _, ok, out in recorded) > 500  # guard / parse gave up
    assert any(not ok for _, ok, _ in recorded)  # tabular given up
    assert any("tabular" in text and ok and out for text, ok, out in recorded)


def test_equals_official_tokenizer() -> None:
    mismatched = [
        (text, ok, out)
        for text, ok, out in tokenizer_cases()
        if tokenizer.tokenize(text) != (ok, out)
    ]
    assert mismatched == []


def test_equals_official_tokenizer_on_every_cdm_side() -> None:
    recorded = [
        step for case in cases() for side in case["trace"]["sides"] for step in side["tokenized"]
    ]
    assert len(recorded) == 2 * len(cases())
    assert [tokenizer.tokenize(text) for text, _, _ in recorded] == [
        (ok, out) for _, ok, out in recorded
    ]


def test_prepared_formulas_equal_official() -> None:
    """Tokenizer + colouring give the formula, tokens, template and paper the official code
    rendered, for both sides of every pair."""
    checked = 0
    for case in cases():
        for latex, side in zip((case["gt"], case["pred"]), case["trace"]["sides"], strict=True):
            mine, official = VERSIONS["1.6"].prepare(latex), side_job(side)
            if side["bbox"] is None and mine is not None:
                mine = RenderJob(mine.body, (), mine.template, mine.paper)  # tokens not recorded
            assert mine == official, (case["index"], latex)
            checked += 1
    assert checked == 2 * len(cases())


def _first_of_each_kind(per_kind: int) -> list[dict]:
    seen: dict[str, int] = {}
    chosen = []
    for case in cases():
        seen[case["kind"]] = seen.get(case["kind"], 0) + 1
        if seen[case["kind"]] <= per_kind:
            chosen.append(case)
    return chosen


@needs_toolchain
def test_cdm_scores_equal_official_for_every_kind(tmp_path: Path) -> None:
    chosen = _first_of_each_kind(2)
    assert len({case["kind"] for case in chosen}) == len({case["kind"] for case in cases()})
    scores = cdm_scores([(case["gt"], case["pred"]) for case in chosen], cache_dir=tmp_path)
    assert [_scores(score) for score in scores] == [_official(case) for case in chosen]


@pytest.mark.slow
@needs_toolchain
def test_cdm_scores_equal_official(tmp_path: Path) -> None:
    """All 177 pairs, from LaTeX to scores (about 1.5 min of pdflatex on two cores).
    Slow (~29 s here): every side of the 177 official pairs tokenized, then rendered by pdflatex
    and Ghostscript into an empty cache; the two-per-kind test above is the cheap subset, and
    this one is the whole oracle from LaTeX."""
    scores = cdm_scores([(case["gt"], case["pred"]) for case in cases()], cache_dir=tmp_path)
    assert [_scores(score) for score in scores] == [_official(case) for case in cases()]


def _guard_oracle(text: str) -> bool:
    """Unbalanced braces by brute force: drop escaped ones, then remove innermost ``{}`` pairs
    until none is left; balanced iff nothing remains."""
    braces = "".join(ch for ch in re.sub(r"\\[{}\[\]()]", "", text) if ch in "{}")
    while "{}" in braces:
        braces = braces.replace("{}", "")
    return braces != ""


@given(st.lists(st.sampled_from(["{", "}", "x", "\\{", "\\}", "\\\\", " "]), max_size=10))
def test_unbalanced_braces_give_up(parts: list[str]) -> None:
    """The guard gives up (empty result: the caller colours the raw input) exactly where the
    braces do not balance, escaped braces not counting; it sees ``\\\\`` already made ``\\,``."""
    text = "x" + "".join(parts) + "x"
    ok, tokens = tokenizer.tokenize(text)
    assert ok and (tokens == "") == _guard_oracle(text.replace("\\\\", "\\,"))


@given(st.lists(st.sampled_from(["\\left(", "\\right)", "\\(", "\\)", "$", "x"]), max_size=8))
def test_unequal_delimiters_give_up(parts: list[str]) -> None:
    text = "y " + " ".join(parts)
    unequal = (
        parts.count("\\left(") != parts.count("\\right)")
        or parts.count("\\(") != parts.count("\\)")
        or parts.count("$") % 2 == 1
    )
    assert tokenizer.tokenize(text) == (True, "") if unequal else tokenizer.tokenize(text)[1] != ""


def test_timeout_falls_back_to_the_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the time limit the official wrapper returns (False, input): the formula is coloured
    from its raw text, and the caller's alarm handler is restored."""

    def slow(_line: str) -> str:
        time.sleep(5)
        return "never"

    monkeypatch.setattr(tokenizer, "TIMEOUT_SECONDS", 0.05)
    monkeypatch.setattr(tokenizer, "_normalise_formula", slow)
    before = signal.getsignal(signal.SIGALRM)
    started = time.monotonic()
    assert tokenizer.tokenize("a+b") == (False, "a+b")
    assert time.monotonic() - started < 2
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    outer: list[int] = []
    signal.signal(signal.SIGALRM, lambda signum, _frame: outer.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        assert tokenizer.tokenize("a+b") == (False, "a+b")
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] < 0.3  # the caller's timer, resumed
        time.sleep(0.5)
        assert outer == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert VERSIONS["1.6"].prepare("a+b") == prepare("a+b", lambda text: (False, text))


def test_parse_error_falls_back_like_a_guard_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any error while normalising gives "" (official ``except Exception``), so the side is
    coloured from its input, exactly as for a formula the guard rejects."""

    def broken(_latex: str, _walker: object) -> list:
        raise RecursionError

    monkeypatch.setattr(tokenizer, "katex_tree", broken)
    assert tokenizer.tokenize("a+b") == (True, "")
    assert VERSIONS["1.6"].prepare("a+b") == prepare("a+b", lambda _: (True, ""))
    assert VERSIONS["1.6"].prepare("a+b") == prepare("a+b", lambda text: (False, text))


def test_missing_pylatexenc_210_is_one_actionable_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EVALSUITE_PYLATEXENC210", str(tmp_path / "absent"))
    with pytest.raises(pylatexenc_v210.PylatexencV210UnavailableError) as caught:
        tokenizer.tokenize("x")
    assert "\n" not in str(caught.value) and "make setup" in str(caught.value)
