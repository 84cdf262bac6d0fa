"""rankcli.runtime.compat: each private name of a dependency that rankcli uses is still where rankcli reads it.

When one of these tests fails after a dependency upgrade, the private name moved: update rankcli/runtime/compat.py (and
only it), or pin the dependency.
"""

from __future__ import annotations

import pytest

from rankcli.runtime import compat


def test_lightgbm_still_exposes_its_parameter_alias_table_where_compat_reads_it():
    import lightgbm.basic

    getter = lightgbm.basic._ConfigAliases._get_all_param_aliases  # the private name compat.py relies on
    table = getter()
    assert isinstance(table, dict) and {"num_leaves", "objective", "seed", "label_gain"} <= set(table)
    assert "num_leaf" in table["num_leaves"] and "random_state" in table["seed"]


def test_lightgbm_parameter_aliases_main_name_first():
    table = compat.lightgbm_parameter_aliases()
    assert table["num_leaves"][0] == "num_leaves" and "max_leaves" in table["num_leaves"]
    assert table["objective"][0] == "objective" and "application" in table["objective"]
    assert all(aliases[0] == main for main, aliases in table.items())
    assert len(table) > 100


def test_a_moved_private_name_is_a_clear_error_not_an_attribute_error(monkeypatch):
    import lightgbm.basic

    monkeypatch.delattr(lightgbm.basic._ConfigAliases, "_get_all_param_aliases")
    compat.lightgbm_parameter_aliases.cache_clear()
    try:
        with pytest.raises(compat.DependencyChanged, match="_ConfigAliases._get_all_param_aliases") as err:
            compat.lightgbm_parameter_aliases()
        assert err.value.exit_status == 1
    finally:
        compat.lightgbm_parameter_aliases.cache_clear()


def test_lightgbm_still_keeps_its_logger_where_capture_restores_it():
    import lightgbm.basic

    before = lightgbm.basic._LOGGER  # the private name compat.capture_lightgbm_log reads back
    with compat.capture_lightgbm_log() as lines:
        assert lightgbm.basic._LOGGER is not before
        lightgbm.basic._log_info("hello")
    assert lines == ["hello"] and lightgbm.basic._LOGGER is before


def test_parse_position_bias_log_one_table_per_iteration():
    lines = ["[LightGBM] [Debug]        position    bias_factor\n", "[LightGBM] [Debug]               1       0.25",
             "[LightGBM] [Debug]               2     -0.125", "[LightGBM] [Debug] Trained a tree with leaves = 4",
             "[LightGBM] [Debug]        position    bias_factor\n", "[LightGBM] [Debug]               1        0.5"]
    assert compat.parse_position_bias_log(lines) == [(["1", "2"], [0.25, -0.125]), (["1"], [0.5])]


def test_typer_still_vendors_click_where_the_error_boundary_catches_its_usage_errors():
    import typer
    from typer._click.exceptions import ClickException  # the private name compat.click_exception_type reads

    assert compat.click_exception_type() is ClickException
    assert issubclass(typer.BadParameter, ClickException)
    app = typer.Typer()

    @app.command()
    def main(n: int = 1) -> None:
        pass

    # typer's parser raises it for a bad command line when the caller handles errors (standalone_mode=False)
    with pytest.raises(ClickException) as err:
        typer.main.get_command(app).main(args=["--n", "x"], standalone_mode=False)
    assert err.value.exit_code == 2


def test_a_moved_typer_click_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "typer._click.exceptions", None)
    with pytest.raises(compat.DependencyChanged, match="typer._click"):
        compat.click_exception_type()


def test_arrow_call_function_is_arrows_kernel_without_pyarrow_compute():
    import pyarrow as pa
    from pyarrow._compute import call_function  # the private name compat.arrow_call_function uses

    table = pa.table({"a": [1, 2, 3, 4], "b": ["w", "x", "y", "z"]})
    indices = pa.array([3, 0, 0, 2])
    assert call_function("take", [table, indices]).equals(table.take(indices))
    assert compat.arrow_call_function("take", [table, indices]).equals(table.take(indices))


def test_arrow_call_function_falls_back_to_the_public_module(monkeypatch):
    import sys

    import pyarrow as pa

    monkeypatch.setitem(sys.modules, "pyarrow._compute", None)
    assert compat.arrow_call_function("take", [pa.array([5, 6, 7]), pa.array([2, 0])]).to_pylist() == [7, 5]
