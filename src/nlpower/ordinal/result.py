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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import _dist as stats
from .._validation import check_choice
from ..errors import ConvergenceWarning, InputError
from ..formula import parse
from ..lmm.checkconv import apply_policy
from ..lmm.frame import model_frame
from ..lmm.verbs import FitVerbs
from .cumulative import cumulative_parts
from .model import ClmmCore, ClmmModel

__all__ = ["ClmmFit"]


@dataclass(frozen=True, eq=False)
class ClmmFit(FitVerbs):
    """A fitted cumulative link (mixed) model, ``ordinal``'s parameterisation.

    Attributes
    ----------
    core : ClmmCore
        Estimates, ``vcov`` over ``(alpha, beta, theta)``, log-likelihood, diagnostics.
    model : ClmmModel
        The prepared structure (``refit`` reuses it).
    """

    core: ClmmCore
    model: ClmmModel = field(repr=False)
    engine: str = "native"

    @classmethod
    def from_core(cls, model: ClmmModel, core: ClmmCore) -> ClmmFit:
        return cls(core, model)

    # -- estimates -------------------------------------------------------------------
    @property
    def formula(self) -> str:
        return self.model.spec.formula

    @property
    def fixef(self) -> pd.Series:
        """Fixed effects (no intercept: the thresholds absorb it)."""
        return pd.Series(self.core.beta, index=list(self.model.fixef_names), name="fixef")

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
    def theta(self) -> np.ndarray:
        """Random-effect Cholesky parameters (lme4's order; scalar terms: SDs)."""
        return self.core.theta

    @property
    def loglik(self) -> float:
        return self.core.loglik

    @property
    def deviance(self) -> float:
        return -2.0 * self.core.loglik

    @property
    def n_params(self) -> int:
        return int(self.core.params.size)

    @property
    def nobs(self) -> int:
        return self.model.spec.n

    @property
    def aic(self) -> float:
        return self.deviance + 2.0 * self.n_params

    @property
    def bic(self) -> float:
        return self.deviance + math.log(self.nobs) * self.n_params

    @property
    def converged(self) -> bool:
        return self.core.converged

    @property
    def singular(self) -> bool:
        return self.core.singular

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

    @property
    def optinfo(self) -> dict[str, Any]:
        c = self.core.check
        return {"message": self.core.message, "n_evals": self.core.n_evals,
                "converged": self.core.converged,
                "checkconv": c.to_dict() if c is not None else None,
                "max_grad": c.max_grad if c is not None else math.nan, "cond_H": self.cond_H}

    def vcov(self) -> pd.DataFrame:
        """Inverse Hessian of ``-loglik`` over thresholds, fixed effects and ``theta``."""
        names = self._param_names()
        return pd.DataFrame(self.core.vcov, index=names, columns=names)

    def _param_names(self) -> list[str]:
        names = list(self.model.thr.names) + list(self.model.fixef_names)
        if self.model.rs is not None:
            for t in self.model.rs.terms:
                names += [f"{t.group}.{t.cnames[i]}" if i == j else
                          f"{t.group}.{t.cnames[i]}.{t.cnames[j]}"
                          for j in range(t.q) for i in range(j, t.q)]
        return names

    # -- random effects --------------------------------------------------------------
    def _term_cov(self, k: int) -> np.ndarray:
        assert self.model.rs is not None
        L = self.model.rs.term_factor(k, self.core.theta)
        return np.asarray(L @ L.T)

    def varcorr(self) -> pd.DataFrame:
        """Latent-scale variance components (``as.data.frame(VarCorr(fit))`` without a residual).

        The latent residual variance is fixed by the link (logit: ``pi^2/3``;
        probit: 1; cloglog: ``pi^2/6``); it is the last row, as ``lmer``'s.
        """
        rows: list[tuple[Any, ...]] = []
        rs = self.model.rs
        for k, t in enumerate(rs.terms if rs is not None else ()):
            cov = self._term_cov(k)
            sd = np.sqrt(np.diag(cov))
            for i, c in enumerate(t.cnames):
                rows.append((t.group, c, None, float(cov[i, i]), float(sd[i])))
            for j in range(t.q):
                for i in range(j + 1, t.q):
                    den = sd[i] * sd[j]
                    rows.append((t.group, t.cnames[j], t.cnames[i], float(cov[i, j]),
                                 float(cov[i, j] / den) if den > 0 else math.nan))
        v = {"logit": math.pi ** 2 / 3, "probit": 1.0, "cloglog": math.pi ** 2 / 6}[
            self.model.link.name]
        rows.append(("Residual (latent)", None, None, v, math.sqrt(v)))
        return pd.DataFrame(rows, columns=["grp", "var1", "var2", "vcov", "sdcor"])

    def ranef(self) -> dict[str, pd.DataFrame]:
        """Conditional modes of the random effects per grouping factor (``ranef(fit)``)."""
        rs = self.model.rs
        if rs is None:
            return {}
        ub = rs.split(self.core.u)
        out: dict[str, pd.DataFrame] = {}
        for bi, blk in enumerate(rs.blocks):
            b = ub[bi] @ rs.block_factor(bi, self.core.theta).T
            cn: list[str] = []
            for k in blk.terms:
                cn += list(rs.terms[k].cnames)
            out[blk.group] = pd.DataFrame(b, index=pd.Index(blk.levels, name=blk.group), columns=cn)
        return out

    # -- prediction ------------------------------------------------------------------
    def _eta(self, newdata: pd.DataFrame | None, re: bool,
             allow_new_levels: bool = False) -> np.ndarray:
        m = self.model
        if newdata is None:
            X = m.X
            eta = X @ self.core.beta
            if re and m.rs is not None:
                m.rs.set_theta(self.core.theta)
                m._theta_set = self.core.theta.copy()
                m._last = None
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
            hint = "; or predict(..., re=False) for the population level" if with_re else ""
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

    def predict(self, newdata: pd.DataFrame | None = None, *, type: str = "prob",
                re: bool = True, allow_new_levels: bool = False
                ) -> np.ndarray | pd.DataFrame | pd.Series:
        """Predictions: category probabilities, most likely category, or the latent mean.

        Parameters
        ----------
        newdata : DataFrame, optional
            Rows to predict (default: the fitted data).
        type : {"prob", "class", "latent"}
            ``"prob"``: DataFrame of ``P(Y = j)`` (one column per category);
            ``"class"``: the most probable category; ``"latent"``: ``eta``.
        re : bool
            Condition on the estimated random effects (conditional modes):
            intercepts and slopes of every term, ``eta = x'beta + z'b``.
            ``False``: the population level (``b = 0``).
        allow_new_levels : bool
            Levels of a grouping factor the fit has not seen are predicted at
            ``b = 0``; without this they raise :class:`~nlpower.errors.InputError`.
        """
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
        m = self.model
        up, lo = m.offsets(self.core.alpha, self.core.beta)
        e = self._eta(None, True) - m.X @ self.core.beta
        return cumulative_parts(m.link, up - e, lo - e, derivatives=False).p

    # -- set parameters / refit / simulate ----------------------------------------------
    @property
    def data(self) -> pd.DataFrame | None:
        """The rows of the user's data the model was fitted on (``None`` if not kept)."""
        d = getattr(self.model, "data", None)
        return d() if callable(d) else d

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
        from dataclasses import replace as _replace

        from ..lmm.layout import theta_layout
        from ..lmm.setparams import set_fixef, set_theta
        if sigma is not None:
            raise InputError("sigma: a cumulative link model's latent residual SD is fixed by "
                             "the link; set fixef=, sd= and thresholds= only.")
        beta = set_fixef(self.fixef, fixef).to_numpy()
        theta = self.core.theta
        if sd is not None:
            theta = set_theta(theta_layout(self.model.spec.re_terms), theta, sd, scale=1.0)
        alpha, cuts = self.core.alpha, self.core.thresholds
        if thresholds is not None:
            if self.model.thr.kind != "flexible":
                raise InputError(f"thresholds= sets flexible thresholds; this model's are "
                                 f"{self.model.thr.kind!r}. Refit with threshold='flexible'.")
            t = np.asarray(thresholds, dtype=float).ravel()
            if t.shape != cuts.shape or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
                raise InputError(f"thresholds must be {cuts.size} increasing finite cut points "
                                 f"({', '.join(self.model.thr.cut_names)}); got {thresholds!r}.")
            alpha, cuts = t, t
        core = _replace(self.core, alpha=alpha, thresholds=cuts, beta=beta, theta=theta)
        return ClmmFit(core, self.model, self.engine)

    def simulate(self, n: int = 1, *, rng: Any) -> np.ndarray:
        """``n`` simulated responses from the fitted model (category codes, ``(n, nobs)``).

        Drawn on a copy of the structure, so this fit is unchanged.
        """
        return copy.deepcopy(self.model).simulate(n, rng=rng, params=self.core)

    def refit(self, y: Any) -> ClmmFit:
        """Refit to a new response (category codes ``0..K-1``), warm-started here."""
        y = np.asarray(y)
        if y.dtype.kind not in "iub" and not (
                y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
            raise InputError("refit(y): y must be integer category codes 0..K-1 (as simulate() "
                             "returns); got non-integer values.")
        if y.size and np.unique(y).size < 2:
            raise InputError(f"refit(y): y has a single category (code {int(y.flat[0])} in all "
                             f"{y.size} rows); an ordinal model needs at least two (its thresholds "
                             "would run off to infinity).")
        model = copy.deepcopy(self.model)      # a new fit with its own structure: this one stays
        core = model.refit(y.astype(np.intp), start=self.core)
        return ClmmFit(core, model, self.engine)

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

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: thresholds, fixed effects and random-effect SDs/correlations."""
        ct = self.coef_table().reset_index(names="term")
        vc = self.varcorr()
        vc = vc[~vc["grp"].str.startswith("Residual")]
        rows = [{"term": (f"sd__{v1!s}" if not isinstance(v2, str) else f"cor__{v1!s}.{v2}"),
                 "group": grp, "estimate": sd, "kind": "random"}
                for grp, v1, v2, sd in zip(vc["grp"], vc["var1"], vc["var2"], vc["sdcor"],
                                           strict=True)]
        return pd.concat([ct.assign(group=None), pd.DataFrame(rows)], ignore_index=True)

    def summary(self) -> str:
        """The fit as ``summary(clmm(...))`` prints it."""
        from .report import summary_text
        return summary_text(self)

    def warn_diagnostics(self, checkconv: Any = None, *, where: str = "clmm") -> None:
        """Warn (or raise, per policy) about convergence and singular fits."""
        if self.core.check is not None:
            apply_policy(self.core.check, checkconv, where=where, stacklevel=4)
        elif not self.converged:
            warnings.warn(f"{where}: {self.core.message}", ConvergenceWarning, stacklevel=4)
        if not self.converged and (self.core.check is None or self.core.check.ok):
            warnings.warn(f"{where}: the optimiser stopped without converging "
                          f"({self.core.message}); try control={{'maxiter': 5000}}.",
                          ConvergenceWarning, stacklevel=4)

    def __repr__(self) -> str:
        flags = ("" if self.converged else ", not converged") + (", singular" if self.singular else "")
        return (f"ClmmFit({self.formula!r}, link={self.model.link.name!r}, "
                f"threshold={self.model.thr.kind!r}, loglik={self.loglik:.4f}{flags})")



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
