"""A loss's own parameters, declared on its record (:class:`rankcli.train.losses.Loss`): name, type, default, the
values allowed, a one-line doc, and the range a hyperparameter search should try.

``train`` and ``experiment`` set them with ``--loss-option [LOSS:]NAME=VALUE`` (and a few with a flag of their own,
``--step``); every value is checked here, against the declaration, with a message naming the option. What a model
was trained with is recorded with every option resolved (``rankcli.json``: ``loss.options``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rankcli.errors import UsageError

#: An option's ``before``: the option has no value that reproduces rankcli before the option existed.
NEW = None


@dataclass(frozen=True)
class LossOption:
    """One parameter of a loss.

    Attributes
    ----------
    name : the ``--loss-option`` name (``temperature``).
    kind : ``float``, ``int`` or ``choice``.
    default : the value without the option.
    doc : one line: what it is, and where the default comes from.
    low, high : the range of a number (inclusive unless ``low_open``); ``None`` for no bound.
    low_open : whether ``low`` itself is excluded (``temperature > 0``).
    choices : the values of a ``choice``.
    search : the range a hyperparameter search tries: ``(low, high, "log" | "linear")`` for a number, the values
        for a choice (``rankcli tune`` reads it).
    flag : a dedicated command-line flag that sets it (``--step``), besides ``--loss-option``.
    before : the value that reproduces rankcli before the option existed (an experiment directory written then
        resumes with it); :data:`NEW` for an option as old as its loss.
    only_with : ``(other option, value)``: the option means something only when the other has that value (giving
        it otherwise is a :class:`UsageError`, not silently ignored).
    """

    name: str
    kind: str
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()
    search: tuple | None = None
    flag: str | None = None
    before: Any = NEW
    only_with: tuple[str, Any] | None = None

    def allowed(self) -> str:
        """The values allowed, for messages and docs: ``paper | diagonal``, ``> 0``, ``0 .. 100``."""
        if self.kind == "choice":
            return " | ".join(self.choices)
        low = "" if self.low is None else f"{'>' if self.low_open else '>='} {self.low:g}"
        high = "" if self.high is None else f"<= {self.high:g}"
        return ", ".join(x for x in (low, high) if x) or "any number"

    def search_entry(self) -> dict | None:
        """The option's search range as a hyperparameter search reads it: ``{"low", "high", "log", "default"}`` for a
        number, ``{"choices", "default"}`` for a choice; ``None`` when it declares none."""
        if self.search is None:
            return None
        if self.kind == "choice":
            return {"choices": list(self.search), "default": self.default}
        low, high, scale = self.search
        return {"low": low, "high": high, "log": scale == "log", "int": self.kind == "int", "default": self.default}

    def check(self, value: Any, loss: str) -> Any:
        """``value`` (text or a number) as the option's type, or :class:`UsageError` naming ``loss`` and the option."""
        where = f"--loss-option {loss}:{self.name}" + (f" ({self.flag})" if self.flag else "")
        if self.kind == "choice":
            text = str(value).strip().lower()
            if text not in self.choices:
                raise UsageError(f"{where}: expected {self.allowed()}, got {value!r}")
            return text
        try:
            number = float(value) if self.kind == "float" else _integer(value)
        except (TypeError, ValueError):
            raise UsageError(f"{where}: expected {'a number' if self.kind == 'float' else 'an integer'} "
                             f"({self.allowed()}), got {value!r}") from None
        ok = math.isfinite(number) and (self.low is None or number > self.low or (number == self.low and not
                                                                                   self.low_open))
        if not ok or (self.high is not None and number > self.high):
            raise UsageError(f"{where}: expected {self.allowed()}, got {value!r}")
        return number


def _integer(value: Any) -> int:
    number = float(value)
    if not number.is_integer():
        raise ValueError(value)
    return int(number)


def resolve(loss: str, options: Iterable[LossOption], given: dict[str, Any]) -> dict[str, Any]:
    """Every option of ``loss`` (declared by ``options``) with its value: ``given`` (checked) or the default.
    An option ``loss`` does not declare is a :class:`UsageError` suggesting the closest name."""
    declared = {o.name: o for o in options}
    for name in given:
        if name not in declared:
            raise UsageError(unknown_option(loss, name, list(declared)))
    values = {name: (o.check(given[name], loss) if name in given else o.default) for name, o in declared.items()}
    for name, o in declared.items():
        if o.only_with is not None and name in given and values[o.only_with[0]] != o.only_with[1]:
            other, needed = o.only_with
            raise UsageError(f"--loss-option {loss}:{name} applies only with {other}={needed}, got "
                             f"{other}={values[other]}")
    return values


def unknown_option(loss: str, name: str, names: list[str]) -> str:
    """The message for an option ``name`` that ``loss`` (whose options are ``names``) does not have."""
    if not names:
        return f"--loss-option {name}: --loss {loss} has no options"
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"--loss-option {name}: --loss {loss} has no option {name!r}{hint} (its options: {', '.join(names)})"


def parse_option_texts(texts: Iterable[str]) -> list[tuple[str | None, str, str]]:
    """``[LOSS:]NAME=VALUE`` texts as ``(loss or None, name, value)``; a text of another form is a
    :class:`UsageError`."""
    out = []
    for text in texts:
        head, sep, value = str(text).partition("=")
        loss, colon, name = head.strip().rpartition(":")
        name = name.strip()
        if not sep or not name or not value.strip() or (colon and not loss.strip()):
            raise UsageError(f"--loss-option: expected [LOSS:]NAME=VALUE (e.g. approxndcg:temperature=0.5), "
                             f"got {text!r}")
        out.append((loss.strip() or None, name, value.strip()))
    return out


def meaningful(options: Iterable[LossOption], values: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` without the options that mean nothing beside ``values`` (an ``only_with`` condition that does not
    hold): a search that draws LambdaLoss's ``mu`` and ``variant=ndcg-loss2`` together sets no ``mu``."""
    declared = {o.name: o for o in options}
    return {k: v for k, v in given.items()
            if k not in declared or declared[k].only_with is None
            or str(values.get(declared[k].only_with[0])) == str(declared[k].only_with[1])}
