"""GLMM fit results: the light :class:`GlmmCore` and the lme4-like :class:`GlmmFit`.

Conventions of lme4 1.1-31 for ``glmerMod``: ``loglik`` is ``-deviance / 2``
with the deviance lme4 optimises (Laplace or adaptive quadrature;
``-2 logLik`` including the binomial coefficients / ``log y!``), ``aic`` /
``bic`` count ``p + length(theta)`` parameters (no residual variance), the
Wald tests are ``z`` tests, ``varcorr()`` has no ``Residual`` row, and
``vcov`` is lme4's default: from the finite-difference Hessian of the
deviance over ``(theta, beta)`` (``optinfo["vcov"]`` says which was used).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import _dist as stats
from ..errors import InputError
from ..lmm.checkconv import CheckConvControl, ConvCheck
from ..lmm.family import get_family
from ..lmm.fitbase import MixedFit, VarTerm, var_terms_at
from ..lmm.setparams import check_dispersion
from ..mixed.layout import ThetaLayout, theta_layout

if TYPE_CHECKING:
    from .model import GlmmModel

__all__ = ["GlmmCore", "GlmmFit", "build_fit", "start_parts", "var_terms_from_theta"]


@dataclass(frozen=True, eq=False)
class GlmmCore:
    """The essentials of one GLMM fit (the power simulations' hot path).

    Attributes
    ----------
    theta, beta : estimates (``theta`` in lme4's order).
    vcov_beta : covariance of ``beta``.
    deviance : lme4's ``-2 logLik`` at the optimum.
    converged, singular : diagnostics.  n_evals, message : the optimiser's.
    dispersion : the family's estimated parameter (negative binomial ``theta``), or None.
    hessian : the deviance's Hessian over ``(theta, beta)`` at the optimum where the refit
        computed one (``vcov="hessian"``), else None.
    """

    theta: np.ndarray
    beta: np.ndarray
    vcov_beta: np.ndarray
    deviance: float
    converged: bool
    singular: bool
    n_evals: int
    message: str
    dispersion: float | None = None
    hessian: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def se(self) -> np.ndarray:
        """Standard errors of ``beta``."""
        return np.sqrt(np.diag(self.vcov_beta))

    @property
    def zvalues(self) -> np.ndarray:
        return self.beta / self.se

    def __repr__(self) -> str:
        flags = ("" if self.converged else ", not converged") + (", singular" if self.singular else "")
        return (f"GlmmCore(deviance={self.deviance:.4f}, "
                f"beta={np.array2string(self.beta, precision=4)}{flags})")


@dataclass(frozen=True, eq=False)
class GlmmFit(MixedFit):
    """A fitted generalised linear mixed model with lme4's semantics (a
    :class:`~nlpower.lmm.fitbase.MixedFit`).

    Attributes
    ----------
    family, link, nAGQ : the family and how the likelihood was approximated.
    dispersion : the family's own parameter (negative binomial ``theta``, ``Var = mu +
        mu^2 / theta``; lme4's ``getME(fit, "glmer.nb.theta")``), or None.
    eta : the fitted linear predictor (offset and random effects included).
    offset_name, offset_given : the offset, a column of ``data`` (its name) or
        values (``offset_given``).
    The others are :class:`~nlpower.lmm.fitbase.MixedFit`'s; ``loglik`` is
    ``-deviance / 2`` (lme4's ``-2*logLik(fit)``).
    """

    family: str
    link: str
    nAGQ: int
    eta: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    offset_name: str | None = None
    offset_given: bool = False
    #: the family's own parameter (negative binomial theta), estimated with the rest
    dispersion: float | None = None

    # -- the family's hooks --------------------------------------------------------------
    def _with(self, fixef: pd.Series, theta: np.ndarray, sigma: float) -> GlmmFit:
        lay = theta_layout(self.model.spec.re_terms)
        return replace(self, fixef=fixef, theta=theta, var_terms=var_terms_from_theta(lay, theta),
                       params_set=True, _cache={})

    def _n_extra(self) -> int:
        return int(self.dispersion is not None)

    def with_params(self, *, fixef: Mapping[str, float] | None = None,
                    sd: Mapping[str, Any] | None = None, sigma: float | None = None,
                    dispersion: float | None = None) -> GlmmFit:
        """``MixedFit.with_params``, and
        ``dispersion``: the family's own parameter (negative binomial ``theta``; refused by
        the families without one)."""
        dispersion = check_dispersion(dispersion)
        new = super().with_params(fixef=fixef, sd=sd, sigma=sigma)
        if dispersion is None:
            return new  # type: ignore[no-any-return]
        fam = get_family(self.family, self.link).with_dispersion(dispersion)
        return replace(new, dispersion=fam.dispersion)

    def _fit_again(self, model: Any, y: Any) -> GlmmFit:
        start: dict[str, Any] = {"theta": self.theta, "beta": self.fixef.to_numpy()}
        if self.dispersion is not None:
            start["dispersion"] = self.dispersion
        new = model.fit(y, start=start)
        return replace(new, offset_name=self.offset_name, offset_given=self.offset_given)

    def _condvar_weights(self) -> tuple[np.ndarray, float]:
        m = self.model
        fam: Any = get_family(self.family, self.link).with_dispersion(self.dispersion)
        eta = np.asarray(self.eta, dtype=float)
        mu = fam.link.linkinv(eta)
        wt = np.asarray(m.wt if hasattr(m, "wt") else m.native.wt, dtype=float)
        return wt * fam.link.mu_eta(eta) ** 2 / fam.variance(mu), 1.0

    def _coef_rows(self) -> pd.DataFrame:
        tab = self.coef_table()
        return pd.DataFrame({"effect": "fixed", "term": [str(k) for k in tab.index],
                             "estimate": tab["estimate"].to_numpy(),
                             "std_error": tab["std_error"].to_numpy(),
                             "statistic": tab["z"].to_numpy(), "p_value": tab["p"].to_numpy()})

    # -- derived ----------------------------------------------------------------
    @property
    def zvalues(self) -> pd.Series:
        return pd.Series(self.fixef.to_numpy() / self.se.to_numpy(), index=self.fixef.index, name="z")

    def coef_table(self) -> pd.DataFrame:
        """Fixed effects: ``estimate, std_error, z, p`` (Wald z tests, two-sided; lme4's summary)."""
        est = self.fixef.to_numpy()
        se = self.se.to_numpy()
        z = est / se
        return pd.DataFrame({"estimate": est, "std_error": se, "z": z,
                             "p": 2.0 * stats.norm.sf(np.abs(z))}, index=self.fixef.index)

    def predict(self, newdata: pd.DataFrame | None = None, *, re_form: Any = None,
                allow_new_levels: bool = False, type: str = "link",
                offset: Any = None) -> np.ndarray:
        """Predictions on the link (``"link"``) or response (``"response"``) scale, as lme4's
        ``predict.merMod``.

        Parameters
        ----------
        newdata : DataFrame, optional
            Rows to predict, with the model's predictor (and grouping) columns;
            default: the fitted data (the fitted values, offset included).
        re_form : None, "NA", "~0" or str
            ``None``: every random effect (lme4's ``re.form = NULL``); ``"NA"``
            or ``"~0"``: none (the population level, ``re.form = NA``); a
            formula of random-effects terms, e.g. ``"~ (1 | worker)"``: those only.
        allow_new_levels : bool, default False
            A level of a grouping factor the fit has not seen is refused with
            an error; with ``True`` its random effects are 0 (lme4's
            ``allow.new.levels``).
        type : {"link", "response"}
            The linear predictor ``eta`` or the mean ``g^-1(eta)``.
        offset : array, optional
            The new rows' offset, when the model's was given as values (an
            offset column of the data is read from ``newdata``).

        Returns
        -------
        ndarray
            One value per row (``nan`` where a needed column is missing).

        Examples
        --------
        >>> import pandas as pd
        >>> from nlpower.glmm import glmer
        >>> cbpp = pd.read_csv("tests/reference/data/cbpp.csv", dtype={"period": str, "herd": str})
        >>> fit = glmer("prop ~ period + (1 | herd)", cbpp, "binomial", weights="size")
        >>> new = pd.DataFrame({"period": ["1", "4"], "herd": ["1", "new"]})
        >>> fit.predict(new, type="response", allow_new_levels=True).round(3).tolist()
        [0.308, 0.048]
        """
        from .._validation import check_choice
        from ..lmm.predict import predict_newdata
        check_choice("type", type, ("link", "response"))
        if newdata is None:
            if re_form is not None:
                if self.data is None:
                    raise InputError("predict(re_form=...) needs a fit made by nlpower.glmer from "
                                     "a data frame.")
                eta = predict_newdata(self, self.data, re_form=re_form,
                                      allow_new_levels=allow_new_levels,
                                      offset=self._offset() if self.offset_given else None)
            else:
                eta = self.eta.copy()
        else:
            eta = predict_newdata(self, newdata, re_form=re_form,
                                  allow_new_levels=allow_new_levels, offset=offset)
        if type == "link":
            return eta
        return np.asarray(get_family(self.family, self.link).link.linkinv(eta))

    def _offset(self) -> np.ndarray:
        m = self.model
        return np.asarray(m.offset if hasattr(m, "offset") else m.native.offset)

    # -- presentation -------------------------------------------------------------
    def __repr__(self) -> str:
        fx = ", ".join(f"{k}={v:.4g}" for k, v in self.fixef.items())
        return (f"GlmmFit({self.family}({self.link}), {self.engine}: {fx}; "
                f"logLik={self.loglik:.4f}; n={self.nobs}{self._flags()})")

    def summary(self) -> str:
        """Text in the layout of lme4's ``summary(glmerMod)``."""
        how = ("Laplace Approximation" + (", observed information" if self.optinfo.get("laplace")
                                          == "observed" else "") if self.nAGQ == 1 else
               f"Adaptive Gauss-Hermite Quadrature (nAGQ = {self.nAGQ})" if self.nAGQ > 1 else
               "the nAGQ = 0 approximation (beta in PIRLS)")
        lines = [f"Generalized linear mixed model fit by maximum likelihood ({how}) "
                 f"['glmerMod'] (engine: {self.engine})",
                 f" Family: {self.family}  ( {self.link} )", f"Formula: {self.formula}"]
        if self.dispersion is not None:
            lines.append(f"Dispersion (theta): {self.dispersion:.4g}")
        if self.contrasts:
            lines.append("Contrasts: " + ", ".join(f"{k}={v}" for k, v in self.contrasts.items()))
        lines.append("")
        crit = pd.DataFrame([[self.aic, self.bic, self.loglik, self.deviance,
                              self.nobs - self.n_params]],
                            columns=["AIC", "BIC", "logLik", "deviance", "df.resid"])
        lines.append(crit.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        lines += ["", "Random effects:", self._re_table()]
        ng = ", ".join(f"{k}, {v}" for k, v in self.ngrps.items())
        lines += [f"Number of obs: {self.nobs}, groups:  {ng}", "", "Fixed effects:"]
        tab = self.coef_table()
        shown = pd.DataFrame({"Estimate": tab["estimate"], "Std. Error": tab["std_error"],
                              "z value": tab["z"], "Pr(>|z|)": tab["p"]})
        lines.append(shown.to_string(float_format=lambda v: f"{v:.4g}"))
        if not self.converged:
            lines += ["", f"convergence: {self.optsum.message}"]
        if self.singular:
            lines += ["", "boundary (singular) fit: see help('isSingular')"]
        return "\n".join(lines)


def var_terms_from_theta(lay: ThetaLayout, theta: np.ndarray) -> tuple[VarTerm, ...]:
    """Each term's covariance ``Lambda Lambda'`` (a GLMM has no residual scale)."""
    return var_terms_at(lay, theta, 1.0)


def build_fit(model: GlmmModel, core: GlmmCore, nAGQ: int, check: ConvCheck | None, vcov_how: str,
              *, ctl: CheckConvControl | None = None) -> GlmmFit:
    """The full result from a core at the optimum (the model's PIRLS state at that optimum)."""
    spec = model.spec
    lay = model.layout
    theta = core.theta
    var_terms = var_terms_from_theta(lay, theta)
    pir = model.pirls
    mode = pir.run(theta, core.beta, model._u, update_beta=nAGQ == 0)
    b = np.zeros(pir.q)
    b_u = mode.u
    # b = Lambda u per grouping block (block 1 first, then the rest, as Pirls's columns)
    ranef: dict[str, pd.DataFrame] = {}
    off = 0
    for blk in model.blocks:
        m, q = blk.m, blk.q
        ub = b_u[off:off + m * q].reshape(m, q)
        bb = ub @ blk.lam(theta).T
        b[off:off + m * q] = bb.ravel()
        ranef[blk.group] = pd.DataFrame(bb, index=pd.Index(blk.levels, name=blk.group),
                                        columns=list(blk.cnames))
        off += m * q
    order = list(dict.fromkeys(t.group for t in lay.terms))
    ranef = {g: ranef[g] for g in order}
    names = list(spec.fixef_names)
    optinfo: dict[str, Any] = {"optimizer": "nlopt LN_BOBYQA (two stages)", "n_evals": core.n_evals,
                               "message": core.message, "converged": core.converged,
                               "vcov": vcov_how, "nlopt_converged": core.message == "converged"
                               or core.message.startswith("roundoff") or nAGQ == 0}
    optinfo.update(model.family.fit_notes(mode.eta))     # the binomial's separation
    if getattr(model, "laplace", "expected") != "expected":
        optinfo["laplace"] = model.laplace          # the observed-information Laplace (glmmTMB's)
    if check is not None:
        optinfo["checkconv"] = check.to_dict()
        optinfo["checkconv_control"] = vars(ctl) if ctl is not None else None
    return GlmmFit(
        formula=spec.formula, family=model.family.name, link=model.family.link.name, nAGQ=nAGQ,
        engine="native", fixef=pd.Series(core.beta, index=names, name="fixef"),
        vcov=pd.DataFrame(core.vcov_beta, index=names, columns=names),
        theta=theta.copy(), theta_names=lay.names, loglik=-core.deviance / 2.0,
        deviance=core.deviance, nobs=spec.n, ngrps={g: len(ranef[g]) for g in order},
        converged=core.converged, singular=core.singular, optinfo=optinfo,
        contrasts=dict(spec.contrasts), var_terms=var_terms, ranef_tables=ranef,
        eta=mode.eta.copy(), model=model)


def check_vcov(vcov: Any) -> str:
    """``vcov=`` of a refit: ``"hessian"`` (glmer's default) or ``"rx"`` (PIRLS's)."""
    if vcov not in ("hessian", "rx"):
        raise InputError(f"vcov must be 'hessian' (glmer's default: the Hessian of the deviance) "
                         f"or 'rx' (the PIRLS factor's, no derivatives); got {vcov!r}.")
    return str(vcov)


def start_parts(start: Any) -> tuple[Any, Any]:
    """``(theta, beta)`` of a start: a dict, a fit or core (``theta`` and ``fixef``/``beta``), or theta."""
    if isinstance(start, dict):
        return start.get("theta"), start.get("beta")
    if hasattr(start, "theta"):
        be = getattr(start, "beta", None)
        if be is None and getattr(start, "fixef", None) is not None:
            be = np.asarray(start.fixef, dtype=float)
        return start.theta, be
    return start, None
