"""OmniDocBench v1.5 CDM against the unmodified official code (fixtures/cdm/gen_cdm_v15_cases.py).

Stages are checked on their own where they need no external program: the token rules and
colouring from the recorded KaTeX output, the matching from the recorded boxes. The KaTeX
normaliser needs Node and omnidocbench's JavaScript (``make setup``; without it those tests
fail, they do not skip); the whole pipeline
needs xelatex and Ghostscript as well (slow: a subset of the pairs, every box compared).
"""

from __future__ import annotations

import gzip
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evalsuite.metrics.cdm.common.matching import CdmScore
from evalsuite.metrics.cdm.common.toolchain import CdmToolchainUnavailableError
from evalsuite.metrics.cdm.v1_5 import katex, render
from evalsuite.metrics.cdm.v1_5.latex import normalize
from evalsuite.metrics.cdm.v1_5.match import RenderedSide
from evalsuite.metrics.cdm.v1_5.render import colour_list, paper_size
from evalsuite.metrics.cdm.v1_5.score import cdm_scores, prepare_side, render_side, score_sides
from evalsuite.metrics.omnidocbench.common.formula_cdm import cdm_pair
from tests.support.paths import TEST_FIXTURES

FIXTURE = TEST_FIXTURES / "cdm" / "cdm_v15_cases.json.gz"
with gzip.open(FIXTURE, "rt", encoding="utf-8") as _handle:
    PAYLOAD = json.load(_handle)
CASES = PAYLOAD["cases"]
TOKENIZED = {
    call[1]: (call[2], call[3]) for case in CASES for call in case["trace"] if call[0] == "tokenize"
}
NORMALIZED = [
    (call[1], call[2]) for case in CASES for call in case["trace"] if call[0] == "normalize"
]


# every pair of the kinds that exercise failure paths, Chinese and long formulas; every 7th else
PIPELINE_CASES = [
    case
    for case in CASES
    if case["kind"] in {"cjk", "fail", "empty", "tabular", "symbol", "long"}
    or case["index"] % 7 == 0
]


def _official(case: dict) -> tuple[float, float, float]:
    return case["F1_score"], case["recall"], case["precision"]


def _triple(score: CdmScore) -> tuple[float, float, float]:
    return score.F1_score, score.recall, score.precision


def _has_cjk(latex: str) -> bool:
    return any(ord(char) >= 0x2E80 for char in latex)


def _recorded_side(side: dict) -> RenderedSide | None:
    if side["boxes"] is None:
        return None
    return RenderedSide(
        [box["token"] for box in side["boxes"]],
        [box["bbox"] for box in side["boxes"]],
        tuple(side["size"]),
    )


def _needs(*programs: str) -> None:
    missing = [program for program in programs if shutil.which(program) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    katex.normaliser_dir()  # a missing JavaScript is an error: `make setup` installs it


def test_fixture_covers_the_brief() -> None:
    kinds = {case["kind"] for case in CASES}
    assert len(CASES) >= 150
    assert {"exact", "edit", "structural", "cjk", "long", "fail", "empty"} <= kinds
    assert PAYLOAD["renders_with_different_pixels"] == 0
    assert any(case["F1_score"] == 0 for case in CASES) and any(
        0 < case["F1_score"] < 1 for case in CASES
    )


def test_frac_and_over_score_one_in_v15() -> None:
    case = next(c for c in CASES if (c["gt"], c["pred"]) == (r"\frac{a}{b}", r"{a \over b}"))
    assert case["F1_score"] == 1.0


def test_normalize_equals_official() -> None:
    assert len(NORMALIZED) > 250
    for given, expected in NORMALIZED:
        assert normalize(given) == expected, given


def test_colour_tokens_equal_official(monkeypatch: pytest.MonkeyPatch) -> None:
    """prepare_side fed the recorded KaTeX output yields the official token list."""
    monkeypatch.setattr("evalsuite.metrics.cdm.v1_5.score.tokenize", lambda latex: TOKENIZED[latex])
    checked = 0
    for case in CASES:
        for latex, side in ((case["gt"], case["gt_side"]), (case["pred"], case["pred_side"])):
            if (
                side["boxes"] is None
                or latex.replace("\n", " ").replace("\\%", "<PERCENTAGETOKEN>") not in TOKENIZED
            ):
                continue
            prepared = prepare_side(latex)
            assert prepared is not None, latex
            _, tokens, placeholders = prepared
            assert tokens[:placeholders] == [box["token"] for box in side["boxes"]], latex
            checked += 1
    assert checked > 300


def test_matching_equals_official_on_recorded_boxes() -> None:
    for case in CASES:
        got = score_sides(_recorded_side(case["gt_side"]), _recorded_side(case["pred_side"]))
        assert _triple(got) == _official(case), (case["index"], case["gt"], case["pred"])
        if got.gt_tokens:
            assert got.F1_score == round(2 * got.tp / (got.gt_tokens + got.pred_tokens), 3)


def test_call_cdms_clean_up() -> None:
    assert cdm_pair("$$ x $$", "```latex\n$x+1$\n```") == ("x", "x+1")
    assert cdm_pair("$ $x$ $", "a ```b``` c") == ("x", "a")
    assert cdm_pair("x", "") == ("x", "")


def test_colour_list_and_paper() -> None:
    colours = colour_list(6000)
    assert len(colours) == 5800 == len(set(colours))
    assert colours[0] == (0, 0, 15) and colours[17] == (0, 15, 0) and (0, 0, 0) not in colours
    assert all(channel % 15 == 0 and channel <= 255 for colour in colours for channel in colour)
    assert [paper_size(n) for n in (600, 601, 1300, 1301)] == [5, 4, 4, 3]


@pytest.mark.parametrize(
    ("variable", "lookup", "message"),
    [
        (katex.JS_ENV, katex.normaliser_dir, "make setup"),
        (render.FONTS_ENV, render.cjk_font, "SourceHanSansSC"),
    ],
)
def test_configured_folder_without_its_files_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, lookup, message: str
) -> None:
    """An empty folder named for the JavaScript or the font: a one-line error saying what to do."""
    monkeypatch.setattr(katex, "INSTALLED_JS", tmp_path / "not-installed")
    monkeypatch.setenv(variable, str(tmp_path))
    lookup.cache_clear()
    try:
        with pytest.raises(CdmToolchainUnavailableError, match=message):
            lookup()
    finally:
        lookup.cache_clear()


def test_javascript_is_found_in_the_venv_before_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`make setup` puts it under sys.prefix; the variable is only the fallback."""
    monkeypatch.setenv(katex.JS_ENV, str(tmp_path))
    katex.normaliser_dir.cache_clear()
    try:
        assert katex.normaliser_dir() == katex.INSTALLED_JS
        shutil.copytree(katex.INSTALLED_JS, tmp_path, dirs_exist_ok=True)
        monkeypatch.setattr(katex, "INSTALLED_JS", tmp_path / "not-installed")
        katex.normaliser_dir.cache_clear()
        assert katex.normaliser_dir() == tmp_path
    finally:
        katex.normaliser_dir.cache_clear()


@pytest.mark.slow
@pytest.mark.cdm
def test_tokenizer_equals_official() -> None:
    """Slow (~47 s here): one Node process of the official KaTeX normaliser per formula the
    official code tokenized (up to 370, tables aside), two at a time; each is a recorded
    official output, and one left out would go unchecked."""
    _needs("node")
    with ThreadPoolExecutor(max_workers=2) as pool:
        got = dict(zip(TOKENIZED, pool.map(katex.tokenize, TOKENIZED), strict=True))
    assert {given: got[given] for given in TOKENIZED if got[given] != TOKENIZED[given]} == {}


@pytest.mark.slow
@pytest.mark.cdm
def test_pipeline_equals_official_box_for_box() -> None:
    """Rendered boxes equal the official ones (Chinese only with Source Han Sans configured).
    Slow (~171 s here): 64 of the 185 pairs (every CJK, failing, empty, tabular, symbol and long
    one, and every 7th other), up to 128 formulas each tokenized, compiled by xelatex and
    rasterised by Ghostscript, two at a time; fewer would leave those kinds' paths unchecked."""
    _needs("node", "xelatex", "gs")
    official_font = render.cjk_font()[0] == render.OFFICIAL_CJK_FONT
    sides = [
        (case[name], case[f"{name}_side"]) for case in PIPELINE_CASES for name in ("gt", "pred")
    ]
    distinct = list(dict.fromkeys(latex for latex, _ in sides))
    with ThreadPoolExecutor(max_workers=2) as pool:
        rendered = dict(zip(distinct, pool.map(render_side, distinct), strict=True))
    for latex, side in sides:
        if not side["boxes"] or (_has_cjk(latex) and not official_font):
            continue  # no bbox file or an empty one: scored 0 either way (checked below)
        assert rendered[latex] is not None, latex
        boxes = [box["bbox"] for box in side["boxes"]]
        assert (rendered[latex].boxes, rendered[latex].size) == (boxes, tuple(side["size"])), latex
    mismatched = [
        (case["index"], case["kind"])
        for case in PIPELINE_CASES
        if _triple(score_sides(rendered[case["gt"]], rendered[case["pred"]])) != _official(case)
    ]
    assert mismatched == []


@pytest.mark.slow
@pytest.mark.cdm
def test_v15_cdm_scores_keeps_pair_order() -> None:
    _needs("node", "xelatex", "gs")
    picked = [case for case in CASES if case["kind"] in {"structural", "empty"}][:4]
    got = cdm_scores([(case["gt"], case["pred"]) for case in picked], workers=2)
    assert [_triple(score) for score in got] == [_official(case) for case in picked]
