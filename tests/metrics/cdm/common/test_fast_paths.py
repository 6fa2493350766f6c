"""CDM's fast paths against slow references written out here, trial by trial and pixel by pixel.

* RANSAC: :func:`~evalsuite.metrics.cdm.common.matching.ransac_inliers` scores all trials in one
  array; the reference fits and applies each trial's model on its own, drawing its sample from the
  generator as it goes, as the official v1.6 code and scikit-image 0.20 (v1.5) do.
* Cropping: :func:`~evalsuite.metrics.cdm.common.render.crop_to_ink` converts only coloured pixels
  to grey and reads RGBA pages without dropping alpha first; the reference converts the whole RGB
  image with PIL, as the official code does.
* The pdflatex log's page count, read across TeX's line breaks.
* Ghostscript with cheaper PNG writing, and pdflatex from a dumped preamble, against the plain
  programs on the same shared document: equal pixels, pages and log facts (make test-cdm).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from evalsuite.metrics.cdm import VERSIONS
from evalsuite.metrics.cdm.common import preamble_format
from evalsuite.metrics.cdm.common.batch import MARKER, batch_document, log_sections, pages_written
from evalsuite.metrics.cdm.common.matching import V16, MatchSettings, ransac_inliers
from evalsuite.metrics.cdm.common.png_fast_write import ghostscript_env
from evalsuite.metrics.cdm.common.preamble_format import (
    format_arguments,
    format_for,
    format_path,
)
from evalsuite.metrics.cdm.common.render import (
    CROP_PAD_PX,
    Template,
    crop_to_ink,
    ghostscript_command,
    read_pages,
    run_program,
    stack_pages,
)
from evalsuite.metrics.cdm.common.toolchain import program_paths
from evalsuite.metrics.cdm.v1_5.match import SETTINGS as V15


def reference_ransac(src: np.ndarray, dst: np.ndarray, config: MatchSettings) -> np.ndarray | None:
    """Trial-by-trial RANSAC with a shift-plus-scale model (official v1.6 / scikit-image)."""
    rng = np.random.default_rng(config.ransac_seed)
    points = src.shape[0]
    best, best_count, best_score = None, 0, np.inf
    bound: float = config.ransac_trials
    trials = 0
    while trials < bound:
        trials += 1
        sample = rng.choice(points, size=config.ransac_samples, replace=False)
        src_mean, dst_mean = np.mean(src[sample], axis=0), np.mean(dst[sample], axis=0)
        scale = np.mean(np.linalg.norm(dst[sample] - dst_mean, axis=1)) / (
            np.mean(np.linalg.norm(src[sample] - src_mean, axis=1)) + 1e-10)
        centre = np.mean(src, axis=0)
        moved = scale * (src - centre) + centre + (dst_mean - src_mean)
        residuals = np.sqrt(np.sum((moved - dst) ** 2, axis=1))
        inliers = residuals < config.ransac_residual_px
        count = int(np.count_nonzero(inliers))
        if count == 0:
            continue
        score = (residuals.dot(residuals) if config.skimage_ransac
                 else float(np.sum(residuals[inliers])))
        if count > best_count or (count == best_count and score < best_score):
            best, best_count, best_score = inliers, count, score
            if config.skimage_ransac:
                eps = np.spacing(1)  # scikit-image's stop probability 1
                ratio = max(eps, 1 - (count / points) ** config.ransac_samples)
                bound = min(bound, np.ceil(np.log(eps) / np.log(ratio)))
                if best_score <= 0:
                    break
    return best


@st.composite
def centre_pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Box centres of matched tokens: moved and scaled copies with noise, exact copies (zero
    residuals, ties), shuffled outliers, on integer and half-pixel grids."""
    points = draw(st.integers(3, 60))
    coordinates = st.integers(0, 800).map(lambda v: v / 2)
    src = np.array(draw(st.lists(st.tuples(coordinates, coordinates), min_size=points,
                                 max_size=points)), dtype=float)
    kind = draw(st.sampled_from(["similar", "copy", "random", "mixed"]))
    seed = draw(st.integers(0, 2**16))
    noise = np.random.default_rng(seed)
    if kind == "copy":
        dst = src.copy()
    elif kind == "random":
        dst = noise.integers(0, 400, src.shape).astype(float)
    else:
        dst = src * draw(st.sampled_from([0.5, 1.0, 1.1, 2.0])) + draw(st.integers(-50, 50))
        dst += noise.normal(0, draw(st.sampled_from([0.0, 5.0, 20.0])), src.shape)
        if kind == "mixed":
            outliers = noise.random(points) < 0.4
            dst[outliers] = noise.integers(0, 400, (int(outliers.sum()), 2))
    return src, dst


@settings(max_examples=150, deadline=None)
@given(centre_pairs(), st.sampled_from([V16, V15]))
def test_ransac_equals_the_trial_by_trial_reference(centres, config) -> None:
    src, dst = centres
    if src.shape[0] < config.ransac_samples:
        return
    expected = reference_ransac(src, dst, config)
    found = ransac_inliers(src, dst, config)
    assert (found is None) == (expected is None)
    if expected is not None:
        assert np.array_equal(found, expected)


def reference_crop(rgb: np.ndarray) -> np.ndarray:
    """The official crop: PIL's grey level of every pixel, box of those below 255, +8 px."""
    grey = np.asarray(Image.fromarray(rgb).convert("L"))
    ys, xs = np.nonzero(grey != 255)
    x0, y0, x1, y1 = (xs.min(), ys.min(), xs.max(), ys.max()) if ys.size else (0, 0, 10, 10)
    height, width = grey.shape
    return rgb[max(0, y0 - CROP_PAD_PX) : min(height, y1 + CROP_PAD_PX),
               max(0, x0 - CROP_PAD_PX) : min(width, x1 + CROP_PAD_PX)]


NEAR_WHITE = st.integers(0, 255) | st.integers(250, 255)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 40), st.integers(1, 40),
    st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39), NEAR_WHITE, NEAR_WHITE,
                       NEAR_WHITE, st.integers(0, 255)), max_size=6),
)
def test_crop_equals_the_whole_image_grey_conversion(height, width, marks) -> None:
    rgba = np.full((height, width, 4), 255, np.uint8)
    rgba[..., 3] = 0
    for y, x, *colour in marks:
        rgba[y % height, x % width] = colour
    rgb = np.ascontiguousarray(rgba[..., :3])  # what the official RGB conversion leaves
    expected = reference_crop(rgb)
    for pixels in (rgb, rgba, rgba[..., :3]):
        assert np.array_equal(crop_to_ink(pixels), expected)


def test_one_page_is_not_copied_and_pages_of_another_kind_are_not_stacked() -> None:
    page = np.zeros((4, 5, 4), np.uint8)
    assert stack_pages([page]) is page
    assert stack_pages([page, page]).shape == (8, 5, 4)
    assert stack_pages([page, page[..., :3]]) is None
    assert stack_pages([page, np.zeros((4, 6, 4), np.uint8)]) is None
    assert stack_pages([]) is None


@pytest.mark.parametrize(
    ("log", "pages"),
    [
        ("...\nOutput written on batch.pdf (24 pages, 91234 bytes).\nSyncTeX", 24),
        ("Output written on cdm_batch_abc/batch.pdf (1 page, 5\n012 bytes).\n", 1),
        ("Output written on a-long-folder-name/that/wraps/over/the/seventy-nine/columns/b\n"
         "atch.pdf (13 pages, 4567 bytes).\n", 13),
        ("No pages of output.\n", 0),
        ("! Emergency stop.\n", 0),
    ],
)
def test_page_count_is_read_across_line_breaks(log, pages) -> None:
    assert pages_written(log) == pages


FORMULAS = [r"x^2 + y^2 = z^2", r"\undefinedmacro{x} + y", r"\text{速度} v = \frac{s}{t}",
            " + ".join(f"a_{{{i}}} x^{{{i}}}" for i in range(60)), r"\sum_{i=1}^{n} i"]


def _shared_document() -> tuple[str, list[tuple[int, int]]]:
    jobs = [job for job in map(VERSIONS["1.6"].prepare, FORMULAS) if job is not None]
    return batch_document([job for job in jobs if job.template is Template.FORMULA], 5)


def _typeset(document: str, work: Path, fmt: list[str]) -> tuple[Path, str]:
    work.mkdir()
    (work / "batch.tex").write_text(document, encoding="utf-8")
    run_program([program_paths()["pdflatex"], *fmt, "-interaction=nonstopmode",
                 f"-output-directory={work}", str(work / "batch.tex")], work)
    return work / "batch.pdf", (work / "batch.log").read_text(encoding="utf-8", errors="ignore")


def _pages(pdf: Path, work: Path, env: dict[str, str] | None) -> list[np.ndarray]:
    assert run_program(ghostscript_command(program_paths()["gs"], pdf, work), work, env=env)
    return read_pages(sorted(work.glob("page*.png"), key=lambda p: int(p.stem[4:])))


@pytest.mark.cdm
def test_cheaper_png_writing_keeps_every_pixel(tmp_path) -> None:
    env = ghostscript_env()
    assert env is not None, "the C compiler and libpng headers of envs/cdm/apt-packages.txt"
    pdf, _ = _typeset(_shared_document()[0], tmp_path / "tex", [])
    plain, fast = tmp_path / "plain", tmp_path / "fast"
    plain.mkdir()
    fast.mkdir()
    expected, found = _pages(pdf, plain, None), _pages(pdf, fast, env)
    assert len(expected) >= 4 and len(found) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(expected, found, strict=True))
    # the shim was in effect: the same pixels, other bytes
    assert (plain / "page1.png").read_bytes() != (fast / "page1.png").read_bytes()


@pytest.mark.cdm
def test_preamble_format_typesets_as_the_full_preamble(tmp_path) -> None:
    document, lines = _shared_document()
    fmt = format_arguments(document)
    assert fmt, "mylatexformat (texlive-latex-extra) builds the preamble's format"
    runs = {name: _typeset(document, tmp_path / name, args)
            for name, args in (("full", []), ("format", fmt))}
    (full_pdf, full_log), (fmt_pdf, fmt_log) = runs["full"], runs["format"]
    assert "! " not in fmt_log.split(f"{MARKER} start 0")[0]  # the format loaded cleanly
    assert pages_written(fmt_log) == pages_written(full_log) >= len(lines)

    def facts(log: str) -> list[tuple[int, int, bool, list[str]]]:
        return [(first, following, "Overfull \\hbox" in section,
                 [line for line in section.splitlines() if line.startswith("! ")])
                for first, following, section in log_sections(log, lines, [True] * len(lines))]

    assert facts(fmt_log) == facts(full_log) and len(facts(full_log)) == len(lines)
    assert any(errors for *_, errors in facts(full_log))
    assert any(overfull for _, _, overfull, _ in facts(full_log))
    pixels = []
    for name, pdf in (("full", full_pdf), ("format", fmt_pdf)):
        (tmp_path / f"{name}-png").mkdir()
        pixels.append(_pages(pdf, tmp_path / f"{name}-png", None))
    assert all(np.array_equal(a, b) for a, b in zip(*pixels, strict=True))


@pytest.fixture
def fresh_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """An empty format cache in ``tmp_path``; the command lines of the format builds it sees."""
    monkeypatch.setenv("EVALSUITE_CDM_CACHE", str(tmp_path))
    format_for.cache_clear()
    builds: list[list[str]] = []
    real_run = subprocess.run

    def counted(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        builds.append(command)
        return real_run(command, **kwargs)

    monkeypatch.setattr(preamble_format.subprocess, "run", counted)
    yield builds
    format_for.cache_clear()


def _preamble() -> str:
    document, _ = _shared_document()
    return document[: document.index("\\begin{document}\n") + len("\\begin{document}\n")]


@pytest.mark.cdm
def test_concurrent_first_uses_of_a_format_build_it_once(fresh_formats) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = list(pool.map(lambda _: format_for(_preamble()), range(4)))
    assert found[0] is not None and set(found) == {found[0]}
    assert len(fresh_formats) == 1


@pytest.mark.cdm
def test_a_published_format_is_never_replaced(fresh_formats, tmp_path, monkeypatch) -> None:
    """Another process publishes the format while this one builds it: its file stays (a
    confined run granted that file's inode keeps reading it) and no partial file is left."""
    preamble = _preamble()
    target = format_path(preamble)
    real_run = preamble_format.subprocess.run

    def build_then_lose_the_race(command: list[str], **kwargs: object):
        done = real_run(command, **kwargs)
        target.write_bytes(b"published by another process")
        return done

    monkeypatch.setattr(preamble_format.subprocess, "run", build_then_lose_the_race)
    assert format_for(preamble) == str(target.with_suffix(""))
    assert target.read_bytes() == b"published by another process"
    assert [path.name for path in tmp_path.iterdir()] == [target.name]
