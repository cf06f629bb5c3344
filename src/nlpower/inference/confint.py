"""Confidence intervals for fixed effects and variance components, as lme4's ``confint.merMod``.

* ``"wald"``: ``estimate -/+ z * se`` for the fixed effects (and clmm's
  thresholds); variance components get no Wald interval (lme4 prints NA).
* ``"profile"``: likelihood-profile intervals (Gaussian fits of the native
  engine): for each parameter, the values where the signed root deviance
  ``zeta = sign(v - v_hat) sqrt(D(v) - D(v_hat))`` crosses the normal
  quantiles, ``D(v)`` minimised over every other parameter.  Variance
  components are profiled on lme4's scale (SDs, correlations, sigma), fixed
  effects by refitting with the column as an offset; like lme4, always the
  ML deviance (a REML fit's intervals surround the ML optimum).
  :mod:`nlpower.inference.profile` has the numerics.
* ``"boot"``: parametric bootstrap percentile intervals (lme4's
  ``boot.type = "perc"``): ``n_boot`` responses simulated from the fit
  (replicate ``r`` from the ``r``-th child of ``rng``'s seed sequence, as the
  power runner seeds its replicates), each refitted on the prepared structure.

Rows follow lme4: variance parameters first (``.sig01`` ... and ``.sigma``
for Gaussian fits, in ``theta`` order), then the fixed effects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .. import _dist
from .._validation import check_choice
from ..errors import InputError
from ..lmm.family import Family
from ..lmm.names import canonical, coef_aliases
from ._access import family_of, fixed, kind_of, prepared_model, var_parameters, var_terms
from .table import InferenceTable

__all__ = ["confint"]


def confint(fit: Any, parm: Any = None, *, level: float = 0.95, method: str = "profile",
            n_boot: int = 500, rng: Any = None) -> InferenceTable:
    """Confidence intervals of a fit's parameters (lme4's ``confint.merMod``).

    Parameters
    ----------
    fit : LmmFit, GlmmFit or ClmmFit
        A fit of :func:`nlpower.lmer`, :func:`nlpower.glmer` or :func:`nlpower.clmm`.
    parm : list of str, optional
        Rows to keep, by name (``".sig01"``, ``"Days"``, ``"system[A]"`` or
        lme4's ``"system1"``) or by term (``"sd_(Intercept)|Subject"``);
        default all.
    level : float, default 0.95
        Confidence level.
    method : {"profile", "wald", "boot"}
        lme4's default is ``"profile"`` (lmer and glmer fits of the native
        engine; clmm fits: ``"wald"``).
    n_boot : int, default 500
        Bootstrap replicates (``method="boot"``; lme4's ``nsim``).
    rng : seed or Generator, optional
        Randomness of ``method="boot"``.

    Returns
    -------
    InferenceTable
        Columns ``term``, ``estimate``, ``lower``, ``upper``; the index is
        lme4's parameter name.

    Raises
    ------
    InputError
        Bad ``level``, ``method``, ``n_boot`` or ``parm``; a method this fit
        does not support.

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> ss = pd.read_csv("tests/reference/data/sleepstudy.csv")
    >>> fit = nlpower.lmer("Reaction ~ Days + (1 | Subject)", ss)
    >>> ci = confint(fit, method="wald")
    >>> ci.to_frame().loc["Days", ["lower", "upper"]].round(2).tolist()
    [8.89, 12.04]
    """
    method = check_choice("method", method, ("profile", "wald", "boot"))
    if not (isinstance(level, (int, float)) and 0.0 < float(level) < 1.0):
        raise InputError(f"level must be a number between 0 and 1, e.g. 0.95; got {level!r}.")
    kind = kind_of(fit, where="confint")
    family = family_of(fit, where="confint")
    est = _estimates(fit, kind, family)
    if method == "wald":
        lo, hi = _wald(fit, kind, est, float(level))
        note = "Wald: estimate -/+ z se; variance components have none (NA, as lme4)."
    elif method == "profile":
        if kind == "ordinal":      # the fit type: a clmm structure has no profile refits
            raise InputError("method='profile' is implemented for lmer and glmer fits; for a "
                             "clmm fit use method='wald'.")
        from .profile import profile_intervals
        lo, hi = profile_intervals(fit, prepared_model(fit, where="confint(method='profile')"),
                                   est, float(level))
        note = ("Profile likelihood: signed root deviance crossing the normal quantiles "
                "(as lme4: the ML deviance, also for a REML fit; GLMMs: the joint deviance "
                "of variance parameters and fixed effects).")
    else:
        if not (isinstance(n_boot, (int, np.integer)) and n_boot >= 10):
            raise InputError(f"n_boot must be an integer >= 10 (lme4's nsim); got {n_boot!r}.")
        lo, hi, ok = _boot(fit, kind, family, est, float(level), int(n_boot), rng)
        note = (f"Parametric bootstrap, percentile intervals: {ok} of {n_boot} refits "
                "(responses simulated from the fit, new random effects each).")
    frame = est.assign(lower=lo, upper=hi)
    frame = _select(frame, parm, coef_aliases(fit))
    pct = f"{100 * level:g}%"
    return InferenceTable(f"{method.capitalize()} confidence intervals ({pct})", frame, (note,))


def _estimates(fit: Any, kind: str, family: Family) -> pd.DataFrame:
    """Every parameter in lme4's order: ``term``, ``estimate``; index = lme4's name.

    The variance parameters end with sigma where the family has one.
    """
    if kind == "ordinal":      # the fit type: a clmm fit's parameters begin with its thresholds
        ct = fit.coef_table()
        vp = var_parameters(var_terms(fit), None)
        fx = pd.DataFrame({"name": list(ct.index), "term": list(ct.index),
                           "estimate": ct["estimate"].to_numpy()})
    else:
        vp = var_parameters(var_terms(fit), fit.sigma if family.has_sigma else None)
        fx = pd.DataFrame({"name": [str(n) for n in fit.fixef.index],
                           "term": [str(n) for n in fit.fixef.index],
                           "estimate": fit.fixef.to_numpy(dtype=float)})
    out = pd.concat([vp, fx], ignore_index=True).set_index("name")
    out.index.name = None
    return out


def _wald(fit: Any, kind: str, est: pd.DataFrame, level: float) -> tuple[np.ndarray, np.ndarray]:
    z = float(_dist.norm_ppf(0.5 + level / 2.0))
    if kind == "ordinal":      # the fit type: thresholds and fixed effects, as _estimates
        se = fit.coef_table()["se"].to_numpy()
    else:
        se = np.sqrt(np.diag(fixed(fit)[1]))
    n_var = len(est) - se.size
    pad = np.full(n_var, np.nan)
    e = est["estimate"].to_numpy()[n_var:]
    return np.concatenate([pad, e - z * se]), np.concatenate([pad, e + z * se])


def _boot(fit: Any, kind: str, family: Family, est: pd.DataFrame, level: float, n_boot: int,
          rng: Any) -> tuple[np.ndarray, np.ndarray, int]:
    if kind == "ordinal":      # the fit type: a clmm structure has no bootstrap refits here
        raise InputError("method='boot' is implemented for lmer and glmer fits; for a clmm fit "
                         "use method='wald'.")
    model = prepared_model(fit, where="confint(method='boot')")
    theta, beta = np.asarray(fit.theta, dtype=float), fit.fixef.to_numpy(dtype=float)
    from .._rng import spawn
    # one child stream per replicate (the power runner's seeding): replicate r's response
    # does not depend on how the replicates are batched
    params = {"theta": theta, "beta": beta, "sigma": getattr(fit, "sigma", None)}
    draws = []
    try:
        for seq in spawn(rng, n_boot):
            y = model.simulate(1, rng=np.random.default_rng(seq), params=params)[0]
            draws.append(_refit_parameters(fit, family, model, y, theta))
    finally:
        _restore(model)
    vals = np.array([d for d in draws if d is not None])
    if len(vals) < 10:
        raise InputError(f"only {len(vals)} of {n_boot} bootstrap refits succeeded; the "
                         "intervals would be meaningless.")
    a = (1.0 - level) / 2.0
    return np.quantile(vals, a, axis=0), np.quantile(vals, 1.0 - a, axis=0), len(vals)


def _refit_parameters(fit: Any, family: Family, model: Any, y: np.ndarray, theta: np.ndarray
                      ) -> np.ndarray | None:
    """One bootstrap refit's parameters: REML or ML as the fit where the family has a residual
    SD (and that SD), the fit's quadrature otherwise."""
    from ..lmm.ddf import term_covariances
    from ..lmm.result import VarTerm
    try:
        if family.has_sigma:
            core = model.refit(y, REML=fit.REML, start=theta)
            sigma: float | None = float(core.sigma)
        else:
            core = model.refit(y, start=theta, nAGQ=fit.nAGQ)
            sigma = None
    except Exception:   # a failed replicate is dropped and counted, as lme4's bootMer
        return None
    lay = model.layout
    slots = [(off, t.q) for t, off in zip(lay.terms, lay.term_offsets, strict=True)]
    covs = term_covariances(slots, np.asarray(core.theta), 1.0 if sigma is None else sigma)
    terms = [VarTerm(grp=t.group, group=t.group, cnames=tuple(t.cnames), cov=c)
             for t, c in zip(lay.terms, covs, strict=True)]
    vp = var_parameters(terms, sigma)["estimate"].to_numpy()
    return np.concatenate([vp, np.asarray(core.beta, dtype=float)])


def _restore(model: Any) -> None:
    """Put the fitted response back into the shared structure after the refits.

    (A structure whose refits leave their response in it has ``_set_y``.)
    """
    if hasattr(model, "_set_y"):
        model._set_y(model.spec.y)


def _select(frame: pd.DataFrame, parm: Any, aliases: Mapping[str, str]) -> pd.DataFrame:
    if parm is None:
        return frame
    wanted = [parm] if isinstance(parm, str) else list(parm)
    keep = []
    for w in wanted:
        name = canonical(w, map(str, frame.index), aliases) or w     # lme4's names as aliases
        hit = [i for i, (n, t) in enumerate(zip(frame.index, frame["term"], strict=True))
               if name in (n, t)]
        if not hit:
            raise InputError(f"parm={w!r} is not a parameter of this fit; the parameters are "
                             f"{', '.join(map(repr, frame.index))}.")
        keep += hit
    return frame.iloc[keep]
