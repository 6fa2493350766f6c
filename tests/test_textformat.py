"""Numbers and sparklines as the terminal prints them."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from evalsuite.textformat import SPARK_LEVELS, significant, sparkline

finite = st.floats(min_value=-1e5, max_value=1e5, allow_nan=False).filter(
    lambda value: value == 0 or abs(value) >= 1e-4
)


@given(finite)
def test_significant_is_the_value_to_four_significant_digits(value: float) -> None:
    """Read back, the text is Python's own 4-significant-digit rounding (``%.4g``); from
    1000 up, whole numbers without exponent (12346, not 1.235e+04)."""
    text = significant(value)
    expected = float(f"{value:.4g}") if abs(value) < 999.95 else float(round(value))
    assert float(text) == expected
    assert "e" not in text


def test_significant_keeps_integers_whole_and_names_booleans() -> None:
    assert significant(123456) == "123456"
    assert significant(0.123456789) == "0.1235"
    assert significant(-0.4, signed=True) == "-0.4"
    assert significant(0.0, signed=True) == "+0"
    assert significant(True) == "yes"
    assert significant(None) == "—"


@given(st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)), max_size=20))
def test_sparkline_orders_its_bars_as_the_values(values: list[float | None]) -> None:
    line = sparkline(values)
    assert len(line) == len(values)
    known = [(v, c) for v, c in zip(values, line, strict=True) if v is not None]
    assert all(c == " " for v, c in zip(values, line, strict=True) if v is None)
    for a, bar_a in known:
        for b, bar_b in known:
            if a < b:
                assert SPARK_LEVELS.index(bar_a) <= SPARK_LEVELS.index(bar_b)
    if known and min(v for v, _ in known) < max(v for v, _ in known):
        lowest = min(known)[1]
        highest = max(known)[1]
        assert (lowest, highest) == (SPARK_LEVELS[0], SPARK_LEVELS[-1])


def test_sparkline_of_equal_values_is_flat() -> None:
    assert sparkline([0.5, 0.5, None, 0.5]) == "▄▄ ▄"
    assert sparkline([0.0, 1.0, 0.5]) == "▁█▅"  # 0.5 of 7 levels up rounds to the 5th bar
    assert not math.isnan(float(significant(1e-4)))
