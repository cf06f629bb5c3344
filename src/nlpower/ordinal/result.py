"""The fitted cumulative link mixed model: :class:`ClmmFit`.

Reads like ``lmer``/``glmer`` results plus ``ordinal``'s pieces:
``thresholds``, latent-scale variance components, ``predict`` of category
probabilities, and a ``summary()`` laid out as ``summary(clmm(...))``.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import pandas as pd

from .. import _dist as stats
from .._validation import check_choice
from ..errors import InputError
from ..formula import parse
from ..lmm.checkconv import report_convergence
from ..lmm.fitbase import MixedFit, VarTerm
from ..lmm.frame import model_frame
from ..mixed.layout import theta_layout
from .cumulative import cumulative_parts

if TYPE_CHECKING:
    from .model import ClmmCore, ClmmModel

__all__ = ["ClmmFit"]


class _VcovFrame(pd.DataFrame):
    """``fit.vcov``, a DataFrame that still answers the old call ``fit.vcov()`` (deprecated)."""

    @property
    def _constructor(self) -> Any:
        return pd.DataFrame

    def __call__(self) -> pd.DataFrame:
        warnings.warn("ClmmFit.vcov is an attribute now, as on every fit (lmer, glmer): write "
                      "fit.vcov, without the call.", DeprecationWarning, stacklevel=2)
        return pd.DataFrame(self)


@dataclass(frozen=True, eq=False)
class ClmmFit(MixedFit):
    """A fitted cumulative link (mixed) model, ``ordinal``'s parameterisation (a
    :class:`~nlpower.lmm.fitbase.MixedFit`).

    Attributes
    ----------
    core : ClmmCore
        Estimates, ``vcov`` over ``(alpha, beta, theta)``, log-likelihood, diagnostics.
    model : ClmmModel
        The prepared structure, this fit's own (``refit`` fits a copy).
    vcov : DataFrame
        Inverse Hessian of ``-loglik`` over thresholds, fixed effects and
        ``theta`` (``ordinal``'s ``vcov``).
    The others are :class:`~nlpower.lmm.fitbase.MixedFit`'s.
    """

    core: ClmmCore
    #: the response codes fitted (the structure's response is set back to them when needed)
    y_codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp), repr=False)

    _residual_name: ClassVar[str | None] = "Residual (latent)"

    @classmethod
    def from_core(cls, model: ClmmModel, core: ClmmCore, engine: str = "native") -> ClmmFit:
        """The fit at ``core``: a snapshot of the estimates, modes and rows."""
        rs = model.rs
        names = _param_names(model)
        c = core.check
        optinfo = {"optimizer": "ordinal::clmm" if engine == "ordinal" else
                   "L-BFGS-B and Newton (nlpower.ordinal)",
                   "message": core.message, "n_evals": core.n_evals, "converged": core.converged,
                   "optimizer_converged": core.converged or (c is not None and not c.ok),
                   "checkconv": c.to_dict() if c is not None else None,
                   "max_grad": c.max_grad if c is not None else math.nan, "cond_H": core.cond_H}
        terms = []
        for k, t in enumerate(rs.terms if rs is not None else ()):
            assert rs is not None
            L = rs.term_factor(k, core.theta)
            terms.append(VarTerm(grp=t.group, group=t.group, cnames=tuple(t.cnames),
                                 cov=np.asarray(L @ L.T)))
        tables = _ranef_tables(model, core)
        data = getattr(model, "data", None)
        return cls(core=core, model=model, engine=engine, formula=model.spec.formula,
                   fixef=pd.Series(core.beta, index=list(model.fixef_names), name="fixef"),
                   vcov=_VcovFrame(core.vcov, index=names, columns=names), theta=core.theta,
                   theta_names=theta_layout(model.spec.re_terms).names if rs is not None else (),
                   loglik=core.loglik, deviance=-2.0 * core.loglik, nobs=model.spec.n,
                   ngrps={g: len(v) for g, v in tables.items()}, converged=core.converged,
                   singular=core.singular, optinfo=optinfo, contrasts=dict(model.spec.contrasts),
                   var_terms=tuple(terms), ranef_tables=tables,
                   data=data() if callable(data) else data, y_codes=np.array(model.y, copy=True))

    # -- the family's hooks --------------------------------------------------------------
    def _residual_sd(self) -> float:
        return math.sqrt(_LATENT_VAR[self.model.link.name])

    def _n_extra(self) -> int:
        return int(self.core.alpha.size)

    def _fixef_offset(self) -> int:
        return int(self.model.n_alpha)

    def _with(self, fixef: pd.Series, theta: np.ndarray, sigma: float) -> ClmmFit:
        core = replace(self.core, beta=fixef.to_numpy(dtype=float), theta=theta)
        return replace(ClmmFit.from_core(self.model, core, self.engine), params_set=True)

    def _fit_again(self, model: Any, y: Any) -> ClmmFit:
        y = np.asarray(y)
        if y.dtype.kind not in "iub" and not (
                y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
            raise InputError("refit(y): y must be integer category codes 0..K-1 (as simulate() "
                             "returns); got non-integer values.")
        if y.size and np.unique(y).size < 2:
            raise InputError(f"refit(y): y has a single category (code {int(y.flat[0])} in all "
                             f"{y.size} rows); an ordinal model needs at least two (its thresholds "
                             "would run off to infinity).")
        own = copy.deepcopy(model)      # a new fit with its own structure: this one stays
        return ClmmFit.from_core(own, own.refit(y.astype(np.intp), start=self.core), self.engine)

    def _condvar_weights(self) -> tuple[np.ndarray, float]:
        m = self._at_fit()
        up, lo = m.bounds(self.core.alpha, self.core.beta)
        e = self._eta(None, True) - m.X @ self.core.beta
        return cumulative_parts(m.link, up - e, lo - e).w, 1.0

    def _coef_rows(self) -> pd.DataFrame:
        tab = self.coef_table()
        return pd.DataFrame({"effect": np.where(tab["kind"] == "threshold", "threshold", "fixed"),
                             "term": [str(k) for k in tab.index],
                             "estimate": tab["estimate"].to_numpy(),
                             "std_error": tab["se"].to_numpy(), "statistic": tab["z"].to_numpy(),
                             "p_value": tab["pvalue"].to_numpy()})

    # -- estimates -------------------------------------------------------------------
    @property
    def alpha(self) -> pd.Series:
        """Threshold parameters (``ordinal``'s ``alpha``: cut points for flexible thresholds)."""
        return pd.Series(self.core.alpha, index=list(self.model.thr.names), name="alpha")

    @property
    def thresholds(self) -> pd.Series:
        """The ``K - 1`` cut points ``theta_j`` on the latent scale (``"1|2"``, ...)."""
        return pd.Series(self.core.thresholds, index=list(self.model.thr.cut_names),
                         name="threshold")

    @property
    def unused_categories(self) -> tuple[str, ...]:
        """Response categories nobody used (dropped from the fit)."""
        return self.model.response.unused

    @property
    def categories(self) -> tuple[str, ...]:
        return self.model.levels

    @property
    def cond_H(self) -> float:
        """Condition number of the Hessian (``ordinal``'s ``cond.H``)."""
        return self.core.cond_H

    def _term_cov(self, k: int) -> np.ndarray:
        return np.asarray(self.var_terms[k].cov)

    def _at_fit(self) -> ClmmModel:
        """The structure, with this fit's response (another fit of it may have changed it)."""
        m = self.model
        if self.y_codes.size and not np.array_equal(m.y, self.y_codes):
            m.set_response(self.y_codes)
        return m

    # -- prediction ------------------------------------------------------------------
    def _eta(self, newdata: pd.DataFrame | None, re: bool,
             allow_new_levels: bool = False) -> np.ndarray:
        m = self.model
        if newdata is None:
            X = m.X
            eta = X @ self.core.beta
            if re and m.rs is not None:
                m.rs.at_theta(self.core.theta)
                eta = eta + m.rs.eta(self.core.u)
            return np.asarray(eta)
        if not isinstance(newdata, pd.DataFrame):
            raise InputError("newdata must be a pandas DataFrame with the model's predictor columns.")
        f = parse(self.formula)
        resp = m.spec.response
        train = getattr(m, "data", None)
        if train is None:
            raise InputError("predict(newdata=...) needs a model prepared from a data frame "
                             "(nlpower.clmm); predict() without newdata works.")
        with_re = re and m.rs is not None
        need = [v for v in (f.variables if with_re else f.fixed.variables) if v != resp]
        missing = [v for v in need if v not in newdata.columns]
        if missing:
            what = "predictor and grouping" if with_re else "predictor"
            hint = "; or predict(..., re_form=\"NA\") for the population level" if with_re else ""
            raise InputError(f"newdata lacks the {what} columns {missing}{hint}.")
        na = newdata[need].isna().any(axis=1).to_numpy()
        if na.any():    # the model frame would drop them: rows out of line with newdata's
            bad = [v for v in need if newdata[v].isna().any()]
            raise InputError(f"newdata has missing values in {bad} (rows "
                             f"{list(np.flatnonzero(na)[:5])}{' ...' if na.sum() > 5 else ''} by "
                             "position); drop or fill those rows before predict().")
        _check_factor_levels(train, newdata, [v for v in f.fixed.variables if v != resp])
        both = pd.concat([train[need], newdata[need]], ignore_index=True)
        both[resp] = np.arange(len(both), dtype=float) % 2   # placeholder, not used
        if with_re:
            spec = model_frame(self.formula, both, m.spec.contrasts)
        else:
            rhs = f.fixed.to_string(explicit_intercept=False) or "1"
            spec = model_frame(f"{resp} ~ {rhs}", both, m.spec.contrasts)
        n0 = len(train)
        Xn = spec.X[n0:]
        names = list(spec.fixef_names)
        cols = []
        for nm in m.fixef_names:
            if nm not in names:
                raise InputError(f"newdata does not give the fixed-effect column {nm!r}.")
            cols.append(Xn[:, names.index(nm)])
        eta = (np.column_stack(cols) @ self.core.beta) if cols else np.zeros(len(newdata))
        if with_re:
            eta = eta + self._re_part(spec, n0, allow_new_levels)
        return np.asarray(eta)

    def _re_part(self, spec: Any, n0: int, allow_new_levels: bool) -> np.ndarray:
        """``z' b`` of new rows: each term's columns times its level's conditional modes."""
        rs = self.model.rs
        assert rs is not None
        ub = rs.split(self.core.u)
        out = np.zeros(spec.n - n0)
        for bi, blk in enumerate(rs.blocks):
            B = ub[bi] @ rs.block_factor(bi, self.core.theta).T     # (L, q): b per level
            index = {lv: i for i, lv in enumerate(blk.levels)}
            for k, c in zip(blk.terms, blk.cols, strict=True):
                t_new = spec.re_terms[k]
                labels = np.asarray(t_new.levels, dtype=object)[np.asarray(t_new.codes)[n0:]]
                pos = np.array([index.get(lv, -1) for lv in labels], dtype=np.intp)
                unknown = pos < 0
                if unknown.any() and not allow_new_levels:
                    new = sorted({str(v) for v in labels[unknown]})
                    raise InputError(
                        f"newdata has levels of {blk.group!r} the model has not seen: "
                        f"{new[:5]}{' ...' if len(new) > 5 else ''}. Pass allow_new_levels=True "
                        "to predict them at random effect 0 (the population level).")
                Bt = B[:, c][np.maximum(pos, 0)]
                Bt[unknown] = 0.0
                out += np.einsum("ij,ij->i", np.asarray(t_new.Z)[n0:], Bt)
        return out

    def predict(self, newdata: pd.DataFrame | None = None, *, re_form: Any = None,
                allow_new_levels: bool = False, type: str = "prob", re: bool | None = None
                ) -> Any:
        """Predictions: category probabilities, most likely category, or the latent mean.

        Parameters
        ----------
        newdata : DataFrame, optional
            Rows to predict (default: the fitted data).
        re_form : None, "NA" or "~0"
            ``None``: condition on the estimated random effects (conditional
            modes) of every term, ``eta = x'beta + z'b``; ``"NA"`` or ``"~0"``:
            the population level (``b = 0``), as lme4's ``re.form``.
        allow_new_levels : bool
            Levels of a grouping factor the fit has not seen are predicted at
            ``b = 0``; without this they raise :class:`~nlpower.errors.InputError`.
        type : {"prob", "class", "latent"}
            ``"prob"``: DataFrame of ``P(Y = j)`` (one column per category);
            ``"class"``: the most probable category; ``"latent"``: ``eta``.
        re : bool, optional
            Deprecated spelling of ``re_form`` (``re=False`` is ``re_form="NA"``).
        """
        if re is not None:
            warnings.warn("predict(re=...) is deprecated: write re_form=None (every random "
                          "effect) or re_form='NA' (none), as for lmer and glmer fits.",
                          DeprecationWarning, stacklevel=2)
            re_form = None if re else "NA"
        from ..lmm.predict import _re_choice
        choice = _re_choice(re_form)
        if isinstance(choice, str):
            raise InputError(f"re_form={re_form!r}: an ordinal fit predicts with every random "
                             "effect (re_form=None) or none (re_form='NA').")
        re = bool(choice)
        check_choice("type", type, ("prob", "class", "latent"))
        eta = self._eta(newdata, re, allow_new_levels)
        if type == "latent":
            return pd.Series(eta, name="eta")
        cuts = np.concatenate([[-np.inf], self.core.thresholds, [np.inf]])
        F = self.model.link.linkinv(cuts[None, :] - eta[:, None])
        P = np.diff(F, axis=1)
        if type == "prob":
            return pd.DataFrame(P, columns=list(self.categories))
        return pd.Series(np.asarray(self.categories)[np.argmax(P, axis=1)], name="class")

    def fitted(self) -> np.ndarray:
        """``P(Y = y_i)`` of each observation at the conditional modes."""
        m = self._at_fit()
        up, lo = m.bounds(self.core.alpha, self.core.beta)
        e = self._eta(None, True) - m.X @ self.core.beta
        return cumulative_parts(m.link, up - e, lo - e, derivatives=False).p

    # -- set parameters ------------------------------------------------------------------
    def with_params(self, *, fixef: Mapping[str, float] | None = None,
                    sd: Mapping[str, Any] | None = None, sigma: float | None = None,
                    thresholds: Any = None) -> ClmmFit:
        """A copy whose parameters are set: the truth of a power study (simr's ``fixef<-``).

        ``fixef``: coefficients by name (latent scale); ``sd``: random-effect
        SDs by term, on the latent scale (:mod:`nlpower.lmm.setparams`);
        ``thresholds``: the ``K - 1`` cut points (flexible thresholds).  The
        latent residual is fixed by the link: ``sigma`` is refused.

        Examples
        --------
        >>> import pandas as pd, nlpower
        >>> wine = pd.read_csv("tests/reference/data/wine.csv")
        >>> m = nlpower.clmm("rating ~ temp + contact + (1 | judge)", wine)
        >>> m2 = m.with_params(fixef={"tempwarm": 1.0}, sd={"judge": 0.5})
        >>> float(m2.fixef["tempwarm"]), round(float(m2.varcorr()["sdcor"][0]), 6)
        (1.0, 0.5)
        """
        if sigma is not None:
            raise InputError("sigma: a cumulative link model's latent residual SD is fixed by "
                             "the link; set fixef=, sd= and thresholds= only.")
        new = cast(ClmmFit, super().with_params(fixef=fixef, sd=sd))
        if thresholds is None:
            return new
        cuts = self.core.thresholds
        if self.model.thr.kind != "flexible":
            raise InputError(f"thresholds= sets flexible thresholds; this model's are "
                             f"{self.model.thr.kind!r}. Refit with threshold='flexible'.")
        t = _cut_points(thresholds, cuts, tuple(self.model.thr.cut_names))
        if t.shape != cuts.shape or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
            raise InputError(f"thresholds must be {cuts.size} increasing finite cut points "
                             f"({', '.join(self.model.thr.cut_names)}); got {thresholds!r}.")
        core = replace(new.core, alpha=t, thresholds=t)
        return replace(ClmmFit.from_core(self.model, core, self.engine), params_set=True)

    # -- reporting -------------------------------------------------------------------
    def coef_table(self) -> pd.DataFrame:
        """Estimates, SEs, Wald z and two-sided p of thresholds and fixed effects."""
        a, p = self.model.n_alpha, self.model.p
        est = np.concatenate([self.core.alpha, self.core.beta])
        se = np.sqrt(np.maximum(np.diag(self.core.vcov)[:a + p], 0.0))
        z = est / se
        return pd.DataFrame({"estimate": est, "se": se, "z": z,
                             "pvalue": 2.0 * stats.norm.sf(np.abs(z)),
                             "kind": ["threshold"] * a + ["fixed"] * p},
                            index=list(self.model.thr.names) + list(self.model.fixef_names))

    def summary(self) -> str:
        """The fit as ``summary(clmm(...))`` prints it."""
        from .report import summary_text
        return summary_text(self)

    def warn_diagnostics(self, checkconv: Any = None, *, where: str = "clmm") -> None:
        """Warn (or raise, per policy) about convergence and singular fits
        (:func:`~nlpower.lmm.checkconv.report_convergence`, as ``lmer`` and ``glmer``)."""
        report_convergence(self, checkconv, where=where, stacklevel=4)

    def __repr__(self) -> str:
        return (f"ClmmFit({self.formula!r}, link={self.model.link.name!r}, "
                f"threshold={self.model.thr.kind!r}, loglik={self.loglik:.4f}{self._flags()})")



def _check_factor_levels(train: pd.DataFrame, newdata: pd.DataFrame, names: list[str]) -> None:
    """A fixed-effect factor level the fit has not seen has no coefficient: an error, not
    a silent prediction at the reference level."""
    for v in names:
        col = train[v]
        if pd.api.types.is_numeric_dtype(col) and not isinstance(col.dtype, pd.CategoricalDtype):
            continue
        seen = set(col.astype(str))
        new = sorted({str(x) for x in newdata[v].dropna()} - seen)
        if new:
            raise InputError(
                f"newdata has values of {v!r} the model was not fitted with: {new[:5]}"
                f"{' ...' if len(new) > 5 else ''}; a fixed effect has no coefficient for them "
                f"(fitted levels: {sorted(seen)[:10]}). Predict only the fitted levels.")


#: the latent residual variance of each link (logistic, normal, Gumbel)
_LATENT_VAR = {"logit": math.pi ** 2 / 3, "probit": 1.0, "cloglog": math.pi ** 2 / 6}


def _param_names(model: ClmmModel) -> list[str]:
    """Names of ``(alpha, beta, theta)``: ``vcov``'s rows."""
    names = list(model.thr.names) + list(model.fixef_names)
    if model.rs is not None:
        for t in model.rs.terms:
            names += [f"{t.group}.{t.cnames[i]}" if i == j else
                      f"{t.group}.{t.cnames[i]}.{t.cnames[j]}"
                      for j in range(t.q) for i in range(j, t.q)]
    return names


def _ranef_tables(model: ClmmModel, core: ClmmCore) -> dict[str, pd.DataFrame]:
    """Conditional modes of the random effects per grouping factor (``ranef(fit)``)."""
    rs = model.rs
    if rs is None:
        return {}
    ub = rs.split(core.u)
    out: dict[str, pd.DataFrame] = {}
    for bi, blk in enumerate(rs.blocks):
        b = ub[bi] @ rs.block_factor(bi, core.theta).T
        cn: list[str] = []
        for k in blk.terms:
            cn += list(rs.terms[k].cnames)
        out[blk.group] = pd.DataFrame(b, index=pd.Index(blk.levels, name=blk.group), columns=cn)
    return out


def _cut_points(thresholds: Any, cuts: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """``thresholds=`` as an array: all cut points, or a mapping of some of them by name."""
    if isinstance(thresholds, (Mapping, pd.Series)):
        t = np.array(cuts, dtype=float)
        for k, v in thresholds.items():
            if str(k) not in names:
                raise InputError(f"thresholds: no cut point {k!r}; the model has "
                                 f"{', '.join(names)}.")
            t[names.index(str(k))] = _number(f"thresholds[{k!r}]", v)
        return t
    try:
        return np.asarray(thresholds, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError(f"thresholds must be {cuts.size} increasing numbers, or a mapping of cut "
                         f"point names ({', '.join(names)}) to values; got {thresholds!r}."
                         ) from None


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number; got {value!r}.")
    return float(value)
