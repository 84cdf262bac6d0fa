"""The paper's experimental protocol as a library: repeated query-level splits or fixed folds, losses side by side,
robustness sweeps.

An experiment is a set of *units* ``(setting, trial, loss)``. A unit takes trial ``t``'s split of the data, applies
the setting's perturbation to the training (and, for clicks, validation) queries, trains one loss with
:func:`rankcli.train.train_model`, and evaluates it on the untouched test queries. Two protocols give the splits:

- *random splits* (the default): trial ``t`` (``0 .. trials - 1``) splits the pooled queries at random; the paired
  tests run across trials (one unit of the test is one trial's test mean, ``n`` = trials);
- *folds* (``folds=True``): ``DATA`` holds ``Fold1/ .. FoldK/`` (or is one fold), each with its own train, validation
  and test files; trial ``k`` (``1 .. K``) is fold ``k``, trained once per loss and setting. The test metrics of all
  folds are pooled per query and the paired tests run over those queries (``n`` = pooled test queries), as LETOR
  results are reported.

The position-bias sweep (``position_bias``, issue 15) trains each loss twice per unit key: naive (``xendcg``) and
with IPS (``xendcg+ips``), on clicks that a logging ranker's rankings received (:func:`position_bias_logs`,
:func:`variant_data`); its settings test only each loss's naive model against its IPS model.

Everything random in a unit is seeded from ``(seed, trial)`` (the split) and ``(seed, trial, setting)`` (the
perturbation and LightGBM's seed) with :class:`numpy.random.SeedSequence`, never from the loss, the order of execution
or the number of processes: so every loss sees the same split and the same perturbed data in a trial, and ``jobs=1``
and ``jobs=N`` give identical results. LightGBM runs with a fixed thread count per model (``threads``, default 1) for
the same reason.

Results land in ``EXP_DIR`` as each unit finishes:

- ``trials.parquet``: one row per (trial, setting, loss, metric): ``value`` (test metric), ``trees`` (trees used, the
  best iteration under early stopping), ``seconds`` (wall time of the unit); ``trial`` is the fold number under the
  folds protocol. Rewritten atomically (temporary file + rename) after every unit, so it is always complete and
  readable; a rerun of the same command skips the units already in it (resume).
- ``curves/<setting>__<trial>__<loss>.parquet``: the validation metric (``select_by``) after every tree, written
  before the unit's rows reach ``trials.parquet``. ``convergence.csv`` holds their mean per tree, every trial counted
  at every tree (a trial that stopped early carries its kept model's value forward).
- ``queries/<setting>__<fold>__<loss>.parquet`` (folds protocol only): ``qid`` and one column per test metric, the
  value of every test query of the fold (NaN where the convention skips it), written before the unit's rows reach
  ``trials.parquet``; the pooled tests are computed from these files (also on resume). They are per-query metric
  files as ``rankcli eval --per-query`` writes them.
- ``config.json``: the configuration; a rerun with a different one is refused unless the caller overwrites.
- ``summary.json``, ``summary.md``, ``sweep-<kind>.csv`` when the experiment is complete.

Sign convention: every difference is ``mean(b) - mean(a)`` for a test of the pair ``(a, b)`` (``a`` the loss listed
first), labelled ``"b - a"`` wherever it is shown, as in ``rankcli compare``.

This module never prints; the CLI renders its results.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rankcli.core.perturb import augment_negatives, label_noise, split_queries
from rankcli.dataset import Dataset
from rankcli.errors import InputError, OutputError, UsageError

SWEEP_KINDS = ("augment-negatives", "label-noise", "click-noise", "position-bias")
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
    "position-bias": "A logging ranker (lambdamart on the graded labels of a fraction {logging} of the training queries, at "
                     "least 5) ranks the other training and the validation queries; PBM clicks at examination "
                     "(1/r)^level on its top 10 ({impressions} impressions per query, click probabilities (.05, .3, "
                     ".5, .7, .95), impressions without a click kept). Each loss trained naive (impressions pooled "
                     "per query on click-through rates, no propensities) and `+ips` (propensities estimated from a "
                     "RandTop-10 log of the same size, power fit beyond thin positions, capped at 1, clip 0.01); "
                     "validation "
                     "pooled the same way; tested on the graded test set.",
}
#: The suffix of a loss's IPS variant in the position-bias sweep (``xendcg+ips``).
IPS_SUFFIX = "+ips"
#: The fewest queries the position-bias sweep's logging ranker is trained on.
MIN_LOGGING_QUERIES = 5
#: Positions displayed per impression in the position-bias sweep (the click log and the randomised log: RandTop-10).
DISPLAYED_POSITIONS = 10
CONFIG_FILE = "config.json"
TRIALS_FILE = "trials.parquet"
CURVES_DIR = "curves"
QUERIES_DIR = "queries"
#: Lock files of concurrent runs on one EXP_DIR: the store's read-merge-write, and one per unit being trained.
STORE_LOCK = ".trials.lock"
LOCKS_DIR = ".locks"
#: Trials of the random-split protocol when none are given.
DEFAULT_TRIALS = 100
TRIAL_COLUMNS = ("trial", "setting", "loss", "metric", "value", "trees", "seconds")
_OUTPUT_NAMES = (CONFIG_FILE, TRIALS_FILE, CURVES_DIR, QUERIES_DIR, "summary.json", "summary.md", "convergence.csv",
                 "convergence.png")


# ---------------------------------------------------------------------------------------------------------------------
# Configuration and settings


@dataclass
class ExperimentConfig:
    losses: list[str] = field(default_factory=lambda: ["lambdamart", "xendcg", "listnet"])
    #: Random splits: the number of trials (None: DEFAULT_TRIALS). Folds: the number of folds, set when the data are
    #: read (a different number given is refused).
    trials: int | None = None
    split: tuple[float, float, float] = (0.6, 0.2, 0.2)
    #: The fixed-split protocol: DATA holds Fold1/ .. FoldK/ (or one fold's train/vali/test files).
    folds: bool = False
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
    position_bias: list[float] = field(default_factory=list)
    logging_fraction: float = 0.01
    threads: int = 1
    correction: str = "holm"

    def identity(self) -> dict:
        """Everything that decides a unit's result. ``trials`` is not part of it: more trials extend an experiment."""
        d = asdict(self)
        d.pop("trials")
        d.pop("correction")  # only the summary depends on it
        d["split"] = list(d["split"])
        if not d["position_bias"]:
            # as written before the position-bias sweep existed, so that earlier experiment directories still resume
            del d["position_bias"], d["logging_fraction"]
        if not d["folds"]:
            # The random-split identity as written before the folds protocol existed, so that an experiment
            # directory of an earlier version still resumes.
            del d["folds"]
            d["use_given_splits"] = False
        return json.loads(json.dumps(d, sort_keys=True))

    def validate(self) -> None:
        if not self.losses:
            raise UsageError("--losses: give at least one loss")
        if len(set(self.losses)) != len(self.losses):
            raise UsageError(f"--losses: a loss is listed twice, got {','.join(self.losses)}")
        if self.trials is not None and self.trials < 1:
            raise UsageError(f"--trials must be >= 1, got {self.trials}")
        if self.seed < 0:
            raise UsageError(f"--seed must be >= 0, got {self.seed}")
        if self.threads < 1:
            raise UsageError(f"--threads must be >= 1, got {self.threads}")
        from rankcli.cpus import check_threads

        check_threads(self.threads)
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
        if self.params and not self.folds:  # random splits always select on validation (folds may have none)
            from rankcli.train import check_boosting, check_params

            check_boosting(check_params(self.params), self.early_stopping, validating=True)
        for lv in self.augment_negatives:
            if not (math.isfinite(lv) and lv >= 0):
                raise UsageError(f"--augment-negatives: levels must be >= 0, got {lv:g}")
        for lv in self.label_noise:
            if not (math.isfinite(lv) and 0 <= lv <= 1):
                raise UsageError(f"--label-noise: levels must be in [0, 1], got {lv:g}")
        for lv in self.click_noise:
            if not (math.isfinite(lv) and 0 <= lv <= 1):
                raise UsageError(f"--click-noise: levels must be click probabilities in [0, 1], got {lv:g}")
        for lv in self.position_bias:
            if not (math.isfinite(lv) and lv >= 0):
                raise UsageError(f"--position-bias: levels are PBM exponents eta >= 0 (examination (1/r)^eta), got "
                                 f"{lv:g}")
        if not (math.isfinite(self.logging_fraction) and 0 < self.logging_fraction < 1):
            raise UsageError(f"--logging-fraction: a fraction of the training queries in (0, 1), got "
                             f"{self.logging_fraction:g}")
        if len(set(self.position_bias)) != len(self.position_bias):
            raise UsageError("--position-bias: a level is listed twice, got "
                             + ",".join(format_level(v) for v in self.position_bias))


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
                         ("click-noise", config.click_noise), ("position-bias", config.position_bias)):
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


def ips_capable(loss: str) -> bool:
    """Whether ``loss`` has an IPS variant (the losses whose pooled labels carry the IPS relevance linearly)."""
    from rankcli.core.ips import IPS_LOSSES

    return loss in IPS_LOSSES


def setting_losses(config: ExperimentConfig, setting: Setting) -> list[str]:
    """The names trained in ``setting``: the losses, and under the position-bias sweep each loss's naive variant (its
    own name) followed by its IPS variant (``<loss>+ips``) where it has one."""
    if setting.kind != "position-bias":
        return list(config.losses)
    return [name for loss in config.losses for name in ([loss, loss + IPS_SUFFIX] if ips_capable(loss) else [loss])]


def all_loss_names(config: ExperimentConfig) -> list[str]:
    """Every name a unit of the experiment may carry, in report order."""
    if not config.position_bias:
        return list(config.losses)
    return setting_losses(config, Setting("position-bias=0", "position-bias", 0.0))


def setting_pairs(config: ExperimentConfig, setting: Setting) -> list[tuple[str, str]] | None:
    """The pairs tested in ``setting``: every two losses (``None``), or under the position-bias sweep each loss's naive
    against its IPS variant."""
    if setting.kind != "position-bias":
        return None
    return [(loss, loss + IPS_SUFFIX) for loss in config.losses if ips_capable(loss)]


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
_FOLD_DIR = re.compile(r"^fold(\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Fold:
    """One fixed split: fold ``number``'s train, validation (optional) and test Parquet files."""

    number: int
    train: Path
    valid: Path | None
    test: Path

    def parts(self) -> list[tuple[str, Path]]:
        return [(part, p) for part, p in (("train", self.train), ("valid", self.valid), ("test", self.test))
                if p is not None]


def _hash_datasets(h, parts) -> None:
    for ds in parts:
        for arr in (ds.offsets, ds.labels, ds.features):
            arr = np.ascontiguousarray(arr)
            h.update(str((arr.dtype.str, arr.shape)).encode())
            h.update(memoryview(arr.reshape(-1)).cast("B"))  # flat: a (0, n) array has no 2-D byte view


@dataclass
class ExperimentData:
    """The queries an experiment draws from: one pooled dataset, or fixed folds.

    Folds are read when a unit needs them, one fold at a time (a WEB30K fold holds the whole dataset), unless
    :meth:`in_memory` loaded them all (to send them to workers that cannot read the files).
    """

    pooled: Dataset | None = None
    folds: list[Fold] | None = None
    _loaded: dict = field(default_factory=dict, repr=False, compare=False)
    _keep_all: bool = field(default=False, repr=False, compare=False)
    _fingerprint: str | None = field(default=None, repr=False, compare=False)

    def fold(self, number: int) -> tuple[Dataset, Dataset | None, Dataset]:
        """Fold ``number``'s (train, validation or None, test) datasets."""
        from rankcli.formats.parquet import read_dataset

        if number not in self._loaded:
            fold = next((f for f in self.folds or [] if f.number == number), None)
            if fold is None:
                raise UsageError(f"no fold {number} in the data (folds: "
                                 f"{', '.join(str(f.number) for f in self.folds or [])})")
            if not self._keep_all:
                self._loaded.clear()
            self._loaded[number] = (read_dataset(fold.train), read_dataset(fold.valid) if fold.valid else None,
                                    read_dataset(fold.test))
        return self._loaded[number]

    def in_memory(self) -> ExperimentData:
        """A copy holding every fold in memory (what gets shipped to workers that cannot read the files)."""
        out = ExperimentData(pooled=self.pooled, folds=self.folds, _keep_all=True, _fingerprint=self.fingerprint())
        for f in self.folds or []:
            out.fold(f.number)
        return out

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            h = hashlib.blake2b(digest_size=16)
            if self.pooled is not None:
                _hash_datasets(h, [self.pooled])
            else:
                for f in self.folds:
                    h.update(f"fold {f.number} {'with' if f.valid else 'without'} validation".encode())
                    _hash_datasets(h, [d for d in self.fold(f.number) if d is not None])
            self._fingerprint = h.hexdigest()
        return self._fingerprint


def _find_given(path: Path, part: str) -> Path | None:
    for name in GIVEN_NAMES[part]:
        if (path / name).is_file():
            return path / name
        if (path / name).exists() or (path / name).is_symlink():
            # "no test.parquet ..., got test.parquet" for a link to /dev/zero, a FIFO, a directory or a dangling link
            raise InputError(f"{path / name}: not a regular file (a fold's train, validation and test data are "
                             "Parquet files)")
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


def _listing(path: Path) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    return ", ".join(names[:8]) + (", ..." if len(names) > 8 else "") if names else "nothing"


def _describe_features(names: list[str]) -> str:
    from rankcli.formats.parquet import feature_names

    if not names:
        return "no feature column"
    if names == feature_names(len(names)):
        return f"{len(names)} features (f1..f{len(names)})"
    return f"{len(names)} features ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''})"


def _check_distinct_tests(folds: list[Fold]) -> None:
    """:class:`InputError` when two folds have the same test file (a link, or a byte-identical copy).

    The folds' test queries are pooled and the paired tests count each as one unit; a test set present twice would
    count every one of its queries twice, halving the standard error (what issue 11 item 5 removed for repeated
    splits). Only files of equal size are read.
    """
    import stat

    by_size: dict[int, list[Fold]] = {}
    for f in folds:
        st = f.test.stat()
        if stat.S_ISREG(st.st_mode):  # a device or FIFO is refused by the Parquet reader; never read it here
            by_size.setdefault(st.st_size, []).append(f)
    for same_size in by_size.values():
        seen: dict[str, Fold] = {}
        for f in same_size if len(same_size) > 1 else []:
            h = hashlib.sha256()
            with open(f.test, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            first = seen.setdefault(h.hexdigest(), f)
            if first is not f:
                raise InputError(f"{f.test}: the same file as {first.test}; each fold needs its own test queries (the "
                                 "tests pool the folds' test queries, so a copy would count each of them twice)")


def find_folds(path: Path) -> list[Fold]:
    """The folds of a directory: its ``Fold1/ .. FoldK/`` subdirectories, or the directory itself as one fold.

    Each fold needs ``train.parquet`` and ``test.parquet``, and either every fold has a validation file
    (``vali.parquet``; also ``valid``/``validation``) or none has. Every file of every fold must have the same feature
    columns (a model trained on one fold's features is tested on that fold's test file). Problems are
    :class:`InputError` (exit 3) naming the fold and the file.
    """
    from rankcli.formats.parquet import column_names, feature_columns, require_columns, row_group_rows

    numbered = {}
    for p in path.iterdir():
        m = _FOLD_DIR.match(p.name)
        if m and p.is_dir():
            k = int(m.group(1))
            if k in numbered:
                raise InputError(f"{path}: two directories name fold {k} ({numbered[k].name}, {p.name})")
            numbered[k] = p
    has_own = _find_given(path, "train") is not None or _find_given(path, "test") is not None
    if numbered and has_own:
        raise InputError(f"{path}: holds both fold directories ({', '.join(sorted(p.name for p in numbered.values()))})"
                         " and train/test files of its own; --folds reads one or the other, move one away")
    if 0 in numbered:  # it was left out without a word: range(1, K + 1) never asked for it
        raise InputError(f"{numbered[0]}: folds are numbered from 1 (Fold1/ .. FoldK/), got {numbered[0].name}; "
                         "rename the fold directories to start at Fold1")
    if not numbered:
        dirs = [(1, path)]
    else:
        wanted = list(range(1, max(numbered) + 1))
        missing = [k for k in wanted if k not in numbered]
        if missing:
            raise InputError(f"{path}: fold directories must be numbered 1..K without gaps, got "
                             f"{', '.join(numbered[k].name for k in sorted(numbered))} (Fold{missing[0]} missing)")
        dirs = [(k, numbered[k]) for k in wanted]
    folds = []
    for k, d in dirs:
        train_p, valid_p, test_p = (_find_given(d, part) for part in ("train", "valid", "test"))
        if train_p is None or test_p is None:
            lack = " and ".join(n for n, p in (("train.parquet", train_p), ("test.parquet", test_p)) if p is None)
            what = "a fold directory" if numbered else "DATA (one fold, or Fold1/ .. FoldK/)"
            raise InputError(f"{d}: no {lack}; {what} needs train.parquet, vali.parquet and test.parquet "
                             f"(convert the fold's train/vali/test files into it), got {_listing(d)}")
        folds.append(Fold(k, train_p, valid_p, test_p))
    with_valid = [f for f in folds if f.valid is not None]
    if with_valid and len(with_valid) < len(folds):
        lacking = next(f for f in folds if f.valid is None)
        raise InputError(f"{lacking.train.parent}: no vali.parquet, but {with_valid[0].valid} exists; every fold "
                         "needs the same parts (validation selects each fold's model), got "
                         f"{_listing(lacking.train.parent)}")
    _check_distinct_tests(folds)
    first: tuple[Path, list[str]] | None = None
    for f in folds:
        for _part, p in f.parts():
            names = column_names(p)
            require_columns(p, names, ["qid", "label"])
            if int(np.sum(row_group_rows(p))) == 0:  # an empty test file gave "0 test queries", n/a everywhere, exit 0
                raise InputError(f"{p}: no rows; every part of every fold needs queries")
            feats = feature_columns(names)
            if first is None:
                first = (p, feats)
            elif feats != first[1]:
                raise InputError(f"{p}: {_describe_features(feats)}, but {first[0]} has "
                                 f"{_describe_features(first[1])}; every file of every fold needs the same feature "
                                 "columns (convert them in one run, or pass convert --num-features N)")
    return folds


def load_data(path: Path | str, folds: bool = False) -> ExperimentData:
    """Read ``DATA``: a Parquet file (pooled queries) or a directory.

    A directory's ``*.parquet`` files are pooled (concatenated in name order), unless ``folds``: then it holds
    ``Fold1/ .. FoldK/`` or is one fold (see :func:`find_folds`); fold files are read when a unit needs them.
    """
    from rankcli.formats.parquet import read_dataset

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if folds:
        if not path.is_dir():
            raise UsageError(f"--folds needs DATA to be a directory holding Fold1/ .. FoldK/ (or one fold's "
                             f"train/vali/test Parquet files), got file {path}")
        return ExperimentData(folds=find_folds(path))
    if path.is_dir():
        files = sorted(p for p in path.glob("*.parquet") if p.is_file())
        if not files:
            raise InputError(f"{path}: no *.parquet file in the directory"
                             + ("; it holds fold directories: pass --folds" if any(
                                 _FOLD_DIR.match(p.name) and p.is_dir() for p in path.iterdir()) else ""))
        return ExperimentData(pooled=concat_datasets([read_dataset(p) for p in files]))
    return ExperimentData(pooled=read_dataset(path))


def trial_ids(config: ExperimentConfig) -> list[int]:
    """The trials of an experiment: ``0 .. trials - 1`` (random splits) or the fold numbers ``1 .. K`` (folds)."""
    trials = config.trials if config.trials is not None else DEFAULT_TRIALS
    return list(range(1, trials + 1)) if config.folds else list(range(trials))


def trial_split(data: ExperimentData, config: ExperimentConfig, trial: int
                ) -> tuple[Dataset, Dataset | None, Dataset]:
    """Trial ``trial``'s (train, validation, test): a random query-level split, or fold ``trial``'s files."""
    if data.folds is not None:
        return data.fold(trial)
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


def logging_query_count(n_train: int, fraction: float) -> int:
    """Queries the position-bias sweep's logging ranker is trained on: ``fraction`` of the training queries (rounded
    up), at least :data:`MIN_LOGGING_QUERIES`."""
    return max(MIN_LOGGING_QUERIES, math.ceil(fraction * n_train))


@dataclass
class ClickLogs:
    """What one (trial, position-bias setting) trains on, shared by all its losses and variants."""

    train: Dataset                # PBM clicks on the logging ranker's top 10 of the non-logging training queries
    valid: Dataset | None         # the same on the validation queries (None: no validation part, or no click in it)
    propensity: np.ndarray        # estimated from the RandTop-10 log, position r at [r - 1]
    estimate: object              # the rankcli.core.propensity.PropensityEstimate


#: One process's latest (trial, setting) of the position-bias sweep: its units run one after another (trial-major
#: plan), so the logging ranker, the simulations and the estimate are made once per (trial, setting), not per loss.
_CLICK_LOGS: dict = {}


def position_bias_logs(train: Dataset, valid: Dataset | None, config: ExperimentConfig, setting: Setting,
                       trial: int, key: object = None) -> ClickLogs:
    """Trial ``trial``'s click logs at PBM exponent ``setting.level``.

    A logging ranker (LightGBM lambdamart on the graded labels, all ``config.trees`` trees, no validation) is trained
    on :func:`logging_query_count` training queries drawn with the generator ``(seed, 3, trial)`` (the same queries
    and ranker at every level); it ranks the other training queries and the validation queries. On its top
    :data:`DISPLAYED_POSITIONS`, ``config.click_impressions`` impressions per query get PBM clicks (examination
    ``(1/r)^eta``, the paper's click probabilities per grade, impressions without a click kept), and a RandTop-10 log
    of the same size (the ranker's top 10 shuffled per impression) on the same training queries gives the propensity
    estimate (click-rate estimator, positions with fewer than 20 clicks from the fitted ``(1/r)^eta``). Simulation and
    estimate draw from the setting's perturbation generator. ``key`` (anything hashable that identifies the data and
    the configuration) lets a process reuse the logs of its latest call.
    """
    import dataclasses

    from rankcli.core.propensity import MIN_CLICKS, estimate
    from rankcli.simulate import PAPER_CLICK_PROBS, simulate_clicks
    from rankcli.train import train_model

    cache_key = None if key is None else (key, trial, setting.name)
    if cache_key is not None and cache_key in _CLICK_LOGS:
        return _CLICK_LOGS[cache_key]
    n_log = logging_query_count(train.n_queries, config.logging_fraction)
    if n_log >= train.n_queries:
        raise InputError(f"the logging ranker takes {n_log} of the {train.n_queries} training queries "
                         f"(--logging-fraction {config.logging_fraction:g}, at least {MIN_LOGGING_QUERIES}), leaving "
                         "none to log clicks on; use more training queries or a smaller --logging-fraction")
    order = _rng(config.seed, 3, trial).permutation(train.n_queries)
    log_ds, rest = train.take_queries(np.sort(order[:n_log])), train.take_queries(np.sort(order[n_log:]))
    cfg = dataclasses.replace(train_config(config, "lambdamart", model_seed(config.seed, trial, "logging-ranker")),
                              early_stopping=0)
    booster = train_model(log_ds, None, cfg).booster
    rng = perturbation_rng(config.seed, trial, setting.name)
    sim = dict(model="pbm", click_probs=PAPER_CLICK_PROBS, eta=float(setting.level), max_rank=DISPLAYED_POSITIONS,
               impressions=config.click_impressions, keep_no_click=True)

    def scores(ds: Dataset) -> np.ndarray:
        return np.asarray(booster.predict(ds.features), dtype=np.float64)

    rest_scores = scores(rest)
    train_c, _ = simulate_clicks(rest, ranker=rest_scores, rng=rng, **sim)
    valid_c = None
    if valid is not None:
        valid_c, _ = simulate_clicks(valid, ranker=scores(valid), rng=rng, **sim)
        if not np.any(valid_c.labels):
            valid_c = None
    rand_c, _ = simulate_clicks(rest, ranker=rest_scores, randomize=("top", DISPLAYED_POSITIONS), rng=rng, **sim)
    if not np.any(train_c.labels):
        raise InputError("the simulated users clicked nothing in the training queries")
    _, query = np.unique(rand_c.extra["source_qid"][rand_c.offsets[:-1]], return_inverse=True)
    try:
        est = estimate(rand_c.offsets, query.reshape(-1), rand_c.extra["position"], rand_c.labels,
                       method="click-rate", max_position=DISPLAYED_POSITIONS, bootstrap=1, min_clicks=MIN_CLICKS,
                       fit="power", rng=rng)
    except InputError as exc:
        raise InputError(f"propensity estimate from the RandTop-{DISPLAYED_POSITIONS} log ({rand_c.n_queries} "
                         f"impressions of {rest.n_queries} queries, as many as the click log): {exc}") from None
    p = np.asarray(est.propensity, dtype=np.float64)
    shown = int(train_c.extra["position"].max())
    if p.shape[0] < shown or not np.all(np.isfinite(p[:shown])):
        raise InputError(f"the RandTop-{DISPLAYED_POSITIONS} log estimated propensities for "
                         f"positions 1..{int(np.sum(np.isfinite(p)))} only, the click log shows position {shown}")
    # Relative to position 1, an estimate can exceed 1 by chance (at eta = 0 every ratio scatters around 1); a
    # propensity is at most 1 (the file format's (0, 1]), so it is capped there: a weight below 1 is never given.
    logs = ClickLogs(train_c, valid_c, np.minimum(p, 1.0), est)
    if cache_key is not None:
        _CLICK_LOGS.clear()
        _CLICK_LOGS[cache_key] = logs
    return logs


def variant_data(logs: ClickLogs, name: str, config: ExperimentConfig):
    """(train, validation, objective) of the loss variant ``name`` (``loss`` or ``loss+ips``) on ``logs``.

    IPS-capable losses train on the impressions pooled per source query (:func:`rankcli.ips.pooled_training_set`):
    without propensities (naive) or with the estimated ones (``+ips``). Other losses (lambdamart) train naive on the
    click impressions as logged, each impression one list. Validation is pooled like the variant (naive: click-through
    rates; ``+ips``: IPS relevances), labelled so that the convention's gain is the pooled relevance ``g``
    (exponential gain: ``log2(1 + g)``)."""
    from rankcli.core.metrics import Convention
    from rankcli.ips import objective_for, pooled_training_set

    ips = name.endswith(IPS_SUFFIX)
    loss = name[: -len(IPS_SUFFIX)] if ips else name
    spec = ("values", logs.propensity) if ips else None
    valid = None
    if logs.valid is not None:
        as_gain = "xendcg" if Convention.preset(config.convention).gain == "exponential" else "pointwise"
        valid, _ = pooled_training_set(logs.valid, loss=as_gain, propensity=spec, what="validation clicks")
    if not ips_capable(loss):
        return logs.train, valid, None
    train, _ = pooled_training_set(logs.train, loss=loss, propensity=spec, what="training clicks")
    return train, valid, objective_for(loss, train)


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
    qids: np.ndarray | None = None                          # the test queries, in test-file order
    per_query: dict[str, np.ndarray] = field(default_factory=dict)  # test metric -> value per test query (NaN: skipped)


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
    objective = None
    base_loss = loss[: -len(IPS_SUFFIX)] if loss.endswith(IPS_SUFFIX) else loss
    if setting.kind != "position-bias":
        train, valid = perturb(setting, train, valid, config, perturbation_rng(config.seed, trial, setting.name))
    try:
        if setting.kind == "position-bias":
            logs = position_bias_logs(train, valid, config, setting, trial,
                                      key=(id(data), data.fingerprint(), json.dumps(config.identity(), sort_keys=True)))
            train, valid, objective = variant_data(logs, loss, config)
        result = train_model(train, valid, train_config(config, base_loss,
                                                        model_seed(config.seed, trial, setting.name)),
                             objective=objective)
    except InputError as exc:  # say which unit: a random split can leave, e.g., a validation part without relevance
        raise InputError(f"{setting.name}, {'fold' if config.folds else 'trial'} {trial}, {loss}: {exc}") from None
    booster = result.booster
    trees = int(result.best_iteration) if result.best_iteration and result.best_iteration > 0 \
        else int(booster.current_iteration())
    scores = np.asarray(booster.predict(test.features, num_iteration=trees), dtype=np.float64)
    specs = parse_metrics(config.metrics)
    ev = evaluate(specs, test.labels, scores, test.offsets, Convention.preset(config.convention))
    values = {str(s): float(ev.means[str(s)]) for s in specs}
    per_query = {str(s): np.asarray(ev.per_query[str(s)], dtype=np.float64) for s in specs} if config.folds else {}
    return UnitResult(setting.name, trial, loss, values, trees, time.perf_counter() - start,
                      [float(v) for v in result.curve], test.qids[test.offsets[:-1]].copy() if config.folds else None,
                      per_query)


# Worker processes load the data once (initializer) and then run units by key.
_WORKER: dict = {}


def _init_worker(data_path: str, config_dict: dict) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    config = _config_from_dict(config_dict)
    _WORKER["config"] = config
    _WORKER["data"] = load_data(data_path, config.folds)


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


def queries_path(exp_dir: Path, setting: str, trial: int, loss: str) -> Path:
    """The per-query test metrics of one unit (folds protocol): ``qid`` and one column per metric."""
    return exp_dir / QUERIES_DIR / f"{setting}__{trial:05d}__{loss}.parquet"


class ResultStore:
    """``trials.parquet`` (rewritten atomically after every unit), the per-unit curve files and, under the folds
    protocol, the per-unit per-query test metrics (written before the unit's rows reach ``trials.parquet``, which is
    the record of what is finished)."""

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
        if u.qids is not None:
            columns = {"qid": pa.array(np.asarray(u.qids, dtype=np.int64), pa.int64())}
            columns.update({m: pa.array(v, pa.float64()) for m, v in u.per_query.items()})
            (self.exp_dir / QUERIES_DIR).mkdir(exist_ok=True)
            meta = {"kind": "per-query", "metrics": list(u.per_query), "setting": u.setting, "fold": u.trial,
                    "loss": u.loss}
            if self.convention is not None:
                meta["convention"] = json.dumps(self.convention)
            write_table(queries_path(self.exp_dir, u.setting, u.trial, u.loss), pa.table(columns), overwrite=True,
                        query_aligned=False, metadata=meta)
        key = (u.setting, u.trial, u.loss)
        # Read, merge and write under a lock: concurrent runs of one EXP_DIR (array jobs) each add their own units,
        # and none may lose another's rows.
        from rankcli.formats.atomic import FileLock

        with FileLock(self.exp_dir / STORE_LOCK):
            self.refresh()
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
    if exp_dir.is_dir() and any(p.name not in (LOCKS_DIR, STORE_LOCK) for p in exp_dir.iterdir()):
        # (the lock files of a concurrent run starting on the same new EXP_DIR do not make it an old experiment)
        from rankcli.formats.atomic import is_experiment_config

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
    except OSError as exc:  # permission, read-only file system, disk full
        raise OutputError(f"{exp_dir}: cannot write ({exc.strerror or exc})") from None
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
    convergence: dict           # setting -> loss -> {"mean", "stderr", "trials", "running"} (see convergence())
    resumed_units: int
    ran_units: int
    seconds: float
    files: list[Path]


def plan_units(config: ExperimentConfig, settings: list[Setting]) -> list[tuple[Setting, int, str]]:
    """All units, trial-major (so that whole trials, or folds, finish early), then setting, then loss."""
    return [(s, t, loss) for t in trial_ids(config) for s in settings for loss in setting_losses(config, s)]


def run_experiment(data_path: Path | str, exp_dir: Path | str, config: ExperimentConfig, *, jobs: int = 1,
                   overwrite: bool = False, on_plan: Callable[[int, int], None] | None = None,
                   on_unit: Callable[[UnitResult], None] | None = None, dask=None) -> ExperimentResult:
    """Run (or resume) an experiment and summarise it.

    ``on_plan(total_units, already_done)`` is called once before training starts, ``on_unit`` after every finished
    unit (in the parent process). ``jobs > 1`` runs units in that many worker processes; results do not depend on it.
    Under the folds protocol ``config.trials`` is set to the number of folds (another number given is refused);
    under random splits ``None`` becomes :data:`DEFAULT_TRIALS`.
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
    data = load_data(data_path, config.folds)
    if config.folds:
        if config.trials is not None and config.trials != len(data.folds):
            raise UsageError(f"trials do not combine with folds: each of the {len(data.folds)} folds of {data_path} "
                             f"is trained once per loss, got trials={config.trials}")
        config.trials = len(data.folds)
    elif config.trials is None:
        config.trials = DEFAULT_TRIALS
    _check_data(data, config)
    resumed = prepare_directory(exp_dir, config, data.fingerprint(), overwrite)
    settings, sweeps = plan_settings(config)
    from rankcli.core.metrics import Convention

    store = ResultStore(exp_dir, [s.name for s in settings], all_loss_names(config), metrics,
                        Convention.preset(config.convention).as_dict())
    def done_units() -> set[tuple[str, int, str]]:
        done = store.done(metrics)
        if config.folds:
            # A unit is finished only with its per-query values (the pooled tests need them); one without is run again.
            done = {u for u in done if queries_path(exp_dir, *u).is_file()}
        return done

    done = done_units() if resumed else set()
    units = plan_units(config, settings)
    pending = [u for u in units if (u[0].name, u[1], u[2]) not in done]
    if on_plan is not None:
        on_plan(len(units), len(units) - len(pending))

    claims = UnitClaims(exp_dir, pending, store, done_units)

    def finished(u: UnitResult) -> None:
        store.add(u)
        claims.release((u.setting, u.trial, u.loss))
        if on_unit is not None:
            on_unit(u)

    if dask is not None:
        # --dask: units run as tasks on a Dask cluster (a "local:N" / scheduler address, or a distributed.Client).
        from rankcli.distributed import run_experiment_units

        run_experiment_units(dask, str(data_path), config, pending, finished, data=data)
    else:
        try:
            if jobs == 1 or len(pending) <= 1:
                while (unit := claims.next(wait=True)) is not None:
                    finished(run_unit(data, config, *unit))
            else:
                _run_pool(str(data_path), config, claims, jobs, finished)
        finally:
            claims.release_all()
        store.refresh()  # units a concurrent run trained belong in the summary too
    result = finalize(exp_dir, config, settings, sweeps, store)
    result.resumed_units = len(units) - len(pending)  # the rest: ran here, or by a concurrent run
    result.ran_units = len(pending) if dask is not None else sum(1 for u in pending if claims.ran(u))
    result.seconds = time.perf_counter() - started
    return result


def _run_pool(data_path: str, config: ExperimentConfig, claims: UnitClaims, jobs: int, finished) -> None:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")  # no fork after pyarrow/OpenMP threads have started
    pool = ProcessPoolExecutor(max_workers=min(jobs, claims.remaining), mp_context=ctx, initializer=_init_worker,
                               initargs=(data_path, asdict(config)))
    try:
        # Keep a bounded number of units in flight so that results come back roughly in plan order. A unit is
        # claimed when submitted and released once stored; units another run holds are waited for only when
        # nothing of ours is running.
        running = set()
        while True:
            while len(running) < 2 * jobs and (unit := claims.next(wait=not running)) is not None:
                running.add(pool.submit(_worker_unit, *unit))
            if not running:
                break
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


class UnitClaims:
    """Which pending units this run trains, when several runs share one EXP_DIR (array jobs, two terminals).

    A unit is claimed with an exclusive ``flock`` on ``EXP_DIR/.locks/<setting>__<trial>__<loss>.lock``, held from
    before training until its rows are stored; the kernel drops it if the run dies, so a killed run never leaves a
    unit stuck. A claimed unit that the store already lists as done (another run finished it) is skipped. Units held
    by another run are put off; once nothing else is left, :meth:`next` with ``wait`` blocks on them one by one and
    trains only those whose holder died without finishing them.
    """

    def __init__(self, exp_dir: Path, pending: list, store: ResultStore,
                 done_units: Callable[[], set[tuple[str, int, str]]]):
        self.exp_dir = exp_dir
        self._todo = list(pending)
        self._deferred: list = []
        self._store = store
        self._done_units = done_units
        self._held: dict[tuple[str, int, str], object] = {}
        self._ran: set[tuple[str, int, str]] = set()

    @staticmethod
    def key(unit) -> tuple[str, int, str]:
        setting, trial, loss = unit
        return (setting.name, trial, loss)

    @property
    def remaining(self) -> int:
        return len(self._todo) + len(self._deferred)

    def ran(self, unit) -> bool:
        """Whether this run claimed (and so trained) ``unit``."""
        return self.key(unit) in self._ran

    def next(self, wait: bool = True):
        """The next unit to train, claimed; ``None`` when none is left (or, without ``wait``, when only units
        another run holds are left)."""
        from rankcli.formats.atomic import FileLock

        while self._todo or (wait and self._deferred):
            blocking = not self._todo
            unit = self._todo.pop(0) if self._todo else self._deferred.pop(0)
            key = self.key(unit)
            (self.exp_dir / LOCKS_DIR).mkdir(exist_ok=True)
            lock = FileLock(self.exp_dir / LOCKS_DIR / f"{key[0]}__{key[1]:05d}__{key[2]}.lock")
            if not lock.acquire(blocking=blocking):
                self._deferred.append(unit)
                continue
            self._store.refresh()
            if key in self._done_units():  # finished by another run meanwhile
                lock.release()
                continue
            self._held[key] = lock
            self._ran.add(key)
            return unit
        return None

    def release(self, key: tuple[str, int, str]) -> None:
        lock = self._held.pop(key, None)
        if lock is not None:
            lock.release()

    def release_all(self) -> None:
        for key in list(self._held):
            self.release(key)


def _check_data(data: ExperimentData, config: ExperimentConfig) -> None:
    if data.pooled is not None:
        ds = data.pooled
        if ds.n_queries < 3:
            raise InputError(f"need at least 3 queries to split into train/validation/test, got {ds.n_queries}")
    if config.click_noise or config.position_bias:
        option = "--click-noise" if config.click_noise else "--position-bias"
        if data.pooled is not None:
            sources = [(None, data.pooled.labels)]
        else:
            from rankcli.formats.parquet import column_to_numpy, read_table

            # Training and validation get clicks; their labels are the grades the click model needs.
            sources = [(p, column_to_numpy(read_table(p, ["label"]).column("label")).astype(np.float64))
                       for f in data.folds for part, p in f.parts() if part != "test"]
        for path, labels in sources:
            bad = labels[(labels != np.round(labels)) | (labels < 0) | (labels > 4)]
            if bad.shape[0]:
                raise InputError(f"{str(path) + ': ' if path else ''}{option} needs integer grades 0..4 (click "
                                 f"probabilities per grade), got label {bad[0]:g}")


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


def pooled_queries(exp_dir: Path, config: ExperimentConfig, settings: list[Setting]) -> dict:
    """Folds protocol: every setting's per-query test metrics, pooled over the folds.

    Returns ``{setting: {"folds": [k, ...], "values": {loss: {metric: vector}}}}``: the vectors of all losses run over
    the same queries in the same order (fold by fold, each in test-file order), taken from the per-query files of the
    folds that every loss finished. A fold whose losses were tested on different queries is an :class:`InputError`
    (the store is inconsistent).
    """
    from rankcli.formats.parquet import column_to_numpy, read_table

    out: dict = {}
    for s in settings:
        names = setting_losses(config, s)
        folds, parts = [], {loss: {m: [] for m in config.metrics} for loss in names}
        for k in trial_ids(config):
            paths = {loss: queries_path(exp_dir, s.name, k, loss) for loss in names}
            if not all(p.is_file() for p in paths.values()):
                continue
            tables = {loss: read_table(p) for loss, p in paths.items()}
            ref_loss = names[0]
            ref = column_to_numpy(tables[ref_loss].column("qid"))
            for loss, t in tables.items():
                if not np.array_equal(column_to_numpy(t.column("qid")), ref):
                    raise InputError(f"{paths[loss]}: tested on other queries than {paths[ref_loss]}; the experiment "
                                     "directory is inconsistent, rerun with --overwrite")
                missing = [m for m in config.metrics if m not in t.column_names]
                if missing:
                    raise InputError(f"{paths[loss]}: no column {missing[0]}; the experiment directory is "
                                     "inconsistent, rerun with --overwrite")
            folds.append(k)
            for loss, t in tables.items():
                for m in config.metrics:
                    parts[loss][m].append(column_to_numpy(t.column(m)).astype(np.float64))
        values = {loss: {m: np.concatenate(v) if v else np.zeros(0) for m, v in ms.items()}
                  for loss, ms in parts.items()}
        out[s.name] = {"folds": folds, "values": values}
    return out


def summarize(rows: list[dict], config: ExperimentConfig, settings: list[Setting], pooled: dict | None = None) -> dict:
    """The paper's Table 1 per setting, and paired t-tests between every two losses.

    The *units* of the statistics are the trials (random splits: one value per trial, its test mean) or, with
    ``pooled`` (the folds protocol, see :func:`pooled_queries`), the test queries of all folds. Returns
    ``{"settings": [{"setting", "losses": {loss: {metric: {"mean", "stderr", "n", "trials"}}}, "tests": [...]}]}``
    where ``n`` counts the units a number is computed over and ``trials`` the trials (folds) behind it. A test
    ``{"a", "b", "metric", "n", "trials", "mean_a", "mean_b", "difference", "stderr", "test", "statistic",
    "p_value", "p_adjusted"}`` compares ``b`` with ``a`` (``a`` listed first in ``config.losses``) on the units where
    every loss has a value: ``difference = mean(b) - mean(a)``, as ``rankcli compare`` reports it (one
    implementation: :func:`rankcli.compare.compare_values`). p-values are corrected (``config.correction``) within
    each setting over all pairs and metrics; a test that cannot be run (fewer than two units, or no variance for the
    t-test) has ``p_value`` NaN and says why in ``reason`` (None for a test that ran).
    """
    from rankcli.compare import compare_values
    from rankcli.core.stats import REASON_TOO_FEW

    ids = trial_ids(config)
    wanted = set(ids)
    # value[setting][loss][metric] -> {trial: value}
    table: dict = {}
    for r in rows:
        if int(r["trial"]) not in wanted:
            continue
        table.setdefault(r["setting"], {}).setdefault(r["loss"], {}).setdefault(r["metric"], {})[int(r["trial"])] = \
            r["value"]
    out = []
    for s in settings:
        by_loss = table.get(s.name, {})
        names = setting_losses(config, s)
        if pooled is not None:
            p = pooled.get(s.name) or {"folds": [], "values": {}}
            units = {loss: {m: np.asarray(p["values"].get(loss, {}).get(m, np.zeros(0)), dtype=np.float64)
                            for m in config.metrics} for loss in names}
            n_folds = len(p["folds"])
        else:
            units = {loss: {m: np.array([by_loss.get(loss, {}).get(m, {}).get(t, np.nan) for t in ids],
                                        dtype=np.float64) for m in config.metrics} for loss in names}
        losses = {}
        for loss in names:
            losses[loss] = {}
            for m in config.metrics:
                mean, stderr, n = _mean_stderr(units[loss][m])
                trials = n_folds if pooled is not None else n
                losses[loss][m] = {"mean": mean, "stderr": stderr, "n": n, "trials": trials}
        tests = []
        pairs = setting_pairs(config, s)
        comparisons = []
        if pairs is not None:
            # Only the named pairs (naive against IPS, per loss), each through compare_values, corrected together.
            from rankcli.core.stats import adjust_pvalues

            for a, b in pairs:
                comparisons += compare_values({a: units[a], b: units[b]}, config.metrics, test="ttest",
                                              correction="none", alpha=0.05)[2]
            for c, p_adj in zip(comparisons, adjust_pvalues([c.result.p_value for c in comparisons],
                                                            config.correction)):
                c.p_adjusted = float(p_adj)
        elif len(names) > 1:
            comparisons = compare_values(units, config.metrics, test="ttest", correction=config.correction,
                                         alpha=0.05)[2]
        if comparisons:
            for c in comparisons:
                r = c.result
                reason = getattr(r, "reason", None)
                if reason == REASON_TOO_FEW and pooled is None:
                    reason = "fewer than two trials"  # the units here are trials
                tests.append({"a": c.a, "b": c.b, "metric": c.metric, "n": int(r.n),
                              "trials": n_folds if pooled is not None else int(r.n),
                              "mean_a": c.mean_a, "mean_b": c.mean_b, "difference": float(r.mean_diff),
                              "stderr": float(r.stderr), "test": r.test, "statistic": float(r.statistic),
                              "p_value": float(r.p_value), "p_adjusted": float(c.p_adjusted), "reason": reason})
        out.append({"setting": s.name, "losses": losses, "tests": tests})
    return {"settings": out}


def difference_label(a: str, b: str) -> str:
    """How a difference ``mean(b) - mean(a)`` is labelled everywhere: ``"b - a"``."""
    return f"{b} - {a}"


def protocol_note(config: ExperimentConfig, summary: dict | None = None) -> str:
    """One sentence: what a unit of the statistics is and how many there are."""
    if config.folds:
        n = None
        if summary and summary["settings"]:
            ns = {v["n"] for ms in summary["settings"][0]["losses"].values() for v in ms.values()}
            n = max(ns) if ns else None
        queries = f"{n} " if n is not None else ""
        return (f"{config.trials} fold{'s' if config.trials != 1 else ''}, each trained once per loss; test metrics "
                f"pooled over the {queries}test queries of all folds; paired t-tests over those queries "
                "(n = queries)")
    return (f"{config.trials} random split{'s' if config.trials != 1 else ''} (trials); paired t-tests across trials "
            "(n = trials, one test mean per trial)")


def json_shape(summary: dict) -> dict:
    """The ``--json`` document: the issue's shape, each test with ``n`` and ``difference`` = mean(b) - mean(a) (the
    other fields live in ``summary.json``)."""
    return {"settings": [
        {"setting": s["setting"],
         "losses": {loss: {m: {"mean": v["mean"], "stderr": v["stderr"]} for m, v in ms.items()}
                    for loss, ms in s["losses"].items()},
         "tests": [{k: t[k] for k in ("a", "b", "metric", "n", "difference", "p_value", "p_adjusted")}
                   for t in s["tests"]]}
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
                settings: list[Setting], kept: dict[tuple[str, int, str], int] | None = None) -> dict:
    """Mean validation metric per tree per loss and setting, every trial counted at every tree.

    A trial that stopped before the longest curve (early stopping) carries forward the value of the model it keeps:
    its curve at ``kept[(setting, trial, loss)]`` trees (the best iteration, the ``trees`` of ``trials.parquet``), or
    its last value when ``kept`` does not say. So every point averages the same trials, and a curve never becomes the
    mean of the few trials that trained longest. Curves of trials outside the experiment, or (with ``kept``) of units
    not finished, are left out.

    Returns ``{setting: {loss: {"mean": [...], "stderr": [...], "trials": [...], "running": [...]}}}`` per tree:
    ``trials`` counts the values averaged (every trial with a curve, unless a value is NaN), ``running`` the trials
    that actually trained that tree (the rest carry forward), ``stderr`` the standard error of the mean over trials.
    """
    wanted = set(trial_ids(config))
    grouped: dict = {}
    for setting, trial, loss, values in curves:
        if trial not in wanted or values.shape[0] == 0:
            continue
        keep = None
        if kept is not None:
            keep = kept.get((setting, trial, loss))
            if keep is None:
                continue  # the unit did not finish; its curve is rewritten when it runs again
        grouped.setdefault((setting, loss), []).append((values, keep))
    out: dict = {}
    for s in settings:
        out[s.name] = {}
        for loss in setting_losses(config, s):
            series = grouped.get((s.name, loss), [])
            length = max((v.shape[0] for v, _ in series), default=0)
            grid = np.full((len(series), length), np.nan)
            running = np.zeros(length, dtype=np.int64)
            for i, (vals, keep) in enumerate(series):
                n = vals.shape[0]
                grid[i, :n] = vals
                running[:n] += 1
                at = n if keep is None or not 1 <= keep <= n else keep
                grid[i, n:] = vals[at - 1]
            ok = np.isfinite(grid)
            count = ok.sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                total = np.where(ok, grid, 0.0).sum(axis=0)
                mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
                dev = np.where(ok, grid - mean, 0.0)
                var = (dev ** 2).sum(axis=0) / np.maximum(count - 1, 1)
                stderr = np.where(count > 1, np.sqrt(var / np.maximum(count, 1)), np.nan)
            out[s.name][loss] = {"mean": mean.tolist(), "stderr": stderr.tolist(), "trials": count.tolist(),
                                 "running": running.tolist()}
    return out


def primary_metric(config: ExperimentConfig) -> str:
    """The metric of the sweep tables and plots: ``select_by`` when it is reported, else the first metric."""
    return config.select_by if config.select_by in config.metrics else config.metrics[0]


def sweep_rows(summary: dict, config: ExperimentConfig, sweeps: dict) -> dict[str, list[dict]]:
    """Per sweep, one row per level: mean (and stderr) of the primary metric per loss, and for every other loss its
    difference to the first loss, ``"<loss> - <first>"`` = mean(loss) - mean(first), with the adjusted p-value of that
    test (``"<loss> - <first> p_adjusted"``) and the number of units it ran over (``"<loss> - <first> n"``)."""
    metric = primary_metric(config)
    by_name = {s["setting"]: s for s in summary["settings"]}
    first = config.losses[0]
    out: dict[str, list[dict]] = {}
    for kind, levels in sweeps.items():
        rows = []
        for level, setting in levels:
            s = by_name[setting.name]
            row = {"level": level, "setting": setting.name}
            pairs = setting_pairs(config, setting)
            if pairs is None:  # every other loss against the first
                losses, pairs = config.losses, [(first, loss) for loss in config.losses[1:]]
            else:  # position-bias: every variant's mean, and per loss the IPS variant against the naive one
                losses = setting_losses(config, setting)
            for loss in losses:
                row[loss] = s["losses"][loss][metric]["mean"]
                row[f"{loss} stderr"] = s["losses"][loss][metric]["stderr"]
            for a, b in pairs:
                label = difference_label(a, b)
                row[label] = row[b] - row[a]
                test = next((t for t in s["tests"] if t["a"] == a and t["b"] == b and t["metric"] == metric), None)
                row[f"{label} p_adjusted"] = test["p_adjusted"] if test else float("nan")
                row[f"{label} n"] = test["n"] if test else 0
            rows.append(row)
        out[kind] = rows
    return out


def sweep_columns(config: ExperimentConfig, kind: str) -> tuple[list[str], list[str]]:
    """A sweep table's loss columns and difference labels: the losses and ``loss - first``, or (position-bias) every
    variant and ``loss+ips - loss`` per loss with an IPS variant."""
    if kind == "position-bias":
        setting = Setting("position-bias=0", "position-bias", 0.0)
        return setting_losses(config, setting), [difference_label(a, b) for a, b in setting_pairs(config, setting)]
    return list(config.losses), [difference_label(config.losses[0], loss) for loss in config.losses[1:]]


def naive_only_note(config: ExperimentConfig) -> str:
    """The sentence saying which losses of the position-bias sweep have no IPS variant ('' when all have one)."""
    from rankcli.core.ips import IPS_LOSSES

    naive = [loss for loss in config.losses if not ips_capable(loss)]
    if not config.position_bias or not naive:
        return ""
    return (f"{', '.join(naive)}: naive only, trained on the click impressions as logged (each impression one list, "
            f"the click its label); no IPS variant (IPS training takes {', '.join(IPS_LOSSES)}; LightGBM's per-document "
            "weights are not pairwise IPS).")


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


def _signed(x: float | None, digits: int = 4) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.{digits}f}"


def sweep_note(config: ExperimentConfig, kind: str) -> str:
    """The sweep's one-paragraph description, filled in with the configuration's numbers."""
    return SWEEP_NOTES[kind].format(impressions=config.click_impressions,
                                    logging=f"{config.logging_fraction:g}")


def p_cell(p: float | None, digits: int = 3, reason: str | None = None) -> str:
    """A p-value for a table; a test that could not be run says so (and why, when ``reason`` is given)."""
    if p is None or not math.isfinite(p):
        return f"not testable: {reason}" if reason else "not testable"
    return f"{p:.{digits}f}"


def render_markdown(result: ExperimentResult, sweep_tables: dict[str, list[dict]]) -> str:
    config = result.config
    lines = [f"# rankcli experiment: {', '.join(config.losses)}", ""]
    split = "given folds" if config.folds else "split " + ",".join(f"{x:g}" for x in config.split)
    lines.append(f"Protocol: {protocol_note(config, result.summary)}. {split.capitalize()}; seed {config.seed}; "
                 f"selection by validation {config.select_by}, early stopping {config.early_stopping}, at most "
                 f"{config.trees} trees; test convention `{config.convention}`"
                 f"{' (queries without a relevant document skipped)' if config.convention == 'paper' else ''}. "
                 f"p-values adjusted with `{config.correction}` within each setting. A difference `b - a` is "
                 "mean(b) - mean(a); `n` counts the units a number is computed over.")
    lines.append("")
    unit = "queries" if config.folds else "trials"
    by_name = {st.name: st for st in result.settings}
    for s in result.summary["settings"]:
        lines += [f"## {s['setting']}", "", "| loss | " + " | ".join(config.metrics) + " | n |",
                  "|---|" + "---|" * (len(config.metrics) + 1)]
        setting = by_name.get(s["setting"])
        for loss in (setting_losses(config, setting) if setting is not None else list(s["losses"])):
            vs = [s["losses"][loss][m] for m in config.metrics]
            ns = sorted({v["n"] for v in vs})
            cells = [f"{_fmt(v['mean'])} ± {_fmt(v['stderr'])}" for v in vs]
            lines.append(f"| {loss} | " + " | ".join(cells) + f" | {'/'.join(map(str, ns))} {unit} |")
        lines.append("")
        if s["tests"]:
            lines += ["| difference | metric | mean difference | stderr | n | p | p adjusted |",
                      "|---|---|---|---|---|---|---|"]
            for t in s["tests"]:
                lines.append(f"| {difference_label(t['a'], t['b'])} | {t['metric']} | {_signed(t['difference'])} | "
                             f"{_fmt(t['stderr'])} | {t['n']} | {p_cell(t['p_value'], reason=t['reason'])} | "
                             f"{p_cell(t['p_adjusted'])} |")
            lines.append("")
    for kind, rows in sweep_tables.items():
        metric = primary_metric(config)
        names, diffs = sweep_columns(config, kind)
        lines += [f"## sweep {kind}: test {metric}", "", sweep_note(config, kind), ""]
        if kind == "position-bias":
            lines += ["Per loss, `<loss>+ips - <loss>` is mean(IPS) - mean(naive) over the units, with its paired "
                      f"t-test (p adjusted with `{config.correction}` within each level).", ""]
            if naive_only_note(config):
                lines += [naive_only_note(config), ""]
        lines += [f"| {kind} | " + " | ".join(names + diffs + [f"p adjusted ({d})" for d in diffs]) + " |",
                  "|---|" + "---|" * (len(names) + 2 * len(diffs))]
        for r in rows:
            lines.append(f"| {format_level(r['level'])} | " + " | ".join(
                [_fmt(r[c]) for c in names] + [_signed(r[d]) for d in diffs]
                + [p_cell(r[f"{d} p_adjusted"]) for d in diffs]) + " |")
        lines.append("")
    return "\n".join(lines)


def finalize(exp_dir: Path, config: ExperimentConfig, settings: list[Setting], sweeps: dict,
             store: ResultStore) -> ExperimentResult:
    """Write summary.json, summary.md, convergence.csv and the sweep CSVs from what is in the directory."""
    from rankcli.formats.atomic import atomic_path

    pooled = pooled_queries(exp_dir, config, settings) if config.folds else None
    summary = summarize(store.rows, config, settings, pooled)
    kept = {(r["setting"], int(r["trial"]), r["loss"]): int(r["trees"]) for r in store.rows}
    conv = convergence(load_curves(exp_dir), config, settings, kept)
    result = ExperimentResult(exp_dir, config, settings, sweeps, summary, conv, 0, 0, 0.0, [])
    tables = sweep_rows(summary, config, sweeps)

    def write(name: str, text: str) -> None:
        with atomic_path(exp_dir / name, overwrite=True) as tmp:
            tmp.write_text(text)
        result.files.append(exp_dir / name)

    head = {"protocol": "folds" if config.folds else "random-splits", "unit": "query" if config.folds else "trial",
            "difference": "mean(b) - mean(a)"}
    write("summary.json", json.dumps(_jsonable({**head, **summary, "convention": config.convention,
                                                "correction": config.correction, "trials": config.trials,
                                                "sweeps": tables}), indent=2) + "\n")
    write("summary.md", render_markdown(result, tables) + "\n")
    conv_lines = ["setting,loss,tree,mean,stderr,trials,running"]
    for s, losses in conv.items():
        for loss, c in losses.items():
            conv_lines += [f"{s},{loss},{i + 1},{m!r},{e!r},{n},{r}" for i, (m, e, n, r) in
                           enumerate(zip(c["mean"], c["stderr"], c["trials"], c["running"]))]
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
