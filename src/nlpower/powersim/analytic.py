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
    the factor with most levels so that only sparse and low-rank products are
    formed), and the Satterthwaite df from the expected (Fisher) information
    of the variance parameters, ``I_kl = tr(V^-1 dV_k V^-1 dV_l) / 2`` (ML):
    every trace is a Frobenius product of blocks of ``(s2 G^-1 + Z'Z)^-1``,
    each a sparse part plus a low-rank part, so the cost grows with the
    ratings and the cube of the smaller factor's columns, never with the
    square of the items.  On a balanced design it gives exactly the same variance
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
import threading
from collections import OrderedDict
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
from .models import DesignModel, Params, build_model, effect_of, true_sds
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
    grouping factor with the most levels (``_SchurInverse``): sparse and
    low-rank products only, e.g. ~0.1 s for 9 000 ratings (50 workers,
    1 500 items, 3 workers per item, with the df).
    """
    with single_threaded(True):
        return _information_moments(design, params, with_df)


def _information_moments(design: CrossedDesign, params: Params, with_df: bool = True
                         ) -> tuple[float, float]:
    st = _design_structure(design, params)
    model, X = st.model, st.X
    s2 = params.sigma**2
    # the positive-variance random-effects columns, one block per (term, column): dV of a
    # covariance parameter is Z_a Z_b' + Z_b Z_a' (a == b: Z_a Z_a')
    cols: list[int] = []
    lam: list[float] = []
    params_list: list[tuple[int, int]] = []
    for t, first in zip(model.spec.re_terms, st.term_starts, strict=True):
        sds = true_sds(design, params, t.group, tuple(t.cnames))
        pos = []
        for c in range(t.q):
            if sds[c] > 0:
                pos.append(len(cols))
                cols.append(first + c)
                lam.append(s2 / float(sds[c]) ** 2)
        params_list += [(pos[a], pos[b]) for a in range(len(pos)) for b in range(a, len(pos))]
    inv = _SchurInverse(st.schur(tuple(cols)), np.array(lam, dtype=float))
    ZtX = inv.st.ZtX
    E = inv.solve(ZtX)                     # M^-1 Z'X
    C = np.linalg.inv((st.XtX - ZtX.T @ E) / s2)       # (X' V^-1 X)^-1
    j = model.effect_index
    var = float(C[j, j])
    if not with_df:
        return var, math.inf
    info, grad = _df_information(inv, E, C, j, X, ZtX, params_list, s2)
    try:
        q = float(grad @ np.linalg.solve(info, grad))
    except np.linalg.LinAlgError:
        q = float(grad @ np.linalg.pinv(info) @ grad)
    df = 2.0 * var * var / q if q > 0 else math.inf
    return var, df


def _params_key(params: Params) -> tuple[Any, ...]:
    """What of ``params`` the design's structure depends on (the analysis model's columns)."""
    if isinstance(params, LMMParams):
        return ("lmm", *(float(v) for v in params.x_values))
    return ("multi", len(params.effects) + 1)


#: the structures of the designs used last (:func:`_design_structure`)
_STRUCTURES: OrderedDict[tuple[Any, ...], _DesignStructure] = OrderedDict()
_N_STRUCTURES = 4
_STRUCTURES_LOCK = threading.Lock()


def _design_structure(design: CrossedDesign, params: Params) -> _DesignStructure:
    """The structure of ``design`` shared by every parameter vector (assurance draws).

    A parameter vector only changes the variances (``lam``); the analysis
    model, its random-effects columns and their cross-products depend on the
    design and the coding alone (:func:`_params_key`), so they are built once
    per design (STYLE 2) and kept for the last few designs.
    """
    key = (design, *_params_key(params))
    with _STRUCTURES_LOCK:
        st = _STRUCTURES.get(key)
        if st is not None:
            _STRUCTURES.move_to_end(key)
            return st
    st = _DesignStructure(build_model(design, params))
    with _STRUCTURES_LOCK:
        _STRUCTURES[key] = st
        while len(_STRUCTURES) > _N_STRUCTURES:
            _STRUCTURES.popitem(last=False)
    return st


class _DesignStructure:
    """The analysis model of one design and its Schur structures, one per set of positive columns."""

    def __init__(self, model: DesignModel) -> None:
        self.model = model
        spec = model.spec
        self.X = np.asarray(spec.X, dtype=float)
        self.n = self.X.shape[0]
        self.XtX = self.X.T @ self.X
        self.columns: list[tuple[str, np.ndarray, np.ndarray, int]] = []
        self.term_starts: list[int] = []
        for t in spec.re_terms:
            self.term_starts.append(len(self.columns))
            self.columns += [(t.group, np.asarray(t.codes), np.asarray(t.Z[:, c], dtype=float),
                              t.n_levels) for c in range(t.q)]
        self._schur: dict[tuple[int, ...], _SchurStructure] = {}

    def schur(self, cols: tuple[int, ...]) -> _SchurStructure:
        if cols not in self._schur:
            self._schur[cols] = _SchurStructure([self.columns[c] for c in cols], self.n, self.X)
        return self._schur[cols]


def _df_information(inv: _SchurInverse, E: np.ndarray, C: np.ndarray, j: int, X: np.ndarray,
                    ZtX: np.ndarray, params_list: list[tuple[int, int]], s2: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Fisher information of (sigma^2, covariance parameters) and the gradient of Var(estimate).

    With ``Q = M^-1`` in blocks ``Q_xy`` and ``Lambda = s2 G^-1`` (``lam_x`` on
    block ``x``), ``Z'PZ = Lambda - Lambda Q Lambda`` and
    ``PZ = Z Q Lambda``, so every trace is a Frobenius product of blocks of
    ``Q`` (:meth:`_SchurInverse.frob`)::

        tr(P^2)          = n - q + sum_xy lam_x lam_y <Q_xy, Q_xy>
        tr(Z_b' P^2 Z_a) = lam_a lam_b (tr Q_ba - sum_c lam_c <Q_bc, Q_ac>)
        tr(P Z_a Z_b' P Z_c Z_d') = <K_bc, K_ad>,  K_xy = lam_x [x == y] I - lam_x lam_y Q_xy
    """
    lam = inv.lam
    nb = len(lam)
    F, tr, size = inv.frob, inv.trace, inv.size

    def kk(b: int, c: int, a: int, d: int) -> float:
        out = lam[b] * lam[c] * lam[a] * lam[d] * F(b, c, a, d)
        if b == c:
            out -= lam[b] * lam[a] * lam[d] * tr(a, d)
        if a == d:
            out -= lam[a] * lam[b] * lam[c] * tr(b, c)
        if b == c and a == d:
            out += lam[a] * lam[b] * size(a)
        return out

    def terms(ab: tuple[int, int]) -> list[tuple[int, int]]:
        a, b = ab
        return [(a, a)] if a == b else [(a, b), (b, a)]

    def tr_p2z(b: int, a: int) -> float:
        return lam[a] * lam[b] * (tr(b, a) - sum(lam[c] * F(b, c, a, c) for c in range(nb)))

    m = 1 + len(params_list)
    info = np.zeros((m, m))
    grad = np.zeros(m)
    trP2 = inv.n - inv.q + sum(lam[x] * lam[y] * F(x, y, x, y) for x in range(nb)
                               for y in range(nb))
    info[0, 0] = 0.5 * trP2 / s2**2
    XP2X = (X.T @ X - ZtX.T @ E - E.T @ (inv.lam_cols[:, None] * E)) / s2**2
    grad[0] = float((C @ XP2X @ C)[j, j])
    KzX = [lam[x] * E[inv.offs[x]:inv.offs[x + 1]] for x in range(nb)]    # Z_x' P X
    for k, ab in enumerate(params_list, start=1):
        info[0, k] = info[k, 0] = 0.5 * sum(tr_p2z(b, a) for a, b in terms(ab)) / s2**2
        D = sum((KzX[a].T @ KzX[b] for a, b in terms(ab)), np.zeros_like(C)) / s2**2
        grad[k] = float((C @ D @ C)[j, j])
        for l_, cd in enumerate(params_list[k - 1:], start=k):
            tot = sum(kk(b, c, a, d) for a, b in terms(ab) for c, d in terms(cd))
            info[k, l_] = info[l_, k] = 0.5 * tot / s2**2
    return info, grad


class _SchurStructure:
    """What :class:`_SchurInverse` needs of the design alone (no variances): built once per design.

    ``blocks`` are the columns of one random-effects column of a term (one
    per level): ``(group, codes, z, n_levels)`` with ``z`` the column's value
    on each observation.  Holds ``Z``, ``Z'X``, the per-level cross-products
    of the big factor's columns (``D`` without ``Lambda``), ``M_BR`` and
    ``Z_R'Z_R``.
    """

    def __init__(self, blocks: list[tuple[str, np.ndarray, np.ndarray, int]], n: int,
                 X: np.ndarray):
        self.n = n
        nb = self.nb = len(blocks)
        self.sizes = sizes = [b[3] for b in blocks]
        self.offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.q = int(self.offs[-1])
        rows = np.arange(n)
        self.Z = sp.hstack([sp.csc_matrix((z, (rows, codes)), shape=(n, k))
                            for _, codes, z, k in blocks], format="csc") if blocks \
            else sp.csc_matrix((n, 0))
        self.ZtX = np.asarray(self.Z.T @ X)
        levels = {b[0]: b[3] for b in blocks}
        big = max(levels, key=lambda g: levels[g]) if levels else None
        self.bb = bb = [x for x in range(nb) if blocks[x][0] == big]
        self.rest = rest = [x for x in range(nb) if x not in bb]
        self.rcols = rcols = np.concatenate([np.arange(self.offs[x], self.offs[x + 1])
                                             for x in rest]) if rest else np.zeros(0, dtype=int)
        r = self.r = rcols.size
        ZR = self.Z[:, rcols]
        self.m0 = np.zeros((0, 0, 0))
        if bb:
            codes, n_lev = blocks[bb[0]][1], blocks[bb[0]][3]
            m = np.zeros((n_lev, len(bb), len(bb)))
            for a, xa in enumerate(bb):
                for c, xc in enumerate(bb[a:], start=a):
                    m[:, a, c] = m[:, c, a] = np.bincount(
                        codes, weights=blocks[xa][2] * blocks[xc][2], minlength=n_lev)
            self.m0 = m
        self.MBR = {x: (self.Z[:, self._sl(x)].T @ ZR).tocsr() for x in bb}
        self.parts = {x: sp.csr_matrix(sp.eye(self.size(x), r,
                                              k=int(np.searchsorted(rcols, self.offs[x]))))
                      for x in rest}
        self.ZRtZR = (ZR.T @ ZR).toarray()
        self.components: tuple[np.ndarray, list[np.ndarray]] | None = None

    def size(self, x: int) -> int:
        return int(self.offs[x + 1] - self.offs[x])

    def _sl(self, x: int) -> slice:
        return slice(int(self.offs[x]), int(self.offs[x + 1]))


class _SchurInverse:
    """``Q = M^-1`` for ``M = Lambda + Z'Z`` (the positive-variance random-effect columns).

    ``st`` holds the blocks of :class:`_SchurStructure`, ``lam`` their
    ``s2 / variance``.  The blocks of the
    grouping factor with the most levels (``B``) give a ``D = M_BB`` that is
    block diagonal by level (an observation belongs to one level), so ``D^-1``
    is a small matrix per level and each of its blocks ``(x, y)`` a diagonal.
    With the rest ``R`` (few columns), ``T = M_RR - M_RB D^-1 M_BR`` and
    ``L = [I; -D^-1 M_BR]`` (rows in column order)::

        Q = pad(D^-1) + L T^-1 L'

    so a block ``Q_xy`` is a diagonal plus rank ``|R|``.  ``L`` is sparse (a
    level of the big factor meets few columns of ``R``: an item its ``k``
    workers), so after one inverse of ``T`` the Frobenius product of two
    blocks costs ``O(nnz(L) |R|)`` (Gram matrices ``L_x' L_y``), never a dense
    block of items by items.
    """

    def __init__(self, st: _SchurStructure, lam: np.ndarray):
        self.st = st
        self.n = st.n
        nb = st.nb
        self.lam = lam
        self.offs, self.q = st.offs, st.q
        self.lam_cols = np.repeat(self.lam, st.sizes)
        self.Z = st.Z
        bb, rcols, r = st.bb, st.rcols, st.r
        # D = M_BB, one (|bb| x |bb|) matrix per level of the big factor
        if bb:
            m = st.m0.copy()
            for a, xa in enumerate(bb):
                m[:, a, a] += self.lam[xa]
            dinv = np.linalg.inv(m)
        self.dd = {(xa, xc): dinv[:, a, c] for a, xa in enumerate(bb)
                   for c, xc in enumerate(bb)}
        MBR = st.MBR
        parts = dict(st.parts)
        T = st.ZRtZR + np.diag(self.lam_cols[rcols])
        for a, xa in enumerate(bb):              # rows of B: -D^-1 M_BR
            la = -sum((sp.diags(dinv[:, a, c]) @ MBR[xc] for c, xc in enumerate(bb)),
                      sp.csr_matrix((self.size(xa), r)))
            parts[xa] = la.tocsr()
            T += (MBR[xa].T @ la).toarray()
        self.Tinv = _inverse_by_components(T, st)
        self._Lx = [parts[x] for x in range(nb)]
        self.L = sp.vstack(self._Lx, format="csr") if nb else sp.csr_matrix((0, 0))
        self._gram: dict[tuple[int, int], np.ndarray] = {}
        self._frob: dict[tuple[int, int, int, int], float] = {}
        self._LT: dict[int, np.ndarray] = {}
        self._rowdot: dict[tuple[int, int], np.ndarray] = {}

    def Zt(self, X: np.ndarray) -> np.ndarray:
        """``Z'X``."""
        return np.asarray(self.Z.T @ X)

    def solve(self, v: np.ndarray) -> np.ndarray:
        """``M^-1 v``."""
        out = np.asarray(self.L @ (self.Tinv @ np.asarray(self.L.T @ v)))
        for (x, y), d in self.dd.items():
            out[self._sl(x)] += d[:, None] * v[self._sl(y)]
        return out

    def size(self, x: int) -> int:
        return int(self.offs[x + 1] - self.offs[x])

    def _sl(self, x: int) -> slice:
        return slice(int(self.offs[x]), int(self.offs[x + 1]))

    def _lt(self, x: int) -> np.ndarray:
        """``L_x T^-1``."""
        if x not in self._LT:
            self._LT[x] = np.asarray(self._Lx[x] @ self.Tinv)
        return self._LT[x]

    def _tg(self, x: int, y: int) -> np.ndarray:
        """``T^-1 L_x' L_y``."""
        if (x, y) not in self._gram:
            self._gram[(x, y)] = np.asarray(self._Lx[y].T @ self._lt(x)).T
        return self._gram[(x, y)]

    def _diag(self, x: int, y: int) -> np.ndarray:
        """The diagonal of ``L_x T^-1 L_y'`` (blocks of one size)."""
        if (x, y) not in self._rowdot:
            self._rowdot[(x, y)] = np.asarray(self._Lx[y].multiply(self._lt(x)).sum(axis=1)
                                              ).ravel()
        return self._rowdot[(x, y)]

    def trace(self, x: int, y: int) -> float:
        """``tr(Q_xy)`` (blocks of one size)."""
        d = self.dd.get((x, y))
        return float(self._diag(x, y).sum() + (0.0 if d is None else d.sum()))

    def frob(self, x: int, y: int, u: int, v: int) -> float:
        """``<Q_xy, Q_uv>`` (blocks of one shape)."""
        key = min((x, y, u, v), (u, v, x, y), (y, x, v, u), (v, u, y, x))
        if key not in self._frob:
            d1, d2 = self.dd.get((x, y)), self.dd.get((u, v))
            t = 0.0
            if d1 is not None:
                t += float(d1 @ self._diag(u, v)) + (0.0 if d2 is None else float(d1 @ d2))
            if d2 is not None:
                t += float(d2 @ self._diag(x, y))
            # <L_x T L_y', L_u T L_v'> = tr(T L_x' L_u T L_v' L_y)
            t += float(np.sum(self._tg(x, u) * self._tg(v, y).T))
            self._frob[key] = t
        return self._frob[key]


def _inverse_by_components(T: np.ndarray, st: _SchurStructure | None = None) -> np.ndarray:
    """Inverse of a symmetric matrix, one connected component of its nonzeros at a time.

    With a +/-1 (or +/-0.5) coding on a paired design the intercept and slope
    columns never meet, so ``T`` falls into two blocks (4x less work); with
    many more workers than items most items share no worker, and ``T`` falls
    into hundreds of small blocks.  Components of one size are inverted as a
    stack (one ``inv`` call; LAPACK still inverts each block alone, so the
    numbers are those of one call per block).  ``st`` keeps the components
    of the last nonzero pattern seen (assurance draws share it).
    """
    out = np.zeros_like(T)
    if T.size == 0:
        return out
    pattern = T != 0
    cached = None if st is None else st.components
    if cached is not None and np.array_equal(cached[0], pattern):
        groups = cached[1]
    else:
        ncomp, lab = csgraph.connected_components(sp.csr_matrix(pattern), directed=False)
        order = np.argsort(lab, kind="stable")
        members = np.split(order, np.flatnonzero(np.diff(lab[order])) + 1)
        by_size: dict[int, list[np.ndarray]] = {}
        for ix in members:
            by_size.setdefault(ix.size, []).append(ix)
        groups = [np.stack(v) for v in by_size.values()]
        if st is not None:
            st.components = (pattern, groups)
    for ix in groups:                       # (n_components, size): rows of each component
        blocks = T[ix[:, :, None], ix[:, None, :]]
        out[ix[:, :, None], ix[:, None, :]] = np.linalg.inv(blocks)
    return 0.5 * (out + out.T)


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
