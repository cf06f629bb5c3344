"""Fit results: the light :class:`FitCore` and the lme4-like :class:`LmmFit`.

``FitCore`` is what a power replicate needs (arrays only, no pandas);
``LmmFit`` is what a user reads: fixed effects, variance components in the
shape of R's ``as.data.frame(VarCorr(fit))``, conditional modes,
likelihood criteria with lme4's conventions (checked against lme4 1.1-31),
Satterthwaite tests (lmerTest's method) and an lme4-style ``summary()``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .. import _dist as stats
from .._validation import check_choice
from ..errors import InputError
from ..mixed.layout import theta_layout
from .fitbase import MixedFit, OptSummary, VarTerm, var_terms_at, varcorr_frame

__all__ = ["FitCore", "LmmFit", "OptSummary", "VarTerm", "varcorr_frame"]


@dataclass(frozen=True, eq=False)
class FitCore:
    """The essentials of one fit (the power simulations' hot path).

    Attributes
    ----------
    theta : ndarray
        Relative covariance parameters in lme4's order (``getME(m, "theta")``).
    beta : ndarray
        Fixed-effects estimates.
    sigma : float
        Residual standard deviation (ML: ``r^2/n``; REML: ``r^2/(n-p)``).
    vcov_beta : ndarray, shape (p, p)
        ``sigma^2 (R_X' R_X)^{-1}``.
    deviance : float
        ML deviance (``REML=False``) or REML criterion (``REML=True``).
    REML : bool
    converged : bool
        The optimiser met its tolerances.
    singular : bool
        lme4's ``isSingular``: a diagonal ``theta`` element below 1e-4.
    n_evals : int
        Deviance evaluations used (optimiser and boundary checks).
    message : str
        The optimiser's message.
    """

    theta: np.ndarray
    beta: np.ndarray
    sigma: float
    vcov_beta: np.ndarray
    deviance: float
    REML: bool
    converged: bool
    singular: bool
    n_evals: int
    message: str

    @property
    def se(self) -> np.ndarray:
        """Standard errors of ``beta``."""
        return np.sqrt(np.diag(self.vcov_beta))

    @property
    def tvalues(self) -> np.ndarray:
        return self.beta / self.se

    def __repr__(self) -> str:
        crit = "REML" if self.REML else "deviance"
        flags = ("" if self.converged else ", not converged") + (", singular" if self.singular else "")
        return (f"FitCore({crit}={self.deviance:.4f}, beta={np.array2string(self.beta, precision=4)}, "
                f"sigma={self.sigma:.4g}{flags})")


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)) or float(value) <= 0:
        raise InputError(f"{name} must be a finite number > 0; got {value!r}.")
    return float(value)


@dataclass(frozen=True, eq=False)
class LmmFit(MixedFit):
    """A fitted linear mixed model with lme4 semantics (a :class:`~nlpower.lmm.fitbase.MixedFit`).

    Conventions follow lme4 1.1-31: for a REML fit ``deviance`` is the REML
    criterion (``REMLcrit``), ``loglik`` is the REML log-likelihood and
    ``aic``/``bic`` use it; ``theta`` is in lme4's order; ``varcorr()`` has
    the shape of ``as.data.frame(VarCorr(fit))`` with lme4's group names
    (``item``, ``item.1`` for terms that share a grouping factor).

    Attributes
    ----------
    REML : bool
    sigma : residual standard deviation.
    reml_criterion : the REML criterion (``None`` for ML fits).
    residuals : response minus fitted values.
    The others are :class:`~nlpower.lmm.fitbase.MixedFit`'s (``formula``,
    ``engine``, ``fixef``, ``vcov``, ``theta``, ``loglik``, ``deviance``,
    ``nobs``, ``ngrps``, ``converged``, ``singular``, ``optsum``, ``data``...).
    """

    REML: bool
    sigma: float
    reml_criterion: float | None
    residuals: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    df_fn: Callable[[np.ndarray], float] | None = field(default=None, repr=False)
    kr_fn: Callable[[np.ndarray], tuple[float, float]] | None = field(default=None, repr=False)

    _residual_name: ClassVar[str | None] = "Residual"
    default_confint = "profile"        # lme4: profile intervals for lmer fits

    # -- the family's hooks --------------------------------------------------------------
    def _residual_sd(self) -> float:
        return float(self.sigma)

    def _scale(self) -> float:
        return float(self.sigma)

    def _n_extra(self) -> int:
        return 1

    def _new_sigma(self, sigma: Any) -> float:
        return self.sigma if sigma is None else _positive("sigma", sigma)

    def _with(self, fixef: pd.Series, theta: np.ndarray, sigma: float) -> LmmFit:
        terms = var_terms_at(theta_layout(self.model.spec.re_terms), theta, sigma)
        return replace(self, fixef=fixef, theta=theta, sigma=sigma, var_terms=terms,
                       params_set=True, _cache={})

    def _fit_again(self, model: Any, y: Any) -> LmmFit:
        new = model.fit(np.asarray(y, dtype=float), REML=self.REML, start=self.theta)
        return replace(new, model=model)

    def _condvar_weights(self) -> tuple[np.ndarray, float]:
        return np.ones(self.nobs), float(self.sigma) ** 2

    def _coef_rows(self) -> pd.DataFrame:
        est, se = self.fixef.to_numpy(), self.se.to_numpy()
        return pd.DataFrame({"effect": "fixed", "term": [str(k) for k in self.fixef.index],
                             "estimate": est, "std_error": se, "statistic": est / se,
                             "p_value": np.nan})

    # -- derived quantities ----------------------------------------------------
    @property
    def tvalues(self) -> pd.Series:
        return pd.Series(self.fixef.to_numpy() / self.se.to_numpy(), index=self.fixef.index,
                         name="t")

    def contrast_df(self, L: Any) -> float:
        """Satterthwaite denominator df for the contrast ``L' beta`` (lmerTest's method)."""
        Lv = np.asarray(L, dtype=float).ravel()
        if Lv.shape != (self.fixef.size,):
            raise InputError(
                f"L must have one entry per fixed effect ({self.fixef.size}: "
                f"{', '.join(self.fixef.index)}); got shape {np.shape(L)}."
            )
        if self.df_fn is None:
            raise InputError(
                f"Satterthwaite df are not available for engine={self.engine!r}; "
                "use coef_table(ddf='normal') or fit with engine='native'."
            )
        return float(self.df_fn(Lv))

    def coef_table(self, ddf: str = "satterthwaite") -> pd.DataFrame:
        """Fixed-effects table: estimate, std_error, df, t, p (lmerTest's ``summary``).

        Parameters
        ----------
        ddf : {"satterthwaite", "kenward-roger", "normal"}
            ``"satterthwaite"``: lmerTest's Satterthwaite df (Kuznetsova et
            al. 2017) and t-distribution p-values; ``"kenward-roger"``:
            pbkrtest's adjusted standard errors and df (REML fits only);
            ``"normal"``: df = inf (z-tests, as the t > 1.96 rule of Card et
            al. 2020).  Every engine's fit supports all three.

        Raises
        ------
        InputError
            Unknown ``ddf``; ``"kenward-roger"`` on an ML fit; a df method
            this fit was built without.

        Examples
        --------
        >>> from nlpower import CrossedDesign, presets, simulate
        >>> from nlpower.lmm import lmer
        >>> df = simulate(CrossedDesign(6, 20), presets.high_variance(0.1), rng=1)
        >>> fit = lmer("rating ~ x + (1 | worker) + (1 | item)", df)
        >>> list(fit.coef_table("kenward-roger").columns)
        ['estimate', 'std_error', 'df', 't', 'p']
        """
        check_choice("ddf", ddf, ("satterthwaite", "kenward-roger", "normal"))
        key = f"coef_{ddf}"
        if key in self._cache:
            return self._cache[key].copy()
        est = self.fixef.to_numpy()
        se = self.se.to_numpy()
        p = est.size
        if ddf == "normal":
            t = est / se
            df = np.full(p, np.inf)
            pv = 2.0 * stats.norm.sf(np.abs(t))
        elif ddf == "kenward-roger":
            if self.kr_fn is None:
                raise InputError(f"Kenward-Roger df are not available for this {self.engine!r} "
                                 "fit; use coef_table(ddf='satterthwaite').")
            se_df = [self.kr_fn(np.eye(p)[i]) for i in range(p)]
            se = np.array([v[0] for v in se_df])
            df = np.array([v[1] for v in se_df])
            t = est / se
            pv = 2.0 * stats.t.sf(np.abs(t), df)
        else:
            t = est / se
            df = np.array([self.contrast_df(np.eye(p)[i]) for i in range(p)])
            pv = 2.0 * stats.t.sf(np.abs(t), df)
        out = pd.DataFrame({"estimate": est, "std_error": se, "df": df, "t": t, "p": pv},
                           index=self.fixef.index)
        self._cache[key] = out
        return out.copy()

    # -- presentation ------------------------------------------------------------
    def __repr__(self) -> str:
        crit = "REML" if self.REML else "ML"
        fx = ", ".join(f"{k}={v:.4g}" for k, v in self.fixef.items())
        return (f"LmmFit({crit}, {self.engine}: {fx}; sigma={self.sigma:.4g}; n={self.nobs}"
                f"{self._flags()})")

    def summary(self, ddf: str = "satterthwaite") -> str:
        """Text in the layout of lme4's ``summary(lmerMod)`` (lmerTest's df and p).

        ``ddf`` as in :meth:`coef_table`.
        """
        check_choice("ddf", ddf, ("satterthwaite", "kenward-roger", "normal"))
        lines = []
        how = "REML" if self.REML else "maximum likelihood"
        tag = " ['lmerModLmerTest']" if ddf == "satterthwaite" and self.df_fn is not None else ""
        lines.append(f"Linear mixed model fit by {how}{tag} (engine: {self.engine})")
        lines.append(f"Formula: {self.formula}")
        if self.contrasts:
            lines.append("Contrasts: " + ", ".join(f"{k}={v}" for k, v in self.contrasts.items()))
        lines.append("")
        if self.REML:
            lines.append(f"REML criterion at convergence: {self.reml_criterion:.1f}")
        else:
            crit = pd.DataFrame([[self.aic, self.bic, self.loglik, self.deviance,
                                  self.nobs - self.n_params]],
                                columns=["AIC", "BIC", "logLik", "deviance", "df.resid"])
            lines.append(crit.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        lines.append("")
        if self.residuals.size:
            q = np.quantile(self.residuals / self.sigma, [0, 0.25, 0.5, 0.75, 1])
            lines.append("Scaled residuals: ")
            lines.append(pd.DataFrame([q], columns=["Min", "1Q", "Median", "3Q", "Max"]).to_string(
                index=False, float_format=lambda v: f"{v:.4f}"))
            lines.append("")
        lines.append("Random effects:")
        lines.append(self._re_table())
        ng = ", ".join(f"{k}, {v}" for k, v in self.ngrps.items())
        lines.append(f"Number of obs: {self.nobs}, groups:  {ng}")
        lines.append("")
        lines.append("Fixed effects:")
        if ddf == "satterthwaite" and self.df_fn is None:
            ddf = "normal"
        tab = self.coef_table(ddf)
        shown = pd.DataFrame({"Estimate": tab["estimate"], "Std. Error": tab["std_error"]})
        if ddf != "normal":
            shown["df"] = tab["df"]
        shown["t value"] = tab["t"]
        shown["Pr(>|t|)" if ddf != "normal" else "Pr(>|z|)"] = tab["p"]
        lines.append(shown.to_string(float_format=lambda v: f"{v:.4g}") if len(shown)
                     else "(no fixed effects)")
        lines.append("")
        if not self.converged:
            lines.append(f"optimizer ({self.optsum.optimizer}) did not converge: {self.optsum.message}")
        if self.singular:
            lines.append("boundary (singular) fit: see help('isSingular')")
        lines.extend(self.optsum.notes)
        return "\n".join(lines)
