"""The settings plan of an experiment: its settings (the baseline, every sweep level, the click-model setting),
the loss variants each trains (``+ips``, ``+control``, the fused ranking), the pairs each tests, and its trials."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from rankcli.core.ips import IPS_LOSSES
from rankcli.experiment.config import (
    CONTROL_SUFFIX,
    DEFAULT_TRIALS,
    IPS_SUFFIX,
    ExperimentConfig,
    format_level,
)


@dataclass(frozen=True)
class Setting:
    """One condition of an experiment: the baseline or one level of a robustness sweep."""

    name: str                    # "baseline" | "augment-negatives=0.2" | "label-noise=0.3" | "click-noise=0.1"
    kind: str                    # "baseline" | one of SWEEP_KINDS
    level: float | None = None


BASELINE = Setting("baseline", "baseline", None)
#: The setting whose training and validation labels are clicks simulated from ``ExperimentConfig.click_model``.
CLICK_MODEL = Setting("click-model", "click-model", None)


class SweepLevel(NamedTuple):
    """One level of a sweep and the setting that runs it (the baseline for a level that changes nothing)."""

    level: float
    setting: Setting


def setting_for(kind: str, level: float) -> Setting:
    """The setting of level ``level`` of the sweep ``kind`` (one of :data:`SWEEP_KINDS`); levels that change nothing
    (no augmentation, no label noise) are the baseline."""
    if kind in ("augment-negatives", "label-noise") and level == 0:
        return BASELINE
    return Setting(f"{kind}={format_level(level)}", kind, float(level))


def plan_settings(config: ExperimentConfig) -> tuple[list[Setting], dict[str, list[SweepLevel]]]:
    """The settings of ``config`` to run (the baseline first, then every sweep level) and, per sweep, its levels'
    settings."""
    settings = [BASELINE]
    sweeps: dict[str, list[SweepLevel]] = {}
    for kind, levels in (("augment-negatives", config.augment_negatives), ("label-noise", config.label_noise),
                         ("click-noise", config.click_noise), ("position-bias", config.position_bias)):
        if not levels:
            continue
        rows = []
        for level in levels:
            s = setting_for(kind, float(level))
            rows.append(SweepLevel(float(level), s))
            if s not in settings:
                settings.append(s)
        sweeps[kind] = rows
    if config.click_model is not None:
        settings.append(CLICK_MODEL)
    return settings, sweeps


def ips_capable(loss: str) -> bool:
    """Whether ``loss`` has an IPS variant (the losses whose pooled labels carry the IPS relevance linearly)."""
    return loss in IPS_LOSSES


class Variant(NamedTuple):
    """What a name of the position-bias sweep trains: ``loss``, with IPS or naive, on the click log or (``control``)
    on the randomised log."""

    loss: str
    ips: bool
    control: bool


def parse_variant(name: str) -> Variant:
    """``xendcg`` | ``xendcg+ips`` | ``xendcg+control`` | ``xendcg+ips+control`` -> :class:`Variant`."""
    control = name.endswith(CONTROL_SUFFIX)
    base = name[: -len(CONTROL_SUFFIX)] if control else name
    ips = base.endswith(IPS_SUFFIX)
    return Variant(base[: -len(IPS_SUFFIX)] if ips else base, ips, control)


def fused_name(config: ExperimentConfig) -> str | None:
    """The name the fused run of ``config.fuse`` is reported under (``fused-rrf``), or None without fusion."""
    return None if config.fuse is None else f"fused-{config.fuse}"


def setting_losses(config: ExperimentConfig, setting: Setting) -> list[str]:
    """The names reported in ``setting``: :func:`trained_losses`, then with ``--fuse`` their fused run (not under
    the position-bias sweep)."""
    names = trained_losses(config, setting)
    return names + [fused_name(config)] if config.fuse and setting.kind != "position-bias" else names


def trained_losses(config: ExperimentConfig, setting: Setting) -> list[str]:
    """The names trained in ``setting``: the losses of ``config``, and under the position-bias sweep each loss's naive
    variant (its own name) followed by its IPS variant (``<loss>+ips``) and the two controls on the randomised log
    (``<loss>+control``, ``<loss>+ips+control``) where it has an IPS variant."""
    if setting.kind != "position-bias":
        return list(config.losses)
    return [name for loss in config.losses
            for name in ([loss, loss + IPS_SUFFIX, loss + CONTROL_SUFFIX, loss + IPS_SUFFIX + CONTROL_SUFFIX]
                         if ips_capable(loss) else [loss])]


def all_loss_names(config: ExperimentConfig) -> list[str]:
    """Every name a unit of the experiment ``config`` may carry, in report order."""
    names = trained_losses(config, Setting("position-bias=0", "position-bias", 0.0)) if config.position_bias else []
    return (names or list(config.losses)) + ([fused_name(config)] if config.fuse else [])


def setting_pairs(config: ExperimentConfig, setting: Setting) -> list[tuple[str, str]] | None:
    """The pairs of ``config``'s losses tested in ``setting``: every two losses (``None``), or under the position-bias
    sweep each loss's naive against its IPS variant, then the same on the randomised log (the controls)."""
    if setting.kind != "position-bias":
        return None
    capable = [loss for loss in config.losses if ips_capable(loss)]
    return ([(loss, loss + IPS_SUFFIX) for loss in capable]
            + [(loss + CONTROL_SUFFIX, loss + IPS_SUFFIX + CONTROL_SUFFIX) for loss in capable])


def trial_ids(config: ExperimentConfig) -> list[int]:
    """The trials of the experiment ``config``: ``0 .. trials - 1`` (random splits) or the fold numbers ``1 .. K``
    (folds)."""
    trials = config.trials if config.trials is not None else DEFAULT_TRIALS
    return list(range(1, trials + 1)) if config.folds else list(range(trials))


def primary_metric(config: ExperimentConfig) -> str:
    """The metric of the sweep tables and plots of ``config``: ``select_by`` when it is a test metric, else the first
    test metric."""
    select_by = config.train.select_by
    return select_by if select_by in config.metrics else config.metrics[0]
