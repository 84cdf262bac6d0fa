"""An experiment's data: one pooled dataset (random splits) or fixed folds, and each trial's train/validation/test."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rankcli.core.perturb import split_queries
from rankcli.core.seeds import trial_rng
from rankcli.dataset import Dataset
from rankcli.dataset.feature_transform import conform, pending, recorded
from rankcli.dataset.pooling import concat_datasets
from rankcli.errors import InputError, UsageError
from rankcli.experiment.checks import check_file_labels_finite, check_overlaps, check_training_labels
from rankcli.experiment.config import ExperimentConfig
from rankcli.train.datasets import MatrixRows

#: A fold's files: RankLib's and MSLR's names (train.txt, vali.txt, test.txt converted) and LightGBM's (rank.train,
#: rank.vali, rank.test converted).
GIVEN_NAMES = {"train": ("train.parquet", "rank.train.parquet"),
               "valid": ("vali.parquet", "valid.parquet", "validation.parquet", "rank.vali.parquet"),
               "test": ("test.parquet", "rank.test.parquet")}
_FOLD_DIR = re.compile(r"^fold(\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Fold:
    """One fixed split: fold ``number``'s train, validation (optional) and test Parquet files."""

    number: int
    train: Path
    valid: Path | None
    test: Path

    def parts(self) -> list[tuple[str, Path]]:
        """``(part, path)`` of the fold's files: train, valid (when there is one) and test."""
        return [(part, p) for part, p in (("train", self.train), ("valid", self.valid), ("test", self.test))
                if p is not None]


class TrialData(NamedTuple):
    """One trial's queries: training, validation (None: the trial has none) and test."""

    train: Dataset
    valid: Dataset | None
    test: Dataset


#: The :attr:`Dataset.extra` column of a trial part read without its features: each row's row in its part's feature
#: rows (:attr:`TrialParts.features`). Perturbations that take rows (``take_rows``) carry it along.
SOURCE_ROW = "source_row"
#: Rows per block when features are hashed or scored block by block.
BLOCK_ROWS = 65_536


class TrialParts(NamedTuple):
    """One trial's queries without their feature matrices: what a trial trains on without copying any feature.

    ``train``, ``valid`` (or None) and ``test`` carry their rows' numbers in ``extra[SOURCE_ROW]``, rows of the feature
    rows ``features[part]`` (the pooled matrix, or a fold file's features read by row). :func:`part_rows` gives a
    part's features by row, :func:`with_features` a part with its feature matrix.
    """

    train: Dataset
    valid: Dataset | None
    test: Dataset
    features: dict


def part_rows(parts: TrialParts, part: str, ds: Dataset | None = None):
    """The features of ``ds`` (default: the part ``part`` of ``parts``; a perturbed copy of it keeps its source rows)
    by row, without copying them (:class:`rankcli.train.MatrixRows`)."""
    ds = getattr(parts, part) if ds is None else ds
    return MatrixRows(parts.features[part], ds.extra[SOURCE_ROW])


def with_features(parts: TrialParts, part: str, ds: Dataset | None = None) -> Dataset | None:
    """``ds`` (default: the part ``part``) with its feature matrix read, as an in-memory dataset."""
    ds = getattr(parts, part) if ds is None else ds
    if ds is None:
        return None
    rows = part_rows(parts, part, ds)
    out = ds.take_rows(np.arange(ds.n_rows), ds.offsets)
    out.features = rows[np.arange(ds.n_rows)] if ds.n_rows else np.zeros((0, len(ds.feature_names)), np.float32)
    out.extra.pop(SOURCE_ROW, None)
    return out


def _hash_array(h, arr: np.ndarray) -> None:
    arr = np.ascontiguousarray(arr)
    h.update(str((arr.dtype.str, arr.shape)).encode())
    h.update(memoryview(arr.reshape(-1)).cast("B"))  # flat: a (0, n) array has no 2-D byte view


def hash_datasets(h, parts: list[Dataset], features: list | None = None) -> None:
    """Feed the offsets, labels and features of ``parts`` (dtype, shape and bytes) to the hash object ``h``; the
    features from ``features[i]`` (rows read in blocks, C order: the same bytes) when ``parts[i]`` has none."""
    for i, ds in enumerate(parts):
        _hash_array(h, ds.offsets)
        _hash_array(h, ds.labels)
        rows = ds.features if ds.features is not None else features[i]
        dtype = rows.dtype if ds.features is not None else np.dtype(np.float32)
        shape = (len(rows), len(ds.feature_names) if ds.features is None else ds.features.shape[1])
        h.update(str((dtype.str, shape)).encode())
        for at in range(0, shape[0], BLOCK_ROWS):  # a C-ordered copy of one block at a time
            block = np.ascontiguousarray(rows[at:at + BLOCK_ROWS], dtype=dtype)
            h.update(memoryview(block.reshape(-1)).cast("B"))


@dataclass
class ExperimentData:
    """The queries an experiment draws from: one pooled dataset, or fixed folds.

    Folds are read when a unit needs them, one fold at a time (a WEB30K fold holds the whole dataset), unless
    :meth:`in_memory` loaded them all (to send them to workers that cannot read the files).
    """

    pooled: Dataset | None = None
    folds: list[Fold] | None = None
    notes: list[str] = field(default_factory=list)  # what the summary must say about the data (allowed overlaps)
    _loaded: dict = field(default_factory=dict, repr=False, compare=False)
    _keep_all: bool = field(default=False, repr=False, compare=False)
    _fingerprint: str | None = field(default=None, repr=False, compare=False)

    def fold(self, number: int) -> TrialData:
        """Fold ``number``'s (train, validation or None, test) datasets."""
        from rankcli.formats.parquet import read_dataset

        if number not in self._loaded:
            fold = next((f for f in self.folds or [] if f.number == number), None)
            if fold is None:
                raise UsageError(f"no fold {number} in the data (folds: "
                                 f"{', '.join(str(f.number) for f in self.folds or [])})")
            if not self._keep_all:
                self._loaded.clear()
            train = read_dataset(fold.train)
            # validation and test features as the training features are (rankcli.dataset.feature_transform)
            want, reference = recorded(train.metadata, str(fold.train)), f"the training data {fold.train}"
            valid = conform(read_dataset(fold.valid), want, str(fold.valid), reference) if fold.valid else None
            self._loaded[number] = TrialData(train, valid, conform(read_dataset(fold.test), want, str(fold.test),
                                                                   reference))
        return self._loaded[number]

    def fold_parts(self, number: int) -> TrialParts:
        """Fold ``number``'s parts without their features (:class:`TrialParts`): labels and offsets read, features
        read by row from the files when a trial needs them (from memory for an :meth:`in_memory` copy)."""
        from rankcli.formats.feature_rows import ParquetFeatureRows
        from rankcli.formats.parquet import read_dataset

        fold = next((f for f in self.folds or [] if f.number == number), None)
        if fold is None or self._keep_all or _needs_transform(fold):  # in memory: normalised as the training data
            loaded = self.fold(number)
            return TrialParts(*(_numbered(d) for d in loaded),
                              features={part: d.features for part, d in zip(("train", "valid", "test"), loaded)
                                        if d is not None})
        parts, features = {}, {}
        for part, path in fold.parts():
            parts[part] = _numbered(read_dataset(path, features=False, docids=False))
            features[part] = ParquetFeatureRows(path, parts[part].feature_names)
        return TrialParts(parts["train"], parts.get("valid"), parts["test"], features)

    def in_memory(self) -> ExperimentData:
        """A copy holding every fold in memory (what gets shipped to workers that cannot read the files)."""
        out = ExperimentData(pooled=self.pooled, folds=self.folds, _keep_all=True, _fingerprint=self.fingerprint())
        for f in self.folds or []:
            out.fold(f.number)
        return out

    def fingerprint(self) -> str:
        """A hash of every query the experiment may use (and of the folds' layout)."""
        if self._fingerprint is None:
            h = hashlib.blake2b(digest_size=16)
            if self.pooled is not None:
                hash_datasets(h, [self.pooled])
            else:
                for f in self.folds:
                    h.update(f"fold {f.number} {'with' if f.valid else 'without'} validation".encode())
                    parts = self.fold_parts(f.number)
                    present = [part for part in ("train", "valid", "test") if getattr(parts, part) is not None]
                    hash_datasets(h, [getattr(parts, part) for part in present],
                                  [part_rows(parts, part) for part in present])
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


def _what_instead(path: Path) -> str:
    """What ``path``, named like a fold but not a directory, is: a dangling link, a link loop, a file, ..."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        if path.is_symlink():
            return f"a dangling symbolic link (to {os.readlink(path)})"
        return f"unreadable ({exc.strerror or exc})"
    kind = "a regular file" if stat.S_ISREG(st.st_mode) else "a special file (device, FIFO or socket)"
    return f"a symbolic link to {kind}" if path.is_symlink() else kind


def _fold_directories(path: Path) -> tuple[list[tuple[int, Path]], bool]:
    """``(number, directory)`` of every fold of ``path``, and whether they are ``FoldK/`` subdirectories."""
    numbered = {}
    for p in path.iterdir():
        m = _FOLD_DIR.match(p.name)
        if m and not p.is_dir():  # skipped, a Fold3 that is a dangling link left two folds to run, exit 0
            raise InputError(f"{p}: {_what_instead(p)}, not a fold directory; --folds reads the directories "
                             "Fold1/ .. FoldK/ (each with train, vali and test Parquet files): make it one or move it "
                             "away")
        if m:
            k = int(m.group(1))
            if k in numbered:
                raise InputError(f"{path}: two directories name fold {k} ({numbered[k].name}, {p.name})")
            numbered[k] = p
    has_own = _find_given(path, "train") is not None or _find_given(path, "test") is not None
    if numbered and has_own:
        raise InputError(f"{path}: holds both fold directories ({', '.join(sorted(p.name for p in numbered.values()))})"
                         " and train/test files of its own; --folds reads one or the other, move one away")
    if 0 in numbered:  # otherwise Fold0 would be skipped without a word: the folds read are range(1, K + 1)
        raise InputError(f"{numbered[0]}: folds are numbered from 1 (Fold1/ .. FoldK/), got {numbered[0].name}; "
                         "rename the fold directories to start at Fold1")
    if not numbered:
        return [(1, path)], False
    wanted = list(range(1, max(numbered) + 1))
    missing = [k for k in wanted if k not in numbered]
    if missing:
        raise InputError(f"{path}: fold directories must be numbered 1..K without gaps, got "
                         f"{', '.join(numbered[k].name for k in sorted(numbered))} (Fold{missing[0]} missing)")
    return [(k, numbered[k]) for k in wanted], True


def _needs_transform(fold: Fold) -> bool:
    """Whether a part of ``fold`` has raw features where its training data is normalised (then the fold is read into
    memory and normalised there, :func:`rankcli.dataset.feature_transform.conform`, rather than binned from the files
    by row)."""
    from rankcli.formats.parquet import read_metadata

    want = recorded(read_metadata(fold.train), str(fold.train))
    return any(pending(recorded(read_metadata(p), str(p)), want, str(p), f"the training data {fold.train}") is not None
               for _part, p in fold.parts())


def _check_fold_files(folds: list[Fold]) -> None:
    """Every part of every fold has ``qid`` and ``label``, rows, the feature columns of the first file, and features
    that can be brought to the fold's training transform (:func:`rankcli.dataset.feature_transform.pending`)."""
    from rankcli.formats.parquet import column_names, feature_columns, read_metadata, require_columns, row_group_rows

    first_path, first_features = None, None
    for f in folds:
        want = recorded(read_metadata(f.train), str(f.train))
        for _part, p in f.parts():
            pending(recorded(read_metadata(p), str(p)), want, str(p), f"the training data {f.train}")
            names = column_names(p)
            require_columns(p, names, ["qid", "label"])
            if int(np.sum(row_group_rows(p))) == 0:  # an empty test file gave "0 test queries", n/a everywhere, exit 0
                raise InputError(f"{p}: no rows; every part of every fold needs queries")
            feats = feature_columns(names)
            if first_path is None:
                first_path, first_features = p, feats
            elif feats != first_features:
                raise InputError(f"{p}: {_describe_features(feats)}, but {first_path} has "
                                 f"{_describe_features(first_features)}; every file of every fold needs the same "
                                 "feature columns (convert them in one run, or pass convert --num-features N)")


def find_folds(path: Path) -> list[Fold]:
    """The folds of the directory ``path``: its ``Fold1/ .. FoldK/`` subdirectories, or the directory itself as one
    fold.

    Each fold needs ``train.parquet`` and ``test.parquet``, and either every fold has a validation file
    (``vali.parquet``; also ``valid``/``validation``) or none has. Every file of every fold must have the same feature
    columns (a model trained on one fold's features is tested on that fold's test file). Problems are
    :class:`InputError` (exit 3) naming the fold and the file.
    """
    dirs, numbered = _fold_directories(path)
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
    _check_fold_files(folds)
    return folds


def load_data(path: Path | str, folds: bool = False) -> ExperimentData:
    """Read ``DATA`` at ``path``: a Parquet file (pooled queries) or a directory.

    A directory's ``*.parquet`` files are pooled (concatenated in name order), unless ``folds``: then it holds
    ``Fold1/ .. FoldK/`` or is one fold (see :func:`find_folds`); fold files are read when a unit needs them.
    """
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
        parts = [_read_pooled(p) for p in files]
        # every file's features as the first file's are (rankcli.dataset.feature_transform): raw files get its transform
        want = recorded(parts[0].metadata, str(files[0]))
        parts = [conform(ds, want, str(p), f"the first file {files[0]}") for ds, p in zip(parts, files)]
        return ExperimentData(pooled=concat_datasets(parts))
    return ExperimentData(pooled=_read_pooled(path))


def _read_pooled(path: Path) -> Dataset:
    """A file of pooled DATA, its labels checked here, where a bad one can be named by file and row (a unit sees
    only its trial's rows)."""
    from rankcli.formats.parquet import read_dataset

    ds = read_dataset(path)
    check_file_labels_finite(path, ds.labels)
    return ds


def _numbered(ds: Dataset | None) -> Dataset | None:
    """``ds`` without its features, its rows numbered in ``extra[SOURCE_ROW]``."""
    if ds is None:
        return None
    return Dataset(qids=ds.qids, labels=ds.labels, feature_names=list(ds.feature_names), offsets=ds.offsets,
                   metadata=dict(ds.metadata), extra={**ds.extra, SOURCE_ROW: np.arange(ds.n_rows, dtype=np.int64)})


def trial_parts(data: ExperimentData, config: ExperimentConfig, trial: int) -> TrialParts:
    """Trial ``trial``'s parts of ``data`` without copying a feature (:class:`TrialParts`): the random query-level
    split of :func:`trial_split`, or fold ``trial``'s files."""
    if data.folds is not None:
        return data.fold_parts(trial)
    ds = data.pooled
    train_q, valid_q, test_q = split_queries(ds.n_queries, config.split, trial_rng(config.seed, trial))
    index = Dataset(qids=ds.qids, labels=ds.labels, feature_names=list(ds.feature_names), offsets=ds.offsets,
                    extra={**ds.extra, SOURCE_ROW: np.arange(ds.n_rows, dtype=np.int64)})
    valid = index.take_queries(valid_q) if valid_q.shape[0] else None
    features = {part: ds.features for part in ("train", "valid", "test")}
    return TrialParts(index.take_queries(train_q), valid, index.take_queries(test_q), features)


def trial_split(data: ExperimentData, config: ExperimentConfig, trial: int) -> TrialData:
    """Trial ``trial``'s (train, validation, test) of ``data``, with their feature matrices: a random query-level split
    (``config.split``, seeded by ``config.seed`` and the trial), or fold ``trial``'s files."""
    if data.folds is not None:
        return data.fold(trial)
    parts = trial_parts(data, config, trial)
    return TrialData(*(with_features(parts, part) for part in ("train", "valid", "test")))


def _fold_labels(folds: list[Fold]):
    """``(part, path, labels)`` of every file of ``folds``, one file at a time (the ``label`` column alone)."""
    from rankcli.formats.arrow import column_to_numpy
    from rankcli.formats.parquet import read_table

    for f in folds:
        for part, p in f.parts():
            yield part, p, column_to_numpy(read_table(p, ["label"]).column("label")).astype(np.float64)


def check_data(data: ExperimentData, config: ExperimentConfig) -> None:
    """:class:`InputError` for ``data`` the experiment ``config`` cannot run on: fewer than 3 queries to split; a
    label that is not finite or that a loss cannot train on (named by file and row); folds whose test queries overlap
    (unless ``config.allow_overlap``: then ``data.notes`` say how); or (click sweeps) training or validation labels
    that are not integer grades 0..4."""
    if data.pooled is not None:
        ds = data.pooled
        if ds.n_queries < 3:
            raise InputError(f"need at least 3 queries to split into train/validation/test, got {ds.n_queries}")
        sources = [(None, None, ds.labels)]  # finite: checked file by file as they were read
    else:
        sources = _fold_labels(data.folds)
    option = "--click-noise" if config.click_noise else "--position-bias" if config.position_bias else None
    for part, path, labels in sources:
        if path is not None:
            check_file_labels_finite(path, labels)
        if part == "train":  # a fold's training file; a pooled query is in some trial's training part, unknown here
            check_training_labels(path, labels, config.losses)
        if option is None or part == "test":
            continue
        # Training and validation get clicks; their labels are the grades the click model needs.
        bad = labels[(labels != np.round(labels)) | (labels < 0) | (labels > 4)]
        if bad.shape[0]:
            raise InputError(f"{str(path) + ': ' if path else ''}{option} needs integer grades 0..4 (click "
                             f"probabilities per grade), got label {bad[0]:g}")
    if data.folds is not None:
        data.notes = check_overlaps(data.folds, config.allow_overlap)
