"""The real third-party samples of ``$EVALSUITE_DATA`` (CI: ``../shared/data``) in the tests.

A test that needs them asks :func:`shared_data` for its path, or carries :func:`needs_data`.
Where the data is absent the test skips, except under ``EVALSUITE_REQUIRE_DATA=1`` (``.ci/run``
sets it), where it fails: losing the data folder must fail CI, not turn its data tests into
skips."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

REQUIRE_ENV = "EVALSUITE_REQUIRE_DATA"
DATA = Path(os.environ["EVALSUITE_DATA"]) if os.environ.get("EVALSUITE_DATA") else None
"""``$EVALSUITE_DATA``, None where unset."""

Test = TypeVar("Test", bound=Callable[..., Any])


def shared_data(*parts: str) -> Path:
    """``$EVALSUITE_DATA/<parts>``; skips the calling test where it does not exist (fails it
    under ``EVALSUITE_REQUIRE_DATA=1``)."""
    if DATA is not None and DATA.joinpath(*parts).exists():
        return DATA.joinpath(*parts)
    missing = ("EVALSUITE_DATA is not set" if DATA is None
               else f"{DATA.joinpath(*parts)} does not exist")
    message = f"{missing}: this test reads the shared samples (CI: ../shared/data)"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message}, and {REQUIRE_ENV}=1 requires them", pytrace=False)
    pytest.skip(message)


def needs_data(*parts: str) -> Callable[[Test], Test]:
    """Decorator: the test runs only where ``$EVALSUITE_DATA/<parts>`` exists (see
    :func:`shared_data`)."""

    def decorate(test: Test) -> Test:
        @functools.wraps(test)
        def checked(*args: Any, **kwargs: Any) -> Any:
            shared_data(*parts)
            return test(*args, **kwargs)

        return checked  # type: ignore[return-value]

    return decorate
