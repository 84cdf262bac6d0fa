"""rankcli.formats.propensity: the propensity file round-trips, never holds a non-finite number, and its reader refuses
what IPS training cannot use."""

from __future__ import annotations

import json

import pytest

from rankcli.errors import InputError
from rankcli.formats.propensity import read_propensity, write_propensity


def test_round_trip_and_refusals(tmp_path):
    record = {"method": "click-rate", "positions": [1, 2, 3], "propensity": [1.0, 0.5, 0.25],
              "ci_low": [1.0, 0.4, None]}
    path = tmp_path / "p.json"
    write_propensity(path, record)
    assert read_propensity(path) == record
    with pytest.raises(ValueError):  # NaN is not JSON: the writer refuses it rather than write an unreadable file
        write_propensity(tmp_path / "nan.json", {**record, "propensity": [1.0, float("nan"), 0.2]})
    for bad, message in [({"positions": [1, 3], "propensity": [1.0, 0.5]}, "positions must be 1, 2, 3"),
                         ({"positions": [1, 2], "propensity": [1.0, 0.0]}, "must be a finite number above 0, got 0"),
                         ({"positions": [1, 2], "propensity": [1.0, -0.5]}, "above 0, got -0.5"),
                         ({"positions": [1, 2], "propensity": [1.0, 10 ** 400]}, "above 0, got 1000"),
                         ({"positions": [1, 2], "propensity": [1.0, True]}, "above 0, got true"),
                         ({"positions": [1, 2], "propensity": [1.0, 0.5], "reference_position": 3},
                          "reference_position must be one of the positions listed, got 3"),
                         ({"positions": [1, 2], "propensity": [1.0, 0.5], "reference_position": 2},
                          "the propensity of the reference position 2 must be 1 .* got 0.5"),
                         ({"positions": [True], "propensity": [1.0]}, "positions must be 1, 2, 3"),
                         ({"propensity": [1.0]}, "expected a JSON object with positions and propensity")]:
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(InputError, match=message):
            read_propensity(tmp_path / "bad.json")


def test_propensities_above_one_are_read_and_the_reference_is_kept(tmp_path):
    """Relative to the reference position an estimate can exceed 1 by chance; IPS needs only ratios, so any finite
    value above 0 is read (a file without reference_position too)."""
    path = tmp_path / "p.json"
    for record in ({"method": "click-rate", "reference_position": 1, "positions": [1, 2, 3],
                    "propensity": [1.0, 1.023, 0.4]},
                   {"method": "by hand", "positions": [1, 2], "propensity": [0.5, 2.5]}):
        write_propensity(path, record, overwrite=True)
        assert read_propensity(path) == record
    for bad in ("Infinity", "NaN", "1e999"):
        path.write_text(f'{{"positions": [1, 2], "propensity": [1.0, {bad}]}}')
        with pytest.raises(InputError, match="must be a finite number above 0"):
            read_propensity(path)
