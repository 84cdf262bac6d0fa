"""Propensity files: the JSON that ``rankcli propensity -o`` writes and IPS training (``train --propensity FILE``)
reads.

One JSON object, one key per line, with (among the estimate's details: method, intervals, counts per position, the
fit, the log's footer) ``positions`` (1, 2, 3, ...) and ``propensity`` (one finite value above 0 per position): the two
keys a reader needs. Propensities are relative to ``reference_position`` (1 in rankcli's files: its propensity is 1 by
definition); another position's estimate can exceed 1 by chance, which IPS takes as it is (it needs only ratios). A
file without ``reference_position`` (written by hand or by an older rankcli) is read the same way. Non-finite numbers
are never written (an interval no bootstrap replicate defines is null).
"""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

from rankcli.errors import InputError
from rankcli.formats.atomic import atomic_path, kinds
from rankcli.formats.inputs import unreadable_input


def write_propensity(path: Path | str, record: dict, overwrite: bool = False) -> None:
    """Write a propensity file atomically (a temporary in the target directory, renamed into place).

    Parameters
    ----------
    path : path
        The file to write (``-``: standard output).
    record : dict
        The JSON object (:meth:`rankcli.propensity.PropensityResult.as_dict`); every number finite (``None`` for an
        undefined interval end).
    overwrite : bool
        Replace an existing file that rankcli wrote.
    """
    # One key per line, each value on its line: json's C encoder writes a value (a fitted tail of 100,000 positions
    # in 0.1 s); an indented dump goes through the pure-Python encoder (6 s).
    text = "{\n" + ",\n".join(f"  {json.dumps(str(k))}: {json.dumps(v, allow_nan=False)}"
                               for k, v in record.items()) + "\n}\n"
    with atomic_path(path, overwrite, file_kind=kinds.PROPENSITY) as tmp:
        Path(tmp).write_text(text)


#: The largest propensity file read (rankcli writes a few kilobytes per thousand positions).
PROPENSITY_MAX_BYTES = 64 << 20


def read_propensity(path: Path | str) -> dict:
    """The propensity file at ``path`` as written by :func:`write_propensity`: ``positions`` and ``propensity``
    checked (positions 1, 2, ...; values finite and above 0; when the file names its ``reference_position``, a listed
    position whose propensity is 1). For IPS training."""
    try:
        mode = Path(path).stat().st_mode
        if not stat.S_ISREG(mode):  # /dev/zero would be read until memory runs out; a FIFO blocks forever
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
            raise InputError(f"{path}: {kind}, not a propensity file (rankcli propensity -o writes a JSON file)")
        if Path(path).stat().st_size > PROPENSITY_MAX_BYTES:
            raise InputError(f"{path}: {Path(path).stat().st_size:,} bytes, more than a propensity file can be (at "
                             f"most {PROPENSITY_MAX_BYTES:,} are read)")
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise unreadable_input(path) from None
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deep
        raise InputError(f"{path}: not a readable propensity JSON file ({exc})") from None
    if not isinstance(data, dict) or "positions" not in data or "propensity" not in data:
        raise InputError(f"{path}: expected a JSON object with positions and propensity (rankcli propensity -o)")
    pos, prop = data["positions"], data["propensity"]
    if not isinstance(pos, list) or not isinstance(prop, list) or len(pos) != len(prop) or not pos:
        raise InputError(f"{path}: positions and propensity must be lists of one length")
    for i, (r, p) in enumerate(zip(pos, prop)):
        if isinstance(r, bool) or r != i + 1:  # JSON true is not position 1
            raise InputError(f"{path}: positions must be 1, 2, 3, ...; got {json.dumps(r)} at index {i}")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not (0 < _as_float(p) < math.inf):
            raise InputError(f"{path}: propensity of position {r} must be a finite number above 0, got "
                             f"{json.dumps(p)}")
    _check_reference(path, data)
    return data


def _as_float(value: int | float) -> float:
    """``value`` as a float; an integer beyond float's range is infinity (refused as not finite)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _check_reference(path: Path | str, data: dict) -> None:
    """A ``reference_position``, when the file has one, must be a listed position whose propensity is 1."""
    if "reference_position" not in data:
        return
    ref = data["reference_position"]
    if isinstance(ref, bool) or not isinstance(ref, int) or not 1 <= ref <= len(data["positions"]):
        raise InputError(f"{path}: reference_position must be one of the positions listed, got {json.dumps(ref)}")
    if data["propensity"][ref - 1] != 1:
        raise InputError(f"{path}: the propensity of the reference position {ref} must be 1 (the others are "
                         f"relative to it), got {json.dumps(data['propensity'][ref - 1])}")
