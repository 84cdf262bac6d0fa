"""The seed streams of an experiment's units (and of ``rankcli split``'s random split): everything random in a unit
comes from (seed, stream, trial[, setting]) through numpy's SeedSequence, never from the loss, the order of execution
or the number of processes. Every split of every experiment directory on disk depends on these bits: change them and
no directory resumes."""

from __future__ import annotations

import zlib

import numpy as np


def unit_rng(seed: int, *key: int) -> np.random.Generator:
    """The generator of the stream ``key`` (0: splits, 1: perturbations, 3: the logging ranker's queries) of the
    experiment seed ``seed``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _setting_key(setting: str) -> int:
    return zlib.crc32(setting.encode())


def trial_rng(seed: int, trial: int) -> np.random.Generator:
    """The generator of trial ``trial``'s split under the experiment seed ``seed`` (shared by every setting and
    loss)."""
    return unit_rng(seed, 0, trial)


def perturbation_rng(seed: int, trial: int, setting: str) -> np.random.Generator:
    """The generator of the perturbation of ``setting`` in trial ``trial`` under the experiment seed ``seed`` (shared
    by its losses)."""
    return unit_rng(seed, 1, trial, _setting_key(setting))


def model_seed(seed: int, trial: int, setting: str) -> int:
    """LightGBM's seed for every loss of a (trial, setting)."""
    ss = np.random.SeedSequence(seed, spawn_key=(2, trial, _setting_key(setting)))
    return int(ss.generate_state(1, dtype=np.uint32)[0] % (2**31 - 1))
