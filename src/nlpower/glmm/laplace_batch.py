"""The Laplace deviance of a GLMM, its conditional modes and gradient, vectorised over responses.

The pieces :func:`nlpower.glmm.batched.refit_many` optimises, for models
whose random-effects terms are scalars on distinct grouping factors and
whose link is canonical.  ``M = Lambda'Z'WZ Lambda + I`` is diagonal on the
largest grouping factor (block 0, ``m0`` levels); the other factors'
levels (``qr`` of them) are eliminated densely through the ``(R, qr, qr)``
Schur complement, so a PIRLS iteration costs ``O(R (n + qr^2 m0))`` for
``R`` responses.  The cross-products are sparse-times-dense products of the
working weights with fixed scatter matrices of ``Z``.  The deviance and the
gradient are those of :mod:`.pirls` and :mod:`.gradient`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

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
    D0: np.ndarray       # (R, m0) block 0's diagonal of M
    Cr: np.ndarray       # (R, qr, m0) rest x block 0 of M
    Sinv: np.ndarray     # (R, qr, qr) inverse of the rest's Schur complement
    dev: np.ndarray      # (R,) Laplace deviance (inf where PIRLS failed)
    iters: np.ndarray    # (R,) PIRLS iterations



def _scatter(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, ncol: int) -> sp.csr_matrix:
    """The transposed ``(ncol, n)`` scatter matrix: ``(S @ W.T).T`` sums ``vals * W`` into columns."""
    return sp.csr_matrix((vals, (cols, rows)), shape=(ncol, rows.size))


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
        self.m = [b.m for b in blocks]
        self.offs = np.concatenate([[0], np.cumsum(self.m)]).astype(np.intp)
        self.q = int(self.offs[-1])
        self.m0 = self.m[0]
        self.qr = self.q - self.m0
        rows = np.arange(self.n)
        self.codes = [np.asarray(b.codes, dtype=np.intp) for b in blocks]
        self.cols = [self.offs[b] + self.codes[b] for b in range(self.nb)]
        self.z = [np.asarray(b.Z[:, 0], dtype=float) for b in blocks]
        self.ones = [bool(np.all(zb == 1.0)) for zb in self.z]
        self.coltheta = np.concatenate([np.full(mb, t) for mb, t in zip(self.m, self.tidx, strict=True)])
        self.wt = np.asarray(model.wt, dtype=float)
        self.unit_wt = bool(np.all(self.wt == 1.0))
        self.G = [_scatter(rows, self.codes[b], self.z[b], self.m[b]) for b in range(self.nb)]
        self.Gall = sp.vstack(self.G, format="csr")
        self.G2 = [_scatter(rows, self.codes[b], self.z[b] ** 2, self.m[b]) for b in range(self.nb)]
        # cross-products of block pairs (a < b): entry (level_a, level_b) as a flat index
        self.cross = {}
        for a in range(self.nb):
            for b in range(a + 1, self.nb):
                pos = self.codes[b] * self.m[a] + self.codes[a]
                self.cross[a, b] = _scatter(rows, pos, self.z[a] * self.z[b], self.m[a] * self.m[b])
        mats = {(b, b): self.G2[b] for b in range(self.nb)} | self.cross
        self.fpos, start = {}, 0
        for key, mat in mats.items():
            self.fpos[key] = slice(start, start + mat.shape[0])
            start += mat.shape[0]
        self.Fall = sp.vstack(list(mats.values()), format="csr")
        # where observation i's (rest level, block-0 level) entry sits in a flat (qr, m0) array
        self.rc_pos = [(self.cols[b] - self.m0) * self.m0 + self.codes[0] for b in range(1, self.nb)]

    @staticmethod
    def supports(model: GlmmModel) -> bool:
        """Scalar terms on distinct grouping factors, a canonical link, Laplace (nAGQ = 1)."""
        fam: Any = model.family
        return (fam.canonical and model.nAGQ == 1
                and all(b.q == 1 and b.lam_idx.size == 1 for b in model.blocks))

    # -- pieces -------------------------------------------------------------------------
    def zu(self, th: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``Z Lambda u`` per replicate: ``(R, n)``."""
        B = U * th[:, self.coltheta]
        out = B[:, self.cols[0]] if self.ones[0] else B[:, self.cols[0]] * self.z[0]
        for b in range(1, self.nb):
            out += B[:, self.cols[b]] if self.ones[b] else B[:, self.cols[b]] * self.z[b]
        return out

    def ztv(self, th: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``Lambda' Z' v`` per replicate: ``(R, q)``."""
        return (self.Gall @ np.ascontiguousarray(V.T)).T * th[:, self.coltheta]

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

    def factor(self, th: np.ndarray, w: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(D0, Cr, Sinv, log|M|)`` of ``M = Lambda'Z'WZ Lambda + I`` per replicate."""
        R = w.shape[0]
        # every weighted cross-product of Z in one sparse product, then sliced
        V = self.Fall @ np.ascontiguousarray(w.T)

        def part(key: tuple[int, int]) -> np.ndarray:
            return V[self.fpos[key]].T

        t = [th[:, self.tidx[b]] for b in range(self.nb)]
        D0 = 1.0 + t[0][:, None] ** 2 * part((0, 0))
        ld = np.sum(np.log(D0), axis=1)
        qr, m0 = self.qr, self.m0
        if qr == 0:
            return D0, np.zeros((R, 0, m0)), np.zeros((R, 0, 0)), ld
        Cr = np.empty((R, qr, m0))
        Rr = np.zeros((R, qr, qr))
        for b in range(1, self.nb):
            sb = slice(self.offs[b] - m0, self.offs[b + 1] - m0)
            Cr[:, sb, :] = ((t[0] * t[b])[:, None] * part((0, b))).reshape(R, self.m[b], m0)
            diag = 1.0 + t[b][:, None] ** 2 * part((b, b))
            idx = np.arange(self.offs[b], self.offs[b + 1]) - m0
            Rr[:, idx, idx] = diag
            for c in range(b + 1, self.nb):
                sc = slice(self.offs[c] - m0, self.offs[c + 1] - m0)
                blk = ((t[b] * t[c])[:, None] * part((b, c))).reshape(R, self.m[c], self.m[b])
                Rr[:, sc, sb] = blk
                Rr[:, sb, sc] = np.swapaxes(blk, 1, 2)
        CD = Cr / D0[:, None, :]
        S = Rr - CD @ np.swapaxes(Cr, 1, 2)
        try:                                 # positive definite (always, but for rounding)
            Lc = np.linalg.cholesky(S)
            return D0, Cr, np.linalg.inv(S), ld + 2.0 * np.log(
                np.diagonal(Lc, axis1=1, axis2=2)).sum(axis=1)
        except np.linalg.LinAlgError:
            pass
        sign, lds = np.linalg.slogdet(S)
        with np.errstate(invalid="ignore"):
            ld = ld + np.where(sign > 0, lds, np.nan)
        Sinv = np.linalg.inv(np.where((sign > 0)[:, None, None], S, np.eye(qr)[None]))
        return D0, Cr, Sinv, ld

    def solve(self, D0: np.ndarray, Cr: np.ndarray, Sinv: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """``M^{-1} rhs`` per replicate (``rhs``: ``(R, q)`` or ``(R, q, c)``)."""
        vec = rhs.ndim == 2
        r = rhs[:, :, None] if vec else rhs
        r0, r1 = r[:, :self.m0], r[:, self.m0:]
        if self.qr == 0:
            x = r0 / D0[:, :, None]
        else:
            y0 = r0 / D0[:, :, None]
            x1 = Sinv @ (r1 - Cr @ y0)
            x = np.concatenate([(r0 - np.swapaxes(Cr, 1, 2) @ x1) / D0[:, :, None], x1], axis=1)
        return x[:, :, 0] if vec else x

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
        D0, Cr = np.ones((R, self.m0)), np.zeros((R, self.qr, self.m0))
        Sinv, ld = np.zeros((R, self.qr, self.qr)), np.full(R, np.inf)
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
                D0, Cr, Sinv, ld = fac
            else:
                D0[live], Cr[live], Sinv[live], ld[live] = fac
            delta = self.solve(fac[0], fac[1], fac[2], self.ztv(thl, Ywl - wt * mul) - Ul)
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
            D0[live], Cr[live], Sinv[live], ld[live] = self.factor(th[live], w[live])
        dev = pd + const + ld
        dev = np.where(ok & np.isfinite(dev), dev, np.inf)
        return _Modes(U, mu, w, D0, Cr, Sinv, dev, iters)

    # -- derivatives ----------------------------------------------------------------------
    def _inverse_parts(self, th: np.ndarray, md: _Modes) -> tuple[np.ndarray, np.ndarray]:
        """``(s, h)``: ``h_i = (Z Lambda)_i M^{-1} (Z Lambda)_i'`` per observation, and per block
        ``s_b = sum_i w_i z_i (M^{-1} (Z Lambda)_i')_b``, the entry at observation i's column
        of block b (the trace term of the gradient): ``(R, nb)`` and ``(R, n)``."""
        R, nb, w = th.shape[0], self.nb, md.w
        c0 = self.codes[0]
        t = [th[:, self.tidx[b], None] for b in range(nb)]          # (R, 1) each
        s = np.empty((R, nb))
        if self.qr == 0:
            A = (1.0 / md.D0)[:, c0]
            if self.ones[0]:
                s[:, 0] = t[0][:, 0] * np.einsum("rn,rn->r", w, A)
                return s, A * t[0] ** 2
            z0 = self.z[0]
            s[:, 0] = t[0][:, 0] * ((w * A) @ z0 ** 2)
            return s, A * (t[0] * z0) ** 2
        CD = md.Cr / md.D0[:, None, :]
        P = md.Sinv @ CD                                         # -(rest x block 0) of M^{-1}
        inv00 = 1.0 / md.D0 + np.einsum("raj,raj->rj", CD, P)
        Pf = P.reshape(R, -1)
        Sf = md.Sinv.reshape(R, -1)
        rows = [self.cols[b] - self.m0 for b in range(1, nb)]
        # the entries of M^{-1} at each observation's pairs of columns: E[a][b] (R, n)
        E = [[np.empty(0)] * nb for _ in range(nb)]
        E[0][0] = inv00[:, c0]
        for b in range(1, nb):
            E[0][b] = E[b][0] = -Pf[:, self.rc_pos[b - 1]]
            for c in range(b, nb):
                E[b][c] = E[c][b] = Sf[:, rows[b - 1] * self.qr + rows[c - 1]]
        if all(self.ones):
            # z = 1: (Z Lambda)_i is theta per row; no per-observation products of theta
            h = np.zeros_like(w)
            tmp = np.empty_like(w)
            dots = {}
            for a in range(nb):
                for b in range(a, nb):
                    dots[a, b] = dots[b, a] = np.einsum("rn,rn->r", w, E[a][b])
                    coef = t[a] * t[b] * (1.0 if a == b else 2.0)
                    h += np.multiply(E[a][b], coef, out=tmp)
            for a in range(nb):
                s[:, a] = sum(t[b][:, 0] * dots[a, b] for b in range(nb))
            return s, h
        zl = [t[b] * self.z[b] for b in range(nb)]
        h = np.zeros_like(w)
        for a in range(nb):
            ga = sum(E[a][b] * zl[b] for b in range(nb))
            s[:, a] = (w * ga) @ self.z[a]
            h += zl[a] * ga
        return s, h

    def gradient(self, th: np.ndarray, Yw: np.ndarray, md: _Modes) -> np.ndarray:
        """The gradient of the Laplace deviance over ``(theta, beta)``: ``(R, k + p)``."""
        wt, w, mu = self.wt, md.w, md.mu
        r = 2.0 * (wt * mu - Yw)
        dw = w * self.link.dlog_mu_eta(mu)
        s, h = self._inverse_parts(th, md)
        v = h * dw
        xi = self.solve(md.D0, md.Cr, md.Sinv, self.ztv(th, v))
        rc = r + v - w * self.zu(th, xi)
        out = np.zeros((th.shape[0], self.k + self.p))
        # sum_i z_i (rc_i u_b(i) - r_i xi_b(i) / 2 + 2 w_i g_i): the first two as level sums
        Urc = md.U * (self.Gall @ np.ascontiguousarray(rc.T)).T
        Uxr = xi * (self.Gall @ np.ascontiguousarray(r.T)).T
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
        new = md.U - self.solve(md.D0, md.Cr, md.Sinv, rhs)
        return np.where(np.isfinite(new), new, md.U)

    def vcov(self, th: np.ndarray, md: _Modes) -> np.ndarray:
        """PIRLS's covariance of ``beta`` (``refit``'s): ``(X'WX - X'WZL M^{-1} L'Z'WX)^{-1}``."""
        R = th.shape[0]
        A = np.stack([self.ztv(th, md.w * self.X[:, j]) for j in range(self.p)], axis=2)
        XWX = np.einsum("ri,ij,ik->rjk", md.w, self.X, self.X)
        S = XWX - np.swapaxes(A, 1, 2) @ self.solve(md.D0, md.Cr, md.Sinv, A)
        return np.asarray(np.linalg.inv(S).reshape(R, self.p, self.p))
