"""``anova``: likelihood-ratio tests of nested fits (lme4) and Type III F tests (lmerTest).

With two or more fits: lme4's ``anova.merMod``.  Gaussian REML fits are
refitted by ML first (lme4's ``refit = TRUE``); the fits are ordered by their
number of parameters; each row after the first tests it against the row
above: ``Chisq = 2 max(0, diff(logLik))`` on ``diff(npar)`` df.

With one Gaussian fit: lmerTest's Type III table.  For each term of the
fixed part, ``L`` selects its columns; ``F = (L b)'(L V L')^{-1}(L b) / q``.
Satterthwaite: the df of each eigen-direction of ``L V L'`` combined as
lmerTest's ``contestMD`` (``2E / (E - q)``, ``E = sum nu / (nu - 2)``);
Kenward-Roger: pbkrtest's scaled F and df from the adjusted covariance
(REML fits).  ``Sum Sq = F q sigma^2`` as lmerTest prints it.  With sum
(or other zero-sum) contrasts, or without interactions, these are lmerTest's
Type III hypotheses; with other codings and interactions lmerTest tests the
zero-sum coded model's terms, mapped to the fit's coding through
``beta_sum = T beta`` (``X_sum T = X``), which needs the data (``data=``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import _dist
from .._validation import check_choice
from ..errors import InputError
from ._access import family_of, kind_of, prepared_model
from .table import InferenceTable

__all__ = ["anova"]


def anova(*fits: Any, ddf: str = "satterthwaite", names: Any = None,
          data: Any = None) -> InferenceTable:
    """Compare nested fits by likelihood ratio, or test one Gaussian fit's terms (Type III F).

    Parameters
    ----------
    *fits : LmmFit, GlmmFit or ClmmFit
        One Gaussian fit: its Type III F table.  Two or more fits of the same
        family and data: likelihood-ratio tests, smallest model first.
    ddf : {"satterthwaite", "kenward-roger"}
        Denominator df of the F tests (one fit only; Kenward-Roger needs REML).
    names : list of str, optional
        Row labels of the models (default ``m1``, ``m2``, ... in the order given).
    data : DataFrame, optional
        One fit: the data it was fitted to.  With it, a model whose factors are
        not zero-sum coded and that has interactions gets lmerTest's Type III
        hypotheses (those of the zero-sum coded model, mapped to this coding);
        without it each term is tested on its own coefficients (the same for
        models without interactions or with sum coding).

    Returns
    -------
    InferenceTable
        LRT: ``npar, AIC, BIC, logLik, deviance, Chisq, Df, p`` per model
        (lme4's columns).  Type III: ``SumSq, MeanSq, NumDF, DenDF, F, p`` per term.

    Raises
    ------
    InputError
        No fits; fits of different families or numbers of observations; a
        non-Gaussian single fit; Kenward-Roger on an ML fit.

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> ss = pd.read_csv("tests/reference/data/sleepstudy.csv")
    >>> m0 = nlpower.lmer("Reaction ~ 1 + (1 | Subject)", ss)
    >>> m1 = nlpower.lmer("Reaction ~ Days + (1 | Subject)", ss)
    >>> round(float(anova(m0, m1).to_frame()["Chisq"].iloc[1]), 2)
    116.46
    >>> anova(m1).to_frame()["NumDF"].tolist()
    [1]
    """
    if not fits:
        raise InputError("anova needs at least one fit: anova(fit) for Type III F tests, "
                         "anova(m0, m1) for a likelihood-ratio test.")
    if len(fits) == 1:
        return type3(fits[0], ddf=ddf, data=data)
    return lrt(list(fits), names)


def _reml(fit: Any) -> bool:
    """A REML fit: where the family has a residual SD, the fit's criterion may be REML."""
    return bool(family_of(fit, where="anova").has_sigma and fit.REML)


def _ml(fit: Any) -> Any:
    if _reml(fit):
        return prepared_model(fit, where="anova (refit by ML)").fit(REML=False)
    return fit


def lrt(fits: list[Any], names: Any = None) -> InferenceTable:
    """Likelihood-ratio tests of nested fits (lme4's ``anova(m0, m1, ...)``)."""
    # the fit type: log-likelihoods compare within one kind of response (a Gaussian density,
    # a GLM family's mass function -- Poisson against negative binomial is a usual test --,
    # cumulative-link probabilities), not across them
    kinds = {kind_of(f, where="anova") for f in fits}
    if len(kinds) > 1:
        raise InputError(f"anova compares fits of one family; got {sorted(kinds)}.")
    nobs = {int(f.nobs) for f in fits}
    if len(nobs) > 1:
        raise InputError(f"anova compares fits to the same observations; the fits have "
                         f"{sorted(nobs)} observations (a missing value in a new column drops "
                         "rows: fit every model to the same complete rows).")
    labels = [f"m{i + 1}" for i in range(len(fits))] if names is None else [str(n) for n in names]
    if len(labels) != len(fits):
        raise InputError(f"names must give one label per fit ({len(fits)}); got {names!r}.")
    refit = any(_reml(f) for f in fits)
    ml = [_ml(f) for f in fits]
    order = sorted(range(len(ml)), key=lambda i: ml[i].n_params)
    npar = np.array([ml[i].n_params for i in order], dtype=float)
    ll = np.array([ml[i].loglik for i in order])
    chisq = np.concatenate([[np.nan], 2.0 * np.maximum(0.0, np.diff(ll))])
    df = np.concatenate([[np.nan], np.diff(npar)])
    with np.errstate(invalid="ignore"):
        p = np.where(df > 0, _dist.chi2_sf(np.nan_to_num(chisq), np.where(df > 0, df, 1.0)), np.nan)
    p[0] = np.nan
    frame = pd.DataFrame({"npar": npar.astype(int), "AIC": [ml[i].aic for i in order],
                          "BIC": [ml[i].bic for i in order], "logLik": ll, "deviance": -2.0 * ll,
                          "Chisq": chisq, "Df": df, "p": p},
                         index=[labels[i] for i in order])
    notes = ["Each row tested against the row above (chi-squared on the difference in npar)."]
    if refit:
        notes.append("REML fits refitted by maximum likelihood (lme4's refit = TRUE).")
    return InferenceTable("Likelihood-ratio tests", frame, tuple(notes))


def _term_columns(fit: Any, names: list[str] | None = None) -> dict[str, list[int]]:
    """Fixed-effect columns of each term of the formula's fixed part (R's ``assign``)."""
    from ..formula import term_columns
    return term_columns(fit.formula, list(fit.fixef.index) if names is None else names)


def _satterthwaite_F(fit: Any, L: np.ndarray, b: np.ndarray, V: np.ndarray
                     ) -> tuple[float, float]:
    q = L.shape[0]
    d, P = np.linalg.eigh(L @ V @ L.T)
    PtL = P.T @ L
    F = float(np.sum((PtL @ b) ** 2 / d) / q)
    nu = np.array([fit.contrast_df(row) for row in PtL])
    if q == 1:
        return F, float(nu[0])
    if np.any(nu <= 2.0):
        return F, 2.0
    E = float(np.sum(nu / (nu - 2.0)))
    return F, 2.0 * E / (E - q)


def _zero_sum_map(fit: Any, data: Any) -> tuple[dict[str, list[int]], np.ndarray]:
    """The zero-sum coded model's term columns and ``T`` with ``beta_sum = T beta``.

    Both codings span the same column space, so ``X_sum T = X`` (least squares, exact).
    """
    from ..formula import parse
    from ..lmm.frame import model_frame

    if not isinstance(data, pd.DataFrame):
        raise InputError(f"data must be the DataFrame the model was fitted to; got "
                         f"{type(data).__name__}.")
    f = parse(fit.formula)
    rhs = f.fixed.to_string(explicit_intercept=False) or "1"
    variables = [v for v in f.fixed.variables if v != f.response]
    frame = data[[*variables, f.response]].dropna()
    factors = [v for v in variables if not pd.api.types.is_numeric_dtype(frame[v])
               or isinstance(frame[v].dtype, pd.CategoricalDtype)]
    orig = model_frame(f"{f.response} ~ {rhs}", frame, contrasts=dict(fit.contrasts))
    zs = model_frame(f"{f.response} ~ {rhs}", frame, contrasts={v: "sum" for v in factors})
    if list(orig.fixef_names) != [str(n) for n in fit.fixef.index] or zs.X.shape != orig.X.shape:
        raise InputError("data does not give this fit's fixed-effect columns; pass the data "
                         "the model was fitted to.")
    T = np.linalg.lstsq(zs.X, orig.X, rcond=None)[0]
    return _term_columns(fit, list(zs.fixef_names)), T


def type3(fit: Any, *, ddf: str = "satterthwaite", data: Any = None) -> InferenceTable:
    """lmerTest's Type III F table of one Gaussian fit."""
    ddf = check_choice("ddf", ddf, ("satterthwaite", "kenward-roger"))
    if not family_of(fit, where="anova").has_sigma:      # F tests need a residual variance
        raise InputError(f"anova(fit) with one fit gives Type III F tests of a Gaussian (lmer) "
                         f"fit; this is a {type(fit).__name__}: compare nested fits with "
                         "anova(m0, m1) instead.")
    if ddf == "kenward-roger" and not fit.REML:
        raise InputError("ddf='kenward-roger' is defined at a REML fit (as pbkrtest); refit with "
                         "REML=True or use ddf='satterthwaite'.")
    b, V = fit.fixef.to_numpy(dtype=float), fit.vcov.to_numpy(dtype=float)
    kr = None
    if ddf == "kenward-roger":
        from ..lmm.ddf import term_covariances, term_slots
        from ..lmm.kenward_roger import covariance_basis, kr_state
        spec = prepared_model(fit, where="anova(ddf='kenward-roger')").spec
        covs = term_covariances(term_slots(spec), fit.theta, fit.sigma)
        kr = kr_state(spec, b, covs, fit.sigma, covariance_basis(spec))
    zero_sum = all(v in ("sum", "helmert", "half") for v in fit.contrasts.values())
    interactions = any(":" in t for t in _term_columns(fit))
    mapped = data is not None and interactions and not zero_sum
    terms, T = _zero_sum_map(fit, data) if mapped else (_term_columns(fit), np.eye(b.size))
    rows = []
    for term, cols in terms.items():
        E = np.zeros((len(cols), b.size))
        E[np.arange(len(cols)), cols] = 1.0
        L = E @ T
        if kr is not None:
            F, df2, _, p = kr.f_test(L)
        else:
            F, df2 = _satterthwaite_F(fit, L, b, V)
            p = float(_dist.f_sf(F, len(cols), df2))
        ms = F * fit.sigma ** 2
        rows.append((term, ms * len(cols), ms, len(cols), df2, F, p))
    frame = pd.DataFrame(rows, columns=["term", "SumSq", "MeanSq", "NumDF", "DenDF", "F", "p"]
                         ).set_index("term")
    frame.index.name = None
    method = "Satterthwaite's" if ddf == "satterthwaite" else "Kenward-Roger's"
    notes = [f"Type III F tests with {method} denominator df (lmerTest's anova)."]
    if mapped:
        notes.append("Hypotheses of the zero-sum coded model, mapped to this fit's coding "
                     "(lmerTest's Type III).")
    elif interactions and not zero_sum:
        notes.append("Factors not zero-sum coded in a model with interactions: each term is "
                     "tested on its own coefficients; pass data= for lmerTest's Type III "
                     "hypotheses.")
    return InferenceTable("Type III analysis of variance", frame, tuple(notes))
