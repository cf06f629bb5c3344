"""Generalised linear mixed models with lme4's semantics: :func:`glmer`.

``glmer(formula, data, family="binomial")`` builds the model frame with the
LMM engine's formula layer (lme4 syntax: crossed and nested terms, random
slopes, ``||``), turns the response into the family's form
(:mod:`.response`), prepares a :class:`~nlpower.glmm.model.GlmmModel` (or
lme4's ``glmer`` through rpy2 with ``engine="lme4"``) and returns a
:class:`~nlpower.glmm.result.GlmmFit`.  See ``docs/glmm.md``.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any, cast

import numpy as np
import pandas as pd

from .._choices import EngineName, GlmerFamily, LaplaceWeights, allowed
from .._validation import check_choice
from ..errors import FitError, InputError, NlpowerWarning
from ..formula import parse
from ..lmm.checkconv import CheckConvControl, report_convergence
from ..lmm.family import Family, get_family
from ..lmm.frame import model_frame
from .model import GlmmModel
from .response import check_response, offset_vector, prior_weights
from .result import GlmmCore, GlmmFit

__all__ = ["GlmmCore", "GlmmFit", "GlmmModel", "glmer", "glmm_frame"]

GLMER_FAMILIES = allowed(GlmerFamily)


def glmm_frame(formula: str, data: Any, family: Family, *, weights: Any = None, offset: Any = None,
               contrasts: dict[str, str] | None = None
               ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """``(spec, weights, offset, rows)``: the model frame with the response in the family's
    form, and which rows of ``data`` it holds (those without missing values)."""
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"data must be a pandas DataFrame with one row per observation; got "
                         f"{type(data).__name__}.")
    f = parse(formula)
    resp = f.response
    if resp not in map(str, data.columns):
        model_frame(formula, data, contrasts=contrasts)   # the formula layer's error (did you mean)
    col = data[resp]
    keep = col.notna()
    y = np.full(len(data), np.nan)
    y[keep.to_numpy()] = family.response_column(col[keep], resp)   # type: ignore[attr-defined]
    d = data.assign(**{resp: y})
    wt_all = prior_weights(weights, data, len(data), None)
    off_all = offset_vector(offset, data, len(data), None)
    used = [c for c in map(str, data.columns) if c in f.variables]
    keep_rows = ~d[used].isna().any(axis=1).to_numpy()
    yk = np.asarray(d[resp], dtype=float)[keep_rows]
    # the family's checks first: their messages say what to do (all 0, all 1, bad values)
    check_response(family, yk, wt_all[keep_rows], resp)
    spec = model_frame(formula, d, contrasts=contrasts, allow_n=True)
    return spec, wt_all[keep_rows], off_all[keep_rows], keep_rows


def glmer(formula: str, data: Any, family: str | Family = "binomial", *, link: str | None = None,
          weights: Any = None, offset: Any = None, nAGQ: int = 1, engine: EngineName = "native",
          laplace: LaplaceWeights = "expected",
          start: Any = None, control: dict[str, Any] | None = None,
          contrasts: dict[str, str] | None = None, checkconv: Any = None) -> GlmmFit:
    """Fit a generalised linear mixed model, like lme4's ``glmer``.

    Parameters
    ----------
    formula : str
        lme4 syntax, e.g. ``"win ~ system + (1 | worker) + (1 | item)"``.
    data : pandas.DataFrame
        One row per observation.
    family : {"binomial", "poisson", "negative_binomial"} or Family
        Binomial (logit, probit, cloglog links), Poisson (log) or negative
        binomial (log; overdispersed counts, ``Var = mu + mu^2 / theta``,
        lme4's ``glmer.nb``: ``theta`` is estimated, ``fit.dispersion``).
    link : str, optional
        The link (default: the family's canonical one).
    weights : str or array, optional
        Prior weights; for a binomial response given as proportions, the
        numbers of trials (R's ``cbind(k, n - k)`` is ``k / n`` with ``weights=n``).
    offset : str or array, optional
        A known term of the linear predictor (e.g. ``log(exposure)``).
    nAGQ : int, default 1
        1: Laplace approximation; 0: lme4's fast ``nAGQ = 0`` (``beta`` in
        PIRLS); > 1: adaptive Gauss-Hermite quadrature, for a single scalar
        random-effects term.
    engine : {"native", "lme4"}
        The native engine (default) or lme4's ``glmer`` through rpy2.
    laplace : {"expected", "observed"}
        The weights of the Laplace approximation at the mode: the expected
        (Fisher) information, as lme4 (default), or the observed information,
        as glmmTMB. The same for canonical links (logit binomial, Poisson);
        for probit, cloglog and the negative binomial the log-likelihoods
        differ slightly (native engine only).
    start : dict, optional
        ``{"theta": ..., "beta": ...}`` (or a previous fit): start stage 2 there.
    control : dict, optional
        Native: ``{"maxeval": ...}``; lme4: arguments of ``glmerControl``.
    contrasts : dict, optional
        Coding of factors, as :func:`nlpower.lmm.lmer`.
    checkconv : str, dict or CheckConvControl, optional
        lme4's post-fit checks and what a failure does (as :func:`~nlpower.lmm.lmer`).

    Returns
    -------
    GlmmFit

    Examples
    --------
    >>> import pandas as pd
    >>> cbpp = pd.read_csv("tests/reference/data/cbpp.csv", dtype={"period": str, "herd": str})
    >>> fit = glmer("prop ~ period + (1 | herd)", cbpp, "binomial", weights="size")
    >>> fit.fixef.round(2).tolist()
    [-1.4, -0.99, -1.13, -1.58]
    >>> round(fit.loglik, 2)
    -92.03
    """
    if isinstance(family, str) and family.lower() not in ("gaussian", "ordinal"):
        # suggest only the families glmer fits (not every name get_family knows)
        check_choice("family", family.lower(), GLMER_FAMILIES)
    fam = get_family(family, link)
    if fam.name not in GLMER_FAMILIES:
        raise InputError(f"glmer fits the 'binomial', 'poisson' and 'negative_binomial' "
                         f"families; got {fam.name!r}. "
                         "Use nlpower.lmm.lmer for Gaussian responses and nlpower.clmm for "
                         "ordinal ones.")
    if not isinstance(nAGQ, int | np.integer) or isinstance(nAGQ, bool) or not 0 <= nAGQ <= 100:
        raise InputError(f"nAGQ must be an integer from 0 to 100 (1 = Laplace); got {nAGQ!r}.")
    from ..lmm.engine import get_engine
    eng = get_engine(engine)
    spec, wt, off, rows = glmm_frame(formula, data, fam, weights=weights, offset=offset,
                                     contrasts=contrasts)
    ctl = CheckConvControl.coerce(checkconv)
    # family options are fixed at prepare (the protocol): refit and fit use this nAGQ
    check_choice("laplace", laplace, allowed(LaplaceWeights))
    extra = {} if laplace == "expected" else {"laplace": laplace}
    model: Any = eng.prepare(spec, data=data, family=fam, weights=wt, offset=off, nAGQ=int(nAGQ),
                             **extra)
    try:
        fit = cast(GlmmFit, model.fit(start=start, control=control, checkconv=ctl))
    except (np.linalg.LinAlgError, ArithmeticError, TypeError) as exc:  # numbers out of range
        raise _numerical_failure(exc, data, formula) from exc
    fit = replace(fit, data=data.loc[rows], offset_name=offset if isinstance(offset, str) else None,
                  offset_given=offset is not None and not isinstance(offset, str))
    if fit.optinfo.get("separation"):
        warnings.warn(
            "glmer: fitted probabilities numerically 0 or 1 occurred -- complete or quasi-complete "
            "separation (a predictor, or a combination of predictors, predicts the outcome "
            "perfectly in part of the data). The affected fixed effects and their standard "
            "errors are not meaningful. Remove or merge the offending predictor levels, pool "
            "sparse cells, or use a penalised (bias-reduced or Bayesian) fit.",
            NlpowerWarning, stacklevel=2)
        return fit
    if fit.optinfo.get("dispersion_note"):
        warnings.warn(f"glmer: {fit.optinfo['dispersion_note']}", NlpowerWarning, stacklevel=2)
    report_convergence(fit, ctl, where="glmer", stacklevel=3)
    return fit


def _numerical_failure(exc: Exception, data: Any, formula: str) -> FitError:
    """A fit that broke down numerically, said as what to check (huge counts, a bad start)."""
    response = str(formula).split("~", 1)[0].strip()
    span = ""
    if response in getattr(data, "columns", ()):
        values = np.asarray(data[response], dtype=float)
        if values.size:
            span = f" (the response {response!r} runs from {np.nanmin(values):g} to {np.nanmax(values):g})"
    return FitError(f"glmer: the fit broke down numerically{span}: {type(exc).__name__}: {exc}. "
                    "Counts or weights this large overflow the working weights; rescale them "
                    "(e.g. model counts in thousands with an offset), or check the data and "
                    "start=.")
