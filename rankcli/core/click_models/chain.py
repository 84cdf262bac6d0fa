"""The computations DBN and CCM share: a cascade whose user, after each result, goes on or leaves. Pure numpy.

Both models (Chuklin, Markov and de Rijke 2015, sections 3.7-3.8) are one chain of examinations ``E_1 = 1, E_2,
...``: the user examines rank ``k``, clicks it if it is attractive (``a``), and then

- after a skip goes on to rank ``k + 1`` with probability ``ck``;
- after a click is satisfied with probability ``q``, and goes on with ``cs`` if satisfied, ``cu`` if not.

DBN (Chapelle and Zhang, WWW 2009): ``q = sigma`` (satisfaction per item), ``ck = cu = gamma``, ``cs = 0``. CCM (Guo
et al., WWW 2009): ``q = alpha`` (the attractiveness, read as relevance), ``ck = tau_1``, ``cu = tau_2``,
``cs = tau_3``. Every quantity below is a recursion over ranks on ``(m,)`` vectors of sessions.

The E-step's posteriors (:func:`posteriors`), exact: with ``eps_k = P(E_k = 1 | C_<k)`` (the forward pass),
``X_k = P(C_>=k | E_k = 1)`` (some click at or below ``k``, the backward ``car``) and ``B_k = P(C_>=k | E_k = 1)``
(the observed clicks at or below ``k``, a backward pass), the joint ``P(E_k, S_k, E_k+1 | C)`` of every cell is a
product of a forward term, the cell's transition and a backward term, normalised over the cell's 8 states (PyClick's
``_get_continuation_factor``). A skip's attractiveness is ``P(A_k = 1 | C) = (1 - eps_k) a / (1 - eps_k X_k)`` below
the last click (0 above it, where the user certainly examined it); a click's satisfaction is the normalised joint.

``e_step="pyclick"`` reproduces PyClick 98e7e46 instead (docs/clicks.md says why it is not the default): its tail
likelihood ``P(C_>k | E_k+1 = 1)`` takes the parameters of ranks ``0, 1, ...`` for the clicks of ranks ``k + 1,
k + 2, ...`` (reported at github.com/markovi/PyClick/issues/13); a session without a click counts as if its last
click were below the list (so no skip of it contributes to the attractiveness, and its user never leaves); an
unexamined skip keeps a factor ``1 - a``; the attractiveness uses the unconditional ``P(E_k = 1)``; and CCM's
satisfaction is ``a / (1 - P(continue after a click) X_k+1)`` at the last click, 0 at the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.click_models.sessions import Block


@dataclass
class Chain:
    """The per-cell parameters of a chain, each an ``(L, m)`` array or a value broadcastable to it (a scalar for a
    global parameter: a scalar stays one, which spares whole-block arithmetic)."""

    a: np.ndarray  # attractiveness
    q: np.ndarray  # satisfaction after a click
    ck: np.ndarray | float  # goes on after a skip
    cu: np.ndarray | float  # goes on after an unsatisfying click
    cs: np.ndarray | float  # goes on after a satisfying click
    shape: tuple[int, int] = (0, 0)

    @classmethod
    def of(cls, shape, a, q, ck, cu, cs) -> Chain:
        """A chain from values broadcastable to ``shape`` (``a`` and ``q`` made full arrays)."""
        full = [np.broadcast_to(np.asarray(v, dtype=np.float64), shape) for v in (a, q)]
        return cls(*full, *(np.asarray(v, dtype=np.float64) for v in (ck, cu, cs)), shape=tuple(shape))

    def full(self, name: str) -> np.ndarray:
        """One parameter as an ``(L, m)`` array (a view for a broadcast one)."""
        return np.broadcast_to(getattr(self, name), self.shape)


def at(v, k: int):
    """Row ``k`` of a value broadcastable to ``(L, m)``: a scalar or one row is the same for every rank."""
    return v if np.ndim(v) < 2 else v[k] if v.shape[0] > 1 else v[0]


def forward(b: Block, ch: Chain) -> tuple[np.ndarray, np.ndarray]:
    """``(eps, cond)``: ``P(E_k = 1 | C_<k)`` and ``P(C_k = c_k | C_<k)`` of every cell."""
    L, m = b.L, b.m
    eps, cond = np.empty((L, m)), np.empty((L, m))
    e = np.ones(m)
    for k in range(L):
        eps[k] = e
        clicked = b.click[k]
        ak = ch.a[k]
        ae = ak * e
        np.subtract(1.0, ae, out=cond[k])
        np.copyto(cond[k], ae, where=clicked)
        after_click = at(ch.cu, k) * (1.0 - ch.q[k]) + at(ch.cs, k) * ch.q[k]
        e = np.where(clicked, after_click, at(ch.ck, k) * (1.0 - ak) * e / cond[k])
    return eps, cond


def unconditional(ch: Chain) -> np.ndarray:
    """``P(E_k = 1)`` of every cell, no click observed."""
    step = (1.0 - ch.a) * ch.ck + ch.a * ((1.0 - ch.q) * ch.cu + ch.q * ch.cs)
    exam = np.ones(ch.shape)
    if ch.shape[0] > 1:
        exam[1:] = np.cumprod(step[:-1], axis=0)
    return exam


def click_after(ch: Chain) -> np.ndarray:
    """``(L + 1, m)``: ``X_k = P(some click at or below k | E_k = 1)``, ``X_L = 0``."""
    L, m = ch.shape
    x = np.zeros((L + 1, m))
    for k in range(L - 1, -1, -1):
        x[k] = ch.a[k] + (1.0 - ch.a[k]) * at(ch.ck, k) * x[k + 1]
    return x


def tail(b: Block, ch: Chain) -> np.ndarray:
    """``(L + 1, m)``: ``B_k = P(C_>=k as observed | E_k = 1)``, ``B_L = 1``."""
    L, m = b.L, b.m
    out = np.ones((L + 1, m))
    none_after = b.none_after
    for k in range(L - 1, -1, -1):
        z, nxt = none_after[k], out[k + 1]
        a, q = ch.a[k], ch.q[k]
        cu, cs, ck = at(ch.cu, k), at(ch.cs, k), at(ch.ck, k)
        unsatisfied = (1.0 - q) * (cu * nxt + (1.0 - cu) * z)
        clicked = a * (unsatisfied + q * (cs * nxt + (1.0 - cs) * z))
        skipped = (1.0 - a) * (ck * nxt + (1.0 - ck) * z)
        out[k] = np.where(b.click[k], clicked, skipped)
    return out


def tail_pyclick(b: Block, ch: Chain) -> np.ndarray:
    """``(L, m)``: PyClick's ``P(C_>k | E_k+1 = 1)`` for every rank ``k``: the forward pass from ``k + 1`` with the
    parameters of ranks ``0, 1, ...`` (1 at the last rank)."""
    L, m = b.L, b.m
    out = np.ones((L, m))
    for t in range(1, L):
        e, prod = np.ones(m), np.ones(m)
        for j in range(t, L):
            i = j - t
            clicked = b.click[j]
            ae = ch.a[i] * e
            p = np.where(clicked, ae, 1.0 - ae)
            after_click = at(ch.cu, i) * (1.0 - ch.q[i]) + at(ch.cs, i) * ch.q[i]
            e = np.where(clicked, after_click, at(ch.ck, i) * (1.0 - ch.a[i]) * e / p)
            prod *= p
        out[t - 1] = prod
    return out


def posteriors(b: Block, ch: Chain, e_step: str = "exact", satisfied_goes_on: bool = True) -> dict[str, np.ndarray]:
    """The E-step of a chain model on one block (:func:`_posteriors`). In a session with hundreds of clicks the
    probability of the clicks below a rank underflows to 0 and some posteriors are 0/0: they come out NaN, silently
    (numpy's warnings off), and :func:`rankcli.core.click_models.em.fit` refuses the log."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        return _posteriors(b, ch, e_step, satisfied_goes_on)


def _posteriors(b: Block, ch: Chain, e_step: str, satisfied_goes_on: bool) -> dict[str, np.ndarray]:
    """The E-step of a chain model on one block.

    ``satisfied_goes_on``: whether a satisfied user may go on (CCM's ``tau_3``; DBN's user leaves), i.e. whether
    ``sat_num`` and ``sat_den`` are wanted.

    Returns
    -------
    dict
        ``attr``: ``P(A_k = 1 | C)`` per cell; ``sat``: ``P(S_k = 1 | C)`` per cell (0 for a skip);
        ``go_num``, ``go_den``: ``P(E_k = 1, S_k = 0, E_k+1 = 1 | C)`` and ``P(E_k = 1, S_k = 0 | C)``, the
        continuation's statistics after a skip or an unsatisfying click (``c`` tells which);
        ``sat_num``, ``sat_den``: the same after a satisfying click; ``ll``: each session's log-likelihood ``(m,)``.
    """
    eps, cond = forward(b, ch)
    x = click_after(ch)
    c, z = b.click, b.none_after
    a, q = ch.a, ch.q
    same = np.ndim(ch.cu) == 0 and np.ndim(ch.ck) == 0 and float(ch.cu) == float(ch.ck)
    cont = ch.cu if same else np.where(c, ch.full("cu"), ch.full("ck"))
    go = np.where(c, a * (1.0 - q), 1.0 - a)  # P(C_k = c_k, S_k = 0 | E_k = 1)
    if e_step == "pyclick":
        has_click = (b.last >= 0)[None, :]
        t1, t0 = tail_pyclick(b, ch), z & has_click
        stay = (cont * t1 + (1.0 - cont) * t0) * go
        kept = (ch.cs * t1 + (1.0 - ch.cs) * t0) * np.where(c, a * q, 0.0)
        norm = eps * (stay + kept) + (1.0 - eps) * (t0 & ~c) * (1.0 - a)
        seen = unconditional(ch)
        attr = np.where(c, 1.0, (1.0 - seen) * a / (1.0 - seen * x[:-1]) * t0)
        after_click = (1.0 - q) * ch.cu + q * ch.cs
        sat = np.where(c & (b.rank == b.last[None, :]), q / (1.0 - after_click * x[1:]), 0.0)
    else:
        tails = tail(b, ch)
        t1, t0 = tails[1:], z
        norm = eps * tails[:-1]  # P(C_>=k | C_<k): the normaliser of every state
        np.add(norm, 1.0 - eps, out=norm, where=z & ~c)
        attr = np.where(c, 1.0, (1.0 - eps) * a / (1.0 - eps * x[:-1]) * z)
        sat = None
    inv = eps / norm
    gi = go * inv
    go_num = gi * cont * t1
    go_den = go_num + gi * (1.0 - cont) * t0
    out = {"attr": attr, "go_num": go_num, "go_den": go_den, "ll": np.log(cond).sum(axis=0)}
    if sat is None or satisfied_goes_on:
        satisfying = np.where(c, a * q, 0.0) * inv
        sat_num = satisfying * ch.cs * t1 if satisfied_goes_on else 0.0
        sat_den = sat_num + satisfying * (1.0 - ch.cs) * t0
        out.update(sat_num=sat_num, sat_den=sat_den)
        if sat is None:
            sat = sat_den
    out["sat"] = sat
    return out


def probabilities(b: Block, ch: Chain) -> tuple[np.ndarray, np.ndarray]:
    """``(conditional, full)`` click probabilities of a chain model (see :meth:`ClickModel.probabilities`)."""
    _, cond = forward(b, ch)
    return cond, ch.a * unconditional(ch)


def simulate(ch: Chain, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One draw of a chain model for ``m`` lists: ``(clicks, examined)``, each ``(L, m)`` bool."""
    L, m = ch.shape
    u = rng.random((3, L, m))
    clicks, examined = np.zeros((L, m), bool), np.zeros((L, m), bool)
    e = np.ones(m, bool)
    for k in range(L):
        examined[k] = e
        clicks[k] = e & (u[0, k] < ch.a[k])
        satisfied = clicks[k] & (u[1, k] < ch.q[k])
        go_on = np.where(clicks[k], np.where(satisfied, at(ch.cs, k), at(ch.cu, k)), at(ch.ck, k))
        e = e & (u[2, k] < go_on)
    return clicks, examined
