"""Penalised iteratively reweighted least squares (PIRLS) and the Laplace deviance.

Stage 3 of a native GLMM fit (after the model frame and lme4's ``theta``
layout): for given ``theta`` (and ``beta``, unless it is updated too) find the
conditional mode ``u`` of the spherical random effects, then evaluate lme4's
Laplace deviance there (Bates et al. 2015, sec. 5; lme4 1.1-31 ``glmerLaplace``)::

    d(theta, beta) = -2 log p(y | u) + ||u||^2 + log |L|^2

``L L' = Lambda' Z' W Z Lambda + I``, ``W`` the GLM working weights at the
mode; ``-2 log p(y | u)`` is R's ``family()$aic`` term (the conditional
log-likelihood, not the deviance residuals), so ``-d / 2`` is lme4's
``logLik``.

Linear algebra: the weighted blocked factorisation of
:mod:`nlpower.mixed.blocked` (block 1 block diagonal, the rest -- other
blocks, and ``X`` when ``beta`` is updated inside PIRLS -- dense); the
iteration: the Newton loop with step halving of :mod:`nlpower.mixed.modes`.
This module is the GLM response's side: working weights and responses (the
family's :meth:`~nlpower.lmm.family._GLMResponse.working`, which holds every
link's closed forms), the unit terms of ``-2 log p(y | u)`` and PIRLS's
convergence rule.

What depends on ``theta`` (``Z Lambda`` per slot and the cross-product
multipliers) is a value, :class:`AtTheta`, that :meth:`Pirls.at` builds (a
memo keyed by the bytes of ``theta``: nothing a previous fit did changes it)
and every :class:`Mode` carries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..lmm.family import Family
from ..mixed.blocked import BlockedLayout, Factor, ThetaProducts, factor
from ..mixed.modes import Direction, newton_modes
from ..mixed.native.blocks import GroupBlock
from .response import cond_m2loglik

#: PIRLS stops when the penalised deviance changes by less than this (relative)
PIRLS_TOL = 1e-12
#: ... and the largest change of u (and beta) is below this (relative); with a canonical
#: link PIRLS is Newton's method, so a step of 1e-6 leaves an error of order 1e-12
STEP_TOL = 1e-9
STEP_TOL_CANONICAL = 1e-6
STEP_TOL_STAGE1 = 1e-4
PIRLS_MAXIT = 200
#: step halvings before PIRLS gives up on a step
MAX_HALVINGS = 30


@dataclass(frozen=True, eq=False)
class AtTheta:
    """``Z Lambda`` per slot at one ``theta`` and the cross-product multipliers (never changed).

    ``zl``: ``(n, s)``; ``tp``: :meth:`BlockedLayout.products` of it.
    """

    theta: np.ndarray
    layout: BlockedLayout
    zl: np.ndarray
    tp: ThetaProducts
    _mxz: list[np.ndarray] = field(default_factory=list, repr=False)

    def mxz(self, X: np.ndarray) -> np.ndarray:
        """The ``X``-``Z`` multipliers (``beta`` in PIRLS): built on first use, a pure memo."""
        if not self._mxz:
            self._mxz.append(self.layout.x_products(X, self.zl))
        return self._mxz[0]

    def zu(self, u: np.ndarray) -> np.ndarray:
        """``Z Lambda u``."""
        return self.layout.zu(self.zl, u)

    def ztv(self, v: np.ndarray) -> np.ndarray:
        """``Lambda' Z' v``."""
        return self.layout.ztv(self.zl, v)


@dataclass(eq=False)
class Mode:
    """The result of one PIRLS run (``u`` and, when updated, ``beta``)."""

    u: np.ndarray
    beta: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    ldL2: float            # log |L|^2 (random-effects part)
    pdev: float            # unit terms of -2 log p(y | u) + ||u||^2
    deviance: float        # the Laplace deviance
    ok: bool
    iterations: int
    factor: Factor | None  # the factor of M at the mode (None: it failed)
    w: np.ndarray          # working weights at the mode
    at: AtTheta            # theta's products the mode was found with


class Pirls:
    """PIRLS on a fixed structure; the response, weights and offset set once.

    Parameters
    ----------
    X : (n, p) fixed-effects model matrix.
    blocks : grouping blocks (:func:`nlpower.mixed.native.blocks.group_blocks`), largest first.
    n_theta : length of ``theta``.
    family : Binomial or Poisson.
    y, wt, offset : response (proportions for the binomial), prior weights, offset.
    """

    def __init__(self, X: np.ndarray, blocks: list[GroupBlock], n_theta: int, family: Family,
                 y: np.ndarray, wt: np.ndarray, offset: np.ndarray):
        self.X = X
        self.n, self.p = X.shape
        self.blocks = blocks
        self.n_theta = n_theta
        self.family = family
        self.link = family.link
        fam: Any = family
        self._step_tol = STEP_TOL_CANONICAL if fam.canonical else STEP_TOL
        #: the Laplace approximation's weights at the mode: PIRLS's expected (Fisher) ones, as
        #: lme4, or the observed information, as glmmTMB (differ for non-canonical links only)
        self.observed = False
        self.set_response(y, wt, offset)
        lay = BlockedLayout([b.codes for b in blocks], [b.q for b in blocks],
                            [b.m for b in blocks], self.p, designs=[b.Z for b in blocks])
        lay.attach_native(blocks, X)       # the Gaussian fitter's strategies, where the rule says
        self.layout = lay
        self.m1, self.q1, self.n1, self.qr, self.q = lay.m1, lay.q1, lay.n1, lay.qr, lay.q
        self.cols1, self.colsr, self.slots = lay.cols1, lay.colsr, lay.slots
        self._memo: tuple[bytes, AtTheta] | None = None

    # -- per response / per theta ------------------------------------------------
    def set_response(self, y: np.ndarray, wt: np.ndarray, offset: np.ndarray) -> None:
        self.y, self.wt, self.offset = y, wt, offset
        # -2 log p(y | mu) minus the sum of the unit terms does not depend on mu: once per response
        mu0 = self.family.mu_start(y, wt)   # type: ignore[attr-defined]
        eta0 = self.link.linkfun(mu0)
        self._const = cond_m2loglik(self.family, y, mu0, wt) - float(np.sum(self.working(eta0)[2]))
        #: -2 log p(y | mu = y), the saturated model (lme4's nAGQ > 1 deviance leaves it out)
        self.saturated = cond_m2loglik(self.family, y, y, wt)
        #: PIRLS takes Newton steps where the family has an observed information (its
        #: expected one, Fisher scoring, converges only linearly with a non-canonical link)
        fam: Any = self.family
        self._newton = not fam.canonical and fam.observed_weights(y, mu0, eta0, wt) is not None

    def set_family(self, family: Family) -> None:
        """Swap the family for one with the same link (e.g. another negative binomial ``theta``)."""
        self.family = family
        self.set_response(self.y, self.wt, self.offset)

    def at(self, theta: np.ndarray) -> AtTheta:
        """``Z Lambda`` per slot and the cross-product multipliers at ``theta`` (a memo of the
        last ``theta``, keyed by its bytes: the value is the same whatever came before)."""
        th = np.ascontiguousarray(theta, dtype=float)
        key = th.tobytes()
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        zl = np.concatenate([b.Z @ b.lam(th) for b in self.blocks], axis=1)
        at = AtTheta(th.copy(), self.layout, zl, self.layout.products(zl, th))
        self._memo = (key, at)
        return at

    # -- pieces -----------------------------------------------------------------
    def working(self, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``mu``, the working weights and the unit terms of ``-2 log p(y | mu)`` at ``eta``
        (the family's :meth:`~nlpower.lmm.family._GLMResponse.working`)."""
        return self.family.working(self.y, self.wt, eta)   # type: ignore[attr-defined, no-any-return]

    def factor(self, at: AtTheta, w: np.ndarray, with_x: bool) -> Factor:
        """Factor ``Lambda'Z'WZLambda + I`` (and ``X``) for weights ``w`` at ``at``'s ``theta``."""
        if not with_x:
            return factor(self.layout, at.tp, w)
        if at.tp.theta is not None:        # the native strategy forms X's products itself
            return factor(self.layout, at.tp, w, self.X)
        return factor(self.layout, at.tp, w, self.X, at.mxz(self.X))

    # -- PIRLS ------------------------------------------------------------------
    def _evaluate(self, at: AtTheta, x: np.ndarray, fixed: np.ndarray, update_beta: bool
                  ) -> tuple[float, tuple[np.ndarray, ...]]:
        """The penalised deviance at ``x = u`` (or ``(u, beta)``) and the state there."""
        uc = x[:self.q]
        fx = self.X @ x[self.q:] + self.offset if update_beta else fixed
        eta = fx + at.zu(uc)
        mu, w, unit = self.working(eta)
        return float(unit.sum()) + float(uc @ uc), (eta, mu, w, fx)

    def _trial(self, at: AtTheta, x: np.ndarray, fixed: np.ndarray, update_beta: bool
               ) -> tuple[float, tuple[np.ndarray, ...]]:
        """:meth:`_evaluate` at a step's end (quietly: a too-long step is halved)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self._evaluate(at, x, fixed, update_beta)

    def _direction(self, at: AtTheta, x: np.ndarray, state: tuple[np.ndarray, ...],
                   update_beta: bool) -> Direction | None:
        """The PIRLS (or Newton) step from ``x``: ``None`` when the system cannot be factored."""
        eta, mu, w, fixed = state
        # working response: eta - offset + (y - mu) / mu_eta  (mu_eta = w / (wt * dmu/deta))
        z = eta - self.offset + (self.y - mu) / np.maximum(self.link.mu_eta(eta, mu), 1e-300)
        wi = w
        if self._newton:         # Newton's step (the observed information): same mode, fewer steps
            wo = self.family.observed_weights(self.y, mu, eta, self.wt)  # type: ignore[attr-defined]
            if np.all(wo > 0):
                z = eta - self.offset + w * (z - eta + self.offset) / wo
                wi = wo
        try:
            fac = self.factor(at, wi, update_beta)
        except (np.linalg.LinAlgError, ValueError):
            return None
        wz = wi * (z if update_beta else z - (fixed - self.offset))
        rhs = at.ztv(wz)
        if update_beta:
            rhs = np.concatenate([rhs, self.X.T @ wz])
        return Direction(fac.solve(rhs) - x)

    def run(self, theta: np.ndarray, beta: np.ndarray, u0: np.ndarray | None, *,
            update_beta: bool) -> Mode:
        """The conditional mode at ``theta`` (``beta`` fixed, or updated with ``u``)."""
        at = self.at(theta)
        # stage 1 (beta in PIRLS) only gives lme4's start: a Newton step of 1e-4 leaves 1e-8
        step_tol = max(self._step_tol, STEP_TOL_STAGE1) if update_beta else self._step_tol
        pd_tol = 1e-9 if update_beta else PIRLS_TOL
        u = np.zeros(self.q) if u0 is None else u0.copy()
        beta = beta.copy()
        fixed = self.X @ beta + self.offset
        x0 = np.concatenate([u, beta]) if update_beta else u
        pd0, state0 = self._evaluate(at, x0, fixed, update_beta)

        def converged(old: float, new: float, step: float, delta: np.ndarray, x: np.ndarray) -> bool:
            # in u (and beta), not just in the penalised deviance: log|L| depends on u to first
            # order, and for non-canonical links PIRLS converges only linearly
            moved = step * float(np.max(np.abs(delta))) if delta.size else 0.0
            return (abs(old - new) < pd_tol * (0.1 + abs(new))
                    and moved < step_tol * (1.0 + float(np.max(np.abs(x)))))

        run = newton_modes(x0, pd0, state0, lambda x, st: self._direction(at, x, st, update_beta),
                           lambda x: self._trial(at, x, fixed, update_beta), converged=converged,
                           maxit=PIRLS_MAXIT, max_halvings=MAX_HALVINGS, slack=1e-10)
        ok = math.isfinite(pd0) and run.status != "failed"
        eta, mu, w, _ = run.state
        u = run.x[:self.q] if update_beta else run.x
        if update_beta:
            beta = run.x[self.q:]
        if self.observed and not self.family.canonical:   # type: ignore[attr-defined]
            wo = self.family.observed_weights(self.y, mu, eta, self.wt)   # type: ignore[attr-defined]
            if wo is not None:
                w = np.maximum(wo, 1e-300)
        try:
            fac = self.factor(at, w, update_beta)
        except (np.linalg.LinAlgError, ValueError):
            return Mode(u, beta, eta, mu, math.inf, math.inf, math.inf, False, run.iterations,
                        None, w, at)
        dev = run.value + self._const + fac.logdet
        return Mode(u, beta, eta, mu, fac.logdet, run.value, dev if ok else math.inf, ok,
                    run.iterations, fac, w, at)
