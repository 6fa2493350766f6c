"""CDM v1.6 against cases of the unmodified official code (fixtures/cdm/gen_cdm_v16_cases.py).

Each case carries the official scores and a trace of what the official code computed for each
side: the .tex documents it compiled and the token boxes it found in the rendering. The stages
ported so far are checked against them separately and together:

* documents: ``latex_document`` rebuilds every official .tex byte for byte;
* rendering: pdflatex + Ghostscript + crop + palette boxes give the official boxes and image size;
* matching: the official boxes score to the official F1/recall/precision;
* preparation: from the official tokenizer's recorded output, normalisation and colouring give
  the official coloured formula, tokens, template and paper (the tokenizer is not ported yet);
* end to end from the tokenizer's output: preparation, rendering and matching give the official
  scores.
"""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from pathlib import Path

import pytest

from evalsuite.metrics.cdm import CdmToolchainUnavailableError, cdm_scores, score_jobs
from evalsuite.metrics.cdm.common import render as render_mod
from evalsuite.metrics.cdm.common import toolchain
from evalsuite.metrics.cdm.common.colouring import normalize_tokens, prepare
from evalsuite.metrics.cdm.common.matching import TokenBox, score_boxes
from evalsuite.metrics.cdm.common.render import RenderJob, Template, latex_document, render_job
from tests.support.paths import TEST_FIXTURES

CASES_PATH = TEST_FIXTURES / "cdm" / "cdm_v16_cases.json.gz"
needs_toolchain = pytest.mark.cdm
"""Renders with TeX Live and Ghostscript: run by ``make test-cdm``, failing where absent."""

_DOC = re.compile(
    r"\\geometry\{a(\d)paper.*\\begin\{displaymath\}\n(.*)\n\\end\{displaymath\}", re.S
)


@cache
def cases() -> list[dict]:
    with gzip.open(CASES_PATH, "rt", encoding="utf-8") as handle:
        return json.load(handle)["cases"]


def _template(document: str) -> Template:
    if "\\usepackage{CJK}" in document:
        return Template.CJK
    return Template.TABULAR if "\\usepackage{multirow}" in document else Template.FORMULA


def side_job(side: dict) -> RenderJob | None:
    """RenderJob of one official side (None where the official code never reached pdflatex)."""
    if not side["tex"]:
        return None
    first = side["tex"][0]
    paper, body = _DOC.search(first).groups()
    tokens = tuple(item["token"] for item in side["bbox"] or [])
    return RenderJob(body=body, tokens=tokens, template=_template(first), paper=int(paper))


def side_jobs(case: dict) -> list[RenderJob | None]:
    return [side_job(side) for side in case["trace"]["sides"]]


class NotTokenized(Exception):
    """The official tokenizer raised for this side (nothing was recorded)."""


def replay_tokenizer(side: dict):
    """Tokenizer returning what the official one returned for this side (checking its input)."""

    def tokenize(text: str) -> tuple[bool, str]:
        if not side["tokenized"]:
            raise NotTokenized(text)
        recorded_input, ok, output = side["tokenized"][0]
        assert text == recorded_input
        return ok, output

    return tokenize


def prepared_job(latex: str, side: dict) -> RenderJob | None:
    try:
        return prepare(latex, replay_tokenizer(side))
    except NotTokenized:
        return None


def official_boxes(side: dict) -> tuple[list[TokenBox] | None, tuple[int, int] | None]:
    if side["bbox"] is None:
        return None, None
    boxes = [TokenBox(item["token"], tuple(item["bbox"])) for item in side["bbox"] if item["bbox"]]
    return boxes, (tuple(side["size"]) if side["size"] else None)


def _scores(score) -> tuple[float, float, float]:
    return score.F1_score, score.recall, score.precision


def _official(case: dict) -> tuple[float, float, float]:
    return case["F1_score"], case["recall"], case["precision"]


def test_fixture_covers_the_brief() -> None:
    kinds = {case["kind"] for case in cases()}
    assert len(cases()) >= 150
    assert {"exact", "edit", "structural", "cjk", "long", "fail", "empty"} <= kinds
    assert any(case["F1_score"] == 0.0 and case["kind"] == "fail" for case in cases())


def test_documents_rebuilt_byte_for_byte() -> None:
    checked = 0
    for case in cases():
        for side in case["trace"]["sides"]:
            if not side["tex"]:
                continue
            paper, body = _DOC.search(side["tex"][0]).groups()
            for step, document in enumerate(side["tex"]):
                assert latex_document(body, _template(document), int(paper) - step) == document
                checked += 1
    assert checked > 250


@pytest.mark.parametrize("index", range(len(cases())))
def test_matching_of_official_boxes_gives_official_scores(index: int) -> None:
    case = cases()[index]
    if len(case["trace"]["sides"]) != 2:
        pytest.skip("official pipeline raised before both sides were rendered")
    (gt, gt_size), (pred, pred_size) = (official_boxes(side) for side in case["trace"]["sides"])
    assert _scores(score_boxes(gt, pred, gt_size, pred_size)) == _official(case)


@pytest.fixture(scope="session")
def render_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cdm_render_cache")


@pytest.fixture(scope="session")
def all_renderings(render_cache: Path) -> dict[RenderJob, object]:
    """Slow (~23 s here): every distinct official side of the 177 pairs rendered by pdflatex and
    Ghostscript, in parallel, once a session; each is an official rendering to compare box for
    box, and the cache it fills serves the two scoring tests after it."""
    jobs = list(
        dict.fromkeys(job for case in cases() for job in side_jobs(case) if job is not None)
    )
    score_jobs(
        [(job, None) for job in jobs], cache_dir=render_cache
    )  # renders in parallel, fills the cache
    return {job: render_job(job, render_cache) for job in jobs}


@needs_toolchain
def test_rendering_gives_official_boxes(all_renderings: dict) -> None:
    """Every distinct official side renders to the official boxes (its time is the session
    fixture's: the renderings are made once for this and the scoring tests)."""
    mismatched = []
    for case in cases():
        for job, side in zip(side_jobs(case), case["trace"]["sides"], strict=True):
            if job is None:
                continue
            boxes, size = official_boxes(side)
            rendering = all_renderings[job]
            mine = (
                (list(rendering.boxes), rendering.size) if rendering is not None else (None, None)
            )
            if mine != (boxes, size):
                mismatched.append((case["index"], case["gt"], case["pred"]))
    assert mismatched == []


@needs_toolchain
def test_coloured_formulas_score_as_official(all_renderings: dict, render_cache: Path) -> None:
    runnable = [case for case in cases() if len(case["trace"]["sides"]) == 2]
    scores = score_jobs([tuple(side_jobs(case)) for case in runnable], cache_dir=render_cache)
    assert [_scores(score) for score in scores] == [_official(case) for case in runnable]


@needs_toolchain
def test_cache_hit_is_identical_and_skips_rendering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = next(case for case in cases() if case["kind"] == "structural")
    job = side_jobs(case)[0]
    first = render_job(job, tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 1

    def no_render(_job: RenderJob) -> None:
        raise AssertionError("cache miss")

    monkeypatch.setattr(render_mod, "render_uncached", no_render)
    assert render_job(job, tmp_path) == first


def test_missing_toolchain_is_one_actionable_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    toolchain.program_paths.cache_clear()
    try:
        with pytest.raises(CdmToolchainUnavailableError):
            cdm_scores([("x", "x")])
        with pytest.raises(CdmToolchainUnavailableError) as caught:
            score_jobs([])
    finally:
        toolchain.program_paths.cache_clear()
    message = str(caught.value)
    assert "\n" not in message
    assert "pdflatex" in message and "gs" in message and toolchain.INSTALL_COMMAND in message


@pytest.mark.parametrize(
    ("version", "present", "named", "not_named"),
    [
        ("1.6", ("pdflatex", "gs"), (), ()),
        ("1.5", ("pdflatex", "gs"), ("xelatex", "node"), ("pdflatex", "gs")),
        ("1.5", ("xelatex", "node"), ("gs",), ("xelatex", "node", "pdflatex")),
        ("1.6", ("xelatex", "node", "gs"), ("pdflatex",), ("xelatex", "node", "gs")),
    ],
)
def test_each_version_names_only_the_programs_it_lacks(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    version: str,
    present: tuple[str, ...],
    named: tuple[str, ...],
    not_named: tuple[str, ...],
) -> None:
    for program in present:
        (tmp_path / program).write_text("#!/bin/sh\n", encoding="ascii")
        (tmp_path / program).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    toolchain.program_paths.cache_clear()
    try:
        if not named:
            assert set(toolchain.program_paths(version)) == set(present)
            return
        with pytest.raises(CdmToolchainUnavailableError) as caught:
            toolchain.program_paths(version)
    finally:
        toolchain.program_paths.cache_clear()
    message = str(caught.value)
    words = set(message.replace(";", " ").split())
    assert set(named) <= words and not set(not_named) & words
    assert toolchain.INSTALL_COMMAND in message and f"v{version}" in message


@needs_toolchain
def test_timeout_scores_as_failed_and_is_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = next(job for case in cases() for job in side_jobs(case) if job is not None)
    monkeypatch.setattr(render_mod, "COMMAND_TIMEOUT_S", 0.001)
    assert render_job(job, tmp_path) is None
    assert list(tmp_path.glob("*.json")) == []


def test_normalisation_equals_official() -> None:
    pairs = [pair for case in cases() for pair in case["trace"]["normalized"]]
    assert len(pairs) > 300
    assert [normalize_tokens(text) for text, _ in pairs] == [want for _, want in pairs]


def test_preparation_from_official_tokens_gives_official_jobs() -> None:
    checked = 0
    for case in cases():
        for latex, side in zip((case["gt"], case["pred"]), case["trace"]["sides"], strict=True):
            mine, official = prepared_job(latex, side), side_job(side)
            if side["bbox"] is None and mine is not None and official is not None:
                mine = RenderJob(mine.body, (), mine.template, mine.paper)  # tokens not recorded
            assert mine == official, (case["index"], latex)
            checked += 1
    assert checked == 2 * len(cases())


@needs_toolchain
def test_from_official_tokens_to_official_scores(all_renderings: dict, render_cache: Path) -> None:
    runnable = [case for case in cases() if len(case["trace"]["sides"]) == 2]
    jobs = [
        tuple(
            prepared_job(latex, side)
            for latex, side in zip((c["gt"], c["pred"]), c["trace"]["sides"], strict=True)
        )
        for c in runnable
    ]
    scores = score_jobs(jobs, cache_dir=render_cache)
    assert [_scores(score) for score in scores] == [_official(case) for case in runnable]
