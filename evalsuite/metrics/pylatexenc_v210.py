"""pylatexenc 2.10, the release OmniDocBench v1.6 (9dc1dec) converts LaTeX with, beside the
3.0a30 that the suite's environment installs (v1.0 and v1.5 use that one; the two differ on
malformed LaTeX, and 3.0a30 may not return on some of it).

2.10 lives in a folder of its own (``make setup`` installs it into ``<venv>/pylatexenc-2.10``;
``$EVALSUITE_PYLATEXENC210`` names another folder) and is loaded under the module name
``pylatexenc_v210`` so that both releases can be imported in one process.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from evalsuite.errors import ToolUnavailableError

__all__ = [
    "MODULE_NAME",
    "PylatexencV210UnavailableError",
    "folder",
    "latex_to_text",
    "looks_malformed",
    "module",
]

MODULE_NAME = "pylatexenc_v210"
INSTALL_COMMAND = "pip install --no-deps --target {folder} pylatexenc==2.10"


class PylatexencV210UnavailableError(ToolUnavailableError, ImportError):
    """pylatexenc 2.10 is not installed in its folder."""


def folder() -> Path:
    """Where pylatexenc 2.10 is installed: ``$EVALSUITE_PYLATEXENC210``, else
    ``<sys.prefix>/pylatexenc-2.10``."""
    configured = os.environ.get("EVALSUITE_PYLATEXENC210")
    return Path(configured) if configured else Path(sys.prefix) / "pylatexenc-2.10"


@cache
def _load(location: Path) -> ModuleType:
    init = location / "pylatexenc" / "__init__.py"
    if not init.is_file():
        raise PylatexencV210UnavailableError(
            f"pylatexenc 2.10 (OmniDocBench v1.6) is not installed in {location}: run "
            f"`make setup` or `{INSTALL_COMMAND.format(folder=location)}`")
    spec = importlib.util.spec_from_file_location(
        MODULE_NAME, init, submodule_search_locations=[str(init.parent)])
    assert spec is not None and spec.loader is not None  # a file location always has both
    package = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = package
    try:
        spec.loader.exec_module(package)
    except BaseException:
        del sys.modules[MODULE_NAME]
        raise
    version = importlib.import_module(f"{MODULE_NAME}.version").version_str
    if version != "2.10":
        for name in [name for name in sys.modules if name.split(".")[0] == MODULE_NAME]:
            del sys.modules[name]
        raise PylatexencV210UnavailableError(
            f"{location} holds pylatexenc {version}, not 2.10: reinstall it with "
            f"`{INSTALL_COMMAND.format(folder=location)}`")
    return package


def module() -> ModuleType:
    """The pylatexenc 2.10 package (loaded once, as ``pylatexenc_v210``).

    Raises:
        PylatexencV210UnavailableError: it is not installed in :func:`folder`."""
    return _load(folder())


def latex_to_text(text: str) -> str:
    """``LatexNodes2Text().latex_to_text(text)`` of pylatexenc 2.10 (default options)."""
    return _converter().latex_to_text(text)


@cache
def _converter() -> object:
    module()
    return importlib.import_module(f"{MODULE_NAME}.latex2text").LatexNodes2Text()


_ENVIRONMENT_MARK = re.compile(r"\\(begin|end)\{([^{}]+)\}")
_LEFT = re.compile(r"\\left\b")
_RIGHT = re.compile(r"\\right\b")
_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")


def _braces_balanced(latex: str) -> bool:
    """``{``/``}`` nest and close; a backslash before one of ``{}[]()`` escapes it."""
    depth = 0
    at = 0
    while at < len(latex):
        if latex[at] == "\\" and latex[at + 1 : at + 2] in tuple("{}[]()"):
            at += 2
            continue
        depth += {"{": 1, "}": -1}.get(latex[at], 0)
        if depth < 0:
            return False
        at += 1
    return depth == 0


def _environments_balanced(latex: str) -> bool:
    open_names: list[str] = []
    for found in _ENVIRONMENT_MARK.finditer(latex):
        if found.group(1) == "begin":
            open_names.append(found.group(2))
        elif not open_names or open_names.pop() != found.group(2):
            return False
    return not open_names


def looks_malformed(latex: str, max_chars: int, *, formula: bool = True) -> bool:
    """OmniDocBench v1.6's guard before pylatexenc (``likely_bad_latex``, in
    ``src/core/preprocess/text_postprocess.py`` with ``max_chars`` 8000 and in CDM's
    ``parse_guard.py`` with 20000): the stripped text is longer than ``max_chars`` or has
    unbalanced braces or environments; for a formula also unequal ``\\left``/``\\right``,
    ``\\(``/``\\)``, ``\\[``/``\\]`` counts or an odd number of unescaped ``$``."""
    latex = latex.strip()
    if not latex:
        return False
    if len(latex) > max_chars or not _braces_balanced(latex) or not _environments_balanced(latex):
        return True
    return formula and (
        len(_LEFT.findall(latex)) != len(_RIGHT.findall(latex))
        or latex.count("\\(") != latex.count("\\)")
        or latex.count("\\[") != latex.count("\\]")
        or len(_UNESCAPED_DOLLAR.findall(latex)) % 2 != 0
    )
