"""A batch of replicates fitted and tested together, where the model allows.

The study's analysis (:mod:`nlpower.study.analysis`, on the one replicate
loop) sees a whole batch of draws; by default it refits one response at a
time through the engine protocol.  For a Gaussian model whose random part
is a single scalar term (``y ~ x + (1 | g)``, the designs of simr's
examples) every replicate of a batch is fitted at once by
:class:`nlpower.lmm.batched.ScalarLmm`, and the test -- Wald z,
Satterthwaite t, Kenward-Roger t, a likelihood ratio of one coefficient or
against a reduced model -- is computed for all of them from those fits:
the same numbers the per-replicate path gives, to the optimiser's
tolerance.  :func:`lmm_replicates` returns ``None`` when it does not apply;
replicates it could not fit (``ok`` False) go through the per-replicate
path.

A cumulative link mixed model (``clmm``) is refitted replicate by
replicate, but from the truth, its optimiser scaled by one reference
Hessian at the truth, shared by the batch
(:func:`nlpower.ordinal.scaling.reference_hessian`) -- about half the
evaluations of L-BFGS-B from a unit matrix, and the same optimum (the fit
ends with Newton steps on its own Hessian).

A GLMM likelihood-ratio test fits the null model of each replicate from
that replicate's full fit (:func:`nested_refits`): where the null drops
fixed-effects columns only, the full fit's Hessian places the start at the
null's optimum to second order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lmm.batched import BatchFits, ScalarLmm
from ..lmm.draw import GaussianSimulator, relative_factor
from ..powersim.rules import get_test

__all__ = ["BatchTests", "gaussian_draws", "lmm_replicates", "nested_refits", "ordinal_refits"]


@dataclass(frozen=True)
class BatchTests:
    """Per-replicate test results of a batch (``ok`` False: refit that replicate one at a time)."""

    estimate: np.ndarray
    se: np.ndarray
    statistic: np.ndarray
    df: np.ndarray
    pvalue: np.ndarray
    singular: np.ndarray
    ok: np.ndarray
    beta: np.ndarray
    #: one column per contrast of a multiple-comparison run: (estimate, se, df, p), each (R, k)
    many: tuple[np.ndarray, ...] | None = None


def _scalar(model: Any) -> ScalarLmm | None:
    """The batched fitter of a prepared native Gaussian model with one scalar term (else None)."""
    from ..lmm.native import NativeModel
    if not isinstance(model, NativeModel) or not ScalarLmm.supports(model.spec):
        return None
    return ScalarLmm(model.spec)


def _theta0(start: Any) -> float | None:
    if start is None:
        return None
    th = np.atleast_1d(np.asarray(start, dtype=float))
    return float(abs(th[0])) if th.size == 1 else None


def lmm_replicates(study: Any, model: Any, null: Any, Y: np.ndarray, start: Any,
                   null_start: Any) -> BatchTests | None:
    """The batch's tests from batched fits, or None when the model or test is not covered."""
    rule = get_test(study.test)
    if not study.design.family.is_gaussian or study.engine != "native" or rule.bootstrap \
            or Y.shape[0] < 2:
        return None
    sl = _scalar(model)
    sl0 = _scalar(null) if null is not None else None
    if sl is None or (null is not None and sl0 is None):
        return None
    fits = sl.fit(Y, REML=study.REML, theta0=_theta0(start))
    fits0 = (sl0.fit(Y, REML=False, theta0=_theta0(null_start) or _theta0(start))
             if sl0 is not None else None)
    ok = fits.ok if fits0 is None else fits.ok & fits0.ok
    if study.comparisons is not None:
        return _many(study, sl, fits, Y, ok)
    hyp = study.hypothesis
    if not hyp.one_df:
        assert fits0 is not None
        comparison = rule.comparison()
        stat = comparison.statistics(fits.deviance, fits0.deviance)
        q = float(model.spec.p - null.spec.p)
        nan = np.full(stat.shape, np.nan)
        return BatchTests(stat, nan, stat, np.full(stat.shape, q), comparison.pvalue(stat, q),
                          fits.singular, ok, fits.beta)
    L = hyp.L if hyp.L is not None else np.eye(sl.p)[study.j]
    est, se = _wald(fits, L)
    if rule.statistic == "lr":
        assert fits0 is not None
        lr = np.maximum(fits0.deviance - fits.deviance, 0.0)
        stat, df = np.copysign(np.sqrt(lr), est), np.full(est.shape, np.inf)
    else:
        if rule.df_method == "kenward-roger":
            se, df = sl.kenward_roger(fits, L)
        elif rule.df_method == "satterthwaite":
            df = sl.satterthwaite_df(fits, Y, L)
        else:
            df = np.full(est.shape, np.inf)
        stat = est / se
    p = rule.pvalue(stat, df, study.alternative)
    return BatchTests(est, se, stat, df, p, fits.singular, ok & np.isfinite(p), fits.beta)


def _wald(fits: BatchFits, L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    est = fits.beta @ L
    with np.errstate(invalid="ignore"):
        return est, np.sqrt(np.einsum("i,rij,j->r", L, fits.vcov, L))


def _many(study: Any, sl: ScalarLmm, fits: BatchFits, Y: np.ndarray, ok: np.ndarray
          ) -> BatchTests:
    """Every contrast of a multiple-comparison run (Wald z or Satterthwaite t)."""
    rule = get_test(study.test)
    Lm = study.comparisons.L
    est = fits.beta @ Lm.T
    with np.errstate(invalid="ignore"):
        se = np.sqrt(np.einsum("ci,rij,cj->rc", Lm, fits.vcov, Lm))
    df = (sl.satterthwaite_df(fits, Y, Lm) if rule.df_method == "satterthwaite"
          else np.full(est.shape, np.inf))
    p = rule.pvalue(est / se, df, study.alternative)
    good = ok & np.all(np.isfinite(p), axis=1)
    return BatchTests(est[:, 0], se[:, 0], est[:, 0] / se[:, 0], df[:, 0], p[:, 0],
                      fits.singular, good, fits.beta, many=(est, se, df, p))


def gaussian_draws(d: Any, spec: Any, gens: list[np.random.Generator]) -> np.ndarray:
    """One response per generator at the design's parameters: ``d.simulate(1, rng=gen)`` each.

    Each generator gives the normal deviates it gives there, in the same order
    (each term's random effects, then the residuals); the rest is computed for
    all replicates at once.
    """
    sim = GaussianSimulator.from_spec(spec)
    theta, beta, sigma = np.asarray(d.theta, dtype=float), d.fixef.to_numpy(), float(d.sigma)
    nobs = sim.X.shape[0]
    shapes = [(1, n_levels, Z.shape[1]) for _, Z, n_levels, _ in sim.terms] + [(1, nobs)]
    raw = [[g.standard_normal(shape) for shape in shapes] for g in gens]
    y = np.broadcast_to(sim.X @ beta, (len(gens), nobs)).copy()
    for t, (codes, Z, _, off) in enumerate(sim.terms):
        lam = relative_factor(theta[off:], Z.shape[1])
        b = sigma * np.concatenate([r[t] for r in raw]) @ lam.T
        y += np.einsum("nq,bnq->bn", Z, b[:, codes, :])
    y += sigma * np.concatenate([r[-1] for r in raw])
    return y


def ordinal_refits(model: Any, Y: np.ndarray, start: Any,
                   failures: tuple[type[BaseException], ...], *, hessian: bool = True
                   ) -> list[Any] | None:
    """Each row of ``Y`` fitted by a Laplace ``clmm`` from ``start`` (None: not such a model).

    Every row with all categories present is fitted with the optimiser scaled
    by the shared reference Hessian
    (:func:`~nlpower.ordinal.scaling.reference_hessian`); the others as the
    per-replicate path fits them.  A row
    whose fit raises one of ``failures`` gets the error.
    """
    from ..ordinal.model import ClmmModel
    from ..ordinal.scaling import reference_hessian
    if not isinstance(model, ClmmModel) or model.rs is None or model.nAGQ != 1:
        return None
    x0 = np.asarray(start, dtype=float)
    H = reference_hessian(model, x0)
    k = len(model.levels)
    out: list[Any] = []
    for y in Y:
        try:
            out.append(model.refit(y, start=x0, hessian=hessian,
                                   curvature=H if np.unique(y).size == k else None))
        except failures as exc:
            out.append(exc)
    return out


def nested_refits(model: Any, null: Any, Y: np.ndarray, cores: list[Any] | None
                  ) -> list[Any] | None:
    """The null GLMM's fits of ``Y`` started from the full fits ``cores`` (None: not such a pair).

    :func:`nlpower.glmm.batched.refit_nested`: the same optima as fits from the
    truth, in a few Newton steps each.
    """
    from ..glmm.model import GlmmModel
    from ..glmm.negbin import NegBinModel
    if cores is None or null is None or Y.shape[0] < 2 or not all(
            isinstance(m, GlmmModel) and not isinstance(m, NegBinModel) for m in (model, null)):
        return None
    from ..glmm.batched import refit_nested
    return refit_nested(model, null, Y, cores)
