"""``experiment --fuse METHOD`` checked: the fusion methods an experiment can run on its own."""

from __future__ import annotations

from rankcli.errors import UsageError


def fuse_method(name: str, n_losses: int) -> str:
    """The canonical name of the method ``name``; one that learns from judgments, or has a parameter without a
    default, or fewer than two losses to fuse, is a :class:`UsageError`."""
    from rankcli.core.fusion import method, resolve_params

    m = method(name)
    if m.trained:
        raise UsageError(f"--fuse {name}: {m.name} learns from judged training queries; experiment --fuse takes a "
                         "method that needs none (rrf, sum, mnz, bordafuse, ...)")
    if n_losses < 2:
        raise UsageError(f"--fuse fuses the runs of two losses or more, got {n_losses}")
    try:
        resolve_params(m, {}, n_losses)
    except UsageError as exc:
        raise UsageError(f"--fuse {name}: {exc}; experiment --fuse runs a method with its default parameters (rrf's "
                         "k = 60, equal weights)") from None
    return m.name
