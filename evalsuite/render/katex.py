"""LaTeX equations rendered by KaTeX in headless Chromium, and compared as olmOCR-bench does.

olmOCR-bench's math test (olmocr 0.4.27, ``olmocr/bench/katex/render.py``) renders an equation
with KaTeX 0.16.21 (display mode, errors thrown) in a page 800x400 CSS px with the equation
centred at 24 px, and keeps KaTeX's MathML and the box of every innermost ``span`` with visible
text. KaTeX's stylesheet is injected inline, so its web fonts (relative URLs) never load and the
glyphs fall back to system fonts, as in the reference. Two renders match when the reference's
MathML (semantics less annotation, whitespace removed) occurs inside the hypothesis's, or else
when every reference character can be mapped to a distinct hypothesis character with the same
text such that each of its nearest neighbours up/down/left/right (centre within 5 px on the
other axis) is matched by the hypothesis character's neighbour in that direction
(:func:`renders_match`). Layout depends on Chromium and fonts; the reference cases were made with
Debian's Chromium and DejaVu.

KaTeX 0.16.21 (``katex.min.js``/``katex.min.css``, the same files olmocr ships) comes from
``$EVALSUITE_KATEX_DIR``, else ``~/.cache/evalsuite/katex-0.16.21``, which is filled from the
npm registry (``npm pack``) on first use. Chromium and chromedriver are Debian's
(``make setup`` installs them).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup

from evalsuite.browser import INSTALL_HINT, missing_browser, start_chromium
from evalsuite.errors import ToolUnavailableError

KATEX_VERSION = "0.16.21"
KATEX_DIR_VARIABLE = "EVALSUITE_KATEX_DIR"
VIEWPORT = (800, 400)
FONT_SIZE_PX = 24
NEIGHBOUR_TOLERANCE_PX = 5
_ASSETS = ("katex.min.js", "katex.min.css")

_PAGE = f"""<!DOCTYPE html><html><head><style>
body {{ display: flex; justify-content: center; align-items: center; height: 100vh; margin: 0;
       background-color: white; color: black; }}
#equation-container {{ padding: 0; font-size: {FONT_SIZE_PX}px; }}
</style></head><body><div id="equation-container"></div></body></html>"""

_RENDER = """
const container = document.getElementById("equation-container");
container.innerHTML = "";
try {
  katex.render(arguments[0], container, {displayMode: true, throwOnError: true});
} catch (error) {
  return {error: error.message};
}
const spans = [];
for (const span of document.querySelectorAll("span")) {
  if (span.children.length === 0 && /\\S/.test(span.textContent)) {
    const box = span.getBoundingClientRect();
    spans.push([span.textContent.trim(), box.x, box.y, box.width, box.height]);
  }
}
const math = document.querySelector(".katex-mathml math");
return {mathml: math ? math.outerHTML : "", spans: spans};
"""


class KatexUnavailableError(ToolUnavailableError, RuntimeError):
    """KaTeX, Chromium or chromedriver is missing; the message says how to install it."""


@dataclass(frozen=True)
class Glyph:
    """One character of a rendered equation and its box (CSS px)."""

    text: str
    x: float
    y: float
    width: float
    height: float

    @property
    def centre(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y + self.height / 2


@dataclass(frozen=True)
class RenderedEquation:
    """KaTeX's MathML and innermost text spans of an equation, or KaTeX's error message (then
    ``mathml`` holds the message and there are no spans, as in the reference)."""

    mathml: str
    spans: tuple[Glyph, ...]
    error: str | None = None


def katex_dir() -> Path:
    """The folder holding KaTeX 0.16.21's ``katex.min.js`` and ``katex.min.css``, fetched from
    the npm registry into the user cache when neither it nor ``$EVALSUITE_KATEX_DIR`` has them."""
    configured = os.environ.get(KATEX_DIR_VARIABLE)
    folder = Path(configured) if configured else (
        Path.home() / ".cache" / "evalsuite" / f"katex-{KATEX_VERSION}"
    )
    if all((folder / name).is_file() for name in _ASSETS):
        return folder
    if configured:
        raise KatexUnavailableError(
            f"{KATEX_DIR_VARIABLE}={configured} has no {' and '.join(_ASSETS)}"
        )
    npm = shutil.which("npm")
    if npm is None:
        raise KatexUnavailableError(
            f"olmOCR-bench's math tests need KaTeX {KATEX_VERSION}: install Node.js and npm "
            f"(apt-get install -y npm), or put {' and '.join(_ASSETS)} in a folder named by "
            f"{KATEX_DIR_VARIABLE}"
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        packed = subprocess.run(
            [npm, "pack", f"katex@{KATEX_VERSION}", "--pack-destination", scratch],
            capture_output=True, text=True, check=False,
        )
        if packed.returncode != 0:
            raise KatexUnavailableError(
                f"npm pack katex@{KATEX_VERSION} failed: {packed.stderr[-500:]}"
            )
        staging = Path(tempfile.mkdtemp(dir=folder.parent))  # beside it: the rename is atomic
        with tarfile.open(Path(scratch) / f"katex-{KATEX_VERSION}.tgz") as archive:
            for name in _ASSETS:
                member = archive.extractfile(f"package/dist/{name}")
                assert member is not None
                (staging / name).write_bytes(member.read())
    try:
        staging.rename(folder)
    except OSError:  # another process filled it first
        shutil.rmtree(staging, ignore_errors=True)
    if not all((folder / name).is_file() for name in _ASSETS):
        raise KatexUnavailableError(f"{folder} lacks {' or '.join(_ASSETS)} after fetching them")
    return folder


class EquationRenderer:
    """A headless Chromium page with KaTeX loaded; renders are cached per equation.

    The equation is a model's answer: the page is ``about:blank`` (no file origin, so no file
    can be fetched), KaTeX runs untrusted (its default: ``\\href``, ``\\url`` and
    ``\\includegraphics`` make no request) and Chromium is offline
    (:func:`evalsuite.browser.take_offline`), so nothing it holds reaches the network."""

    def __init__(self) -> None:
        missing = missing_browser()
        if missing:
            raise KatexUnavailableError(f"{', '.join(missing)} missing: {INSTALL_HINT}")
        assets = katex_dir()
        self._driver = start_chromium(VIEWPORT)
        self._driver.get("about:blank")
        self._driver.execute_script(
            "document.open(); document.write(arguments[0]); document.close();"
            "const style = document.createElement('style'); style.textContent = arguments[1];"
            "document.head.appendChild(style);"
            "const script = document.createElement('script'); script.textContent = arguments[2];"
            "document.head.appendChild(script);",
            _PAGE, (assets / "katex.min.css").read_text(encoding="utf-8"),
            (assets / "katex.min.js").read_text(encoding="utf-8"),
        )
        if not self._driver.execute_script("return typeof katex !== 'undefined';"):
            self.close()
            raise KatexUnavailableError(f"KaTeX from {assets} did not load in Chromium")
        self._cache: dict[str, RenderedEquation] = {}

    def render(self, latex: str) -> RenderedEquation:
        """KaTeX's rendering of ``latex`` (display mode); a parse error is returned, not raised."""
        cached = self._cache.get(latex)
        if cached is not None:
            return cached
        result: dict[str, Any] = self._driver.execute_script(_RENDER, latex)
        if "error" in result:
            message = str(result["error"])
            rendered = RenderedEquation(mathml=message, spans=(), error=message)
        else:
            rendered = RenderedEquation(
                mathml=result["mathml"],
                spans=tuple(Glyph(str(t), float(x), float(y), float(w), float(h))
                            for t, x, y, w, h in result["spans"]),
            )
            self._cache[latex] = rendered  # errors are not cached, as in the reference
        return rendered

    def close(self) -> None:
        self._driver.quit()


@cache
def shared_renderer() -> EquationRenderer:
    """One renderer per process, started on first use and closed at exit."""
    renderer = EquationRenderer()
    atexit.register(renderer.close)
    return renderer


def _mathml_inner(mathml: str) -> str:
    """The ``semantics`` children except ``annotation``, as BeautifulSoup's XML parser prints
    them, whitespace removed; the whole parsed document when there is no ``semantics``."""
    soup = BeautifulSoup(mathml, "xml")
    semantics = soup.find("semantics")
    if semantics:
        text = "".join(str(child) for child in semantics.contents
                       if getattr(child, "name", None) != "annotation")
    else:
        text = str(soup)
    return re.sub(r"\s+", "", text)


def _characters(spans: tuple[Glyph, ...]) -> list[Glyph]:
    """Each span's characters with equal slices of its width; zero-width-space spans dropped."""
    glyphs = []
    for span in spans:
        if span.text == "\u200b":
            continue
        for index, character in enumerate(span.text):
            width = span.width / len(span.text)
            glyphs.append(Glyph(character, span.x + span.width * index / len(span.text), span.y,
                                width, span.height))
    return glyphs


def _neighbours(glyphs: list[Glyph]) -> list[dict[str, int | None]]:
    """For each glyph, the nearest other glyph strictly up/down/left/right of its centre whose
    centre is within the tolerance on the other axis (first found wins a tie)."""
    centres = [glyph.centre for glyph in glyphs]
    result = []
    for index, (x, y) in enumerate(centres):
        best: dict[str, tuple[float, int] | None] = dict.fromkeys(("up", "down", "left", "right"))
        for other, (ox, oy) in enumerate(centres):
            if other == index:
                continue
            in_column = abs(ox - x) <= NEIGHBOUR_TOLERANCE_PX
            in_row = abs(oy - y) <= NEIGHBOUR_TOLERANCE_PX
            for direction, applies, distance in (
                ("up", oy < y and in_column, y - oy), ("down", oy > y and in_column, oy - y),
                ("left", ox < x and in_row, x - ox), ("right", ox > x and in_row, ox - x),
            ):
                current = best[direction]
                if applies and (current is None or distance < current[0]):
                    best[direction] = (distance, other)
        result.append({d: (found[1] if found else None) for d, found in best.items()})
    return result


def renders_match(reference: RenderedEquation, hypothesis: RenderedEquation) -> bool:
    """Whether ``hypothesis`` shows ``reference``, by olmOCR-bench's rule (module docstring).
    An erroneous reference has no spans, so it matches whenever its MathML test fails too."""
    if _mathml_inner(reference.mathml) in _mathml_inner(hypothesis.mathml):
        return True
    wanted, offered = _characters(reference.spans), _characters(hypothesis.spans)
    candidates = [[j for j, glyph in enumerate(offered) if glyph.text == want.text]
                  for want in wanted]
    if any(not options for options in candidates):
        return False
    wanted_neighbours, offered_neighbours = _neighbours(wanted), _neighbours(offered)
    assignment: dict[int, int] = {}
    used = [False] * len(offered)

    def consistent(index: int, choice: int) -> bool:
        for direction, neighbour in wanted_neighbours[index].items():
            if neighbour is None:
                continue
            counterpart = offered_neighbours[choice][direction]
            if counterpart is None:
                return False
            if neighbour in assignment:
                if assignment[neighbour] != counterpart:
                    return False
            elif offered[counterpart].text != wanted[neighbour].text:
                return False
        return True

    def place(index: int) -> bool:
        if index == len(wanted):
            return True
        for choice in candidates[index]:
            if used[choice]:
                continue
            assignment[index], used[choice] = choice, True
            if consistent(index, choice) and place(index + 1):
                return True
            used[choice] = False
            del assignment[index]
        return False

    return place(0)
