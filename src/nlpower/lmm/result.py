"""Fit results: the light :class:`FitCore` and the lme4-like :class:`LmmFit`.

``FitCore`` is what a power replicate needs (arrays only, no pandas);
``LmmFit`` is what a user reads: fixed effects, variance components in the
shape of R's ``as.data.frame(VarCorr(fit))``, conditional modes,
likelihood criteria with lme4's conventions (checked against lme4 1.1-31),
Satterthwaite tests (lmerTest's method) and an lme4-style ``summary()``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .. import _dist as stats
from .._validation import check_choice
from ..errors import InputError
from .layout import theta_layout
from .setparams import set_fixef, set_theta, term_covariances
from .verbs import FitVerbs


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


@dataclass(frozen=True, eq=False)
class VarTerm:
    """One random-effects term of the fit, for VarCorr: group name, columns, covariance."""

    grp: str          # lme4's (make.unique) name
    group: str        # the grouping factor
    cnames: tuple[str, ...]
    cov: np.ndarray   # (q, q) covariance matrix (sigma^2 Lambda Lambda')


def varcorr_frame(terms: list[VarTerm], sigma: float) -> pd.DataFrame:
    """R's ``as.data.frame(VarCorr(fit))``: variances, then covariances, per term."""
    rows: list[tuple[Any, ...]] = []
    for t in terms:
        sd = np.sqrt(np.diag(t.cov))
        for i, c in enumerate(t.cnames):
            rows.append((t.grp, c, None, float(t.cov[i, i]), float(sd[i])))
        q = len(t.cnames)
        for j in range(q):
            for i in range(j + 1, q):
                cov = float(t.cov[i, j])
                den = sd[i] * sd[j]
                cor = cov / den if den > 0 else float("nan")
                rows.append((t.grp, t.cnames[j], t.cnames[i], cov, cor))
    rows.append(("Residual", None, None, sigma * sigma, sigma))
    return pd.DataFrame(rows, columns=["grp", "var1", "var2", "vcov", "sdcor"])


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)) or float(value) <= 0:
        raise InputError(f"{name} must be a finite number > 0; got {value!r}.")
    return float(value)


def _fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}" if math.isfinite(x) else "NaN"


@dataclass(frozen=True)
class OptSummary:
    """What the optimiser and the post-fit checks found (MixedModels.jl's ``OptSummary``).

    Every engine's fit has one (:attr:`LmmFit.optsum`); code reads these
    typed fields, never the engine's ``optinfo`` dict.

    Attributes
    ----------
    optimizer : str
        E.g. ``"nlopt LN_BOBYQA"`` or ``"lme4 nloptwrap"``.
    n_evals : int
        Objective evaluations.
    message : str
        The optimiser's message.
    optimizer_converged : bool
        The optimiser met its own tolerances.
    converged : bool
        ``optimizer_converged`` and the gradient check passed (``fit.converged``).
    check_messages : tuple of str
        Findings of lme4's ``checkConv`` (gradient, Hessian, singular fit), in
        lme4's wording; :func:`nlpower.lmm.checkconv.apply_policy` warns or
        raises on them.
    warnings : tuple of str
        Other warnings the engine reported (lme4: R's warnings).
    max_grad : float
        ``max_i min(|scaled_i|, |g_i|)`` at the optimum (nan when not computed).

    Examples
    --------
    >>> OptSummary.from_optinfo({"optimizer": "nlopt LN_BOBYQA", "n_evals": 40, "message": "ok",
    ...                          "converged": True}).optimizer_converged
    True
    """

    optimizer: str
    n_evals: int
    message: str
    optimizer_converged: bool
    converged: bool
    check_messages: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    max_grad: float = math.nan

    @classmethod
    def from_optinfo(cls, optinfo: dict[str, Any]) -> OptSummary:
        """From an engine's ``optinfo`` (the one place its keys are read)."""
        check = optinfo.get("checkconv") or {}
        conv_messages = tuple(str(m) for m in optinfo.get("conv_messages", ()))
        messages = tuple(str(m) for m in check.get("messages", ())) + conv_messages
        warns = tuple(str(w) for w in optinfo.get("warnings", ()) if w not in conv_messages)
        converged = bool(optinfo.get("converged", True))
        if "nlopt_converged" in optinfo:
            opt_ok = bool(optinfo["nlopt_converged"])
        else:  # lme4: an optimiser warning that is not one of checkConv's messages
            opt_ok = not any("converge" in w for w in warns)
        mg = check.get("max_grad", math.nan)
        return cls(optimizer=str(optinfo.get("optimizer", "")),
                   n_evals=int(optinfo.get("n_evals", 0)), message=str(optinfo.get("message", "")),
                   optimizer_converged=opt_ok, converged=converged,
                   check_messages=messages, warnings=warns,
                   max_grad=float(mg) if mg is not None else math.nan)


@dataclass(frozen=True, eq=False)
class LmmFit(FitVerbs):
    """A fitted linear mixed model with lme4 semantics.

    Conventions follow lme4 1.1-31: for a REML fit ``deviance`` is the REML
    criterion (``REMLcrit``), ``loglik`` is the REML log-likelihood and
    ``aic``/``bic`` use it; ``theta`` is in lme4's order; ``varcorr()`` has
    the shape of ``as.data.frame(VarCorr(fit))`` with lme4's group names
    (``item``, ``item.1`` for terms that share a grouping factor).

    Attributes
    ----------
    formula, REML, engine : the model and how it was fitted.
    fixef : Series of fixed-effects estimates.
    vcov : DataFrame, covariance matrix of the fixed effects.
    theta : ndarray, relative covariance parameters (``getME(m, "theta")``).
    theta_names : names of ``theta`` in lme4's style.
    sigma : residual standard deviation.
    loglik, deviance, reml_criterion : likelihood criteria (``reml_criterion``
        is ``None`` for ML fits).
    nobs : number of observations.  ngrps : levels per grouping factor.
    converged, singular : diagnostics (``optsum`` has the details; ``optinfo``
        the engine's raw record).
    contrasts : coding of each factor in the fixed part.
    """

    formula: str
    REML: bool
    engine: str
    fixef: pd.Series
    vcov: pd.DataFrame
    theta: np.ndarray
    theta_names: tuple[str, ...]
    sigma: float
    loglik: float
    deviance: float
    reml_criterion: float | None
    nobs: int
    ngrps: dict[str, int]
    converged: bool
    singular: bool
    optinfo: dict[str, Any]
    contrasts: dict[str, str] = field(default_factory=dict)
    var_terms: tuple[VarTerm, ...] = field(default=(), repr=False)
    ranef_tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    residuals: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    df_fn: Callable[[np.ndarray], float] | None = field(default=None, repr=False)
    kr_fn: Callable[[np.ndarray], tuple[float, float]] | None = field(default=None, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    #: the prepared structure (``simulate``, ``refit`` and ``with_params`` use it)
    model: Any = field(default=None, repr=False)
    #: the rows of the user's data the model was fitted on (set by :func:`~nlpower.lmm.lmer`)
    data: pd.DataFrame | None = field(default=None, repr=False)
    #: the parameters were set by :meth:`with_params` (they are the truth of a power study,
    #: not estimates; ``vcov``, ``ranef`` and the likelihood are still the original fit's)
    params_set: bool = False

    # -- the fit protocol: set parameters, simulate, refit ------------------------------
    def _structure(self, verb: str) -> Any:
        if self.model is None:
            raise InputError(f"{verb} needs the model structure, which this fit does not carry; "
                             "fit the model with nlpower.lmer(formula, data).")
        return self.model

    def with_params(self, *, fixef: Mapping[str, float] | None = None,
                    sd: Mapping[str, Any] | None = None, sigma: float | None = None) -> LmmFit:
        """A copy whose parameters are set (simr's ``fixef<-``, ``VarCorr<-``, ``sigma<-``).

        Parameters
        ----------
        fixef : mapping, optional
            Fixed effects by name, e.g. ``{"x": -0.05}``; the others keep their value.
        sd : mapping, optional
            Random-effect SDs by term (the ``grp`` of :meth:`varcorr`): a
            number for a one-column term, ``{column: sd}`` otherwise
            (:mod:`nlpower.lmm.setparams`).  Correlations are kept.
        sigma : float, optional
            Residual SD; the random-effect SDs stay as they are.

        Examples
        --------
        >>> import pandas as pd, nlpower
        >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
        >>> m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
        >>> m2 = m.with_params(fixef={"Days": 5.0}, sd={"Subject": 30.0}, sigma=25.0)
        >>> float(m2.fixef["Days"]), m2.varcorr()["sdcor"].round(6).tolist()
        (5.0, [30.0, 25.0])
        """
        model = self._structure("with_params")
        lay = theta_layout(model.spec.re_terms)
        new_sigma = self.sigma if sigma is None else _positive("sigma", sigma)
        theta = set_theta(lay, self.theta, sd, scale=self.sigma, new_scale=new_sigma)
        covs = term_covariances(lay, theta, new_sigma)
        terms = tuple(VarTerm(grp, t.group, tuple(t.cnames), c)
                      for t, grp, c in zip(lay.terms, lay.grp_names, covs, strict=True))
        return replace(self, fixef=set_fixef(self.fixef, fixef), theta=theta, sigma=new_sigma,
                       var_terms=terms, params_set=True, _cache={})

    def simulate(self, n: int = 1, *, rng: Any = None) -> np.ndarray:
        """``n`` responses from the model at its parameters, shape ``(n, nobs)``.

        New random effects for every response (lme4's ``simulate(use.u = FALSE)``).
        """
        return np.asarray(self._structure("simulate").simulate(
            n, rng=rng, theta=self.theta, beta=self.fixef.to_numpy(), sigma=self.sigma))

    def refit(self, y: Any) -> LmmFit:
        """The same model fitted to response ``y`` (warm start here): a new fit; this one is unchanged."""
        model = self._structure("refit")
        new = model.fit(np.asarray(y, dtype=float), REML=self.REML, start=self.theta)
        return replace(new, model=model, data=self.data)

    def predict(self, newdata: pd.DataFrame | None = None, *, re_form: Any = None,
                allow_new_levels: bool = False) -> np.ndarray:
        """Predictions, as lme4's ``predict.merMod`` (:mod:`nlpower.lmm.predict`).

        ``newdata=None``: the fitted rows (with every random effect: the
        fitted values).  ``re_form``: ``None`` (every random effect), ``"NA"``
        (none: the population level) or a formula of random-effects terms;
        ``allow_new_levels``: a grouping level the fit has not seen gets
        random effects 0 instead of an error.

        Examples
        --------
        >>> import pandas as pd, nlpower
        >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
        >>> m = nlpower.lmer("Reaction ~ Days + (Days | Subject)", d)
        >>> new = pd.DataFrame({"Days": [0, 5], "Subject": [308, 999]})
        >>> m.predict(new, allow_new_levels=True).round(2).tolist()
        [253.66, 303.74]
        """
        from .predict import predict_newdata
        rows = self.data if newdata is None else newdata
        return predict_newdata(self, rows, re_form=re_form, allow_new_levels=allow_new_levels)

    # -- derived quantities ----------------------------------------------------
    @property
    def optsum(self) -> OptSummary:
        """The typed optimiser summary (:class:`OptSummary`)."""
        if "optsum" not in self._cache:
            self._cache["optsum"] = OptSummary.from_optinfo(self.optinfo)
        return self._cache["optsum"]  # type: ignore[no-any-return]

    @property
    def se(self) -> pd.Series:
        """Standard errors of the fixed effects."""
        return pd.Series(np.sqrt(np.diag(self.vcov.to_numpy())), index=self.fixef.index, name="se")

    @property
    def tvalues(self) -> pd.Series:
        return pd.Series(self.fixef.to_numpy() / self.se.to_numpy(), index=self.fixef.index,
                         name="t")

    @property
    def n_params(self) -> int:
        """Number of estimated parameters (lme4's ``attr(logLik(m), "df")``)."""
        return int(self.fixef.size + self.theta.size + 1)

    @property
    def aic(self) -> float:
        return -2.0 * self.loglik + 2.0 * self.n_params

    @property
    def bic(self) -> float:
        return -2.0 * self.loglik + math.log(self.nobs) * self.n_params

    def varcorr(self) -> pd.DataFrame:
        """Variance components as R's ``as.data.frame(VarCorr(fit))``.

        Columns ``grp, var1, var2, vcov, sdcor``: one row per variance
        (``var2`` missing, ``sdcor`` = SD), then per covariance (``sdcor`` =
        correlation), then ``Residual``.
        """
        return varcorr_frame(list(self.var_terms), self.sigma)

    def ranef(self) -> dict[str, pd.DataFrame]:
        """Conditional modes of the random effects, one DataFrame per grouping factor."""
        return {k: v.copy() for k, v in self.ranef_tables.items()}

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
        flags = ("" if self.converged else ", not converged") + (", singular" if self.singular else "")
        return f"LmmFit({crit}, {self.engine}: {fx}; sigma={self.sigma:.4g}; n={self.nobs}{flags})"

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per fixed effect, then one per variance component.

        Columns ``effect`` ("fixed" / "ran_pars"), ``group``, ``term``
        (``sd__x`` / ``cor__a.b`` for variance components, broom.mixed style),
        ``estimate``, ``std_error``, ``statistic`` (t value).
        """
        rows: list[dict[str, Any]] = []
        se = self.se.to_numpy()
        for name, est, s in zip(self.fixef.index, self.fixef.to_numpy(), se, strict=True):
            rows.append({"effect": "fixed", "group": None, "term": str(name), "estimate": float(est),
                         "std_error": float(s), "statistic": float(est / s)})
        vc = self.varcorr()
        for grp, var1, var2, sdcor in zip(vc["grp"], vc["var1"], vc["var2"], vc["sdcor"], strict=True):
            if grp == "Residual":
                term = "sd__Observation"
            elif var2 is None or pd.isna(var2):
                term = f"sd__{var1!s}"
            else:
                term = f"cor__{var1!s}.{var2!s}"
            rows.append({"effect": "ran_pars", "group": grp, "term": term,
                         "estimate": float(sdcor), "std_error": np.nan, "statistic": np.nan})
        return pd.DataFrame(rows)

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
        return "\n".join(lines)

    def _re_table(self) -> str:
        rows = []
        for t in self.var_terms:
            sd = np.sqrt(np.diag(t.cov))
            for i, c in enumerate(t.cnames):
                cors = []
                for j in range(i):
                    den = sd[i] * sd[j]
                    cors.append(f"{t.cov[i, j] / den:.2f}" if den > 0 else "NaN")
                rows.append([t.grp if i == 0 else "", c, _fmt(float(t.cov[i, i])), _fmt(float(sd[i])),
                             " ".join(cors)])
        rows.append(["Residual", "", _fmt(self.sigma ** 2), _fmt(self.sigma), ""])
        df = pd.DataFrame(rows, columns=["Groups", "Name", "Variance", "Std.Dev.", "Corr"])
        if not any(r[4] for r in rows):
            df = df.drop(columns="Corr")
        return " " + df.to_string(index=False, justify="left").replace("\n", "\n ")

    default_confint = "profile"        # lme4: profile intervals for lmer fits
