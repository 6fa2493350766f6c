"""Render a colour-coded formula and find each token's pixel box (the CDM v1.6 rendering stage).

Token i (0-based) of a formula is coloured with palette entry i + 1, where entry k is
(15 r, 15 g, 15 b) for k = 324 r + 18 g + b. The formula is typeset by pdflatex in a landscape
A<n> page (n from the token count, A5 first; an "Overfull" warning in the log retries on the next
larger paper down to A1), rasterised at 200 dpi by Ghostscript's pngalpha device with 4-bit
text/graphics antialiasing (what ImageMagick 7 runs for ``magick -density 200 file.pdf``), all
pages stacked top to bottom, alpha dropped, then cropped to the non-white pixels (grey level of
PIL's "L" conversion below 255) plus 8 px. A pixel belongs to token k when every channel is
within 1 of a multiple of 15 and the pixel is not near-white (all channels >= 254); a token's box
is the min/max of its pixels widened by 1 px.

Deliberate choice: the official code also retries when the pdflatex log reports more than one
page, but it reads the page count from a single log line, and TeX wraps that line at 79
characters; with the official output paths (result/<name>/CDM/cdm_calc_*/...) the count is never
found. The page count is therefore treated as unknown here, as there.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np
from PIL import Image

from evalsuite.confined import TEX_ARGUMENTS, confinement, tex_environment
from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.cdm.common.matching import TokenBox
from evalsuite.metrics.cdm.common.png_fast_write import ghostscript_env
from evalsuite.metrics.cdm.common.preamble_format import format_arguments, format_of
from evalsuite.metrics.cdm.common.toolchain import program_paths, toolchain_fingerprint

PALETTE_STEP = 15
_LEVELS = 255 // PALETTE_STEP + 1  # 18 levels per channel
COLOUR_TOLERANCE = 1
CROP_PAD_PX = 8
DPI = 200
SMALLEST_PAPER = 1
COMMAND_TIMEOUT_S = 30
MAX_FORMULA_CHARS = 20_000
"""Longest LaTeX side CDM renders (both versions); a longer one fails its side untypeset.
Deviation: the official code tries it, for minutes to hours (v1.5's colouring is quadratic in
the tokens: 32,000 characters take 30 s, a 1 MB prediction days). OmniDocBench's own display
formulas are a few thousand characters at most."""
CJK_FONT = "gkai"


def palette_colour(index: int) -> tuple[int, int, int]:
    """RGB of palette entry ``index`` (1-based; token i uses entry i + 1)."""
    red, rest = divmod(index, _LEVELS * _LEVELS)
    green, blue = divmod(rest, _LEVELS)
    return red * PALETTE_STEP, green * PALETTE_STEP, blue * PALETTE_STEP


class Template(Enum):
    """LaTeX preamble a formula is typeset in: packages in the official order."""

    FORMULA = ("booktabs", "amsmath", "upgreek", "amssymb", "xcolor")
    TABULAR = ("booktabs", "multirow", "amssymb", "upgreek", "amsmath", "xcolor")
    CJK = ("booktabs", "amsmath", "upgreek", "CJK", "amssymb", "xcolor")


def paper_for(token_count: int) -> int:
    """First A-series paper tried: A3 above 1300 tokens, A4 above 600, else A5."""
    if token_count > 1300:
        return 3
    if token_count > 600:
        return 4
    return 5


def latex_document(body: str, template: Template, paper: int) -> str:
    """The .tex file pdflatex compiles (byte for byte what the official code writes)."""
    packages = "".join(f"\\usepackage{{{name}}}\n" for name in template.value)
    colour_fix = (
        "\\makeatletter\n\\renewcommand*{\\@textcolor}[3]{%\n"
        "  \\protect\\leavevmode\n  \\begingroup\n"
        "    \\color#1{#2}#3%\n  \\endgroup\n}\n\\makeatother\n"
    )
    math = f"\\begin{{displaymath}}\n{body}\n\\end{{displaymath}}\n"
    if template is Template.CJK:
        math = f"\\begin{{CJK}}{{UTF8}}{{{CJK_FONT}}}\n{math}\\end{{CJK}}\n"
    return (
        "\n\\documentclass[12pt]{article}\n\\usepackage[landscape]{geometry}\n\\usepackage{geometry}\n"
        f"\\geometry{{a{paper}paper,scale=0.98}}\n\\pagestyle{{empty}}\n{packages}\\begin{{document}}\n"
        f"{colour_fix}{math}\\end{{document}}\n\n"
    )


@dataclass(frozen=True)
class RenderJob:
    """Coloured formula body, its tokens (token i in palette entry i + 1), template, first paper."""

    body: str
    tokens: tuple[str, ...]
    template: Template
    paper: int


@dataclass(frozen=True)
class Rendering:
    """Cropped image size (width, height) and the boxes of tokens that left pixels, in order."""

    size: tuple[int, int]
    boxes: tuple[TokenBox, ...]


class RenderTimeoutError(EvalsuiteError, RuntimeError):
    """pdflatex or gs ran past COMMAND_TIMEOUT_S (the official code scores the side as failed)."""


def run_program(
    argv: Sequence[str],
    cwd: Path,
    timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
) -> bool:
    """Run a program in its own process group (environment ``env``, default ours; ``preexec``
    run in the child before it starts); kill the group after ``timeout_s`` (default
    COMMAND_TIMEOUT_S) and raise RenderTimeoutError. True when it exits with status 0."""
    with subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True, env=env, preexec_fn=preexec,
    ) as proc:
        try:
            return proc.wait(timeout=timeout_s or COMMAND_TIMEOUT_S) == 0
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RenderTimeoutError(argv[0]) from None


def typeset(document: str, tex: Path, timeout_s: float | None = None) -> str:
    """Write ``document`` to ``tex``, run pdflatex on it in nonstopmode (from the preamble's
    dumped format where there is one) with its output beside it, and return its log ("" when
    none was written). Raises RenderTimeoutError past ``timeout_s``.

    Deviation from the official code, which runs pdflatex unconfined: the run is confined to
    ``tex``'s folder (:mod:`evalsuite.confined`), so a formula that reads or writes a file
    outside it (``\\input`` of a path, ``\\openout`` to ``..``) fails to compile."""
    tex.write_text(document, encoding="utf-8")
    work = tex.parent
    dumped = format_of(document)
    with confinement(work, reads=[f"{dumped}.fmt"] if dumped else []) as preexec:
        run_program(
            [program_paths()["pdflatex"], *TEX_ARGUMENTS, *format_arguments(document),
             "-interaction=nonstopmode", f"-output-directory={work}", str(tex)],
            work, timeout_s=timeout_s, env=tex_environment(work), preexec=preexec,
        )
    log = tex.with_suffix(".log")
    return log.read_text(encoding="utf-8", errors="ignore") if log.exists() else ""


def reports_overfull(log: str) -> bool:
    """Whether a pdflatex log (or a section of one) warns of an overfull box: the official
    code's signal to retry on the next larger paper."""
    return "Overfull \\hbox" in log or "Overfull \\vbox" in log


def _compile(job: RenderJob, work: Path) -> Path | None:
    """PDF of the job, retrying on larger paper while the log reports an overfull box."""
    tex, pdf, log = work / "f.tex", work / "f.pdf", work / "f.log"
    papers = list(range(job.paper, SMALLEST_PAPER - 1, -1))
    for paper in papers:
        text = typeset(latex_document(job.body, job.template, paper), tex)
        if not pdf.exists():
            return None
        if not reports_overfull(text) or paper == papers[-1]:
            return pdf
        for stale in (pdf, log, work / "f.aux"):
            stale.unlink(missing_ok=True)
    return None


def ghostscript_command(
    gs: str, pdf: Path, work: Path, page_list: Sequence[int] | None = None
) -> list[str]:
    """The Ghostscript command line of ImageMagick 7's PDF delegate at DPI: every page of ``pdf``
    (only the pages of ``page_list``, ascending, if given) to ``work/page<n>.png`` (n from 1,
    in output order), pngalpha with 4-bit antialiasing."""
    control = work / "control.ps"
    control.write_text(" ", encoding="ascii")
    return [
        gs,
        "-sstdout=%stderr",
        "-dQUIET",
        "-dSAFER",
        "-dBATCH",
        "-dNOPAUSE",
        "-dNOPROMPT",
        "-dMaxBitmap=500000000",
        "-dAlignToPixels=0",
        "-dGridFitTT=2",
        "-sDEVICE=pngalpha",
        "-dTextAlphaBits=4",
        "-dGraphicsAlphaBits=4",
        f"-r{DPI}x{DPI}",
        "-dPrinted=false",
        *([f"-sPageList={','.join(map(str, page_list))}"] if page_list is not None else []),
        f"-sOutputFile={work}/page%d.png",
        f"-f{control}",
        f"-f{pdf}",
    ]


def run_ghostscript(argv: Sequence[str], work: Path, timeout_s: float | None = None) -> bool:
    """:func:`run_program` of a Ghostscript command line in ``work``, with the PNG shim and
    confined to ``work`` (:func:`evalsuite.confined.confinement`) beside its ``-dSAFER``."""
    env = ghostscript_env()
    with confinement(work, env=env) as preexec:
        return run_program(argv, work, timeout_s=timeout_s, env=env, preexec=preexec)


def ghostscript_pages(
    pdf: Path, work: Path, gs: str, run: Callable[[list[str]], bool]
) -> list[np.ndarray] | None:
    """Every page of ``pdf`` at DPI, in page order, as ``magick -density 200`` renders them
    (RGBA, see :func:`read_pages`); None when ``run`` reports failure.

    ``run`` executes the Ghostscript command line in ``work`` (each version has its own limits).
    """
    if not run(ghostscript_command(gs, pdf, work)):
        return None
    return read_pages(sorted(work.glob("page*.png"), key=lambda p: int(p.stem[4:])))


def read_pages(paths: Sequence[Path]) -> list[np.ndarray]:
    """Pixels of each PNG: RGBA or RGB as stored, anything else converted to RGB. The official
    code converts to RGB, which for RGBA only drops alpha: ``page[..., :3]`` is that image."""
    arrays = []
    for path in paths:
        with Image.open(path) as image:
            kept = image if image.mode in ("RGBA", "RGB") else image.convert("RGB")
            arrays.append(np.asarray(kept))
    return arrays


def stack_pages(pages: Sequence[np.ndarray]) -> np.ndarray | None:
    """Pages stacked top to bottom (one page: itself); None without a page or with pages of
    unequal width or kind (pages of one document share both; anything else is not a rendering
    we model)."""
    if not pages or len({page.shape[1:] for page in pages}) != 1:
        return None
    return pages[0] if len(pages) == 1 else np.vstack(pages)


def _rasterise(pdf: Path, work: Path) -> np.ndarray | None:
    """All pages of ``pdf`` stacked (see :func:`stack_pages`)."""
    gs = program_paths()["gs"]
    pages = ghostscript_pages(pdf, work, gs, lambda argv: run_ghostscript(argv, work))
    return stack_pages(pages) if pages is not None else None


def _coloured(pixels: np.ndarray) -> np.ndarray:
    """Mask of the pixels with a colour channel below 255 (alpha, if any, ignored)."""
    if pixels.shape[2] == 4 and pixels.flags.c_contiguous:
        # one 32-bit compare per pixel: bytes R, G, B, A read little-endian, alpha forced to 255
        return (pixels.view("<u4")[..., 0] | 0xFF000000) != 0xFFFFFFFF
    return (pixels[..., :3] != 255).any(axis=2)


def crop_to_ink(pixels: np.ndarray) -> np.ndarray:
    """RGB of ``pixels`` (RGB, or RGBA with alpha dropped) cropped to the pixels of grey level
    below 255, padded by CROP_PAD_PX (10x10 corner if none)."""
    # only pixels with a colour channel below 255 can be grey below 255: PIL converts just those
    coloured = _coloured(pixels)
    rows = np.flatnonzero(coloured.any(axis=1))
    top = int(rows[0]) if rows.size else 0
    ys, xs = np.nonzero(coloured[top : int(rows[-1]) + 1] if rows.size else coloured[:0])
    ys += top
    colours = np.ascontiguousarray(pixels[ys, xs, :3])
    grey = np.asarray(Image.fromarray(colours[None]).convert("L"))[0]
    ys, xs = ys[grey != 255], xs[grey != 255]
    if ys.size:
        x0, y0, x1, y1 = int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())
    else:
        x0, y0, x1, y1 = 0, 0, 10, 10
    height, width = pixels.shape[:2]
    return pixels[
        max(0, y0 - CROP_PAD_PX) : min(height, y1 + CROP_PAD_PX),
        max(0, x0 - CROP_PAD_PX) : min(width, x1 + CROP_PAD_PX),
        :3,
    ]


def token_boxes(rgb: np.ndarray, token_count: int) -> list[tuple[int, int, int, int] | None]:
    """Box of each token's palette colour in the image (None where no pixel has it)."""
    channels = rgb.astype(np.int16)
    level = (channels + PALETTE_STEP // 2) // PALETTE_STEP
    snapped = np.clip(level * PALETTE_STEP, 0, 255)
    on_palette = (np.abs(channels - snapped) <= COLOUR_TOLERANCE).all(axis=2)
    near_white = (channels >= 255 - COLOUR_TOLERANCE).all(axis=2)
    entry = (level[..., 0] * _LEVELS + level[..., 1]) * _LEVELS + level[..., 2]
    mask = on_palette & ~near_white & (entry >= 1) & (entry <= token_count)
    ys, xs = np.nonzero(mask)
    return label_boxes(xs, ys, entry[ys, xs] - 1, token_count)


def label_boxes(
    xs: np.ndarray, ys: np.ndarray, labels: np.ndarray, count: int
) -> list[tuple[int, int, int, int] | None]:
    """Per label 0..count-1: (x_min-1, y_min-1, x_max+1, y_max+1) of its pixels, None if none."""
    big = np.iinfo(np.int64).max
    lo_x = np.full(count, big)
    lo_y = np.full(count, big)
    hi_x = np.full(count, -1)
    hi_y = np.full(count, -1)
    np.minimum.at(lo_x, labels, xs)
    np.minimum.at(lo_y, labels, ys)
    np.maximum.at(hi_x, labels, xs)
    np.maximum.at(hi_y, labels, ys)
    boxes: list[tuple[int, int, int, int] | None] = [None] * count
    for i in np.flatnonzero(hi_x >= 0):
        boxes[i] = (int(lo_x[i]) - 1, int(lo_y[i]) - 1, int(hi_x[i]) + 1, int(hi_y[i]) + 1)
    return boxes


def render_uncached(job: RenderJob) -> Rendering | None:
    """Typeset, rasterise, crop and box one job; None when pdflatex or gs yields nothing.

    Raises RenderTimeoutError when a program times out (load-dependent, so never cached)."""
    with tempfile.TemporaryDirectory(prefix="cdm_") as tmp:
        work = Path(tmp)
        pdf = _compile(job, work)
        pixels = _rasterise(pdf, work) if pdf is not None else None
    return boxes_of(pixels, job) if pixels is not None else None


def boxes_of(pixels: np.ndarray, job: RenderJob) -> Rendering:
    """Crop the stacked pages of ``job`` to ink and find its token boxes."""
    cropped = crop_to_ink(pixels)
    found = token_boxes(cropped, len(job.tokens))
    pairs = zip(job.tokens, found, strict=True)
    boxes = tuple(TokenBox(token, box) for token, box in pairs if box is not None)
    return Rendering(size=(cropped.shape[1], cropped.shape[0]), boxes=boxes)


def cache_key(job: RenderJob) -> str:
    """sha256 of the toolchain, the exact .tex of the first paper and the token list."""
    material = json.dumps(
        [toolchain_fingerprint(), latex_document(job.body, job.template, job.paper), job.tokens]
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def _to_json(rendering: Rendering | None) -> str:
    if rendering is None:
        return "null"
    return json.dumps(
        {"size": rendering.size, "boxes": [[b.token, b.box] for b in rendering.boxes]},
        ensure_ascii=False,
    )


def _from_json(text: str) -> Rendering | None:
    data = json.loads(text)
    if data is None:
        return None
    return Rendering(
        size=tuple(data["size"]), boxes=tuple(TokenBox(t, tuple(b)) for t, b in data["boxes"])
    )


def cached(job: RenderJob, cache_dir: Path | None) -> tuple[bool, Rendering | None]:
    """(found, rendering) of ``job`` in ``cache_dir/<key>.json``."""
    if cache_dir is None:
        return False, None
    try:
        return True, _from_json((cache_dir / f"{cache_key(job)}.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return False, None


def store(job: RenderJob, rendering: Rendering | None, cache_dir: Path | None) -> None:
    """Write ``rendering`` to ``cache_dir/<key>.json`` atomically (nothing without a cache)."""
    if cache_dir is None:
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(_to_json(rendering))
    os.replace(tmp, cache_dir / f"{cache_key(job)}.json")


def render_job(job: RenderJob, cache_dir: Path | None = None) -> Rendering | None:
    """:func:`render_uncached`, read from / written to ``cache_dir/<key>.json`` if given.

    A timeout scores the side as failed, as the official code does, but is not cached."""
    found, rendering = cached(job, cache_dir)
    if found:
        return rendering
    try:
        rendering = render_uncached(job)
    except RenderTimeoutError:
        return None
    store(job, rendering, cache_dir)
    return rendering
