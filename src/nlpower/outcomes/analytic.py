"""Analytic power for Likert (clmm) and repeated head-to-head (glmer) designs: no simulation.

The Gaussian tier (:mod:`nlpower.powersim.analytic`) has ``Var(beta_hat) =
(X' V^-1 X)^-1`` at the true parameters.  For the non-Gaussian analyses the
same quantity comes from the expected information of the Laplace
approximation that ``glmer`` and ``clmm`` maximise (the "exemplary data"
approach): with ``phi`` the fixed effects (``clmm``: the ``K - 1``
thresholds and ``beta``; ``glmer``: intercept and position) and ``u`` the
random effects, each observation's conditional likelihood depends on ``u``
only through its location ``s_i = x_i' beta + z_i' u``, and the joint
(h-likelihood) expected information is::

    [ A      C' Z          ]      A = sum_i E[score_phi score_phi'],   C_i = E[score_phi * score_s]
    [ Z' C   Z' W Z + G^-1 ]      w_i = E[score_s^2]  (the working weight)

The information for ``phi`` is the Schur complement ``A - C' Z (Z' W Z +
G^-1)^-1 Z' C`` -- the Hessian of the Laplace deviance in ``phi`` -- and the
variance of the tested coefficient is its inverse's diagonal entry.  For a
GLM (``C = W X``, ``A = X' W X``) this is Woodbury's ``X' (W^-1 + Z G Z')^-1
X``, the Gaussian tier's formula with ``sigma^2 I`` replaced by ``W^-1``.
The per-observation weights are, for the binary model, ``w = mu (1 - mu) (1
- p_draw)`` (a draw has prior weight 0) and, for the cumulative link,
``w = sum_k (dp_k/ds)^2 / p_k`` over the ``K`` categories (with ``A`` and ``C``
from the derivatives in the thresholds).

``weights``: where the per-observation expectations are evaluated.

``"mode"``
    At the random effects' mean, ``u = 0`` (penalised quasi-likelihood).
``"marginal"``
    Averaged over ``z_i' u ~ N(0, z_i' G z_i)`` by Gauss-Hermite quadrature.
``"shrunk"`` (default)
    Averaged over the spread of the conditional modes that ``glmer`` /
    ``clmm`` evaluate their Hessian at: ``z_i' u_hat`` with variance
    ``z_i' (G - M^-1) z_i``, ``M = Z' W Z + G^-1`` (the linearised
    ``Var(u_hat)``), iterated to a fixed point.  Between the two: with many
    ratings per level it approaches ``"marginal"``, with few it approaches
    ``"mode"``.

The coefficients are conditional (subject-specific): ``glmer``'s intercept
is the logit for a typical worker and item, and the information above is
for those coefficients, not for population-averaged ones.  Power counts
sign-correct rejections of the Wald z (as the Gaussian tier counts; the size
at effect 0): by default with the SE treated as estimated from ML variance
parameters (noncentral t with the working model's Satterthwaite df, critical
value shrunk by the first-order ML bias: :func:`estimated_variance`), or
with the normal reference ``Phi(|beta| / SE - z_{1 - alpha/2})``
(``reference="normal"``).  Accuracy against simulation:
``docs/power.md``, "Analytic approximations for Likert and head-to-head
designs" (``benchmarks/analytic_outcomes.py``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Literal, TypeAlias

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy import special, stats

from .._choices import Alternative, check_choice
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_real
from ..design import CrossedDesign
from ..errors import DesignError, InputError
from ..powersim.models import build_model, true_sds
from ..powersim.options import power_options
from ..powersim.result import AnalyticPowerResult, PowerResult
from ..powersim.summary import analytic_power_result
from .headtohead import HeadToHeadParams, _pairs
from .likert import LikertParams

__all__ = ["AnalyticWeights", "analytic_outcome_power", "analytic_outcome_result",
           "estimated_variance", "fixed_information", "outcome_se", "satterthwaite_df"]

#: Where the per-observation expected information is evaluated (module docstring).
AnalyticWeights: TypeAlias = Literal["shrunk", "mode", "marginal"]
_WEIGHTS = ("shrunk", "mode", "marginal")

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(24)
_GH_W = _GH_W / _GH_W.sum()
#: Largest number of random-effect columns handled with a dense ``M`` (``"shrunk"`` needs ``M^-1``).
_DENSE_MAX = 6000


def fixed_information(A: np.ndarray, C: np.ndarray, w: np.ndarray, Z: sp.csr_matrix,
                      g: np.ndarray) -> np.ndarray:
    """``A - C' Z (Z' diag(w) Z + diag(1/g))^-1 Z' C``: the information for the fixed effects.

    ``A`` (p x p) is the fixed effects' expected information given the random
    effects, ``C`` (n x p) each observation's cross information between the
    fixed effects and its location, ``w`` (n) the location's information,
    ``Z`` (n x q) the random-effect columns with variances ``g > 0`` (q).

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), [-1.0, 1.0, -1.0, 1.0]])
    >>> Z = sp.csr_matrix(np.array([[1.0, 0], [1, 0], [0, 1], [0, 1]]))
    >>> w = np.full(4, 1.0)         # Gaussian, sigma = 1
    >>> info = fixed_information(X.T @ X, X, w, Z, np.array([1.0, 1.0]))
    >>> round(float(np.linalg.inv(info)[0, 0]), 4)      # (1 + 2 * 1) / 4: cluster means
    0.75
    """
    M = _precision(w, Z, g)
    ZC = np.asarray(Z.T @ C)
    if ZC.shape[0] == 0:
        return A
    if M.shape[0] <= _DENSE_MAX:
        sol = la.cho_solve(la.cho_factor(M.toarray()), ZC)
    else:
        sol = sp.linalg.splu(M.tocsc()).solve(ZC)
    return A - ZC.T @ sol


def _precision(w: np.ndarray, Z: sp.csr_matrix, g: np.ndarray) -> sp.csr_matrix:
    return (Z.T @ sp.diags(w) @ Z + sp.diags(1.0 / g)).tocsr()


def _shift_variance(w: np.ndarray, Z: sp.csr_matrix, g: np.ndarray, how: str) -> np.ndarray:
    """Variance of each observation's random location at which the information is averaged."""
    n = Z.shape[0]
    if how == "mode" or Z.shape[1] == 0:
        return np.zeros(n)
    prior = np.asarray(Z.multiply(Z) @ g).ravel()           # z_i' G z_i
    if how == "marginal":
        return prior
    if Z.shape[1] > _DENSE_MAX:
        raise DesignError(f"weights='shrunk' needs the inverse of a {Z.shape[1]}-column random-"
                          f"effects precision (at most {_DENSE_MAX}); use weights='mode' or "
                          "'marginal' for this design.")
    Minv = la.cho_solve(la.cho_factor(_precision(w, Z, g).toarray()), np.eye(Z.shape[1]))
    post = np.asarray((Z @ sp.csr_matrix(Minv)).multiply(Z).sum(axis=1)).ravel()   # z_i' M^-1 z_i
    return np.maximum(prior - post, 0.0)


def _average(blocks: Any, base: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, C, w)`` averaged over ``s = base + sqrt(v) * N(0, 1)`` (Gauss-Hermite)."""
    if not np.any(v > 0):
        return blocks(base)
    sd = np.sqrt(v)
    out = None
    for node, wt in zip(_GH_X, _GH_W, strict=True):
        A, C, w = blocks(base + sd * node)
        out = (A * wt, C * wt, w * wt) if out is None else \
            (out[0] + A * wt, out[1] + C * wt, out[2] + w * wt)
    assert out is not None
    return out


def _solve_information(blocks: Any, base: np.ndarray, Z: sp.csr_matrix, g: np.ndarray,
                       how: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, C, w)`` at the chosen weights (``"shrunk"``: iterated to its fixed point)."""
    v = _shift_variance(np.zeros(0), Z, g, how) if how != "shrunk" else np.zeros(Z.shape[0])
    A, C, w = _average(blocks, base, v)
    if how == "shrunk" and Z.shape[1]:
        for _ in range(50):
            v_new = _shift_variance(w, Z, g, how)
            done = np.max(np.abs(v_new - v)) < 1e-6 * max(1.0, float(np.max(v_new)))
            v = v_new
            A, C, w = _average(blocks, base, v)
            if done:
                break
    return A, C, w


def satterthwaite_df(A: np.ndarray, C: np.ndarray, w: np.ndarray, Z: sp.csr_matrix,
                     g: np.ndarray, term: np.ndarray, j: int) -> float:
    """Satterthwaite df of ``Var(phi_hat_j)`` from the working model's variance-parameter information.

    :func:`estimated_variance` without the ML bias.
    """
    return estimated_variance(A, C, w, Z, g, term, j)[1]


def estimated_variance(A: np.ndarray, C: np.ndarray, w: np.ndarray, Z: sp.csr_matrix,
                       g: np.ndarray, term: np.ndarray, j: int) -> tuple[float, float, float]:
    """``(Var, df, Var_ML)``: the estimate's variance and how its estimate (the squared SE) behaves.

    The working model is Gaussian with covariance ``V = W^-1 + sum_k theta_k
    Z_k Z_k'`` (``theta_k`` the variance of term ``k``, ``term`` each column's
    term): ``df = 2 Var^2 / (grad' I_theta^-1 grad)`` with the ML information
    ``I_kl = tr(V^-1 Z_k Z_k' V^-1 Z_l Z_l') / 2 = ||Z_k' V^-1 Z_l||_F^2 / 2``
    (``Z' V^-1 Z = G^-1 - G^-1 M^-1 G^-1``) and ``grad_k = dVar/dtheta_k``
    from ``d info / d theta_k = -H_k' H_k / theta_k^2``, ``H = M^-1 Z' C``
    (rows of term ``k``): all in the random-effects dimension.  ``W`` is held
    at its value (PQL-style); ``inf`` without random effects.

    ``Var_ML`` is ``Var`` at the ML estimates' first-order expectation: the
    ML score lacks REML's ``tr((X'V^-1X)^-1 X'V^-1 Z_k Z_k' V^-1 X) / 2 =
    tr(cov H_k' H_k) / (2 theta_k^2)`` (``r_k``), so ``E[theta_hat] - theta
    ~ -I_theta^-1 r`` and ``Var_ML = Var + grad' (E[theta_hat] - theta)``
    (``glmer`` and ``clmm`` maximise a Laplace ML likelihood: their SEs are
    biased low with few workers).
    """
    q = Z.shape[1]
    if q == 0:
        info0 = fixed_information(A, C, w, Z, g)
        v0 = float(np.linalg.inv(info0)[j, j])
        return v0, math.inf, v0
    if q > _DENSE_MAX:
        raise DesignError(f"the df of the t reference needs the inverse of a {q}-column "
                          f"random-effects precision (at most {_DENSE_MAX}); use "
                          "reference='normal' for this design.")
    Minv = la.cho_solve(la.cho_factor(_precision(w, Z, g).toarray()), np.eye(q))
    ZC = np.asarray(Z.T @ C)
    H = Minv @ ZC
    cov = np.linalg.inv(A - ZC.T @ H)
    var = float(cov[j, j])
    gi = 1.0 / g
    S = np.diag(gi) - gi[:, None] * Minv * gi[None, :]
    ks = np.unique(term)
    theta = np.array([g[term == k][0] for k in ks])
    info = np.empty((ks.size, ks.size))
    for a, k in enumerate(ks):
        for b, l_ in enumerate(ks):
            info[a, b] = 0.5 * float(np.sum(S[np.ix_(term == k, term == l_)] ** 2))
    hv = H @ cov[:, j]
    grad = np.array([float(np.sum(hv[term == k] ** 2)) for k in ks]) / theta**2
    r = np.array([0.5 * float(np.sum((H[term == k] @ cov) * H[term == k])) for k in ks]) / theta**2
    try:
        inv_grad = np.linalg.solve(info, grad)
    except np.linalg.LinAlgError:
        inv_grad = np.linalg.pinv(info) @ grad
    qf = float(grad @ inv_grad)
    var_ml = max(var - float(inv_grad @ r), 0.05 * var)     # grad' (-I^-1 r), I symmetric
    return var, (2.0 * var * var / qf if qf > 0 else math.inf), var_ml


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)


# -- head-to-head: logistic GLMM ---------------------------------------------------------------

def _headtohead_parts(design: CrossedDesign, params: HeadToHeadParams
                      ) -> tuple[Any, np.ndarray, sp.csr_matrix, np.ndarray, np.ndarray]:
    w_, i_, pos, _ = _pairs(design)
    n = w_.size
    X = np.column_stack([np.ones(n), pos])
    keep = 1.0 - params.p_draw

    def blocks(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        mu = special.expit(eta)
        wt = keep * mu * (1.0 - mu)
        C = X * wt[:, None]
        return X.T @ C, C, wt

    cols: list[sp.csr_matrix] = []
    g: list[np.ndarray] = []
    tid: list[np.ndarray] = []
    rows = np.arange(n)
    for codes, nl, z, sd in ((w_, design.n_workers, np.ones(n), params.sd_worker),
                             (i_, design.n_items, np.ones(n), params.sd_item),
                             (w_, design.n_workers, pos, params.sd_worker_position),
                             (i_, design.n_items, pos, params.sd_item_position)):
        if sd > 0:
            cols.append(sp.csr_matrix((z, (rows, codes)), shape=(n, nl)))
            g.append(np.full(nl, sd * sd))
            tid.append(np.full(nl, len(tid)))
    Z = sp.hstack(cols, format="csr") if cols else sp.csr_matrix((n, 0))
    return blocks, params.effect + params.position * pos, Z, _cat(g), _cat(tid).astype(int)


# -- Likert: cumulative link mixed model -------------------------------------------------------

def _likert_parts(design: CrossedDesign, params: LikertParams
                  ) -> tuple[Any, np.ndarray, sp.csr_matrix, np.ndarray, np.ndarray, int]:
    c = params.clmm_scale()
    tau = np.asarray(c["thresholds"])
    k1 = tau.size
    proxy = params.latent_params()
    dm = build_model(design, proxy)
    x = np.asarray(dm.spec.X[:, dm.effect_index], dtype=float)
    n = x.size
    if params.link == "probit":
        cdf, pdf = stats.norm.cdf, stats.norm.pdf
    else:
        cdf = special.expit

        def pdf(z: np.ndarray) -> np.ndarray:
            e = special.expit(z)
            return e * (1.0 - e)

    def blocks(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        z = tau[None, :] - s[:, None]                         # n x (K-1)
        F = np.column_stack([np.zeros(n), cdf(z), np.ones(n)])
        S = np.column_stack([np.ones(n), cdf(-z), np.zeros(n)])   # upper tail (symmetric links)
        f = np.column_stack([np.zeros(n), pdf(z), np.zeros(n)])
        # p_k from the tail that does not cancel: far in the upper tail 1 - 1 = 0 in floating point
        p = np.where(np.column_stack([np.full(n, -np.inf), z]) > 0, -np.diff(S, axis=1),
                     np.diff(F, axis=1))
        pos = p > 1e-300
        p = np.where(pos, p, np.inf)                          # an impossible category adds nothing
        dps = f[:, :-1] - f[:, 1:]                            # dp_k/ds = -f_k + f_{k-1}
        # dp_k/dtau_j = f_j [k = j] - f_j [k = j + 1]
        D = np.zeros((n, k1 + 1, k1 + 1))                     # params x categories
        idx = np.arange(k1)
        D[:, idx, idx] = f[:, 1:-1]
        D[:, idx, idx + 1] = -f[:, 1:-1]
        D[:, k1, :] = x[:, None] * dps                        # beta: x * dp/ds
        Dp = D / p[:, None, :]
        A = np.einsum("nak,nbk->ab", Dp, D)
        C = np.einsum("nak,nk->na", Dp, dps)
        wt = np.sum(dps * dps / p, axis=1)
        return A, C, wt

    cols: list[sp.csr_matrix] = []
    g: list[np.ndarray] = []
    tid: list[np.ndarray] = []
    rows = np.arange(n)
    for t in dm.spec.re_terms:
        sds = true_sds(design, proxy, t.group, tuple(t.cnames)) / params.scale
        for j in range(t.q):
            if sds[j] > 0:
                cols.append(sp.csr_matrix((np.asarray(t.Z[:, j], dtype=float), (rows, t.codes)),
                                          shape=(n, t.n_levels)))
                g.append(np.full(t.n_levels, sds[j] ** 2))
                tid.append(np.full(t.n_levels, len(tid)))
    Z = sp.hstack(cols, format="csr") if cols else sp.csr_matrix((n, 0))
    return blocks, c["effect"] * x, Z, _cat(g), _cat(tid).astype(int), k1


def outcome_se(design: CrossedDesign, params: HeadToHeadParams | LikertParams, *,
               weights: AnalyticWeights = "shrunk") -> float:
    """SE of the tested coefficient at the true parameters (module docstring), validated input.

    Head-to-head: glmer's intercept (logit scale).  Likert: clmm's
    coefficient of ``x`` on the clmm scale (latent effect / ``scale``, in the
    parameters' coding).

    Examples
    --------
    >>> p = HeadToHeadParams.from_share(0.6)
    >>> se = outcome_se(CrossedDesign(4, 25), p)      # 100 independent judgements
    >>> round(se, 4) == round(1 / math.sqrt(100 * 0.6 * 0.4), 4)
    True
    """
    return math.sqrt(_moments(design, params, weights, with_df=False)[0])


def _moments(design: Any, params: Any, weights: Any, *, with_df: bool
             ) -> tuple[float, float, float]:
    """``(Var, df, Var_ML)`` of the tested coefficient (:func:`estimated_variance`; ``with_df=False``:
    ``(Var, inf, Var)``)."""
    design, params = _check(design, params)
    check_choice("weights", weights, AnalyticWeights)
    if isinstance(params, HeadToHeadParams):
        blocks, base, Z, g, term = _headtohead_parts(design, params)
        j = 0
    else:
        blocks, base, Z, g, term, j = _likert_parts(design, params)
    A, C, w = _solve_information(blocks, base, Z, g, weights)
    info = fixed_information(A, C, w, Z, g)
    try:
        var = float(np.linalg.inv(info)[j, j])
    except np.linalg.LinAlgError:
        var = math.inf
    if not var > 0 or not math.isfinite(var):
        raise DesignError(f"the expected information of {design!r} is singular for these "
                          "parameters (e.g. a Likert category with probability 0): the effect "
                          "is not estimable; check the thresholds and the design.")
    if not with_df:
        return var, math.inf, var
    return estimated_variance(A, C, w, Z, g, term, j)


def _check(design: Any, params: Any) -> tuple[CrossedDesign, HeadToHeadParams | LikertParams]:
    if not isinstance(design, CrossedDesign):
        raise DesignError(f"design must be a CrossedDesign; got {type(design).__name__}.")
    if not isinstance(params, (HeadToHeadParams, LikertParams)):
        raise InputError(f"params must be LikertParams (outcome='likert', clmm) or "
                         f"HeadToHeadParams (outcome='preference', glmer) for the analytic "
                         f"power of a non-Gaussian outcome; got {type(params).__name__}. "
                         "Gaussian ratings: nlpower.power(..., method='analytic').")
    if design.n_systems != 2:
        raise DesignError(f"the analytic power of Likert and head-to-head designs compares two "
                          f"systems; the design has {design.n_systems}.")
    if isinstance(params, HeadToHeadParams) and design.items != "paired":
        raise DesignError("head-to-head judgements compare two systems on the same items: use "
                          "CrossedDesign(n_workers, n_items) (paired, 2 systems).")
    return design, params


def analytic_outcome_power(
    design: CrossedDesign,
    params: HeadToHeadParams | LikertParams,
    *,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    weights: AnalyticWeights = "shrunk",
    reference: Literal["t", "normal"] = "t",
) -> AnalyticPowerResult:
    """Power of the Wald z of a clmm (Likert) or glmer (head-to-head) analysis, without simulation.

    Parameters
    ----------
    design : CrossedDesign
        Two systems; head-to-head: paired items, one judgement per (worker, item).
    params : LikertParams or HeadToHeadParams
        ``LikertParams``: the clmm analysis of :func:`~nlpower.outcomes.likert_power`
        (``analysis="clmm"``); ``HeadToHeadParams``: the glmer analysis of
        :func:`~nlpower.outcomes.headtohead.headtohead_power`.
    alpha : float, default 0.05
    alternative : {"two-sided", "greater", "less"}
    weights : {"shrunk", "mode", "marginal"}
        Where the per-observation information is evaluated (module docstring).
    reference : {"t", "normal"}
        Distribution of the Wald statistic.  ``"t"`` (default): the SE is
        estimated from ML variance parameters, its square distributed as
        ``Var_ML chi2_df / df`` (:func:`estimated_variance`: Satterthwaite
        df, first-order ML bias), so ``P(t'(df, ncp) > z sqrt(Var_ML /
        Var))`` -- what makes the z test anti-conservative with few workers
        (the Gaussian tier's ``test="z"`` has the df but not the bias).
        ``"normal"``: ``Phi(ncp - z)``.

    Returns
    -------
    AnalyticPowerResult
        ``method`` ``"information"``, ``test`` ``"z"``, ``df`` of the t
        reference (infinite for ``"normal"``);
        ``effect`` on the analysis's scale (clmm: latent effect / ``scale``;
        glmer: logit), ``power`` the sign-correct rejection probability
        (the size at effect 0).

    Notes
    -----
    Accuracy against simulated glmer / clmm power (``docs/power.md``): within
    2 Monte Carlo SE in 10 of 11 benchmark cells (200-300 replicates);
    optimistic by about 0.06 for Likert ratings with 3 workers per item,
    where the Laplace fit attenuates the estimate.

    Examples
    --------
    >>> p = HeadToHeadParams.from_share(0.6, sd_worker=0.5, sd_item=0.5)
    >>> r = analytic_outcome_power(CrossedDesign(10, 50), p)
    >>> 0.0 < r.power < 1.0, r.test
    (True, 'z')
    """
    design, params = _check(design, params)
    alpha = check_real("alpha", alpha)
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be strictly between 0 and 1; got {alpha}.")
    alternative = check_choice("alternative", alternative, Alternative)
    reference = check_choice("reference", reference, ("t", "normal"))
    var, df, var_ml = _moments(design, params, weights, with_df=reference == "t")
    se = math.sqrt(var)
    if isinstance(params, HeadToHeadParams):
        effect, coding = params.effect, "sum"
    else:
        effect, coding = params.effect / params.scale, params.coding
    pw = _wald_power(effect / se, math.sqrt(var_ml / var), df, alpha=alpha,
                     alternative=alternative)
    return AnalyticPowerResult(power=pw, ncp=effect / se, df=df, se=se, effect=effect,
                               coding=coding, test="z", alpha=alpha, alternative=alternative,
                               method="information", design=design)


def _wald_power(ncp: float, ratio: float, df: float, *, alpha: float, alternative: str) -> float:
    """``P(Z_est / SE_est > z)``, sign-correct: ``beta_hat ~ N(beta, Var)``, ``SE_est^2 ~ Var_ML chi2_df / df``.

    ``Z_est / SE_est`` is noncentral t (``df``, ``ncp``) scaled by
    ``1 / ratio``, ``ratio = sqrt(Var_ML / Var)``: ``P(t'(df, ncp) > z ratio)``
    (normal for infinite ``df``); the rules of
    :meth:`~nlpower.powersim.rules.TestRule.power` (size at ``ncp = 0``).
    """
    two = alternative == "two-sided"
    crit = stats.norm.ppf(1.0 - alpha / 2.0 if two else 1.0 - alpha) * ratio
    t_ = math.isfinite(df)
    if ncp == 0:
        size = float(stats.t.sf(crit, df) if t_ else stats.norm.sf(crit))
        return 2.0 * size if two else size
    if not (two or (alternative == "greater") == (ncp > 0)):
        return 0.0
    return float(stats.nct.sf(crit, df, abs(ncp)) if t_ else stats.norm.sf(crit - abs(ncp)))


def analytic_outcome_result(
    design: CrossedDesign,
    params: HeadToHeadParams | LikertParams,
    *,
    analysis: str | None = None,
    test: str | None = None,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    null: bool = False,
    rng: RNGLike = None,
    weights: AnalyticWeights = "shrunk",
    reference: Literal["t", "normal"] = "t",
) -> PowerResult:
    """:func:`analytic_outcome_power` as the :class:`PowerResult` of ``power(method="analytic")``.

    The hook for ``nlpower.power(design, params, outcome="likert" | "preference",
    method="analytic")`` once ``params`` is :class:`LikertParams` (a preset
    mapped by ``levels``) or :class:`HeadToHeadParams`: zero-width interval
    (no Monte Carlo error), ``type1`` the approximation's size at effect 0
    when ``null`` or the effect is 0.  ``analysis`` must be the one this tier
    approximates (``"clmm"`` for Likert, ``"glmer"`` for head-to-head, where
    ``power``'s default ``"lmm"`` also means glmer; ``None`` accepts it), ``test`` ``"z"`` (or ``"lrt"``: its signed root is
    approximately ``N(ncp, 1)``, the normal reference, as in the Gaussian tier).  ``rng`` is recorded only (nothing is drawn).

    Examples
    --------
    >>> p = HeadToHeadParams.from_share(0.6, sd_worker=0.5, sd_item=0.5)
    >>> r = analytic_outcome_result(CrossedDesign(10, 50), p, null=True)
    >>> r.method, r.type1 > 0.05, r.ci.low == r.ci.high     # few workers: the z test is liberal
    ('analytic', True, True)
    """
    design, params = _check(design, params)
    want = "glmer" if isinstance(params, HeadToHeadParams) else "clmm"
    # "lmm" is nlpower.power's default analysis, which outcome="preference" reads as glmer
    ok = (None, want, "lmm") if want == "glmer" else (None, want)
    if analysis not in ok:
        other = ("the LMM of Likert ratings has the Gaussian tier's approximation only through "
                 "simulation here; use analysis='clmm' or method='simulate'"
                 if want == "clmm" else "use analysis='glmer'")
        raise InputError(f"method='analytic' for {type(params).__name__} approximates the "
                         f"{want} analysis; got analysis={analysis!r}: {other}.")
    if test not in (None, "z", "lrt"):
        raise InputError(f"method='analytic' for the {want} analysis approximates test='z' (Wald) "
                         f"or 'lrt' (same normal approximation); got test={test!r}.")
    test_ = test or "z"
    if test_ == "lrt":        # no estimated SE in the signed root of the LR: N(ncp, 1)
        reference = "normal"
    opts = power_options(n_sims=1, alpha=alpha, test=test_,  # type: ignore[arg-type]
                         alternative=alternative, method="analytic", null=null)
    ap = analytic_outcome_power(design, params, alpha=opts.alpha, alternative=opts.alternative,
                                weights=weights, reference=reference)
    ap = replace(ap, test=test_)
    type1 = None
    if opts.null or ap.effect == 0:
        type1 = analytic_outcome_power(design, params.with_effect(0.0), alpha=opts.alpha,
                                       alternative=opts.alternative, weights=weights,
                                       reference=reference).power
    if isinstance(params, HeadToHeadParams):
        diff = 1.0 / (1.0 + math.exp(-params.effect)) - 0.5
        note = ("head-to-head judgements, logistic crossed model; glmer Wald z of the intercept "
                "(logit scale), analytic expected information")
    else:
        x0, x1 = params.x_values
        diff = params.mean_rating01(x1) - params.mean_rating01(x0)
        note = (f"{params.levels}-point ratings, cumulative {params.link} mixed model (clmm); "
                "effect on the clmm scale, analytic expected information")
    return analytic_power_result(ap, type1, mean_difference=diff, design=design, opts=opts,
                                 seed=seed_record(root_seed(rng)),
                                 notes=[note, f"information weights {weights!r}, {reference} "
                                        "reference"])
