"""The analytic gradient of the Laplace deviance (canonical links).

The deviance of :mod:`.pirls` is ``d = pd(g^) + log|M| + const``: ``g^`` the
conditional mode of the profiled variables ``g`` (``u``; with ``beta`` too in
stage 1, lme4's ``nAGQ = 0``), ``pd(g) = sum unit(eta) + ||u||^2`` with
``eta = A g + ...`` (``A = [Z Lambda]``, or ``[Z Lambda, X]``), and
``M = Lambda'Z'WZ Lambda + I``.  For a parameter ``phi`` (an element of
``theta``, or of ``beta`` in stage 2) write ``a = d eta / d phi`` with ``g``
held fixed (``Z Lambda_phi u``, or a column of ``X``).  With a canonical link
the Hessian of ``pd`` in ``g`` is ``2 Mt``, ``Mt = A'WA + diag(I, 0)`` (the
factor PIRLS already has), so the mode moves by
``dg = -Mt^{-1} ((dA)' r / 2 + A'W a)`` (``r = d unit / d eta``, the
mode condition ``A'r + 2 P g = 0`` differentiated) and, by the envelope
theorem for ``pd`` and ``d log|M| = tr(M^{-1} dM)``::

    d d / d phi = (r + c)' a  -  r' (Z Lambda_phi xi_u) / 2  +  2 sum_i w_i (Z Lambda_phi)_i M^{-1} (Z Lambda)_i'

with ``h_i = (Z Lambda)_i M^{-1} (Z Lambda)_i'``, ``v = h * dw/deta``,
``xi = Mt^{-1} A'v`` (one solve for every ``phi``) and ``c = v - W A xi``;
the last two terms only for ``theta`` (``Lambda_phi = d Lambda / d phi``).
The ``h_i`` and the second-to-last term need the entries of ``M^{-1}`` at
each observation's pairs of random-effects columns: the blocks of the
inverse from the blocked factor (block 1 block-diagonal, the rest dense),
or sums over pairs of observations from the pair strategy's factor
(:meth:`nlpower.mixed.pairs.PairFactor.selected`, no dense block).

Non-canonical links (probit, cloglog), whose Hessian in ``u`` is not the
PIRLS factor, and adaptive quadrature use finite differences instead
(:func:`.optim.fd_gradient`).
"""

from __future__ import annotations

import numpy as np

from .pirls import Mode, Pirls

#: the blocked factor's dense (rest x block 1) blocks of the inverse are formed only up to
#: this many entries (the pair strategy forms none: its gradient has no such limit)
MAX_DENSE = 20_000_000


class LaplaceGradient:
    """The gradient of the Laplace deviance over ``theta`` (and ``beta``) at a PIRLS mode.

    Built once per structure: for each element ``j`` of ``theta`` the slot
    ``a_j`` whose raw ``Z`` column it multiplies and the slot ``b_j`` it moves
    (``Lambda_j`` has one non-zero, at row ``a``, column ``b`` of its block).
    """

    def __init__(self, pir: Pirls, n_theta: int):
        self.pir = pir
        self.k = n_theta
        self.canonical = bool(pir.family.canonical)   # type: ignore[attr-defined]
        zraw, a_slot, b_slot, th = [], [], [], []
        off = 0
        for blk in pir.blocks:
            zraw.append(np.asarray(blk.Z, dtype=float))
            q = blk.q
            for li, ti in zip(blk.lam_idx, blk.theta_idx, strict=True):
                a_slot.append(off + int(li) // q)
                b_slot.append(off + int(li) % q)
                th.append(int(ti))
            off += q
        self.zraw = np.concatenate(zraw, axis=1)           # (n, s): raw Z per slot
        order = np.argsort(th)
        self.a_slot = np.asarray(a_slot, dtype=np.intp)[order]
        self.b_slot = np.asarray(b_slot, dtype=np.intp)[order]
        # the pair strategy's selected inverse forms no dense (rest x block 1) block, nor the
        # native strategy's on the pattern
        nat = pir.layout.native
        self.ok = self.canonical and (pir.qr * pir.n1 <= MAX_DENSE or pir.layout.pairs is not None
                                      or (nat is not None and nat.selected_on_pattern))

    def _derivs(self, mode: Mode) -> tuple[np.ndarray, np.ndarray]:
        """``r = d unit / d eta`` and ``dw / d eta`` at the mode (canonical links)."""
        pir, mu = self.pir, mode.mu
        r = 2.0 * pir.wt * (mu - pir.y)
        return r, mode.w * pir.link.dlog_mu_eta(mu, mode.eta)

    def _inverse_parts(self, mode: Mode) -> tuple[np.ndarray, np.ndarray]:
        """``(g, h)``: ``g_i = (M^{-1} (Z Lambda)_i')`` at observation i's slots, ``h_i = zl_i . g_i``."""
        assert mode.factor is not None
        zl = mode.at.zl
        g = mode.factor.selected(zl)
        return g, np.einsum("ns,ns->n", zl, g)

    def __call__(self, mode: Mode | None, with_beta: bool) -> np.ndarray | None:
        """The gradient at a converged mode: over ``theta`` (stage 1, ``beta`` in the mode:
        ``with_beta=False``) or over ``(theta, beta)`` (stage 2).  ``None`` where it is not
        available (non-canonical link, an inverse too large to form)."""
        if mode is None or not self.ok or not mode.ok:
            return None
        pir, at = self.pir, mode.at
        in_pirls = not with_beta
        r, dw = self._derivs(mode)
        g, h = self._inverse_parts(mode)
        v = h * dw
        rhs = at.ztv(v)
        if in_pirls:
            rhs = np.concatenate([rhs, pir.X.T @ v])
        assert mode.factor is not None
        xi = mode.factor.solve(rhs)
        xu = xi[:pir.q]
        a_xi = at.zu(xu)
        if in_pirls:
            a_xi = a_xi + pir.X @ xi[pir.q:]
        rc = r + v - mode.w * a_xi
        # per observation and slot: (r + c) u_b - r xi_b / 2 + 2 w g_b
        slots = pir.slots
        Q = rc[:, None] * mode.u[slots] - 0.5 * r[:, None] * xu[slots] + 2.0 * mode.w[:, None] * g
        gth = np.einsum("nj,nj->j", self.zraw[:, self.a_slot], Q[:, self.b_slot])
        if not with_beta:
            return np.asarray(gth)
        return np.concatenate([gth, pir.X.T @ rc])

    def predict_u(self, mode: Mode, dx: np.ndarray) -> np.ndarray:
        """The mode after a step ``dx`` in ``(theta, beta)``, to first order (a PIRLS start).

        ``du = -M^{-1} (Lambda_dx' Z' r / 2 + Lambda' Z' W a_dx)`` with
        ``a_dx = X dbeta + Z Lambda_dx u`` (the mode condition differentiated,
        module docstring); ``mode`` is that of the evaluation the step starts
        from (with its ``Z Lambda`` per slot).  In stage 1
        (``dx`` over ``theta`` only, ``beta`` in the mode) ``(u, beta)``
        move together, through the factor with ``X``: ``u`` then ``beta``.
        """
        pir, zl = self.pir, mode.at.zl
        r, _ = self._derivs(mode)
        stage1 = dx.size == self.k
        dth, dbe = dx[:self.k], dx[self.k:]
        slots = pir.slots
        a = np.zeros(pir.n) if stage1 else pir.X @ dbe
        lr = np.zeros(pir.q)
        for j in np.flatnonzero(dth):
            za = self.zraw[:, self.a_slot[j]]
            sb = slots[:, self.b_slot[j]]
            a = a + dth[j] * za * mode.u[sb]
            lr += dth[j] * np.bincount(sb, r * za, minlength=pir.q)
        wa = mode.w * a
        rhs = 0.5 * lr + np.bincount(slots.ravel(), (zl * wa[:, None]).ravel(), minlength=pir.q)
        cur = mode.u
        if stage1:
            rhs = np.concatenate([rhs, pir.X.T @ wa])
            cur = np.concatenate([mode.u, mode.beta])
        assert mode.factor is not None
        new = cur - mode.factor.solve(rhs)
        return new if np.all(np.isfinite(new)) else cur.copy()

