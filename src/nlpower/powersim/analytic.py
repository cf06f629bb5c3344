"""Analytic power: noncentral t at the true parameters (no simulation).

Two methods, both returning :class:`~nlpower.powersim.result.AnalyticPower`:

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
    ``V^-1 = (I - Z (s2 G^-1 + Z'Z)^-1 Z') / s2``; only q x q matrices are
    formed, q = number of random effects), and the Satterthwaite df from the
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

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy import stats

from ..design import CrossedDesign
from ..params import LMMParams
from .fastpath import stratum_eigenvalues
from .models import Params, build_model, check_design_params, check_test_options, effect_of
from .result import AnalyticPower

METHODS = ("auto", "balanced", "information")


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


def information_moments(design: CrossedDesign, params: Params) -> tuple[float, float]:
    """(Var(estimate), Satterthwaite df) from the expected information, any design.

    The estimate is the tested fixed effect of :func:`~nlpower.powersim.models.build_model`
    in the parameters' coding.  Cost: O(q^3) for q random effects (dense
    Woodbury; single-threaded BLAS, which is faster on a shared machine).
    """
    from ..lmm.native._blas import single_threaded

    with single_threaded(True):
        return _information_moments(design, params)


def _information_moments(design: CrossedDesign, params: Params) -> tuple[float, float]:
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
        sds = _term_sds(design, params, t.group, tuple(t.cnames))
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
    G = np.asarray((A.T @ A).todense())
    # positive-variance columns carry the prior G (diagonal here: independent effects)
    gdiag = np.zeros(offs[-1])
    for ids, cov in zip(term_cols, term_cov, strict=True):
        for k, b in enumerate(ids):
            gdiag[offs[b]:offs[b + 1]] = cov[k, k]
    plus = np.flatnonzero(gdiag > 0)
    zi = p + plus  # indices into A's columns
    if plus.size:
        S = G[np.ix_(zi, zi)]
        M = S + np.diag(s2 / gdiag[plus])
        cf = sla.cho_factor(M)
        GA = G[:, zi]  # (p+q, q+)
        MiGA = sla.cho_solve(cf, GA.T)  # q+ x (p+q)
        K = G - GA @ MiGA  # A' P A
        K2 = G - 2.0 * GA @ MiGA + MiGA.T @ S @ MiGA  # A' P^2 A
        MiS = sla.cho_solve(cf, S)
        trP2 = n - 2.0 * np.trace(MiS) + float(np.sum(MiS * MiS.T))
    else:
        K = G
        K2 = G
        trP2 = float(n)
    KX = K[:p, :p] / s2
    C = np.linalg.inv(KX)
    j = model.effect_index
    var = float(C[j, j])
    # variance parameters: sigma2, then the positive variances and the covariances between them
    Kzz = K[p:, p:]
    K2zz = K2[p:, p:]
    KzX = K[p:, :p]
    params_list: list[tuple[int, int]] = []  # (block a, block b): dV = Z_a Z_b' + Z_b Z_a' (a == b: Z_a Z_a')
    for ids, cov in zip(term_cols, term_cov, strict=True):
        pos = [b for k, b in enumerate(ids) if cov[k, k] > 0]
        for x_ in range(len(pos)):
            for y_ in range(x_, len(pos)):
                params_list.append((pos[x_], pos[y_]))

    def sl(b: int) -> slice:
        return slice(int(offs[b]), int(offs[b + 1]))

    def terms(ab: tuple[int, int]) -> list[tuple[int, int]]:
        a, b = ab
        return [(a, a)] if a == b else [(a, b), (b, a)]

    m = 1 + len(params_list)
    info = np.zeros((m, m))
    grad = np.zeros(m)
    info[0, 0] = 0.5 * trP2 / s2**2
    XP2X = K2[:p, :p] / s2**2
    grad[0] = float((C @ XP2X @ C)[j, j])
    for k, ab in enumerate(params_list, start=1):
        # tr(V^-1 V^-1 dV_k) = tr(Z_b' P^2 Z_a) / s2^2 summed over the symmetric terms
        info[0, k] = info[k, 0] = 0.5 * sum(float(np.trace(K2zz[sl(b), sl(a)])) for a, b in terms(ab)) / s2**2
        D = sum((KzX[sl(a)].T @ KzX[sl(b)] for a, b in terms(ab)), np.zeros((p, p))) / s2**2
        grad[k] = float((C @ D @ C)[j, j])
        for l_, cd in enumerate(params_list[k - 1:], start=k):
            tot = 0.0
            for a, b in terms(ab):
                for c, d in terms(cd):
                    # tr(P Z_a Z_b' P Z_c Z_d') = sum(K[b, c] * K[a, d])
                    tot += float(np.sum(Kzz[sl(b), sl(c)] * Kzz[sl(a), sl(d)]))
            info[k, l_] = info[l_, k] = 0.5 * tot / s2**2
    try:
        q = float(grad @ np.linalg.solve(info, grad))
    except np.linalg.LinAlgError:
        q = float(grad @ np.linalg.pinv(info) @ grad)
    df = 2.0 * var * var / q if q > 0 else math.inf
    return var, df


def _term_sds(design: CrossedDesign, params: Params, group: str, cnames: tuple[str, ...]) -> np.ndarray:
    from .models import _true_sds

    return np.asarray(_true_sds(design, params, group, cnames), dtype=float)


def power_from_moments(effect: float, se: float, df: float, *, alpha: float, test: str,
                       alternative: str, normal: bool = False) -> float:
    """Probability of a sign-correct rejection given the estimate's SE and df.

    At ``effect == 0`` the probability of any rejection (the size).
    """
    ncp = effect / se
    two = alternative == "two-sided"
    q = 1.0 - alpha / 2.0 if two else 1.0 - alpha
    use_t = test == "satterthwaite" or (test == "z" and not normal)
    if test == "satterthwaite":
        crit = float(stats.t.ppf(q, df))
    else:
        crit = float(stats.norm.ppf(q))

    def upper(nc: float) -> float:  # P(T > crit)
        if use_t and math.isfinite(df):
            return float(stats.nct.sf(crit, df, nc)) if nc != 0 else float(stats.t.sf(crit, df))
        return float(stats.norm.sf(crit - nc))

    if effect == 0:
        if two:
            return 2.0 * upper(0.0)
        return upper(0.0)
    sign = 1.0 if effect > 0 else -1.0
    allowed = two or (alternative == "greater" and sign > 0) or (alternative == "less" and sign < 0)
    if not allowed:
        return 0.0
    return upper(abs(ncp))


def analytic_power(
    design: CrossedDesign,
    params: Params,
    *,
    alpha: float = 0.05,
    test: str = "satterthwaite",
    alternative: str = "two-sided",
    method: str = "auto",
    normal: bool = False,
) -> AnalyticPower:
    """Power without simulation: noncentral t at the true parameters.

    Parameters
    ----------
    design : CrossedDesign
    params : LMMParams or MultiSystemParams
    alpha : float, default 0.05
    test : {"satterthwaite", "z", "lrt"}
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
    AnalyticPower

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
    from .._validation import check_choice

    method = check_choice("method", method, METHODS)
    balanced_ok = design.is_balanced_crossed and isinstance(params, LMMParams) and \
        (params.coding != "treatment" or (params.sd_worker_slope == 0 and params.sd_item_slope == 0))
    if method == "auto":
        method = "balanced" if balanced_ok else "information"
    if method == "balanced" and not balanced_ok:
        from ..errors import DesignError

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
        var, df = information_moments(design, params)
        se = math.sqrt(var)
    pw = power_from_moments(effect, se, df, alpha=alpha, test=test, alternative=alternative,
                            normal=normal)
    return AnalyticPower(
        power=pw, ncp=effect / se, df=df if test != "lrt" else math.inf, se=se, effect=effect,
        coding=params.coding, test=test, alpha=alpha, alternative=alternative, method=method,
        design=repr(design),
    )


def _coding_scale(params: LMMParams) -> float:
    """Factor from the +/-1 scale to the parameters' coding (effect_coding = scale * effect_sum)."""
    lo, hi = params.x_values
    return 2.0 / (hi - lo)


__all__ = ["METHODS", "analytic_power", "balanced_moments", "information_moments",
           "power_from_moments"]
