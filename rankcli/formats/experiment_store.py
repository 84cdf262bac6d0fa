"""The experiment directory (``EXP_DIR``) as a file format: its layout, and every read and write of its files.

- ``config.json``: the configuration's identity, the data fingerprint, ``trials`` and ``correction``;
- ``trials.parquet``: one row per (trial, setting, loss, metric) of every finished unit (:data:`TRIAL_COLUMNS`),
  rewritten atomically after every unit under a lock, so it is always whole and is the record of what is finished;
- ``curves/<setting>__<trial>__<loss>.parquet``: a unit's validation metric after every tree;
- ``queries/<setting>__<fold>__<loss>.parquet`` (folds protocol): ``qid`` and one float64 column per test metric, a
  per-query metric file (:mod:`rankcli.formats.metric_file`, as ``rankcli eval --per-query`` writes it) whose footer
  adds the unit's ``setting``, ``fold`` and ``loss``;
- ``scores/<setting>__<trial>__<loss>.parquet`` (``experiment --fuse``): the unit's test scores, one ``score`` per test
  row in test-file order, that the trial's fused run is made of;
- ``tuned/<setting>__<trial>__<loss>.json`` (``experiment --tune``): the parameters tuning chose for the unit, its
  best and default validation values and the trials run, written before the unit's rows reach ``trials.parquet``;
- ``summary.json``, ``summary.md``, ``convergence.csv``, ``sweep-<kind>.csv``: text written by
  :func:`write_text`;
- ``.trials.lock`` and ``.locks/``: the locks of concurrent runs on one directory, removed when a run finishes
  (:func:`remove_locks`; those another run holds stay).

pyarrow is imported only inside the functions that read or write Parquet, so importing this module is cheap.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rankcli.errors import InputError, OutputError
from rankcli.formats.atomic import FileLock, Layout, atomic_path, is_experiment_config, remove_owned
from rankcli.formats.jsonable import jsonable
from rankcli.formats.metric_file import read_metric_file, write_metric_file

CONFIG_FILE = "config.json"
TRIALS_FILE = "trials.parquet"
CURVES_DIR = "curves"
QUERIES_DIR = "queries"
TUNED_DIR = "tuned"
SCORES_DIR = "scores"
#: Lock files of concurrent runs on one EXP_DIR: the store's read-merge-write, and one per unit being trained.
STORE_LOCK = ".trials.lock"
LOCKS_DIR = ".locks"
TRIAL_COLUMNS = ("trial", "setting", "loss", "metric", "value", "trees", "seconds")
_OUTPUT_NAMES = (CONFIG_FILE, TRIALS_FILE, CURVES_DIR, QUERIES_DIR, TUNED_DIR, SCORES_DIR, "summary.json",
                 "summary.md", "convergence.csv", "convergence.png")


class Curve(NamedTuple):
    """One unit's validation curve: the ``select_by`` metric after every tree."""

    setting: str
    trial: int
    loss: str
    values: np.ndarray


def unit_name(setting: str, trial: int, loss: str) -> str:
    """The file stem of the unit ``(setting, trial, loss)``'s curve, per-query and lock files."""
    return f"{setting}__{trial:05d}__{loss}"


def curve_path(exp_dir: Path, setting: str, trial: int, loss: str) -> Path:
    """The validation curve of the unit ``(setting, trial, loss)`` in ``exp_dir``."""
    return exp_dir / CURVES_DIR / f"{unit_name(setting, trial, loss)}.parquet"


def queries_path(exp_dir: Path, setting: str, trial: int, loss: str) -> Path:
    """The per-query test metrics of the unit ``(setting, trial, loss)`` in ``exp_dir`` (folds protocol): ``qid`` and
    one column per metric."""
    return exp_dir / QUERIES_DIR / f"{unit_name(setting, trial, loss)}.parquet"


def scores_path(exp_dir: Path, setting: str, trial: int, loss: str) -> Path:
    """The test scores of the unit ``(setting, trial, loss)`` in ``exp_dir`` (``experiment --fuse``)."""
    return exp_dir / SCORES_DIR / f"{unit_name(setting, trial, loss)}.parquet"


def _write_scores(exp_dir: Path, u) -> None:
    import pyarrow as pa

    from rankcli.formats.parquet import write_table

    (exp_dir / SCORES_DIR).mkdir(exist_ok=True)
    write_table(scores_path(exp_dir, u.setting, u.trial, u.loss),
                pa.table({"score": pa.array(np.asarray(u.scores, dtype=np.float64))}), overwrite=True,
                query_aligned=False, metadata={"kind": "experiment-scores"})


def read_scores(path: Path) -> np.ndarray:
    """A unit's test scores (:func:`scores_path`)."""
    from rankcli.formats.parquet import column_to_numpy, read_table

    return column_to_numpy(read_table(path, ["score"]).column("score")).astype(np.float64)


def lock_path(exp_dir: Path, setting: str, trial: int, loss: str) -> Path:
    """The lock file in ``exp_dir`` a run holds while it trains the unit ``(setting, trial, loss)``."""
    return exp_dir / LOCKS_DIR / f"{unit_name(setting, trial, loss)}.lock"


def _write_curve(exp_dir: Path, u) -> None:
    import pyarrow as pa

    from rankcli.formats.parquet import write_table

    n = len(u.curve)
    curve = pa.table({"setting": pa.array([u.setting] * n, pa.string()), "trial": pa.array([u.trial] * n, pa.int64()),
                      "loss": pa.array([u.loss] * n, pa.string()),
                      "tree": pa.array(np.arange(1, n + 1), pa.int64()), "value": pa.array(u.curve, pa.float64())})
    (exp_dir / CURVES_DIR).mkdir(exist_ok=True)
    write_table(curve_path(exp_dir, u.setting, u.trial, u.loss), curve, overwrite=True, query_aligned=False,
                metadata={"kind": "experiment-curve"})


def tuned_path(exp_dir: Path, setting: str, trial: int, loss: str) -> Path:
    """What tuning chose for the unit ``(setting, trial, loss)`` in ``exp_dir`` (``experiment --tune``)."""
    return exp_dir / TUNED_DIR / f"{unit_name(setting, trial, loss)}.json"


def load_tuned(exp_dir: Path) -> dict[tuple[str, int, str], dict]:
    """Every unit's tuning record in ``exp_dir``, by ``(setting, trial, loss)``."""
    out = {}
    for p in sorted((exp_dir / TUNED_DIR).glob("*.json")) if (exp_dir / TUNED_DIR).is_dir() else []:
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{p}: unreadable ({exc}); rerun with --overwrite") from None
        out[(doc["setting"], int(doc["trial"]), doc["loss"])] = doc
    return out


def _write_per_query(exp_dir: Path, u, convention: dict | None) -> None:
    (exp_dir / QUERIES_DIR).mkdir(exist_ok=True)
    write_metric_file(queries_path(exp_dir, u.setting, u.trial, u.loss), np.asarray(u.qids, dtype=np.int64),
                      u.per_query, convention=convention,
                      extra={"setting": u.setting, "fold": u.trial, "loss": u.loss}, overwrite=True)


class ResultStore:
    """``trials.parquet`` (rewritten atomically after every unit), the per-unit curve files and, under the folds
    protocol, the per-unit per-query test metrics (written before the unit's rows reach ``trials.parquet``, which is
    the record of what is finished).

    Parameters
    ----------
    exp_dir : the experiment directory.
    settings, losses, metrics : the names in report order; rows are kept sorted by them (then by name).
    convention : the metric convention (``Convention.as_dict()``) recorded in every per-query file's footer.
    """

    def __init__(self, exp_dir: Path, settings: list[str], losses: list[str], metrics: list[str],
                 convention: dict | None = None):
        self.exp_dir = exp_dir
        self.convention = convention
        self.rows: list[dict] = []
        self._order = ({s: i for i, s in enumerate(settings)}, {x: i for i, x in enumerate(losses)},
                       {m: i for i, m in enumerate(metrics)})
        self.refresh()

    def refresh(self) -> None:
        """Read ``trials.parquet`` again: another run on the same EXP_DIR may have added units. It is replaced by a
        rename, so a reader always sees a whole file."""
        path = self.exp_dir / TRIALS_FILE
        if path.exists():
            from rankcli.formats.parquet import read_table

            self.rows = read_table(path).select(list(TRIAL_COLUMNS)).to_pylist()

    def done(self, metrics: list[str]) -> set[tuple[str, int, str]]:
        """The units ``(setting, trial, loss)`` with a row for every one of ``metrics``."""
        have: dict[tuple[str, int, str], set[str]] = {}
        for r in self.rows:
            have.setdefault((r["setting"], int(r["trial"]), r["loss"]), set()).add(r["metric"])
        return {k for k, ms in have.items() if set(metrics) <= ms}

    def kept_trees(self) -> dict[tuple[str, int, str], int]:
        """Per finished unit ``(setting, trial, loss)``, the trees its model keeps."""
        return {(r["setting"], int(r["trial"]), r["loss"]): int(r["trees"]) for r in self.rows}

    def _key(self, r: dict):
        s, lo, m = self._order
        return (s.get(r["setting"], len(s)), r["setting"], int(r["trial"]), lo.get(r["loss"], len(lo)), r["loss"],
                m.get(r["metric"], len(m)), r["metric"])

    def add(self, u) -> None:
        """Store a finished unit (a :class:`rankcli.experiment.UnitResult`): its curve, its per-query values when it
        has them, then its rows in ``trials.parquet``."""
        from rankcli.formats.parquet import write_table

        _write_curve(self.exp_dir, u)
        if getattr(u, "params", None) is not None:
            (self.exp_dir / TUNED_DIR).mkdir(exist_ok=True)
            write_text(self.exp_dir / TUNED_DIR, tuned_path(self.exp_dir, u.setting, u.trial, u.loss).name,
                       json.dumps(jsonable({"setting": u.setting, "trial": u.trial, "loss": u.loss, **u.params}),
                                  indent=2) + "\n")
        if u.qids is not None:
            _write_per_query(self.exp_dir, u, self.convention)
        if getattr(u, "scores", None) is not None:
            _write_scores(self.exp_dir, u)
        key = (u.setting, u.trial, u.loss)
        # Read, merge and write under a lock: concurrent runs of one EXP_DIR (array jobs) each add their own units,
        # and none may lose another's rows.
        with FileLock(self.exp_dir / STORE_LOCK):
            self.refresh()
            self.rows = [r for r in self.rows if (r["setting"], int(r["trial"]), r["loss"]) != key]
            self.rows += [dict(trial=u.trial, setting=u.setting, loss=u.loss, metric=m, value=v, trees=u.trees,
                               seconds=u.seconds) for m, v in u.values.items()]
            self.rows.sort(key=self._key)
            write_table(self.exp_dir / TRIALS_FILE, self.table(), overwrite=True, query_aligned=False,
                        metadata={"kind": "experiment-trials"})

    def table(self):
        """The rows as the pyarrow table written to ``trials.parquet``."""
        import pyarrow as pa

        schema = pa.schema([("trial", pa.int64()), ("setting", pa.string()), ("loss", pa.string()),
                            ("metric", pa.string()), ("value", pa.float64()), ("trees", pa.int64()),
                            ("seconds", pa.float64())])
        return pa.Table.from_pylist(self.rows, schema=schema)


def load_curves(exp_dir: Path) -> list[Curve]:
    """Every unit's validation curve in ``exp_dir/curves``, in file-name order."""
    from rankcli.formats.parquet import read_table

    d = exp_dir / CURVES_DIR
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*.parquet")):
        t = read_table(p)
        if t.num_rows == 0:
            setting, trial, loss = p.stem.split("__")
            out.append(Curve(setting, int(trial), loss, np.zeros(0)))
            continue
        order = np.argsort(t.column("tree").to_numpy(), kind="stable")
        out.append(Curve(t.column("setting")[0].as_py(), int(t.column("trial")[0].as_py()), t.column("loss")[0].as_py(),
                         t.column("value").to_numpy()[order].astype(np.float64)))
    return out


def read_per_query(path: Path, metrics: Iterable[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The per-query file ``path`` of a unit (:func:`rankcli.formats.metric_file.read_metric_file`): its ``qid``
    vector and the columns of ``metrics`` it has (:func:`check_same_queries` reports one it lacks)."""
    from rankcli.formats.parquet import column_names

    names = set(column_names(path))
    f = read_metric_file(path, [m for m in metrics if m in names])
    return f.qids, f.values


def write_text(exp_dir: Path, name: str, text: str) -> Path:
    """Write ``text`` to ``exp_dir/name`` atomically (replacing an earlier version) and return its path."""
    with atomic_path(exp_dir / name, overwrite=True) as tmp:
        tmp.write_text(text)
    return exp_dir / name


def _difference(stored: dict, identity: dict) -> str:
    diffs = []
    if stored.get("data_fingerprint") != identity["data_fingerprint"]:
        diffs.append("the data differ")
    old, new = stored.get("config") or {}, identity["config"]
    for k in sorted(set(old) | set(new)):
        if old.get(k) != new.get(k):
            diffs.append(f"{k}: {json.dumps(old.get(k))} before, {json.dumps(new.get(k))} now")
    return "; ".join(diffs[:4]) + ("; ..." if len(diffs) > 4 else "")


def _remove_outputs(exp_dir: Path) -> None:
    """Remove an earlier experiment's files (and only those) from ``exp_dir``: nothing when a directory of the
    experiment holds anything else (exit 4, :func:`rankcli.formats.atomic.remove_owned`)."""
    units = {CURVES_DIR: Layout(files=("*.parquet",)), QUERIES_DIR: Layout(files=("*.parquet",)),
             TUNED_DIR: Layout(files=("*.json",)), LOCKS_DIR: Layout(files=("*.lock",))}
    files = tuple(n for n in _OUTPUT_NAMES if n not in units) + ("sweep-*.csv", "sweep-*.png", STORE_LOCK)
    remove_owned(exp_dir, Layout(files=files, dirs=units))


def stored_config(exp_dir: Path) -> dict | None:
    """The experiment configuration ``exp_dir/config.json`` records (its ``config``), or ``None`` when there is none
    that can be read (:func:`prepare_directory` then says why, if it matters)."""
    cfg_path = Path(exp_dir) / CONFIG_FILE
    try:
        if not cfg_path.is_file() or not is_experiment_config(cfg_path):
            return None
        stored = json.loads(cfg_path.read_text())
    except (OSError, ValueError):
        return None
    return stored.get("config") if isinstance(stored, dict) and isinstance(stored.get("config"), dict) else None


def _reopen(exp_dir: Path, identity: dict, overwrite: bool) -> bool:
    """Check an existing, non-empty ``exp_dir``; True when it holds the same experiment (to resume)."""
    cfg_path = exp_dir / CONFIG_FILE
    if not cfg_path.is_file() or not is_experiment_config(cfg_path):
        raise OutputError(f"{exp_dir}: is not empty and holds no rankcli experiment ({CONFIG_FILE} missing or "
                          "not an experiment's); rankcli replaces only its own outputs, whatever the flags: "
                          "choose a new or empty directory")
    try:
        stored = json.loads(cfg_path.read_text())
    except (OSError, ValueError) as exc:
        raise OutputError(f"{cfg_path}: unreadable ({exc}); pass --overwrite to start over") from None
    same = {k: stored.get(k) for k in identity} == identity
    if overwrite:
        _remove_outputs(exp_dir)
        return False
    if not same:
        raise OutputError(f"{exp_dir}: holds an experiment with a different configuration "
                          f"({_difference(stored, identity)}); rerun with the same options to resume it, "
                          "or pass --overwrite to start over")
    return True


def prepare_directory(exp_dir: Path, identity: dict, extra: dict, overwrite: bool) -> bool:
    """Create or reopen ``exp_dir``. Returns True when an earlier run of the same experiment is resumed.

    Parameters
    ----------
    exp_dir : the experiment directory.
    identity : ``{"config": ..., "data_fingerprint": ...}``, what decides the units' results; a directory holding
        another identity is refused unless ``overwrite``, which removes the earlier experiment's files (and only
        those). A non-empty directory that is not an experiment is always refused.
    extra : written into ``config.json`` beside the identity (``trials``, ``correction``).
    overwrite : start over in a directory holding another experiment.
    """
    parent = exp_dir.parent if str(exp_dir.parent) else Path(".")
    if exp_dir.exists() and not exp_dir.is_dir():
        raise OutputError(f"{exp_dir}: exists and is not a directory")
    if not parent.is_dir():
        raise OutputError(f"{exp_dir}: directory {parent} does not exist")
    resumed = False
    # (the lock files of a concurrent run starting on the same new EXP_DIR do not make it an old experiment)
    if exp_dir.is_dir() and any(p.name not in (LOCKS_DIR, STORE_LOCK) for p in exp_dir.iterdir()):
        resumed = _reopen(exp_dir, identity, overwrite)
    try:
        exp_dir.mkdir(exist_ok=True)
        from rankcli.formats.atomic import atomic_path

        with atomic_path(exp_dir / CONFIG_FILE, overwrite=True) as tmp:
            tmp.write_text(json.dumps({**identity, **extra}, indent=2, sort_keys=True) + "\n")
    except OSError as exc:  # permission, read-only file system, disk full
        raise OutputError(f"{exp_dir}: cannot write ({exc.strerror or exc})") from None
    return resumed


def check_same_queries(paths: dict[str, Path], qids: dict[str, np.ndarray], metrics: Iterable[str],
                       columns: dict[str, dict[str, np.ndarray]]) -> None:
    """:class:`InputError` unless every unit of a fold was tested on the same queries and has every metric.

    Parameters
    ----------
    paths : loss -> the unit's per-query file (named in the message).
    qids : loss -> its ``qid`` vector.
    metrics : the metrics every unit must have.
    columns : loss -> its metric columns.
    """
    names = list(paths)
    ref = names[0]
    for name in names:
        if not np.array_equal(qids[name], qids[ref]):
            raise InputError(f"{paths[name]}: tested on other queries than {paths[ref]}; the experiment "
                             "directory is inconsistent, rerun with --overwrite")
        missing = [m for m in metrics if m not in columns[name]]
        if missing:
            raise InputError(f"{paths[name]}: no column {missing[0]}; the experiment directory is "
                             "inconsistent, rerun with --overwrite")


def remove_locks(exp_dir: Path) -> None:
    """Remove the lock files of ``exp_dir`` that no run holds, and ``.locks/`` when it is then empty: a finished
    experiment leaves none behind. Safe with concurrent runs: a lock is removed only while held, and a run that then
    takes it locks a new file (:class:`rankcli.formats.atomic.FileLock`); one held (a concurrent run extending the
    experiment) stays."""
    locks = exp_dir / LOCKS_DIR
    if locks.is_dir() and not locks.is_symlink():
        for p in sorted(locks.glob("*.lock")):
            FileLock(p).remove_if_free()
        try:
            locks.rmdir()
        except OSError:  # not empty (held locks, something else), or gone
            pass
    FileLock(exp_dir / STORE_LOCK).remove_if_free()


def write_json(exp_dir: Path, name: str, document: dict) -> Path:
    """Write ``document`` as indented JSON to ``exp_dir/name`` (NaN and infinity as null)."""
    return write_text(exp_dir, name, json.dumps(jsonable(document), indent=2) + "\n")


def write_convergence(exp_dir: Path, curves: dict) -> Path:
    """Write ``exp_dir/convergence.csv``: ``setting, loss, tree, mean, stderr, trials, running`` from ``curves``,
    :func:`rankcli.experiment.convergence`'s result."""
    lines = ["setting,loss,tree,mean,stderr,trials,running"]
    for s, losses in curves.items():
        for loss, c in losses.items():
            lines += [f"{s},{loss},{i + 1},{m!r},{e!r},{n},{r}" for i, (m, e, n, r) in
                      enumerate(zip(c["mean"], c["stderr"], c["trials"], c["running"]))]
    return write_text(exp_dir, "convergence.csv", "\n".join(lines) + "\n")


def write_sweep(exp_dir: Path, kind: str, rows: list[dict]) -> Path:
    """Write ``exp_dir/sweep-<kind>.csv``: one line per level of ``rows``, the columns of the rows' keys."""
    cols = list(rows[0].keys()) if rows else ["level"]
    text = ",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows)
    return write_text(exp_dir, f"sweep-{kind}.csv", text)
