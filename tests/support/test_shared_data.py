"""tests.support.shared_data: a missing data folder skips, or fails under
EVALSUITE_REQUIRE_DATA=1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import shared_data as module


def test_present_data_is_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fox").mkdir()
    monkeypatch.setattr(module, "DATA", tmp_path)
    assert module.shared_data("fox") == tmp_path / "fox"


@pytest.mark.parametrize("data", [None, "folder"], ids=["unset", "without-the-part"])
def test_missing_data_skips_or_fails_when_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: str | None
) -> None:
    monkeypatch.setattr(module, "DATA", None if data is None else tmp_path)
    monkeypatch.delenv(module.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="shared samples"):
        module.shared_data("fox", "en_1_gt.txt")
    monkeypatch.setenv(module.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="EVALSUITE_REQUIRE_DATA=1 requires them"):
        module.shared_data("fox", "en_1_gt.txt")


def test_the_decorator_checks_before_the_test_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = []
    monkeypatch.setattr(module, "DATA", tmp_path)
    monkeypatch.setenv(module.REQUIRE_ENV, "1")
    checked = module.needs_data("quality")(lambda value: ran.append(value))
    with pytest.raises(pytest.fail.Exception):
        checked(1)
    (tmp_path / "quality").mkdir()
    checked(2)
    assert ran == [2]
