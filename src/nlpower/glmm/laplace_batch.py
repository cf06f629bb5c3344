"""The Laplace deviance of a GLMM, its conditional modes and gradient, vectorised over responses.

The pieces :func:`nlpower.glmm.batched.refit_many` optimises, for models
whose random-effects terms are scalars on distinct grouping factors and
whose link is canonical.  ``M = Lambda'Z'WZ Lambda + I`` is factored for
all ``R`` responses at once by :mod:`nlpower.mixed.blocked_batch` (block 0
diagonal, the rest through a dense Schur complement: ``O(R (n + qr^2 m0))``
per PIRLS iteration; or, where one fit of the model takes the pair
strategy, that complement from pairs of observations,
:mod:`nlpower.mixed.pairs_batch`: ``O(R sum_l n_l^2)``); this module is the response's side: the family's
working weights, PIRLS with step halving per row, the deviance, its
gradient and the first-order mode predictions.  The deviance and the
gradient are those of :mod:`.pirls` and :mod:`.gradient`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..mixed.blocked_batch import BatchedLayout, StackedFactor

if TYPE_CHECKING:
    from .model import GlmmModel

__all__ = ["BatchedLaplace"]

#: PIRLS stops for a replicate when its Newton step in u is below this (relative)
U_TOL = 1e-9
PIRLS_MAXIT = 50


@dataclass(eq=False)
class _Modes:
    """PIRLS results for a set of replicates (rows)."""

    U: np.ndarray        # (R, q) conditional modes
    mu: np.ndarray       # (R, n)
    w: np.ndarray        # (R, n) working weights
    fac: StackedFactor   # M's factors at the modes
    dev: np.ndarray      # (R,) Laplace deviance (inf where PIRLS failed)
    iters: np.ndarray    # (R,) PIRLS iterations


class BatchedLaplace:
    """The Laplace deviance, its modes and gradient, vectorised over responses.

    Built once per :class:`~nlpower.glmm.model.GlmmModel` whose random
    effects are scalar terms on distinct grouping factors and whose link is
    canonical (:meth:`supports`).
    """

    def __init__(self, model: GlmmModel):
        pir = model.pirls
        self.model = model
        self.link = pir.link
        self.X = pir.X
        self.n, self.p = self.X.shape
        self.k = model.k
        self.family = model.family
        blocks = model.blocks
        self.nb = len(blocks)
        self.tidx = np.array([int(b.theta_idx[0]) for b in blocks], dtype=np.intp)
        # the pair rule's answer for the model's layout (a single fit may take the native
        # strategy before it; the batch has pairs or the blocked factorisation)
        self.lay = BatchedLayout([b.codes for b in blocks], [b.Z[:, 0] for b in blocks],
                                 [b.m for b in blocks], pairs=pir.layout.pairs_rule is not None)
        self.offs, self.q, self.m0 = self.lay.offs, self.lay.q, self.lay.m0
        self.wt = np.asarray(model.wt, dtype=float)
        self.unit_wt = bool(np.all(self.wt == 1.0))

    @staticmethod
    def supports(model: GlmmModel) -> bool:
        """Scalar terms on distinct grouping factors, a canonical link, Laplace (nAGQ = 1)."""
        fam: Any = model.family
        return (fam.canonical and model.nAGQ == 1
                and all(b.q == 1 and b.lam_idx.size == 1 for b in model.blocks))

    # -- pieces -------------------------------------------------------------------------
    def zu(self, th: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``Z Lambda u`` per replicate: ``(R, n)``."""
        return self.lay.zu(th[:, self.tidx], U)

    def ztv(self, th: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``Lambda' Z' v`` per replicate: ``(R, q)``."""
        return self.lay.ztv(th[:, self.tidx], V)

    def working(self, eta: np.ndarray, Yw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``mu``, the working weights and ``sum unit`` (the unit terms of :class:`.Pirls`):
        the family's :meth:`~nlpower.lmm.family._GLMResponse.working_rows`.

        ``Yw``: the responses times the prior weights.
        """
        fam: Any = self.family
        return fam.working_rows(Yw, self.wt, eta, self.unit_wt)  # type: ignore[no-any-return]

    def constants(self, Y: np.ndarray) -> np.ndarray:
        """Per replicate: ``-2 log p(y | mu)`` minus the sum of the unit terms (free of ``mu``)."""
        wt = self.model.wt
        fam: Any = self.family
        mu0 = fam.mu_start(Y, wt)
        full = fam.m2loglik(Y, mu0, wt, axis=1)
        eta0 = self.link.linkfun(mu0)
        return full - self.working(eta0, Y * wt)[2]

    def factor(self, th: np.ndarray, w: np.ndarray) -> StackedFactor:
        """The factors of ``M = Lambda'Z'WZ Lambda + I`` per replicate."""
        return self.lay.factor(th[:, self.tidx], w)

    # -- PIRLS ----------------------------------------------------------------------------
    def pirls(self, th: np.ndarray, be: np.ndarray, Yw: np.ndarray, const: np.ndarray,
              U0: np.ndarray | None) -> _Modes:
        """The conditional modes at ``(theta, beta)`` per replicate (``beta`` fixed)."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):   # failed rows: inf
            return self._pirls(th, be, Yw, const, U0)

    def _pirls(self, th: np.ndarray, be: np.ndarray, Yw: np.ndarray, const: np.ndarray,
               U0: np.ndarray | None) -> _Modes:
        R = Yw.shape[0]
        wt = self.wt
        fixed = be @ self.X.T + self.model.offset
        U = np.zeros((R, self.q)) if U0 is None else U0.copy()
        mu, w, pd = self.working(fixed + self.zu(th, U), Yw)
        pd += np.einsum("rq,rq->r", U, U)
        ok = np.isfinite(pd)
        facs = self.lay.empty(R)
        iters = np.zeros(R, dtype=np.intp)
        live = np.flatnonzero(ok)
        for _ in range(PIRLS_MAXIT):
            if live.size == 0:
                break
            # every row still running (the usual case): the arrays themselves, no row copies
            full = live.size == R
            thl, Ul, wl, mul, Ywl = ((th, U, w, mu, Yw) if full else
                                     (th[live], U[live], w[live], mu[live], Yw[live]))
            # the factor at the current modes: the final one for the rows that stop here
            fac = self.factor(thl, wl)
            if full:
                facs = fac
            else:
                facs.put(live, fac)
            delta = fac.solve(self.ztv(thl, Ywl - wt * mul) - Ul)
            iters[live] += 1
            small = np.max(np.abs(delta), axis=1) < U_TOL * (1.0 + np.max(np.abs(Ul), axis=1))
            if small.all():                  # the factor just taken is at every row's mode
                live = live[:0]
                break
            go = np.flatnonzero(~small)
            full = go.size == R
            lg, dl = (live, delta) if full else (live[go], delta[go])
            Ug, fg, tg, Yg, pg = ((U, fixed, th, Yw, pd) if full else
                                  (U[lg], fixed[lg], th[lg], Yw[lg], pd[lg]))
            Uc = Ug + dl
            mu_c, w_c, pd_c = self.working(fg + self.zu(tg, Uc), Yg)
            pd_c += np.einsum("rq,rq->r", Uc, Uc)
            bad = ~(pd_c <= pg + 1e-10 * np.abs(pg))
            step = np.ones(go.size)
            for _ in range(30):                 # halve the steps that did not decrease
                if not bad.any():
                    break
                b = np.flatnonzero(bad)
                step[b] *= 0.5
                Uc[b] = Ug[b] + step[b, None] * dl[b]
                mb, wb, pb = self.working(fg[b] + self.zu(tg[b], Uc[b]), Yg[b])
                mu_c[b], w_c[b] = mb, wb
                pd_c[b] = pb + np.einsum("rq,rq->r", Uc[b], Uc[b])
                bad[b] = ~(pd_c[b] <= pg[b] + 1e-10 * np.abs(pg[b]))
            # no decrease after 30 halvings: at the mode to rounding
            if full and not bad.any():
                U, mu, w, pd = Uc, mu_c, w_c, pd_c
                continue
            take = ~bad
            rows = lg[take]
            U[rows], mu[rows], w[rows], pd[rows] = Uc[take], mu_c[take], w_c[take], pd_c[take]
            live = rows
        if live.size:                        # PIRLS_MAXIT reached
            facs.put(live, self.factor(th[live], w[live]))
        dev = pd + const + facs.logdet
        dev = np.where(ok & np.isfinite(dev), dev, np.inf)
        return _Modes(U, mu, w, facs, dev, iters)

    # -- derivatives ----------------------------------------------------------------------
    def gradient(self, th: np.ndarray, Yw: np.ndarray, md: _Modes) -> np.ndarray:
        """The gradient of the Laplace deviance over ``(theta, beta)``: ``(R, k + p)``."""
        wt, w, mu = self.wt, md.w, md.mu
        r = 2.0 * (wt * mu - Yw)
        dw = w * self.link.dlog_mu_eta(mu)
        s, h = md.fac.selected(th[:, self.tidx], w)
        v = h * dw
        xi = md.fac.solve(self.ztv(th, v))
        rc = r + v - w * self.zu(th, xi)
        out = np.zeros((th.shape[0], self.k + self.p))
        # sum_i z_i (rc_i u_b(i) - r_i xi_b(i) / 2 + 2 w_i g_i): the first two as level sums
        Gall = self.lay.Gall
        Urc = md.U * (Gall @ np.ascontiguousarray(rc.T)).T
        Uxr = xi * (Gall @ np.ascontiguousarray(r.T)).T
        for b in range(self.nb):
            lv = slice(self.offs[b], self.offs[b + 1])
            out[:, self.tidx[b]] = (Urc[:, lv].sum(axis=1) - 0.5 * Uxr[:, lv].sum(axis=1)
                                    + 2.0 * s[:, b])
        out[:, self.k:] = rc @ self.X
        return out

    def predict_u(self, th: np.ndarray, Yw: np.ndarray, md: _Modes, dx: np.ndarray) -> np.ndarray:
        """The modes after a step ``dx`` in ``(theta, beta)``, to first order (a PIRLS start)."""
        dth, dbe = dx[:, :self.k], dx[:, self.k:]
        r = 2.0 * (self.wt * md.mu - Yw)
        a = dbe @ self.X.T + self.zu(dth, md.U)
        rhs = self.ztv(dth, 0.5 * r) + self.ztv(th, md.w * a)
        new = md.U - md.fac.solve(rhs)
        return np.where(np.isfinite(new), new, md.U)

    def vcov(self, th: np.ndarray, md: _Modes) -> np.ndarray:
        """PIRLS's covariance of ``beta`` (``refit``'s): ``(X'WX - X'WZL M^{-1} L'Z'WX)^{-1}``."""
        R = th.shape[0]
        A = np.stack([self.ztv(th, md.w * self.X[:, j]) for j in range(self.p)], axis=2)
        XWX = np.einsum("ri,ij,ik->rjk", md.w, self.X, self.X)
        S = XWX - np.swapaxes(A, 1, 2) @ md.fac.solve(A)
        return np.asarray(np.linalg.inv(S).reshape(R, self.p, self.p))
