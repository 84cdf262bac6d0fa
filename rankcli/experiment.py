"""The paper's experimental protocol as a library: repeated query-level splits, losses side by side, robustness sweeps.

An experiment is a set of *units* ``(setting, trial, loss)``. A unit takes trial ``t``'s split of the data, applies
the setting's perturbation to the training (and, for clicks, validation) queries, trains one loss with
:func:`rankcli.train.train_model`, and evaluates it on the untouched test queries. Everything random in a unit is
seeded from ``(seed, trial)`` (the split) and ``(seed, trial, setting)`` (the perturbation and LightGBM's seed) with
:class:`numpy.random.SeedSequence`, never from the loss, the order of execution or the number of processes: so
every loss sees the same split and the same perturbed data in a trial, and ``jobs=1`` and ``jobs=N`` give identical
results. LightGBM runs with a fixed thread count per model (``threads``, default 1) for the same reason.

Results land in ``EXP_DIR`` as each unit finishes:

- ``trials.parquet``: one row per (trial, setting, loss, metric): ``value`` (test metric), ``trees`` (trees used, the
  best iteration under early stopping), ``seconds`` (wall time of the unit). Rewritten atomically (temporary file +
  rename) after every unit, so it is always complete and readable; a rerun of the same command skips the units
  already in it (resume).
- ``curves/<setting>__<trial>__<loss>.parquet``: the validation metric (``select_by``) after every tree, written
  before the unit's rows reach ``trials.parquet``. ``convergence.csv`` holds their mean per tree.
- ``config.json``: the configuration; a rerun with a different one is refused unless the caller overwrites.
- ``summary.json``, ``summary.md``, ``sweep-<kind>.csv`` when the experiment is complete.

This module never prints; the CLI renders its results.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
import zlib
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Callable

import numpy as np

from rankcli.core.perturb import augment_negatives, label_noise, split_queries
from rankcli.dataset import Dataset
from rankcli.errors import InputError, OutputError, UsageError

SWEEP_KINDS = ("augment-negatives", "label-noise", "click-noise")
#: Click probabilities for grades 0..4 in the click-noise sweep; the level replaces the grade-0 probability.
CLICK_PROBS = (0.05, 0.3, 0.5, 0.7, 0.95)
#: One line per sweep saying what its level does (summary.md and the terminal).
SWEEP_NOTES = {
    "augment-negatives": "Each training list grown by the level's fraction with documents of other training queries, "
                         "labelled 0; validation and test untouched.",
    "label-noise": "That fraction of each training list given random grades, p(0..4) = (.5, .2, .15, .1, .05); "
                   "validation and test untouched.",
    "click-noise": "Training and validation replaced by cascade clicks ({impressions} impressions per query, random "
                   "ranker, click probabilities (level, .3, .5, .7, .95)); impressions without a click dropped; "
                   "tested on the graded test set.",
}
CONFIG_FILE = "config.json"
TRIALS_FILE = "trials.parquet"
CURVES_DIR = "curves"
TRIAL_COLUMNS = ("trial", "setting", "loss", "metric", "value", "trees", "seconds")
_OUTPUT_NAMES = (CONFIG_FILE, TRIALS_FILE, CURVES_DIR, "summary.json", "summary.md", "convergence.csv",
                 "convergence.png")


# ---------------------------------------------------------------------------------------------------------------------
# Configuration and settings


@dataclass
class ExperimentConfig:
    losses: list[str] = field(default_factory=lambda: ["lambdamart", "xendcg", "listnet"])
    trials: int = 100
    split: tuple[float, float, float] = (0.6, 0.2, 0.2)
    use_given_splits: bool = False
    metrics: list[str] = field(default_factory=lambda: ["ndcg@5", "ndcg@10"])
    select_by: str = "ndcg@5"
    early_stopping: int = 50
    trees: int = 500
    learning_rate: float | None = None
    num_leaves: int | None = None
    min_data_in_leaf: int | None = None
    params: dict = field(default_factory=dict)
    preset: str | None = None
    seed: int = 0
    convention: str = "paper"
    augment_negatives: list[float] = field(default_factory=list)
    label_noise: list[float] = field(default_factory=list)
    click_noise: list[float] = field(default_factory=list)
    click_impressions: int = 10
    threads: int = 1
    correction: str = "holm"

    def identity(self) -> dict:
        """Everything that decides a unit's result. ``trials`` is not part of it: more trials extend an experiment."""
        d = asdict(self)
        d.pop("trials")
        d.pop("correction")  # only the summary depends on it
        d["split"] = list(d["split"])
        return json.loads(json.dumps(d, sort_keys=True))

    def validate(self) -> None:
        if not self.losses:
            raise UsageError("--losses: give at least one loss")
        if len(set(self.losses)) != len(self.losses):
            raise UsageError(f"--losses: a loss is listed twice, got {','.join(self.losses)}")
        if self.trials < 1:
            raise UsageError(f"--trials must be >= 1, got {self.trials}")
        if self.seed < 0:
            raise UsageError(f"--seed must be >= 0, got {self.seed}")
        if self.threads < 1:
            raise UsageError(f"--threads must be >= 1, got {self.threads}")
        if self.trees < 1:
            raise UsageError(f"--trees must be >= 1, got {self.trees}")
        if self.early_stopping < 0:
            raise UsageError(f"--early-stopping must be 0 (off) or a positive number of trees, got {self.early_stopping}")
        if self.learning_rate is not None and not self.learning_rate > 0:
            raise UsageError(f"--learning-rate must be positive, got {self.learning_rate:g}")
        if self.num_leaves is not None and self.num_leaves < 2:
            raise UsageError(f"--num-leaves must be at least 2, got {self.num_leaves}")
        if self.min_data_in_leaf is not None and self.min_data_in_leaf < 0:
            raise UsageError(f"--min-data-in-leaf must be 0 or more, got {self.min_data_in_leaf}")
        for lv in self.augment_negatives:
            if not (math.isfinite(lv) and lv >= 0):
                raise UsageError(f"--augment-negatives: levels must be >= 0, got {lv:g}")
        for lv in self.label_noise:
            if not (math.isfinite(lv) and 0 <= lv <= 1):
                raise UsageError(f"--label-noise: levels must be in [0, 1], got {lv:g}")
        for lv in self.click_noise:
            if not (math.isfinite(lv) and 0 <= lv <= 1):
                raise UsageError(f"--click-noise: levels must be click probabilities in [0, 1], got {lv:g}")


@dataclass(frozen=True)
class Setting:
    name: str                    # "baseline" | "augment-negatives=0.2" | "label-noise=0.3" | "click-noise=0.1"
    kind: str                    # "baseline" | one of SWEEP_KINDS
    level: float | None = None


BASELINE = Setting("baseline", "baseline", None)


def format_level(level: float) -> str:
    return f"{level:g}"


def setting_for(kind: str, level: float) -> Setting:
    """The setting of a sweep level; levels that change nothing (no augmentation, no label noise) are the baseline."""
    if kind in ("augment-negatives", "label-noise") and level == 0:
        return BASELINE
    return Setting(f"{kind}={format_level(level)}", kind, float(level))


def plan_settings(config: ExperimentConfig) -> tuple[list[Setting], dict[str, list[tuple[float, Setting]]]]:
    """The settings to run (the baseline first, then every sweep level) and, per sweep, its levels' settings."""
    settings = [BASELINE]
    sweeps: dict[str, list[tuple[float, Setting]]] = {}
    for kind, levels in (("augment-negatives", config.augment_negatives), ("label-noise", config.label_noise),
                         ("click-noise", config.click_noise)):
        if not levels:
            continue
        rows = []
        for level in levels:
            s = setting_for(kind, float(level))
            rows.append((float(level), s))
            if s not in settings:
                settings.append(s)
        sweeps[kind] = rows
    return settings, sweeps


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _setting_key(setting: str) -> int:
    return zlib.crc32(setting.encode())


def trial_rng(seed: int, trial: int) -> np.random.Generator:
    """The generator of trial ``trial``'s split (shared by every setting and loss)."""
    return _rng(seed, 0, trial)


def perturbation_rng(seed: int, trial: int, setting: str) -> np.random.Generator:
    return _rng(seed, 1, trial, _setting_key(setting))


def model_seed(seed: int, trial: int, setting: str) -> int:
    """LightGBM's seed for every loss of a (trial, setting)."""
    ss = np.random.SeedSequence(seed, spawn_key=(2, trial, _setting_key(setting)))
    return int(ss.generate_state(1, dtype=np.uint32)[0] % (2**31 - 1))


# ---------------------------------------------------------------------------------------------------------------------
# Data


GIVEN_NAMES = {"train": ("train.parquet",), "valid": ("vali.parquet", "valid.parquet", "validation.parquet"),
               "test": ("test.parquet",)}


@dataclass
class ExperimentData:
    """The queries an experiment draws from: one pooled dataset, or the given train/validation/test files."""

    pooled: Dataset | None = None
    given: tuple[Dataset, Dataset | None, Dataset] | None = None

    def fingerprint(self) -> str:
        h = hashlib.blake2b(digest_size=16)
        parts = [self.pooled] if self.pooled is not None else [d for d in self.given if d is not None]
        for ds in parts:
            for arr in (ds.offsets, ds.labels, ds.features):
                arr = np.ascontiguousarray(arr)
                h.update(str((arr.dtype.str, arr.shape)).encode())
                h.update(memoryview(arr).cast("B"))
        return h.hexdigest()


def _find_given(path: Path, part: str) -> Path | None:
    for name in GIVEN_NAMES[part]:
        if (path / name).is_file():
            return path / name
    return None


def concat_datasets(parts: list[Dataset]) -> Dataset:
    """Pool datasets query by query (qids renumbered by file when they collide, so that queries stay distinct)."""
    qids = [p.qids for p in parts]
    all_q = np.concatenate([p.qids[p.offsets[:-1]] for p in parts])
    if np.unique(all_q).shape[0] != all_q.shape[0]:
        # Same qid in two files: make them distinct (file number in the high digits).
        base = int(max(int(p.qids.max()) for p in parts if p.n_rows)) + 1
        qids = [p.qids + i * base for i, p in enumerate(parts)]
    names = parts[0].feature_names
    for p in parts[1:]:
        if p.feature_names != names:
            width = max(len(names), len(p.feature_names))
            names = [f"f{i}" for i in range(1, width + 1)]
    width = len(names)

    def pad(f: np.ndarray) -> np.ndarray:
        return f if f.shape[1] == width else np.hstack([f, np.zeros((f.shape[0], width - f.shape[1]), np.float32)])

    sizes = np.concatenate([np.diff(p.offsets) for p in parts])
    docids = (np.concatenate([p.docids for p in parts]) if all(p.docids is not None for p in parts) else None)
    return Dataset(qids=np.concatenate(qids), labels=np.concatenate([p.labels for p in parts]),
                   features=np.vstack([pad(p.features) for p in parts]).astype(np.float32), feature_names=names,
                   docids=docids, offsets=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
                   metadata=dict(parts[0].metadata))


def load_data(path: Path | str, use_given_splits: bool = False) -> ExperimentData:
    """Read ``DATA``: a Parquet file (pooled queries) or a directory.

    A directory's ``*.parquet`` files are pooled (concatenated in name order) unless ``use_given_splits``, which reads
    its ``train``, ``vali`` (optional; also ``valid``/``validation``) and ``test`` Parquet files as the fixed split.
    """
    from rankcli.formats.parquet import read_dataset

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir() and use_given_splits:
        train_p, valid_p, test_p = (_find_given(path, part) for part in ("train", "valid", "test"))
        if train_p is None or test_p is None:
            raise InputError(f"{path}: --use-given-splits expects train.parquet and test.parquet (and optionally "
                             f"vali.parquet) in the directory, got "
                             f"{', '.join(sorted(p.name for p in path.iterdir())[:8]) or 'nothing'}")
        return ExperimentData(given=(read_dataset(train_p), read_dataset(valid_p) if valid_p else None,
                                     read_dataset(test_p)))
    if path.is_dir():
        files = sorted(p for p in path.glob("*.parquet") if p.is_file())
        if not files:
            raise InputError(f"{path}: no *.parquet file in the directory")
        return ExperimentData(pooled=concat_datasets([read_dataset(p) for p in files]))
    if use_given_splits:
        raise UsageError(f"--use-given-splits needs DATA to be a directory with train/vali/test files, got file {path}")
    return ExperimentData(pooled=read_dataset(path))


def trial_split(data: ExperimentData, config: ExperimentConfig, trial: int
                ) -> tuple[Dataset, Dataset | None, Dataset]:
    """Trial ``trial``'s (train, validation, test): a random query-level split, or the given files."""
    if data.given is not None:
        return data.given
    ds = data.pooled
    train_q, valid_q, test_q = split_queries(ds.n_queries, config.split, trial_rng(config.seed, trial))
    valid = ds.take_queries(valid_q) if valid_q.shape[0] else None
    return ds.take_queries(train_q), valid, ds.take_queries(test_q)


def augment_dataset(ds: Dataset, fraction: float, rng: np.random.Generator) -> Dataset:
    """Every query's list grown by ``fraction`` with documents of other queries, labelled 0 (``extra["augmented"]``)."""
    source, offsets, added = augment_negatives(ds.offsets, fraction, rng)
    out = ds.take_rows(source, offsets)
    out.qids = np.repeat(ds.qids[ds.offsets[:-1]], np.diff(offsets))
    out.labels = np.where(added, 0.0, out.labels)
    out.extra["augmented"] = added
    return out


def noisy_dataset(ds: Dataset, fraction: float, rng: np.random.Generator) -> Dataset:
    """A copy with ``fraction`` of every query's labels re-drawn from the paper's grade distribution."""
    labels, touched = label_noise(ds.labels, ds.offsets, fraction, rng)
    out = ds.take_rows(np.arange(ds.n_rows), ds.offsets)
    out.labels = labels
    out.extra["noisy"] = touched
    return out


def click_dataset(ds: Dataset, p0: float, impressions: int, rng: np.random.Generator) -> Dataset:
    """Cascade clicks on ``impressions`` random rankings per query, click probabilities (p0, .3, .5, .7, .95)."""
    from rankcli.simulate import simulate_clicks

    clicks, _ = simulate_clicks(ds, model="cascade", click_probs=(p0,) + CLICK_PROBS[1:], impressions=impressions,
                                ranker="random", rng=rng)
    return clicks


def perturb(setting: Setting, train: Dataset, valid: Dataset | None, config: ExperimentConfig,
            rng: np.random.Generator) -> tuple[Dataset, Dataset | None]:
    """Apply a setting to the training (and, for clicks, validation) data; the test set is never touched."""
    if setting.kind == "baseline":
        return train, valid
    if setting.kind == "augment-negatives":
        return augment_dataset(train, setting.level, rng), valid
    if setting.kind == "label-noise":
        return noisy_dataset(train, setting.level, rng), valid
    if setting.kind == "click-noise":
        train_c = click_dataset(train, setting.level, config.click_impressions, rng)
        valid_c = click_dataset(valid, setting.level, config.click_impressions, rng) if valid is not None else None
        if train_c.n_queries == 0:
            raise InputError(f"{setting.name}: the simulated users clicked nothing in the training queries")
        if valid_c is not None and valid_c.n_queries == 0:
            valid_c = None
        return train_c, valid_c
    raise UsageError(f"unknown setting {setting.name!r}")


# ---------------------------------------------------------------------------------------------------------------------
# One unit


@dataclass
class UnitResult:
    setting: str
    trial: int
    loss: str
    values: dict[str, float]     # test metric -> mean over test queries
    trees: int
    seconds: float
    curve: list[float]           # validation select_by per tree


def train_config(config: ExperimentConfig, loss: str, seed: int):
    from rankcli.train import TrainConfig

    kwargs: dict = dict(loss=loss, trees=config.trees, early_stopping=config.early_stopping,
                        select_by=config.select_by, convention=config.convention, params=dict(config.params),
                        threads=config.threads, seed=seed, preset=config.preset)
    for name in ("learning_rate", "num_leaves", "min_data_in_leaf"):
        value = getattr(config, name)
        if value is not None:
            kwargs[name] = value
    return TrainConfig(**kwargs)


def run_unit(data: ExperimentData, config: ExperimentConfig, setting: Setting, trial: int, loss: str) -> UnitResult:
    """Train and test one loss on one trial of one setting. Deterministic in its arguments."""
    from rankcli.core.metrics import Convention, evaluate, parse_metrics
    from rankcli.train import train_model

    start = time.perf_counter()
    train, valid, test = trial_split(data, config, trial)
    train, valid = perturb(setting, train, valid, config, perturbation_rng(config.seed, trial, setting.name))
    result = train_model(train, valid, train_config(config, loss, model_seed(config.seed, trial, setting.name)))
    booster = result.booster
    trees = int(result.best_iteration) if result.best_iteration and result.best_iteration > 0 \
        else int(booster.current_iteration())
    scores = np.asarray(booster.predict(test.features, num_iteration=trees), dtype=np.float64)
    specs = parse_metrics(config.metrics)
    ev = evaluate(specs, test.labels, scores, test.offsets, Convention.preset(config.convention))
    values = {str(s): float(ev.means[str(s)]) for s in specs}
    return UnitResult(setting.name, trial, loss, values, trees, time.perf_counter() - start,
                      [float(v) for v in result.curve])


# Worker processes load the data once (initializer) and then run units by key.
_WORKER: dict = {}


def _init_worker(data_path: str, config_dict: dict) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    config = _config_from_dict(config_dict)
    _WORKER["config"] = config
    _WORKER["data"] = load_data(data_path, config.use_given_splits)


def _worker_unit(setting: Setting, trial: int, loss: str) -> UnitResult:
    return run_unit(_WORKER["data"], _WORKER["config"], setting, trial, loss)


def _config_from_dict(d: dict) -> ExperimentConfig:
    d = dict(d)
    d["split"] = tuple(d["split"])
    return ExperimentConfig(**d)


# ---------------------------------------------------------------------------------------------------------------------
# The experiment directory


def _curve_path(exp_dir: Path, setting: str, trial: int, loss: str) -> Path:
    return exp_dir / CURVES_DIR / f"{setting}__{trial:05d}__{loss}.parquet"


class ResultStore:
    """``trials.parquet`` (rewritten atomically after every unit) and the per-unit curve files."""

    def __init__(self, exp_dir: Path, settings: list[str], losses: list[str], metrics: list[str]):
        self.exp_dir = exp_dir
        self.rows: list[dict] = []
        self._order = ({s: i for i, s in enumerate(settings)}, {x: i for i, x in enumerate(losses)},
                       {m: i for i, m in enumerate(metrics)})
        path = exp_dir / TRIALS_FILE
        if path.exists():
            from rankcli.formats.parquet import read_table

            self.rows = read_table(path).select(list(TRIAL_COLUMNS)).to_pylist()

    def done(self, metrics: list[str]) -> set[tuple[str, int, str]]:
        have: dict[tuple[str, int, str], set[str]] = {}
        for r in self.rows:
            have.setdefault((r["setting"], int(r["trial"]), r["loss"]), set()).add(r["metric"])
        return {k for k, ms in have.items() if set(metrics) <= ms}

    def _key(self, r: dict):
        s, lo, m = self._order
        return (s.get(r["setting"], len(s)), r["setting"], int(r["trial"]), lo.get(r["loss"], len(lo)), r["loss"],
                m.get(r["metric"], len(m)), r["metric"])

    def add(self, u: UnitResult) -> None:
        import pyarrow as pa

        from rankcli.formats.parquet import write_table

        curve = pa.table({"setting": pa.array([u.setting] * len(u.curve), pa.string()),
                          "trial": pa.array([u.trial] * len(u.curve), pa.int64()),
                          "loss": pa.array([u.loss] * len(u.curve), pa.string()),
                          "tree": pa.array(np.arange(1, len(u.curve) + 1), pa.int64()),
                          "value": pa.array(u.curve, pa.float64())})
        (self.exp_dir / CURVES_DIR).mkdir(exist_ok=True)
        write_table(_curve_path(self.exp_dir, u.setting, u.trial, u.loss), curve, overwrite=True,
                    query_aligned=False, metadata={"kind": "experiment-curve"})
        key = (u.setting, u.trial, u.loss)
        self.rows = [r for r in self.rows if (r["setting"], int(r["trial"]), r["loss"]) != key]
        self.rows += [dict(trial=u.trial, setting=u.setting, loss=u.loss, metric=m, value=v, trees=u.trees,
                           seconds=u.seconds) for m, v in u.values.items()]
        self.rows.sort(key=self._key)
        write_table(self.exp_dir / TRIALS_FILE, self.table(), overwrite=True, query_aligned=False,
                    metadata={"kind": "experiment-trials"})

    def table(self):
        import pyarrow as pa

        schema = pa.schema([("trial", pa.int64()), ("setting", pa.string()), ("loss", pa.string()),
                            ("metric", pa.string()), ("value", pa.float64()), ("trees", pa.int64()),
                            ("seconds", pa.float64())])
        return pa.Table.from_pylist(self.rows, schema=schema)


def prepare_directory(exp_dir: Path, config: ExperimentConfig, fingerprint: str, overwrite: bool) -> bool:
    """Create or reopen ``exp_dir``. Returns True when an earlier run of the same configuration is resumed.

    A directory holding an experiment with another configuration (or other data) is refused unless ``overwrite``,
    which removes the earlier experiment's files (and only those). A non-empty directory that is not an experiment is
    always refused.
    """
    identity = {"config": config.identity(), "data_fingerprint": fingerprint}
    parent = exp_dir.parent if str(exp_dir.parent) else Path(".")
    if exp_dir.exists() and not exp_dir.is_dir():
        raise OutputError(f"{exp_dir}: exists and is not a directory")
    if not parent.is_dir():
        raise OutputError(f"{exp_dir}: directory {parent} does not exist")
    resumed = False
    cfg_path = exp_dir / CONFIG_FILE
    if exp_dir.is_dir() and any(exp_dir.iterdir()):
        if not cfg_path.is_file():
            raise OutputError(f"{exp_dir}: is not empty and holds no rankcli experiment ({CONFIG_FILE} missing); "
                              "choose a new or empty directory")
        try:
            stored = json.loads(cfg_path.read_text())
        except (OSError, ValueError) as exc:
            raise OutputError(f"{cfg_path}: unreadable ({exc}); pass --overwrite to start over") from None
        same = {k: stored.get(k) for k in identity} == identity
        if overwrite:
            for name in os.listdir(exp_dir):
                if name in _OUTPUT_NAMES or name.startswith("sweep-") or name.startswith("."):
                    target = exp_dir / name
                    shutil.rmtree(target) if target.is_dir() else target.unlink()
        elif not same:
            raise OutputError(f"{exp_dir}: holds an experiment with a different configuration "
                              f"({_difference(stored, identity)}); rerun with the same options to resume it, "
                              "or pass --overwrite to start over")
        else:
            resumed = True
    try:
        exp_dir.mkdir(exist_ok=True)
        from rankcli.formats.atomic import atomic_path

        with atomic_path(cfg_path, overwrite=True) as tmp:
            tmp.write_text(json.dumps({**identity, "trials": config.trials, "correction": config.correction},
                                      indent=2, sort_keys=True) + "\n")
    except PermissionError as exc:
        raise OutputError(f"{exp_dir}: cannot write ({exc.strerror})") from None
    return resumed


def _difference(stored: dict, identity: dict) -> str:
    diffs = []
    if stored.get("data_fingerprint") != identity["data_fingerprint"]:
        diffs.append("the data differ")
    old, new = stored.get("config") or {}, identity["config"]
    for k in sorted(set(old) | set(new)):
        if old.get(k) != new.get(k):
            diffs.append(f"{k}: {json.dumps(old.get(k))} before, {json.dumps(new.get(k))} now")
    return "; ".join(diffs[:4]) + ("; ..." if len(diffs) > 4 else "")


# ---------------------------------------------------------------------------------------------------------------------
# Running


@dataclass
class ExperimentResult:
    exp_dir: Path
    config: ExperimentConfig
    settings: list[Setting]
    sweeps: dict[str, list[tuple[float, Setting]]]
    summary: dict               # see summarize()
    convergence: dict           # setting -> loss -> {"mean": [...], "trials": [...]}
    resumed_units: int
    ran_units: int
    seconds: float
    files: list[Path]


def plan_units(config: ExperimentConfig, settings: list[Setting]) -> list[tuple[Setting, int, str]]:
    """All units, trial-major (so that whole trials finish early), then setting, then loss."""
    return [(s, t, loss) for t in range(config.trials) for s in settings for loss in config.losses]


def run_experiment(data_path: Path | str, exp_dir: Path | str, config: ExperimentConfig, *, jobs: int = 1,
                   overwrite: bool = False, on_plan: Callable[[int, int], None] | None = None,
                   on_unit: Callable[[UnitResult], None] | None = None, dask=None) -> ExperimentResult:
    """Run (or resume) an experiment and summarise it.

    ``on_plan(total_units, already_done)`` is called once before training starts, ``on_unit`` after every finished
    unit (in the parent process). ``jobs > 1`` runs units in that many worker processes; results do not depend on it.
    """
    from rankcli.core.metrics import parse_metrics

    config.validate()
    if jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    metrics = [str(s) for s in parse_metrics(config.metrics)]
    config.metrics = metrics
    parse_metrics([config.select_by])  # a bad --select-by or --preset fails here, before EXP_DIR is touched
    from rankcli.train import check_preset

    check_preset(config.preset)
    exp_dir = Path(exp_dir)
    started = time.perf_counter()
    data = load_data(data_path, config.use_given_splits)
    _check_data(data, config)
    resumed = prepare_directory(exp_dir, config, data.fingerprint(), overwrite)
    settings, sweeps = plan_settings(config)
    store = ResultStore(exp_dir, [s.name for s in settings], config.losses, metrics)
    done = store.done(metrics) if resumed else set()
    units = plan_units(config, settings)
    pending = [u for u in units if (u[0].name, u[1], u[2]) not in done]
    if on_plan is not None:
        on_plan(len(units), len(units) - len(pending))

    def finished(u: UnitResult) -> None:
        store.add(u)
        if on_unit is not None:
            on_unit(u)

    if dask is not None:
        # --dask: units run as tasks on a Dask cluster (a "local:N" / scheduler address, or a distributed.Client).
        from rankcli.distributed import run_experiment_units

        run_experiment_units(dask, str(data_path), config, pending, finished, data=data)
    elif jobs == 1 or len(pending) <= 1:
        for setting, trial, loss in pending:
            finished(run_unit(data, config, setting, trial, loss))
    else:
        _run_pool(str(data_path), config, pending, jobs, finished)
    result = finalize(exp_dir, config, settings, sweeps, store)
    result.resumed_units = len(units) - len(pending)
    result.ran_units = len(pending)
    result.seconds = time.perf_counter() - started
    return result


def _run_pool(data_path: str, config: ExperimentConfig, pending, jobs: int, finished) -> None:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")  # no fork after pyarrow/OpenMP threads have started
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(pending)), mp_context=ctx, initializer=_init_worker,
                               initargs=(data_path, asdict(config)))
    try:
        # Keep a bounded number of units in flight so that results come back roughly in plan order.
        queue = list(pending)
        running = set()
        while queue or running:
            while queue and len(running) < 2 * jobs:
                running.add(pool.submit(_worker_unit, *queue.pop(0)))
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:  # the store sorts rows, so completion order does not matter
                finished(fut.result())
    except BaseException:
        # Ctrl-C or a failed unit: stop the workers now (finished units are already saved), then re-raise.
        workers = list((getattr(pool, "_processes", None) or {}).values())
        for proc in workers:
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _check_data(data: ExperimentData, config: ExperimentConfig) -> None:
    if data.pooled is not None:
        ds = data.pooled
        if ds.n_queries < 3:
            raise InputError(f"need at least 3 queries to split into train/validation/test, got {ds.n_queries}")
    if config.click_noise:
        labels = data.pooled.labels if data.pooled is not None else np.concatenate(
            [d.labels for d in data.given if d is not None])
        bad = labels[(labels != np.round(labels)) | (labels < 0) | (labels > 4)]
        if bad.shape[0]:
            raise InputError(f"--click-noise needs integer grades 0..4 (click probabilities per grade), "
                             f"got label {bad[0]:g}")


# ---------------------------------------------------------------------------------------------------------------------
# Summary


def _mean_stderr(values: np.ndarray) -> tuple[float, float, int]:
    values = values[np.isfinite(values)]
    n = int(values.shape[0])
    if n == 0:
        return float("nan"), float("nan"), 0
    mean = float(values.mean())
    stderr = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return mean, stderr, n


def summarize(rows: list[dict], config: ExperimentConfig, settings: list[Setting]) -> dict:
    """The paper's Table 1 per setting: mean and standard error per loss and metric, paired t-tests across trials.

    Returns ``{"settings": [{"setting", "losses": {loss: {metric: {"mean", "stderr", "trials"}}},
    "tests": [{"a", "b", "metric", "p_value", "p_adjusted", "mean_diff", "trials"}]}]}``; tests pair every two losses
    on the trials both finished, p-values corrected (``config.correction``) within each setting over all pairs and
    metrics.
    """
    from rankcli.core.stats import adjust_pvalues, paired_test

    # value[setting][loss][metric] -> {trial: value}
    table: dict = {}
    for r in rows:
        if int(r["trial"]) >= config.trials:
            continue
        table.setdefault(r["setting"], {}).setdefault(r["loss"], {}).setdefault(r["metric"], {})[int(r["trial"])] = \
            r["value"]
    out = []
    for s in settings:
        by_loss = table.get(s.name, {})
        losses = {}
        for loss in config.losses:
            losses[loss] = {}
            for m in config.metrics:
                vals = np.array(list(by_loss.get(loss, {}).get(m, {}).values()), dtype=np.float64)
                mean, stderr, n = _mean_stderr(vals)
                losses[loss][m] = {"mean": mean, "stderr": stderr, "trials": n}
        tests = []
        for a, b in combinations(config.losses, 2):
            for m in config.metrics:
                va, vb = by_loss.get(a, {}).get(m, {}), by_loss.get(b, {}).get(m, {})
                common = sorted(t for t in set(va) & set(vb) if np.isfinite(va[t]) and np.isfinite(vb[t]))
                x = np.array([va[t] for t in common], dtype=np.float64)
                y = np.array([vb[t] for t in common], dtype=np.float64)
                if len(common) >= 2:
                    res = paired_test(x, y, "ttest")
                    p, diff = float(res.p_value), float(res.mean_diff)
                else:
                    p, diff = float("nan"), float((x - y).mean()) if len(common) else float("nan")
                tests.append({"a": a, "b": b, "metric": m, "p_value": p, "p_adjusted": float("nan"),
                              "mean_diff": diff, "trials": len(common)})
        if tests:
            adjusted = adjust_pvalues([t["p_value"] for t in tests], config.correction)
            for t, p in zip(tests, adjusted):
                t["p_adjusted"] = float(p)
        out.append({"setting": s.name, "losses": losses, "tests": tests})
    return {"settings": out}


def json_shape(summary: dict) -> dict:
    """The ``--json`` document, exactly the issue's shape (the extra fields live in ``summary.json``)."""
    return {"settings": [
        {"setting": s["setting"],
         "losses": {loss: {m: {"mean": v["mean"], "stderr": v["stderr"]} for m, v in ms.items()}
                    for loss, ms in s["losses"].items()},
         "tests": [{k: t[k] for k in ("a", "b", "metric", "p_value", "p_adjusted")} for t in s["tests"]]}
        for s in summary["settings"]]}


def load_curves(exp_dir: Path) -> list[tuple[str, int, str, np.ndarray]]:
    """Every unit's validation curve: ``(setting, trial, loss, values per tree)``."""
    import pyarrow.parquet as pq

    d = exp_dir / CURVES_DIR
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*.parquet")):
        t = pq.read_table(p)
        if t.num_rows == 0:
            setting, trial, loss = p.stem.split("__")
            out.append((setting, int(trial), loss, np.zeros(0)))
            continue
        order = np.argsort(t.column("tree").to_numpy(), kind="stable")
        out.append((t.column("setting")[0].as_py(), int(t.column("trial")[0].as_py()), t.column("loss")[0].as_py(),
                    t.column("value").to_numpy()[order].astype(np.float64)))
    return out


def convergence(curves: list[tuple[str, int, str, np.ndarray]], config: ExperimentConfig,
                settings: list[Setting]) -> dict:
    """Mean validation metric per tree per loss and setting, over the trials whose model reached that tree.

    Returns ``{setting: {loss: {"mean": [...], "trials": [...]}}}`` (``trials``: how many curves reached the tree).
    """
    grouped: dict = {}
    for setting, trial, loss, values in curves:
        if trial < config.trials:
            grouped.setdefault((setting, loss), []).append(values)
    out: dict = {}
    for s in settings:
        out[s.name] = {}
        for loss in config.losses:
            series = grouped.get((s.name, loss), [])
            length = max((v.shape[0] for v in series), default=0)
            total = np.zeros(length)
            count = np.zeros(length, dtype=np.int64)
            for vals in series:
                ok = np.isfinite(vals)
                total[: vals.shape[0]] += np.where(ok, vals, 0.0)
                count[: vals.shape[0]] += ok
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
            out[s.name][loss] = {"mean": mean.tolist(), "trials": count.tolist()}
    return out


def primary_metric(config: ExperimentConfig) -> str:
    """The metric of the sweep tables and plots: ``select_by`` when it is reported, else the first metric."""
    return config.select_by if config.select_by in config.metrics else config.metrics[0]


def sweep_rows(summary: dict, config: ExperimentConfig, sweeps: dict) -> dict[str, list[dict]]:
    """Per sweep, one row per level: mean (and stderr) of the primary metric per loss, differences to the first loss."""
    metric = primary_metric(config)
    by_name = {s["setting"]: s for s in summary["settings"]}
    first = config.losses[0]
    out: dict[str, list[dict]] = {}
    for kind, levels in sweeps.items():
        rows = []
        for level, setting in levels:
            s = by_name[setting.name]
            row = {"level": level, "setting": setting.name}
            for loss in config.losses:
                row[loss] = s["losses"][loss][metric]["mean"]
                row[f"{loss} stderr"] = s["losses"][loss][metric]["stderr"]
            for loss in config.losses[1:]:
                row[f"{loss} - {first}"] = row[loss] - row[first]
                test = next((t for t in s["tests"] if t["a"] == first and t["b"] == loss and t["metric"] == metric),
                            None)
                row[f"{loss} vs {first} p_adjusted"] = test["p_adjusted"] if test else float("nan")
            rows.append(row)
        out[kind] = rows
    return out


def _jsonable(value):
    """NaN and infinity become null (JSON has neither); numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _fmt(x: float, digits: int = 4) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def render_markdown(result: "ExperimentResult", sweep_tables: dict[str, list[dict]]) -> str:
    config = result.config
    lines = [f"# rankcli experiment: {', '.join(config.losses)}", ""]
    lines.append(f"Trials: {config.trials}; split: {'given files' if config.use_given_splits else ','.join(f'{x:g}' for x in config.split)}; "
                 f"seed {config.seed}; selection by validation {config.select_by}, early stopping "
                 f"{config.early_stopping}, at most {config.trees} trees; test convention `{config.convention}`"
                 f"{' (queries without a relevant document skipped)' if config.convention == 'paper' else ''}. "
                 f"Paired t-tests across trials, p-values adjusted with `{config.correction}` within each setting.")
    lines.append("")
    for s in result.summary["settings"]:
        lines += [f"## {s['setting']}", "", "| loss | " + " | ".join(config.metrics) + " |",
                  "|---|" + "---|" * len(config.metrics)]
        for loss in config.losses:
            cells = [f"{_fmt(v['mean'])} ± {_fmt(v['stderr'])}" for v in (s["losses"][loss][m] for m in config.metrics)]
            lines.append(f"| {loss} | " + " | ".join(cells) + " |")
        lines.append("")
        if s["tests"]:
            lines += ["| a | b | metric | mean a - b | trials | p | p adjusted |", "|---|---|---|---|---|---|---|"]
            for t in s["tests"]:
                lines.append(f"| {t['a']} | {t['b']} | {t['metric']} | {_fmt(t['mean_diff'])} | {t['trials']} | "
                             f"{_fmt(t['p_value'], 3)} | {_fmt(t['p_adjusted'], 3)} |")
            lines.append("")
    for kind, rows in sweep_tables.items():
        metric = primary_metric(config)
        first = config.losses[0]
        diffs = [f"{loss} - {first}" for loss in config.losses[1:]]
        lines += [f"## sweep {kind}: test {metric}", "", SWEEP_NOTES[kind].format(impressions=config.click_impressions),
                  "",
                  f"| {kind} | " + " | ".join(config.losses + diffs) + " |",
                  "|---|" + "---|" * (len(config.losses) + len(diffs))]
        for r in rows:
            lines.append(f"| {format_level(r['level'])} | " + " | ".join(_fmt(r[c]) for c in config.losses + diffs)
                         + " |")
        lines.append("")
    return "\n".join(lines)


def finalize(exp_dir: Path, config: ExperimentConfig, settings: list[Setting], sweeps: dict,
             store: ResultStore) -> ExperimentResult:
    """Write summary.json, summary.md, convergence.csv and the sweep CSVs from what is in the directory."""
    from rankcli.formats.atomic import atomic_path

    summary = summarize(store.rows, config, settings)
    conv = convergence(load_curves(exp_dir), config, settings)
    result = ExperimentResult(exp_dir, config, settings, sweeps, summary, conv, 0, 0, 0.0, [])
    tables = sweep_rows(summary, config, sweeps)

    def write(name: str, text: str) -> None:
        with atomic_path(exp_dir / name, overwrite=True) as tmp:
            tmp.write_text(text)
        result.files.append(exp_dir / name)

    write("summary.json", json.dumps(_jsonable({**summary, "convention": config.convention,
                                                "correction": config.correction, "trials": config.trials,
                                                "sweeps": tables}), indent=2) + "\n")
    write("summary.md", render_markdown(result, tables) + "\n")
    conv_lines = ["setting,loss,tree,mean,trials"]
    for s, losses in conv.items():
        for loss, c in losses.items():
            conv_lines += [f"{s},{loss},{i + 1},{m!r},{n}" for i, (m, n) in enumerate(zip(c["mean"], c["trials"]))]
    write("convergence.csv", "\n".join(conv_lines) + "\n")
    for kind, rows in tables.items():
        cols = list(rows[0].keys()) if rows else ["level"]
        text = ",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows)
        write(f"sweep-{kind}.csv", text)
    return result


def iter_levels(text: str, option: str) -> list[float]:
    """Parse a comma-separated list of sweep levels."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(float(part))
        except ValueError:
            raise UsageError(f"{option}: expected comma-separated numbers, got {part!r}") from None
    if not out:
        raise UsageError(f"{option}: expected comma-separated numbers, got {text!r}")
    return out
