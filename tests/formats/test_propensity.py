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
                         ({"positions": [1, 2], "propensity": [1.0, 0.0]}, "within \\(0, 1\\]"),
                         ({"positions": [True], "propensity": [1.0]}, "positions must be 1, 2, 3"),
                         ({"propensity": [1.0]}, "expected a JSON object with positions and propensity")]:
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(InputError, match=message):
            read_propensity(tmp_path / "bad.json")
