"""The one rule for a number in a table: missing and non-finite values, and p-values below the printable floor."""

import math

import pytest

from rankcli.display.numbers import P_VALUE_FLOOR, number, p_value, p_value_or_reason, signed


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf])
def test_a_missing_or_non_finite_value_is_n_a(value):
    assert number(value) == "n/a" and p_value(value) == "n/a"


def test_numbers_keep_their_digits_and_p_values_their_floor():
    assert number(0.123456) == "0.1235" and number(2, digits=1) == "2.0" and number(-0.5, 2) == "-0.50"
    assert p_value(P_VALUE_FLOOR) == "0.0001" and p_value(P_VALUE_FLOOR / 2) == "<0.0001" and p_value(0.0) == "<0.0001"
    assert p_value(0.04999) == "0.0500" and p_value(1.0) == "1.0000"


def test_signed_differences_and_the_floor_at_fewer_decimals():
    assert signed(0.01) == "+0.0100" and signed(-0.5, 2) == "-0.50" and signed(math.inf) == "n/a"
    # at three decimals the floor is the smallest value they show: 0.0004 is not written as 0.000
    assert p_value(0.0004, 3) == "<0.001" and p_value(0.001, 3) == "0.001" and p_value(0.01234, 3) == "0.012"


def test_a_test_that_could_not_run_says_so_where_the_p_value_would_be():
    assert p_value_or_reason(math.nan) == "not testable" and p_value_or_reason(None, 3, "why") == "not testable: why"
    assert p_value_or_reason(P_VALUE_FLOOR / 2) == "<0.0001" and p_value_or_reason(0.5, 3) == "0.500"
