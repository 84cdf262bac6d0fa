"""rankcli.core.seeds: the seed streams of an experiment's units, which every experiment directory on disk
depends on."""

import numpy as np

from rankcli.core import seeds


def test_seeds_depend_on_trial_and_setting_only():
    assert seeds.model_seed(0, 1, "baseline") == seeds.model_seed(0, 1, "baseline")
    assert seeds.model_seed(0, 1, "baseline") != seeds.model_seed(0, 2, "baseline")
    assert seeds.model_seed(0, 1, "baseline") != seeds.model_seed(0, 1, "label-noise=0.1")
    a = seeds.perturbation_rng(5, 2, "label-noise=0.1").random(3)
    b = seeds.perturbation_rng(5, 2, "label-noise=0.1").random(3)
    assert np.array_equal(a, b)


def test_the_streams_keep_their_bits():
    """The values the streams gave when experiment directories were first written (rankcli 270f3ad): a change here
    re-splits every trial and re-seeds every model, and no existing directory resumes."""
    assert seeds.trial_rng(3, 1).integers(0, 2**62, 2).tolist() == [1786252428570043347, 4523429697206559420]
    rng = seeds.perturbation_rng(3, 1, "label-noise=0.3")
    assert rng.integers(0, 2**62, 2).tolist() == [1982061176962699729, 3407206088590396552]
    assert seeds.model_seed(3, 1, "label-noise=0.3") == 92946020
    assert seeds.model_seed(0, 0, "baseline") == 153669369
    assert seeds.unit_rng(7, 3, 2).integers(0, 2**62, 1).tolist() == [3689119138625991713]
