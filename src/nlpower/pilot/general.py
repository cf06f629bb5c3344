"""Parametric bootstrap of any Gaussian pilot fit: the general path of assurance.

The balanced shortcut of :mod:`nlpower.pilot.draws` needs a pilot in which
every worker rated every item under both systems once.  Real pilots are
rarely like that: a rating is missing, each item was rated by ``k`` of ``W``
workers, items are nested in systems, there are ``K`` systems.  For those,
the sampling distribution of the planning parameters is drawn the long way,
as ``lme4``'s ``bootMer`` / ``simulate + refit`` would:

1. the pilot's own model structure is rebuilt once from the rows fitted
   (:attr:`RatingsFit.data`, the same formula and contrasts);
2. each bootstrap sample simulates new ratings from the fitted model on the
   pilot's own layout (fixed effects, every random-effects term with its
   fitted covariance, the residual SD);
3. the structure is refitted by ML (warm start at the pilot's ``theta``), the
   refit turned into a :class:`RatingsFit` exactly as :func:`fit_ratings`
   does, and then into the two-system parameters of the planned comparison
   (:meth:`RatingsFit.to_params` with the same ``contrast`` and coding);
   A ``(system || g)`` term with ``system`` a factor has an exactly flat
   ridge (only ``s0^2 J + Sigma`` is identified), along which a warm-started
   BOBYQA wanders for hundreds of evaluations; such a pilot is refitted
   without the ridge's intercept terms (the same likelihood, fewer
   parameters: :mod:`nlpower.lmm.native.ridge`) and mapped back, which
   gives the same planning parameters, since they depend on the identified
   ``s0^2 J + Sigma`` only;
4. their five variances (:data:`nlpower.pilot.draws.VARIANCES`) are one draw.

Each sample uses its own child seed, so the draws do not depend on chunking.
The ML bias correction (:func:`nlpower.pilot.draws.bias_corrected`) is
applied by the caller, as on the balanced path.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from .._choices import Coding
from ..errors import FitError, InputError, RatingsError
from ..lmm import get_engine, model_frame, theta_layout
from ..lmm.native.ridge import find_ridges, reduced_spec, to_full_theta, to_reduced_theta
from ..ratings import RatingsFit
from .draws import bias_corrected, variances_of

__all__ = ["GeneralBootstrap", "general_bootstrap_draws", "general_draws", "general_label"]

_FAILURES = (FitError, InputError, np.linalg.LinAlgError, FloatingPointError)


def _term_covs(layout: Any, theta: np.ndarray, sigma: float) -> list[np.ndarray]:
    """``sigma^2 Lambda Lambda'`` of each term, in the layout's (lme4's) order."""
    covs = []
    for t, off in zip(layout.terms, layout.term_offsets, strict=True):
        lam = np.zeros((t.q, t.q))
        cols, rows = np.triu_indices(t.q)        # lower triangle, column by column
        lam[rows, cols] = theta[off:off + cols.size]
        covs.append(sigma**2 * lam @ lam.T)
    return covs


class GeneralBootstrap:
    """Simulate from a fitted pilot on its own layout and refit (module docstring).

    Parameters
    ----------
    fit : RatingsFit
        A Gaussian pilot fit from :func:`nlpower.fit_ratings` (which keeps
        the rows it fitted).
    contrast, coding
        The comparison planned and its coding (as :meth:`RatingsFit.to_params`).
    """

    def __init__(self, fit: RatingsFit, *, contrast: Any = None, coding: Coding = "sum") -> None:
        if not isinstance(fit, RatingsFit) or fit.data is None:
            raise InputError("the general pilot path needs a RatingsFit from nlpower.fit_ratings "
                             "(which keeps the rows it fitted); refit the pilot with fit_ratings.")
        self.fit, self.contrast, self.coding = fit, contrast, coding
        data = fit.data
        self.spec = model_frame(fit.formula, data, contrasts={"system": fit.coding})
        self.layout = theta_layout(self.spec.re_terms)
        lmm = fit.fit
        self.theta = np.asarray(lmm.theta, dtype=float)
        self.beta = np.asarray(lmm.fixef.reindex(list(self.spec.fixef_names)), dtype=float)
        self.sigma = float(lmm.sigma)
        self.covs = _term_covs(self.layout, self.theta, self.sigma)
        self.mean = self.spec.X @ self.beta
        codes = data["system"].cat.codes.to_numpy()
        first = np.array([int(np.flatnonzero(codes == j)[0]) for j in range(len(fit.systems))])
        self.loadings = {(t.group, tuple(t.cnames)): np.asarray(t.Z, dtype=float)[first]
                         for t in self.spec.re_terms}
        self.ridges, spec, self.start = find_ridges(self.spec.re_terms), self.spec, self.theta
        if self.ridges:
            spec = reduced_spec(self.spec, self.ridges)
            try:
                self.start = to_reduced_theta(self.theta, theta_layout(spec.re_terms),
                                              self.layout, self.ridges)
            except np.linalg.LinAlgError:   # a singular pilot: refit the model as it is
                self.ridges, spec = (), self.spec
        self.fit_layout = theta_layout(spec.re_terms)
        self.model = get_engine("native").prepare(spec.with_response(self.mean.copy()))

    def simulate(self, gen: np.random.Generator) -> np.ndarray:
        """One new response vector of the pilot's rows from the fitted model."""
        y = self.mean + self.sigma * gen.standard_normal(self.spec.n)
        for t, cov in zip(self.layout.terms, self.covs, strict=True):
            b = gen.multivariate_normal(np.zeros(t.q), cov, size=t.n_levels, method="eigh")
            y += np.einsum("nq,nq->n", np.asarray(t.Z, dtype=float), b[t.codes])
        return np.asarray(y)

    def refit_params(self, y: np.ndarray) -> Any:
        """The planning parameters (two systems) of the ML refit of ``y``."""
        core = self.model.refit(y, REML=False, start=self.start)
        theta = np.asarray(core.theta, dtype=float)
        if self.ridges:
            theta = to_full_theta(theta, self.fit_layout, self.layout, self.ridges)
        covs = _term_covs(self.layout, theta, float(core.sigma))
        var_terms = [SimpleNamespace(group=t.group, cnames=tuple(t.cnames), cov=c)
                     for t, c in zip(self.layout.terms, covs, strict=True)]
        names = list(self.spec.fixef_names)
        lmm = SimpleNamespace(var_terms=var_terms, sigma=float(core.sigma),
                              fixef=pd.Series(np.asarray(core.beta), index=names),
                              vcov=pd.DataFrame(np.asarray(core.vcov_beta), index=names,
                                                columns=names))
        f = self.fit
        ratings = SimpleNamespace(report=f.report, scale=f.scale)
        choice = SimpleNamespace(levels=f.systems, baseline=f.baseline, coding=f.coding,
                                 pairs=f.identified_pairs, formula=f.formula, reduced=f.reduced,
                                 model=f.model, data=f.data)
        from ..ratings.fit import _ratings_fit

        refit = _ratings_fit(ratings, choice, lmm, self.loadings)  # type: ignore[arg-type]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # to_params' conversion notes, once per draw
            return refit.to_params(self.contrast, coding=self.coding)


def general_bootstrap_draws(fit: RatingsFit, seeds: Sequence[np.random.SeedSequence], *,
                            contrast: Any = None, coding: Coding = "sum",
                            tick: Callable[[], object] | None = None) -> np.ndarray:
    """``(n_ok, 5)`` variances of the planning parameters over bootstrap refits of ``fit``.

    Samples whose refit fails are dropped (they are rare; if more than half
    fail the pilot cannot be bootstrapped and an error says so).  ``tick``,
    if given, is called after each sample (a progress bar's update).

    Examples
    --------
    An unbalanced pilot (the bundled one without its first rating):

    >>> import numpy as np, pandas as pd
    >>> from nlpower.ratings import fit_ratings, read_ratings
    >>> pilot = pd.read_csv("fixtures/pilot_ratings.csv").drop(index=0)
    >>> fit = fit_ratings(read_ratings(pilot, scale=(1, 5)))
    >>> general_bootstrap_draws(fit, np.random.SeedSequence(1).spawn(5)).shape
    (5, 5)
    """
    try:
        boot = GeneralBootstrap(fit, contrast=contrast, coding=coding)
    except RatingsError as exc:
        raise InputError(f"cannot bootstrap this pilot: {exc}") from exc
    out = []
    for s in seeds:
        gen = np.random.Generator(np.random.PCG64(s))
        try:
            out.append(variances_of(boot.refit_params(boot.simulate(gen))))
        except _FAILURES:
            pass
        if tick is not None:
            tick()
    if len(out) < max(1, len(seeds) // 2):
        raise FitError(f"only {len(out)} of {len(seeds)} bootstrap refits of the pilot succeeded; "
                       "the pilot's model is too rich for its data. Refit it with a simpler "
                       "model= formula (fit_ratings) and plan again.")
    return np.asarray(out)


def general_draws(fit: RatingsFit, v_hat: np.ndarray, method: str,
                  seeds: Sequence[np.random.SeedSequence], *, contrast: Any = None,
                  coding: Coding = "sum", tick: Callable[[], object] | None = None
                  ) -> np.ndarray:
    """Bias-corrected bootstrap draws of a pilot off the balanced path (what assurance uses).

    ``tick`` is called after each refit (a progress bar's update).
    """
    if method != "bootstrap":
        r = fit.report
        raise InputError(
            f"method={method!r} uses the expected information of a balanced two-system pilot; "
            f"this one ({r.n_workers} workers, {r.n_items} items, {r.n_systems} systems, "
            f"{r.n_ratings} ratings) is not. Use method='bootstrap' (a parametric bootstrap "
            "through the engine).")
    return bias_corrected(v_hat, general_bootstrap_draws(fit, seeds, contrast=contrast,
                                                         coding=coding, tick=tick))


def general_label(fit: RatingsFit) -> str:
    """How a result describes a pilot bootstrapped on the general path."""
    r = fit.report
    return (f"{r.n_workers} workers x {r.n_items} items x {r.n_systems} systems, {r.n_ratings} "
            f"ratings, items {r.item_layout} (general parametric bootstrap of {fit.formula!r})")
