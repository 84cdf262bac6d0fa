"""The one rule for a number in a table: missing and non-finite values, and p-values below the printable floor."""

import math

import pytest

from rankcli.display.numbers import P_VALUE_FLOOR, number, p_value


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf])
def test_a_missing_or_non_finite_value_is_n_a(value):
    assert number(value) == "n/a" and p_value(value) == "n/a"


def test_numbers_keep_their_digits_and_p_values_their_floor():
    assert number(0.123456) == "0.1235" and number(2, digits=1) == "2.0" and number(-0.5, 2) == "-0.50"
    assert p_value(P_VALUE_FLOOR) == "0.0001" and p_value(P_VALUE_FLOOR / 2) == "<0.0001" and p_value(0.0) == "<0.0001"
    assert p_value(0.04999) == "0.0500" and p_value(1.0) == "1.0000"
