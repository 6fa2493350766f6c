"""Every exception evalsuite defines is an :class:`~evalsuite.errors.EvalsuiteError` (what the
command line and the pytest plugin catch to print one line instead of a traceback), and a missing
tool has one spelling: a ``<Tool>UnavailableError`` under
:class:`~evalsuite.errors.ToolUnavailableError`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import evalsuite
from evalsuite.errors import EvalsuiteError, ToolUnavailableError

NEEDS_VLLM = "evalsuite.vllm_plugin."
"""Modules that import vLLM itself (loaded by a vLLM process, tested by make test-vllm)."""


def evalsuite_modules() -> list[ModuleType]:
    """Every module of the package but those run inside vLLM."""
    names = [
        info.name for info in pkgutil.walk_packages(evalsuite.__path__, "evalsuite.")
        if not info.name.startswith(NEEDS_VLLM) and not info.name.endswith("__main__")
    ]
    return [importlib.import_module(name) for name in names]


def public_exceptions(module: ModuleType) -> list[type[BaseException]]:
    """The exception classes ``module`` defines (not imports) under a public name; warnings,
    which are issued rather than raised, aside."""
    return [
        value for name, value in vars(module).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
        and not issubclass(value, Warning)
        and value.__module__ == module.__name__ and not name.startswith("_")
    ]


@pytest.fixture(scope="module")
def exceptions() -> list[type[BaseException]]:
    found = [error for module in evalsuite_modules() for error in public_exceptions(module)]
    assert len(found) > 40, "the walk found too few exception classes to say anything"
    return found


def test_every_exception_is_an_evalsuite_error(exceptions: list[type[BaseException]]) -> None:
    outside = [f"{error.__module__}.{error.__qualname__}" for error in exceptions
               if not issubclass(error, EvalsuiteError)]
    assert outside == []


def test_a_missing_tool_has_one_spelling(exceptions: list[type[BaseException]]) -> None:
    """Named ``…UnavailableError``, under ToolUnavailableError (engines keep their own base:
    an unavailable engine skips a test the user did not ask for)."""
    misspelt = [error.__qualname__ for error in exceptions
                if error.__qualname__.endswith(("Missing", "MissingError", "Unavailable"))
                or ("Unavailable" in error.__qualname__
                    and not error.__qualname__.endswith("UnavailableError"))]
    assert misspelt == []
    tools = {error.__qualname__ for error in exceptions if issubclass(error, ToolUnavailableError)}
    assert {"LatexmlUnavailableError", "KatexUnavailableError", "CdmToolchainUnavailableError",
            "TokenizerUnavailableError", "PylatexencV210UnavailableError",
            "BaselineUnavailableError"} <= tools
    named = {error.__qualname__ for error in exceptions
             if error.__qualname__.endswith("UnavailableError")}
    assert named - tools <= {"EngineUnavailableError"}
