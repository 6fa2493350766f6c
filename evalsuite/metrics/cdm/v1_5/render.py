"""OmniDocBench v1.5 CDM rendering: coloured LaTeX -> xelatex PDF -> page PNG -> token boxes.

Each visible token is drawn in its own colour (``colour_list``: v1.6's palette, RGB steps of
15, black excluded), the document is compiled by xelatex (30 s limit, as the official
``run_cmd``) and rasterised at 200 dpi by Ghostscript's pngalpha device with the arguments
ImageMagick 7's ``magick -density 200 IN.pdf OUT.png`` passes it (the official call; its PNG
round trip keeps the pixels). The page is cropped to its non-white pixels plus 8 px (PIL's luma,
out-of-page parts black) and each token's box is the extent of the pixels of exactly its colour,
grown by 1 px: [x_min-1, y_min-1, x_max+1, y_max+1]; a token with no pixel gets [].

CJK font: the official template names Source Han Sans SC, which Debian does not package.
With ``EVALSUITE_CDM_V15_FONTS`` naming a folder of Adobe's SourceHanSansSC-*.otf (OFL; npm
package node-source-han-sans-sc) xelatex gets it through a private fontconfig file and the
pixels are the official ones. Otherwise (deliberate deviation) Noto Sans CJK SC, the same
design from another release: on the fixture's Chinese pairs the scores are equal, 11 of 24
sides have a box or image edge 1 px apart. A PDF of several pages yields no image (magick
writes OUT-0.png, ...).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from functools import cache
from pathlib import Path

import numpy as np
from PIL import Image

from evalsuite.confined import TEX_ARGUMENTS, confinement, tex_environment
from evalsuite.metrics.cdm.common.render import (
    RenderTimeoutError,
    ghostscript_pages,
    label_boxes,
    palette_colour,
    run_program,
)
from evalsuite.metrics.cdm.common.toolchain import CdmToolchainUnavailableError, program_paths
from evalsuite.metrics.cdm.v1_5.match import RenderedSide

OFFICIAL_CJK_FONT = "Source Han Sans SC"
FALLBACK_CJK_FONT = "Noto Sans CJK SC"
FONTS_ENV = "EVALSUITE_CDM_V15_FONTS"
FONTS_CONF = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>{fonts}</dir>
  <cachedir>{cache}</cachedir>
</fontconfig>
"""
COLOUR_STEP = 15
TOTAL_COLOURS = 5800  # the official palette's length; tokens past it keep their placeholder
CROP_PAD_PX = 8
XELATEX_TIMEOUT_S = 30
GS_TIMEOUT_S = 60

TEMPLATE = r"""
\documentclass[12pt]{article}
\usepackage[landscape]{geometry}
\usepackage{geometry}
\geometry{a<PaperSize>paper,scale=0.98}
\pagestyle{empty}
\usepackage{amsmath}
\usepackage{upgreek}
\usepackage{amssymb}
\usepackage{xcolor}
\usepackage{xeCJK}
\setCJKmainfont{<CJKFont>}
\setCJKsansfont{<CJKFont>}
\setCJKmonofont{<CJKFont>}
\xeCJKsetup{CJKmath=true}
\begin{document}
\makeatletter
\renewcommand*{\@textcolor}[3]{%
  \protect\leavevmode
  \begingroup
    \color#1{#2}#3%
  \endgroup
}
\makeatother
\begin{displaymath}
<Body>
\end{displaymath}
\end{document}
"""


def colour_list(count: int) -> list[tuple[int, int, int]]:
    """The first ``count`` token colours (at most TOTAL_COLOURS): palette entries 1, 2, ..."""
    return [palette_colour(k) for k in range(1, min(count, TOTAL_COLOURS) + 1)]


def paper_size(token_count: int) -> int:
    """A-series paper number: A3 above 1300 tokens, A4 above 600, else A5 (landscape)."""
    return 3 if token_count > 1300 else 4 if token_count > 600 else 5


@cache
def cjk_font() -> tuple[str, dict[str, str]]:
    """(CJK font name, environment for xelatex): Source Han Sans SC where configured, else Noto."""
    folder = os.environ.get(FONTS_ENV)
    if not folder:
        return FALLBACK_CJK_FONT, {}
    if not any(Path(folder).glob("SourceHanSansSC-*.otf")):
        raise CdmToolchainUnavailableError(f"{FONTS_ENV}={folder} holds no SourceHanSansSC-*.otf")
    private = Path(tempfile.mkdtemp(prefix="cdm15_fontconfig_"))
    conf = private / "fonts.conf"
    conf.write_text(
        FONTS_CONF.format(fonts=Path(folder).resolve(), cache=private), encoding="utf-8"
    )
    return OFFICIAL_CJK_FONT, {"FONTCONFIG_FILE": str(conf)}


def xelatex_document(
    coloured: str, placeholders: int, token_count: int, cjk_font_name: str | None = None
) -> str:
    """The xelatex document: ``<color_K>`` placeholders (K < ``placeholders``) become "R,G,B"."""
    for index, (red, green, blue) in enumerate(colour_list(placeholders)):
        coloured = coloured.replace(f"<color_{index}>", f"{red},{green},{blue}")
    return (
        TEMPLATE.replace("<PaperSize>", str(paper_size(token_count)))
        .replace("<CJKFont>", cjk_font_name or cjk_font()[0])
        .replace("<Body>", coloured)
    )


def _run(command: list[str], cwd: Path, timeout: float) -> None:
    """Run ``command`` in ``cwd`` to its end or ``timeout`` (then its process group is killed),
    confined to ``cwd`` as TeX (:mod:`evalsuite.confined`; Ghostscript reads the environment's
    TeX names as any other); the configured CJK fonts may be read, their private fontconfig
    folder written (its font cache)."""
    fonts = cjk_font()[1]
    env = tex_environment(cwd, dict(os.environ, TMPDIR=str(cwd), TEXMFCACHE=str(cwd), **fonts))
    env["TEXMFVAR"] = str(cwd)
    reads = filter(None, [os.environ.get(FONTS_ENV)])
    fontconfig = [Path(fonts["FONTCONFIG_FILE"]).parent] if fonts else []
    with (
        contextlib.suppress(RenderTimeoutError),
        confinement(cwd, reads=reads, writes=fontconfig, env=env) as limits,
    ):
        run_program(command, cwd, timeout_s=timeout, env=env, preexec=limits)


def rasterise_pdf(pdf: Path, work: Path) -> np.ndarray | None:
    """RGB page of a one-page PDF at 200 dpi as magick renders it; None for 0 or 2+ pages."""

    def run(argv: list[str]) -> bool:
        _run(argv, work, GS_TIMEOUT_S)
        return True  # the official code reads whatever PNG the call left

    pages = ghostscript_pages(pdf, work, program_paths("1.5")["gs"], run)
    return pages[0][..., :3] if pages is not None and len(pages) == 1 else None


def crop_rgb(rgb: np.ndarray) -> np.ndarray:
    """``rgb`` cropped to the non-white luma pixels plus 8 px; outside the page is black."""
    luma = np.asarray(Image.fromarray(rgb).convert("L"))
    rows, cols = np.nonzero(luma != 255)
    if rows.size == 0:
        top, bottom, left, right = 0, 10, 0, 10
    else:
        top, bottom, left, right = rows.min(), rows.max(), cols.min(), cols.max()
    return np.asarray(
        Image.fromarray(rgb).crop(
            (
                int(left) - CROP_PAD_PX,
                int(top) - CROP_PAD_PX,
                int(right) + CROP_PAD_PX,
                int(bottom) + CROP_PAD_PX,
            )
        )
    )


def token_boxes(rgb: np.ndarray, colour_count: int) -> list[list[int]]:
    """Per colour K < ``colour_count``: [x0-1, y0-1, x1+1, y1+1] of its exact pixels, or []."""
    levels = 255 // COLOUR_STEP + 1
    on_grid = np.all(rgb % COLOUR_STEP == 0, axis=2)
    steps = rgb.astype(np.int64) // COLOUR_STEP
    slot = steps[..., 0] * levels**2 + steps[..., 1] * levels + steps[..., 2] - 1
    ys, xs = np.nonzero(on_grid & (slot >= 0) & (slot < colour_count))
    boxes = label_boxes(xs, ys, slot[ys, xs], colour_count)
    return [list(box) if box is not None else [] for box in boxes]


def render(document: str, tokens: list[str], colour_count: int) -> RenderedSide | None:
    """Compile and rasterise ``document``; None when xelatex makes no PDF or it has 2+ pages.

    Deviation from the official code, which runs xelatex unconfined: the run is confined to its
    folder (:mod:`evalsuite.confined`), so a formula that reads or writes a file outside it
    fails to compile."""
    with tempfile.TemporaryDirectory(prefix="cdm15_") as tmp:
        folder = Path(tmp)
        (folder / "formula.tex").write_text(document, encoding="utf-8")
        _run(
            [
                program_paths("1.5")["xelatex"],
                *TEX_ARGUMENTS,
                "-interaction=nonstopmode",
                f"-output-directory={folder}",
                str(folder / "formula.tex"),
            ],
            folder,
            XELATEX_TIMEOUT_S,
        )
        pdf = folder / "formula.pdf"
        if not pdf.exists():
            return None
        page = rasterise_pdf(pdf, folder)
    if page is None:
        return None
    rgb = crop_rgb(page)
    drawn = min(len(tokens), colour_count)  # the official bbox file zips tokens with colours
    return RenderedSide(
        tokens[:drawn], token_boxes(rgb, colour_count)[:drawn], (rgb.shape[1], rgb.shape[0])
    )
