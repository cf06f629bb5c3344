"""Parametric-bootstrap likelihood-ratio test of the system effect (``test="pblrt"``).

The LRT of ``beta1 = 0`` referred to chi^2_1 is liberal with few workers
(Type I error 0.08-0.14 at 3 workers, ``docs/power.md``).  The parametric
bootstrap (pbkrtest's ``PBmodcomp``; Halekoh & Hoejsgaard 2014, JSS 59(9))
refers the observed LR statistic to its distribution simulated from the
*null* fit instead: draw ``B`` responses from the null model at its ML
estimates, fit both models to each by ML, and report
``p = (1 + #{LR* >= LR}) / (1 + B)`` (two-sided; ties count as exceedances,
to a relative 1e-12).

Balanced designs (:func:`pb_lrt_pvalues`)
    For the balanced crossed 2-system design (every worker rates every item
    under both systems) both fits depend on the data only through five sums
    of squares and ``beta1_hat`` (:mod:`nlpower.powersim.fastpath`), and a
    null response's statistics are drawn directly (``SS_k ~ lambda_k
    chi2(m_k)``, ``beta1* ~ N(0, lambda_sys / n)``) -- O(1) per bootstrap
    sample whatever the design size; all ``R x B`` refits of a power cell run
    as vectorised batches of the balanced ML solver.  What does not depend on
    the response (strata, dimensions, the variance-to-eigenvalue map) is
    built once.  One exact shortcut: the full model's ML fit does not depend
    on ``beta1*``, and the null deviance is at most the full fit's criterion
    plus ``n beta1*^2 / lambda_sys`` at the full fit's variances, so
    ``LR* <= z*^2`` (the ML Wald statistic); a bootstrap sample with
    ``z*^2 < LR`` cannot exceed and needs no null fit.  Likewise the null
    fit from the two default starts bounds the thorough (five-start) null
    deviance from above, so only samples that still may exceed get the
    other three starts.  Under alternatives (large ``LR``) almost every null
    fit is skipped; the p-values are those of the thorough search.
General designs (:class:`GeneralPBLRT`)
    ``B`` null responses per replicate simulated from the null ML fit
    (``theta``, ``sigma``, ``beta``) through the structure of the prepared
    models, each refitted by both prepared models (null and full, built once
    by the engine; warm start at the null fit's ``theta``): up to ``2 B``
    refits per replicate -- the null refit is skipped where an exact bound
    says the sample cannot exceed (:class:`GeneralPBLRT`) -- so ``B = 99``
    costs 50-100 times the ``"lrt"`` test.
    Bootstrap fits that fail are dropped (``B`` becomes the number that
    succeeded, as in ``PBmodcomp``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..lmm import PreparedModel
from ..lmm.draw import GaussianSimulator
from ..lmm.result import FitCore
from .balanced_fit import _minimise_ml
from .fastpath import BalancedStats, design_matrix, stratum_dims

#: relative tolerance under which a bootstrap statistic counts as a tie (an exceedance)
TIE = 1e-12


def lr_statistic(stats: BalancedStats) -> tuple[np.ndarray, np.ndarray]:
    """``(LR, null variances)``: ML deviance difference null - full, and the null ML fit.

    The null deviance is capped at the full fit's criterion plus ``n
    beta1^2 / lambda_sys`` (a point of the null criterion), which only
    matters if the null search ever missed its optimum.
    """
    w, i = stats.n_workers, stats.n_items
    n = 2.0 * w * i
    s_sys = n * stats.beta1**2
    v0, dev0, _ = _minimise_ml(stats.ss, s_sys, w, i, thorough=True)
    v1, dev1, _ = _minimise_ml(stats.ss, np.zeros(stats.n_sims), w, i)
    with np.errstate(divide="ignore", invalid="ignore"):
        z2 = s_sys / (v1 @ design_matrix(w, i)[1])
    return np.maximum(np.minimum(dev0, dev1 + z2) - dev1, 0.0), v0


def _null_draws(lam: np.ndarray, m: np.ndarray, n: float, n_resamples: int,
                rng: np.random.Generator | Sequence[np.random.Generator]
                ) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap sums of squares ``(r, B, 5)`` and ``beta1*`` ``(r, B)`` from null eigenvalues."""
    r = lam.shape[0]
    if isinstance(rng, np.random.Generator):
        chi = rng.chisquare(np.broadcast_to(m, (r, n_resamples, 5)))
        z = rng.standard_normal((r, n_resamples))
    else:  # one stream per replicate: results do not depend on chunking
        dfs = np.broadcast_to(m, (n_resamples, 5))
        chi = np.stack([g.chisquare(dfs) for g in rng])
        z = np.stack([g.standard_normal(n_resamples) for g in rng])
    return chi * lam[:, None, 2:], z * np.sqrt(lam[:, 1] / n)[:, None]


def pb_lrt_pvalues(stats: BalancedStats, n_resamples: int,
                   rng: np.random.Generator | Sequence[np.random.Generator],
                   chunk: int = 50_000) -> tuple[np.ndarray, np.ndarray]:
    """Parametric-bootstrap p-values of ``beta1 = 0`` for every replicate in ``stats``.

    Returns ``(p, LR)``.  ``rng``: one generator for all replicates, or one
    per replicate (what :func:`~nlpower.powersim.power` passes: replicate
    ``r``'s bootstrap continues its own stream).  Each replicate draws ``5 B``
    chi-squares and ``B`` normals.

    Examples
    --------
    >>> from nlpower.powersim.fastpath import draw_stats
    >>> gens = [np.random.default_rng(k) for k in range(4)]
    >>> st = draw_stats(3, 20, 0.5, 0.0, [0.07, 0.0001, 0.012, 0.0016, 0.02], gens)
    >>> p, lr = pb_lrt_pvalues(st, 19, np.random.default_rng(1))
    >>> bool(np.all((p > 0) & (p <= 1)))
    True
    """
    w, i = stats.n_workers, stats.n_items
    n = 2.0 * w * i
    A = design_matrix(w, i)
    m = stratum_dims(w, i)
    lr, v0 = lr_statistic(stats)
    lam = v0 @ A.T                                        # (R, 7) null stratum eigenvalues
    R = stats.n_sims
    streams = None if isinstance(rng, np.random.Generator) else list(rng)
    if streams is not None and len(streams) != R:
        raise ValueError(f"rng: one generator per replicate ({R}) or a single Generator")
    exceed = np.zeros(R)
    per = max(1, chunk // max(n_resamples, 1))
    for s in range(0, R, per):
        rows = np.arange(s, min(R, s + per))
        gens = rng if streams is None else streams[s:s + rows.size]
        ss, b1 = _null_draws(lam[rows], m, n, n_resamples, gens)
        ss = ss.reshape(-1, 5)
        b1 = b1.ravel()
        v1, dev1, _ = _minimise_ml(ss, np.zeros(b1.size), w, i)
        s_sys = n * b1**2
        z2 = s_sys / (v1 @ A[1])                           # LR* <= z*^2 (module docstring)
        thr = np.repeat(lr[rows] * (1.0 - TIE), n_resamples)
        hit = np.zeros(b1.size, dtype=bool)
        need = np.flatnonzero(z2 >= thr)
        if need.size:  # the default two starts: an upper bound of the null deviance
            _, dev0, _ = _minimise_ml(ss[need], s_sys[need], w, i)
            dev0 = np.minimum(dev0, dev1[need] + z2[need])
            keep = dev0 - dev1[need] >= thr[need]
            need, dev0 = need[keep], dev0[keep]
        if need.size:  # may exceed: complete the thorough search (all five starts)
            _, dev0x, _ = _minimise_ml(ss[need], s_sys[need], w, i, only_extra=True)
            hit[need] = np.minimum(dev0, dev0x) - dev1[need] >= thr[need]
        exceed[rows] = hit.reshape(rows.size, n_resamples).sum(axis=1)
    return (1.0 + exceed) / (1.0 + n_resamples), lr


# ----------------------------------------------------------------------------------------
# general designs: B null refits per replicate through the engine's prepared models
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GeneralPBLRT:
    """PB-LRT for any design: the null and full prepared models and the null simulator.

    Built once per power run (:meth:`build`); :meth:`pvalue` runs one
    replicate's bootstrap.  ``sim`` draws responses from the null model
    (:class:`~nlpower.lmm.draw.GaussianSimulator`).

    Exact shortcut (``screen``): at the full ML fit's ``theta`` the profiled
    ML deviance of the model without coefficient ``j`` exceeds the full one
    by ``n log(1 + z^2 / n)`` (the residual sum of squares grows by
    ``beta_j^2 / [(X'V^-1 X)^-1]_jj``; ``z^2`` the ML Wald statistic), so
    ``LR* <= n log(1 + z*^2 / n)`` and a bootstrap sample below the observed
    LR needs no null refit.
    """

    full: PreparedModel
    null: PreparedModel
    sim: GaussianSimulator
    effect_index: int
    screen: bool = True

    @classmethod
    def build(cls, full: PreparedModel, null: PreparedModel, effect_index: int) -> GeneralPBLRT:
        return cls(full, null, GaussianSimulator.from_spec(null.spec), effect_index)

    def simulate(self, core: FitCore, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
        """``(B, n)`` responses from the fitted null model ``core`` (lme4's ``simulate``)."""
        return self.sim.draw(core.theta, core.beta, core.sigma, n_resamples, rng=rng)

    def pvalue(self, lr: float, core0: FitCore, n_resamples: int, rng: np.random.Generator,
               errors: tuple[type[BaseException], ...]) -> float:
        """Bootstrap p-value of the observed ``lr`` (failed bootstrap fits dropped)."""
        ys = self.simulate(core0, n_resamples, rng)
        n = ys.shape[1]
        j = self.effect_index
        thr = lr * (1.0 - TIE)
        exceed = ok = 0
        for yb in ys:
            try:
                c1 = self.full.refit(yb, REML=False, start=core0.theta)
                # LR* <= n log(1 + z*^2 / n): the null deviance at the full fit's theta (class doc)
                z2 = float(c1.beta[j]) ** 2 / float(c1.vcov_beta[j, j])
                if self.screen and n * math.log1p(z2 / n) < thr:
                    ok += 1
                    continue
                d0 = self.null.refit(yb, REML=False, start=core0.theta).deviance
            except errors:
                continue
            ok += 1
            exceed += max(float(d0 - c1.deviance), 0.0) >= thr
        return (1.0 + exceed) / (1.0 + ok) if ok else math.nan


__all__ = ["GeneralPBLRT", "lr_statistic", "pb_lrt_pvalues"]
