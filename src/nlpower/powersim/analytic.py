"""Analytic power: noncentral t at the true parameters (no simulation).

Two methods, both returning :class:`~nlpower.powersim.result.AnalyticPowerResult`:

``"balanced"`` (fully crossed, paired, 2 systems)
    Westfall, Kenny & Judd (2014): the estimate's variance is
    ``lambda_system / (2WI)`` with ``lambda_system = s2 + 2I s1w2 + 2W s1i2``
    (+/-1 coding; see :mod:`nlpower.powersim.fastpath` for the strata), the
    noncentrality ``ncp = beta1 / sqrt(lambda_system / (2WI))``, and the
    Satterthwaite df of ``MS_WS + MS_IS - MS_E`` at the expected mean squares
    ``E[MS_WS] = s2 + 2I s1w2``, ``E[MS_IS] = s2 + 2W s1i2``, ``E[MS_E] = s2``::

        df = lambda_system^2 / (E[MS_WS]^2/(W-1) + E[MS_IS]^2/(I-1) + s2^2/(2(W-1)(I-1)))

``"information"`` (any design)
    ``Var(beta_hat) = (X' V^-1 X)^-1`` at the true parameters, with ``V^-1``
    by Woodbury through the random-effects columns (``V = s2 I + Z G Z'``,
    ``V^-1 = (I - Z (s2 G^-1 + Z'Z)^-1 Z') / s2``, with a Schur complement on
    the factor with most levels so that only sparse and low-rank products and
    the needed blocks are formed), and the Satterthwaite df from the
    expected (Fisher) information of the variance parameters,
    ``I_kl = tr(V^-1 dV_k V^-1 dV_l) / 2`` (ML), computed through the same
    Woodbury form.  On a balanced design it gives exactly the same variance
    as ``"balanced"``; its df differs slightly (it also counts the information
    in the mean and system strata).

Power counts sign-correct rejections only (Card et al. 2020, Fig. 2): for a
positive effect ``P(T > c)`` with ``T ~ t'(df, ncp)`` (noncentral t) and
``c`` the critical value of the test:

* ``"satterthwaite"``: ``c = t_{df, 1 - alpha/2}`` (two-sided) or
  ``t_{df, 1 - alpha}``;
* ``"z"`` (the paper's ``t > 1.96`` rule): ``c = z_{1 - alpha/2}`` or
  ``z_{1 - alpha}``, but ``T`` still noncentral t with the Satterthwaite df --
  the Wald statistic's SE is estimated, which is exactly what makes the
  normal reference anti-conservative with few workers.  (``normal=True``
  gives the pure normal approximation ``Phi(ncp - c)``.)
* ``"lrt"``: the signed root of the LR statistic is approximately
  ``N(ncp, 1)``: ``Phi(ncp - c)`` with ``c`` from the normal.

At effect 0 the returned ``power`` is the rejection rate (nominal size of the
approximation).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph

from .._choices import Alternative, AnalyticMethod, RatingsTest, check_choice
from ..design import CrossedDesign
from ..errors import DesignError, InputError
from ..lmm import single_threaded
from ..params import LMMParams
from ..simulation import check_design_params
from .fastpath import stratum_eigenvalues
from .models import Params, build_model, effect_of, true_sds
from .options import check_test_options
from .result import AnalyticPowerResult
from .rules import get_test


def balanced_moments(design: CrossedDesign, params: LMMParams) -> tuple[float, float]:
    """(Var(beta1_hat), EMS Satterthwaite df) on the +/-1 scale for the balanced design."""
    p = params.to_coding("sum")
    w, i = design.n_workers, design.n_items
    v = [p.sigma**2, p.sd_worker**2, p.sd_worker_slope**2, p.sd_item**2, p.sd_item_slope**2]
    lam = stratum_eigenvalues(w, i, v)
    var = lam[1] / (2.0 * w * i)
    df = lam[1] ** 2 / (lam[3] ** 2 / (w - 1) + lam[5] ** 2 / (i - 1)
                        + lam[6] ** 2 / (2.0 * (w - 1) * (i - 1)))
    return float(var), float(df)


def information_moments(design: CrossedDesign, params: Params, *, with_df: bool = True
                        ) -> tuple[float, float]:
    """(Var(estimate), Satterthwaite df) from the expected information, any design.

    ``with_df=False`` skips the df (returned as infinity): a normal-reference
    test needs only the variance, and the df's information matrix is the
    expensive part (dense item-by-item blocks) on large designs.

    The estimate is the tested fixed effect of :func:`~nlpower.powersim.models.build_model`
    in the parameters' coding.  Woodbury with a Schur complement on the
    grouping factor with the most levels (:class:`_WoodburyBlocks`): sparse
    and low-rank products only, e.g. ~1 s for 6 000 ratings and ~10 s for
    20 000 ratings (50 workers, 3 334 items, 3 workers per item).
    """
    with single_threaded(True):
        return _information_moments(design, params, with_df)


def _information_moments(design: CrossedDesign, params: Params, with_df: bool = True
                         ) -> tuple[float, float]:
    model = build_model(design, params)
    spec = model.spec
    X = np.asarray(spec.X, dtype=float)
    n, p = X.shape
    s2 = params.sigma**2
    # random-effects columns, one block per (term, column); true covariances per term
    blocks: list[sp.csr_matrix] = []
    term_cols: list[list[int]] = []
    term_cov: list[np.ndarray] = []
    rows = np.arange(n)
    for t in spec.re_terms:
        sds = true_sds(design, params, t.group, tuple(t.cnames))
        ids = []
        for c in range(t.q):
            ids.append(len(blocks))
            blocks.append(sp.csr_matrix((np.asarray(t.Z[:, c], dtype=float), (rows, t.codes)),
                                        shape=(n, t.n_levels)))
        term_cols.append(ids)
        term_cov.append(np.diag(sds**2))
    sizes = [b.shape[1] for b in blocks]
    offs = np.concatenate([[0], np.cumsum(sizes)])
    A = sp.hstack([sp.csr_matrix(X)] + blocks, format="csr")
    # positive-variance columns carry the prior covariance (diagonal: independent effects)
    gdiag = np.zeros(offs[-1])
    for ids, cov in zip(term_cols, term_cov, strict=True):
        for k, b in enumerate(ids):
            gdiag[offs[b]:offs[b + 1]] = cov[k, k]
    plus = np.flatnonzero(gdiag > 0)
    Gs = (A.T @ A).tocsr()

    def zidx(b: int) -> np.ndarray:
        return p + np.arange(int(offs[b]), int(offs[b + 1]))

    big = _largest_group(term_cols, blocks, offs, plus)
    big_cols = np.concatenate([zidx(b) for b in big]) if big else np.zeros(0, dtype=int)
    ops = _WoodburyBlocks(Gs, p, plus, gdiag, s2, n, big_cols)

    xidx = np.arange(p)
    KX = ops.K(xidx, xidx) / s2
    C = np.linalg.inv(KX)
    j = model.effect_index
    var = float(C[j, j])
    if not with_df:
        return var, math.inf
    params_list: list[tuple[int, int]] = []  # (block a, block b): dV = Z_a Z_b' + Z_b Z_a' (a == b: Z_a Z_a')
    for ids, cov in zip(term_cols, term_cov, strict=True):
        pos = [b for k, b in enumerate(ids) if cov[k, k] > 0]
        for x_ in range(len(pos)):
            for y_ in range(x_, len(pos)):
                params_list.append((pos[x_], pos[y_]))
    used = sorted({b for ab in params_list for b in ab})
    Kzz = {(a, b): ops.K(zidx(a), zidx(b)) for a in used for b in used}
    KzX = {a: ops.K(zidx(a), xidx) for a in used}

    def terms(ab: tuple[int, int]) -> list[tuple[int, int]]:
        a, b = ab
        return [(a, a)] if a == b else [(a, b), (b, a)]

    m = 1 + len(params_list)
    info = np.zeros((m, m))
    grad = np.zeros(m)
    info[0, 0] = 0.5 * ops.trP2 / s2**2
    XP2X = ops.K2(xidx, xidx) / s2**2
    grad[0] = float((C @ XP2X @ C)[j, j])
    for k, ab in enumerate(params_list, start=1):
        # tr(V^-1 V^-1 dV_k) = tr(Z_b' P^2 Z_a) / s2^2 summed over the symmetric terms
        info[0, k] = info[k, 0] = 0.5 * sum(ops.K2_trace(zidx(b), zidx(a)) for a, b in terms(ab)) / s2**2
        D = sum((KzX[a].T @ KzX[b] for a, b in terms(ab)), np.zeros((p, p))) / s2**2
        grad[k] = float((C @ D @ C)[j, j])
        for l_, cd in enumerate(params_list[k - 1:], start=k):
            tot = 0.0
            for a, b in terms(ab):
                for c, d in terms(cd):
                    # tr(P Z_a Z_b' P Z_c Z_d') = sum(K[b, c] * K[a, d])
                    tot += float(np.sum(Kzz[(b, c)] * Kzz[(a, d)]))
            info[k, l_] = info[l_, k] = 0.5 * tot / s2**2
    try:
        q = float(grad @ np.linalg.solve(info, grad))
    except np.linalg.LinAlgError:
        q = float(grad @ np.linalg.pinv(info) @ grad)
    df = 2.0 * var * var / q if q > 0 else math.inf
    return var, df


def _largest_group(term_cols: list[list[int]], blocks: list[sp.csr_matrix], offs: np.ndarray,
                   plus: np.ndarray) -> list[int]:
    """Positive-variance blocks of the term group with the most levels (the Schur block)."""
    best: list[int] = []
    best_size = -1
    pos = set(plus.tolist())
    # group the terms' blocks by number of levels (terms of one grouping factor share it)
    by_levels: dict[int, list[int]] = {}
    for ids in term_cols:
        for b in ids:
            if int(offs[b]) in pos:
                by_levels.setdefault(blocks[b].shape[1], []).append(b)
    for size, ids in by_levels.items():
        if size > best_size:
            best, best_size = ids, size
    return best


class _WoodburyBlocks:
    """Blocks of ``A'PA`` and ``A'P^2A`` with ``P = I - Z (s2 G^-1 + Z'Z)^-1 Z'``.

    ``M = s2 G^-1 + Z'Z`` (positive-variance columns) is split into the
    columns of the grouping factor with the most levels (``B``; block
    diagonal by level, since an observation belongs to one level) and the rest
    (``R``, few columns).  With ``D = M_BB`` and ``T = M_RR - M_RB D^-1 M_BR``::

        M^-1 = pad(D^-1) + W T^-1 W',   W = [I; -D^-1 M_BR]

    so every product is sparse or of rank |R|, and only the requested blocks
    are formed densely (memory O(block^2), time ~O(nnz + q |R|^2)).
    """

    def __init__(self, Gs: sp.csr_matrix, p: int, plus: np.ndarray, gdiag: np.ndarray,
                 s2: float, n: int, big_cols: np.ndarray):
        self.G = Gs
        self.n = n
        self.zplus = p + plus
        prior = np.zeros(Gs.shape[0])
        prior[self.zplus] = s2 / gdiag[plus]
        self.prior = prior
        self.setup(big_cols)

    def setup(self, big_cols: np.ndarray) -> None:
        Gs = self.G
        zplus = self.zplus
        mask = np.isin(zplus, big_cols)
        B = zplus[mask]
        R = zplus[~mask]
        self.B, self.R = B, R
        # D = M_BB, block diagonal: connected components of the B-B pattern
        MBB = (Gs[B][:, B] + sp.diags(self.prior[B])).tocsr()
        ncomp, lab = csgraph.connected_components(MBB, directed=False)
        order = np.argsort(lab, kind="stable")
        counts = np.bincount(lab, minlength=ncomp)
        starts = np.cumsum(counts) - counts
        ordered = MBB[order][:, order].tocsr()          # block diagonal, component by component
        rows, cols, vals = [], [], []
        for k in np.unique(counts):                      # the blocks of one size inverted together
            pos = starts[counts == k][:, None] + np.arange(k)        # (m, k) ordered positions
            pr = np.broadcast_to(pos[:, :, None], (pos.shape[0], k, k))
            pc = np.broadcast_to(pos[:, None, :], (pos.shape[0], k, k))
            blocks = np.asarray(ordered[pr.ravel(), pc.ravel()]).reshape(pr.shape)
            ix = order[pos]
            rows.append(np.broadcast_to(ix[:, :, None], pr.shape).ravel())
            cols.append(np.broadcast_to(ix[:, None, :], pr.shape).ravel())
            vals.append(np.linalg.inv(blocks).ravel())
        nbB = B.size
        self.Dinv = sp.csr_matrix((np.concatenate(vals) if vals else np.zeros(0),
                                   (np.concatenate(rows) if rows else np.zeros(0, int),
                                    np.concatenate(cols) if cols else np.zeros(0, int))),
                                  shape=(nbB, nbB))
        MBR = Gs[B][:, R].toarray()
        MRR = Gs[R][:, R].toarray() + np.diag(self.prior[R])
        self.DinvMBR = np.asarray(self.Dinv @ MBR)
        T = MRR - MBR.T @ self.DinvMBR
        self.Tinv = np.linalg.inv(T) if R.size else np.zeros((0, 0))
        FB = Gs[:, B]
        FR = Gs[:, R].toarray()
        self.FB = FB.tocsr()
        self.FW = FR - np.asarray(FB @ self.DinvMBR)  # G_{:,+} W
        # sparse parts
        self.SP1 = (self.FB @ self.Dinv @ self.FB.T).tocsr()  # F_B D^-1 F_B'
        SBB = Gs[B][:, B]
        self.SP2 = (self.FB @ self.Dinv @ SBB @ self.Dinv @ self.FB.T).tocsr()
        # S W (q+ x r) in (R, B) order: S[:, R] - S[:, B] D^-1 M_BR
        SR = Gs[R][:, R].toarray() - np.asarray(Gs[R][:, B] @ self.DinvMBR)
        SB = Gs[B][:, R].toarray() - np.asarray(SBB @ self.DinvMBR)
        WSW = SR - self.DinvMBR.T @ SB  # W' S W
        self.Lc = np.asarray(self.FB @ (self.Dinv @ SB)) @ self.Tinv  # F_B D^-1 (SW)_B T^-1
        self.Mid = self.Tinv @ WSW @ self.Tinv
        # tr(P^2) = n - 2 tr(M^-1 S) + tr((M^-1 S)^2)
        A1 = (self.Dinv @ Gs[B][:, np.concatenate([R, B])]).tocsr()  # rows B of pad(D^-1) S
        RB = np.concatenate([R, B])
        # W' S (r x q+) = S[R, :] - (D^-1 M_BR)' S[B, :], without densifying the B rows
        WtS = Gs[R][:, RB].toarray() - np.asarray(Gs[B][:, RB].T @ self.DinvMBR).T
        nR = R.size
        tr1 = float((self.Dinv.multiply(SBB.T)).sum()) + float(np.trace(self.Tinv @ WSW))
        A1full = sp.vstack([sp.csr_matrix((nR, nR + B.size)), A1]).tocsr()  # q+ x q+
        Wm = np.vstack([np.eye(nR), -self.DinvMBR])
        t_aa = float(A1full.multiply(A1full.T).sum())
        t_ab = float(np.trace(self.Tinv @ WtS @ np.asarray(A1full @ Wm)))
        TW = self.Tinv @ WSW
        t_bb = float(np.trace(TW @ TW))
        self.trP2 = float(self.n - 2.0 * tr1 + t_aa + 2.0 * t_ab + t_bb)

    def _gmg(self, ri: np.ndarray, ci: np.ndarray) -> np.ndarray:
        return (self.SP1[ri][:, ci].toarray()
                + self.FW[ri] @ self.Tinv @ self.FW[ci].T)

    def K(self, ri: np.ndarray, ci: np.ndarray) -> np.ndarray:
        return self.G[ri][:, ci].toarray() - self._gmg(ri, ci)

    def K2(self, ri: np.ndarray, ci: np.ndarray) -> np.ndarray:
        ysy = (self.SP2[ri][:, ci].toarray() + self.Lc[ri] @ self.FW[ci].T
               + self.FW[ri] @ self.Lc[ci].T + self.FW[ri] @ self.Mid @ self.FW[ci].T)
        return self.G[ri][:, ci].toarray() - 2.0 * self._gmg(ri, ci) + ysy

    def K2_trace(self, ri: np.ndarray, ci: np.ndarray) -> float:
        return float(np.trace(self.K2(ri, ci)))


def power_from_moments(effect: float, se: Any, df: Any, *, alpha: float, test: str,
                       alternative: str, normal: bool = False) -> Any:
    """Probability of a sign-correct rejection given the estimate's SE and df.

    The test rule's :meth:`~nlpower.powersim.rules.TestRule.power` (the one
    implementation; ``se`` and ``df`` may be arrays).  At ``effect == 0`` the
    probability of any rejection (the size).

    Examples
    --------
    >>> round(power_from_moments(0.1, 0.04, 20.0, alpha=0.05, test="satterthwaite",
    ...                          alternative="two-sided"), 4)
    0.6623
    """
    return get_test(test).power(effect, se, df, alpha=alpha, alternative=alternative,
                                normal=normal)


def analytic_power(
    design: CrossedDesign,
    params: Params,
    *,
    alpha: float = 0.05,
    test: RatingsTest = "satterthwaite",
    alternative: Alternative = "two-sided",
    method: AnalyticMethod = "auto",
    normal: bool = False,
) -> AnalyticPowerResult:
    """Power without simulation: noncentral t at the true parameters.

    Parameters
    ----------
    design : CrossedDesign
    params : LMMParams or MultiSystemParams
    alpha : float, default 0.05
    test : {"satterthwaite", "kenward-roger", "z", "lrt"}
        Which test's power to approximate (module docstring).
    alternative : {"two-sided", "greater", "less"}
    method : {"auto", "balanced", "information"}
        ``"auto"``: ``"balanced"`` for a fully crossed, paired 2-system design
        with :class:`~nlpower.params.LMMParams` (exact expected mean squares),
        else ``"information"``.
    normal : bool, default False
        For test ``"z"``: the pure normal approximation ``Phi(ncp - z)``
        instead of the noncentral t with the Satterthwaite df.

    Returns
    -------
    AnalyticPowerResult

    Notes
    -----
    Westfall, Kenny & Judd (2014) for the balanced case; the expected
    information generalisation is standard ML asymptotics (the df as in
    lmerTest, but with expected instead of observed information).  Agrees
    with the simulated power of the fast path within Monte Carlo error on
    balanced designs (``tests/power/test_analytic.py``, ``docs/power.md``).

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> res = analytic_power(CrossedDesign(10, 100), presets.high_variance(0.1))
    >>> 0 < res.power < 1
    True
    """
    design, params = check_design_params(design, params)
    alpha, test, alternative = check_test_options(alpha, test, alternative)
    method = check_choice("method", method, AnalyticMethod)
    return analytic_moments(design, params, alpha=alpha, test=test, alternative=alternative,
                            method=method, normal=bool(normal))


def analytic_moments(design: CrossedDesign, params: Params, *, alpha: float, test: str,
                     alternative: str, method: str = "auto", normal: bool = False
                     ) -> AnalyticPowerResult:
    """:func:`analytic_power` on validated arguments (what ``power(method="analytic")`` calls)."""
    rule = get_test(test)
    if rule.analytic is None:
        raise InputError(
            f"test={test!r} has no analytic approximation. Use power(..., test={test!r}) "
            f"(simulation), or test={rule.approximate().name!r} for its approximation."
        )
    balanced_ok = design.is_balanced_crossed and isinstance(params, LMMParams) and \
        (params.coding != "treatment" or (params.sd_worker_slope == 0 and params.sd_item_slope == 0))
    if method == "auto":
        method = "balanced" if balanced_ok else "information"
    if method == "balanced" and not balanced_ok:
        raise DesignError(
            f"method='balanced' needs a fully crossed, paired design with 2 systems and LMMParams "
            f"in 'sum' or 'half' coding; got {design!r} with {type(params).__name__}"
            f"{'' if not isinstance(params, LMMParams) else ' coding=' + repr(params.coding)}. "
            "Use method='information' (any design) or method='auto'."
        )
    effect = effect_of(params)
    if method == "balanced":
        assert isinstance(params, LMMParams)
        var, df = balanced_moments(design, params)
        # on the +/-1 scale; rescale to the parameters' coding
        se = math.sqrt(var) * _coding_scale(params)
    else:
        # the df enters the power only through the noncentral t (TestRule.power)
        uses_df = rule.analytic == "nct" and (rule.reference == "t" or not normal)
        var, df = information_moments(design, params, with_df=uses_df)
        se = math.sqrt(var)
    pw = power_from_moments(effect, se, df, alpha=alpha, test=test, alternative=alternative,
                            normal=normal)
    return AnalyticPowerResult(
        power=pw, ncp=effect / se, df=df if rule.statistic == "wald" else math.inf, se=se, effect=effect,
        coding=params.coding, test=test, alpha=alpha, alternative=alternative, method=method,
        design=design,
    )


def _coding_scale(params: LMMParams) -> float:
    """Factor from the +/-1 scale to the parameters' coding (effect_coding = scale * effect_sum)."""
    lo, hi = params.x_values
    return 2.0 / (hi - lo)


__all__ = ["analytic_moments", "analytic_power", "balanced_moments", "information_moments",
           "power_from_moments"]
