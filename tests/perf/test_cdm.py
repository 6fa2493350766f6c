"""The CDM rows of ``make perf`` (evalsuite.perf.cdm): their pairs and their unavailable line."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.perf import cdm as perf_cdm
from evalsuite.perf import run_case


def test_pairs_are_200_distinct_and_start_with_the_official_cases() -> None:
    pairs = perf_cdm.perf_pairs()
    assert len(pairs) == perf_cdm.PAIR_COUNT == len(set(pairs))
    assert pairs == perf_cdm.perf_pairs()
    assert pairs[0] == (r"\frac{a}{b}", r"\frac{a}{b}")


def test_without_the_official_tree_each_row_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(perf_cdm.SOURCE_VARIABLE, str(tmp_path / "absent"))
    perf_cdm.official_run.cache_clear()

    def never(*_args: object) -> None:
        raise AssertionError("the suite side ran although the baseline is unavailable")

    monkeypatch.setattr(perf_cdm, "suite_f1", never)
    try:
        results = [run_case(case) for case in perf_cdm.CASES]
    finally:
        perf_cdm.official_run.cache_clear()
    for result in results:
        assert not result.passed and "\n" not in result.unavailable
        assert perf_cdm.SOURCE_VARIABLE in result.unavailable
        assert perf_cdm.PYTHON_VARIABLE in result.unavailable


def test_the_official_tree_and_python_come_from_the_variables_or_the_reference_folders(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    variables = (perf_cdm.SOURCE_VARIABLE, perf_cdm.PYTHON_VARIABLE, perf_cdm.REFSRC_VARIABLE,
                 perf_cdm.REFENV_VARIABLE)
    for variable in variables:
        monkeypatch.delenv(variable, raising=False)
    perf_cdm.official_run.cache_clear()
    try:
        with pytest.raises(perf_cdm.BaselineUnavailableError, match="not configured") as unset:
            perf_cdm.official_run()
    finally:
        perf_cdm.official_run.cache_clear()
    assert all(variable in str(unset.value) for variable in variables)
    monkeypatch.setenv(perf_cdm.REFSRC_VARIABLE, str(tmp_path / "src"))
    monkeypatch.setenv(perf_cdm.REFENV_VARIABLE, str(tmp_path / "env"))
    source = perf_cdm.configured_path(
        perf_cdm.SOURCE_VARIABLE, perf_cdm.REFSRC_VARIABLE, perf_cdm.REFSRC_NAME
    )
    assert source == tmp_path / "src" / "OmniDocBench-9dc1dec"
    monkeypatch.setenv(perf_cdm.PYTHON_VARIABLE, str(tmp_path / "python"))
    python = perf_cdm.configured_path(
        perf_cdm.PYTHON_VARIABLE, perf_cdm.REFENV_VARIABLE, perf_cdm.REFENV_NAME
    )
    assert python == tmp_path / "python"
