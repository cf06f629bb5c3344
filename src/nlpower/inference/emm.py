"""Estimated marginal means and their contrasts, as emmeans.

The reference grid crosses every level of every factor of the fixed part
(numeric covariates at their mean); the marginal mean of a level of the
factor(s) in ``specs`` is the equally weighted average of the grid's
predictions over the other factors: ``L b`` with ``L`` the average of the
grid's model-matrix rows, which the formula layer codes with the fit's own
levels and contrasts.  Standard errors are ``sqrt(L V L')``; the df are
Kenward-Roger's (with its adjusted covariance; emmeans' default for lmer),
Satterthwaite's, or infinite (``"asymptotic"``; GLMMs and clmm always).

Scales: GLMMs on the link scale, or ``scale="response"`` -- the means
transformed by the inverse link with delta-method covariance (emmeans'
``regrid``), so contrasts are differences of probabilities; clmm on the
latent scale (``X b`` minus the mean threshold, emmeans' ``mode = "latent"``),
or the probability of each category per cell (``scale="prob"``, ``mode = "prob"``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..errors import InputError
from ..lmm.family import Family
from ._access import family_of, fixed, kind_of
from .adjust import ADJUST, adjust_pvalues
from .table import InferenceTable

__all__ = ["MarginalMeans", "emmeans", "pairs"]

DF_METHODS = ("kenward-roger", "satterthwaite", "asymptotic")
#: above this many observations emmeans' default df are asymptotic (its pbkrtest.limit and
#: lmerTest.limit): Kenward-Roger's cost grows quickly with the data
DF_LIMIT = 3000


def _training_data(fit: Any, data: Any) -> pd.DataFrame:
    if data is not None:
        if not isinstance(data, pd.DataFrame):
            raise InputError(f"data must be the DataFrame the model was fitted to; got "
                             f"{type(data).__name__}.")
        return data
    for obj in (fit, getattr(fit, "model", None)):
        d = getattr(obj, "data", None)
        if isinstance(d, pd.DataFrame):
            return d
    raise InputError("emmeans needs the data the model was fitted to, to find the factor "
                     "levels and covariate means: pass data=<that DataFrame>.")


def _levels(col: pd.Series) -> list[Any]:
    if isinstance(col.dtype, pd.CategoricalDtype):
        present = set(col.dropna())
        return [c for c in col.cat.categories if c in present]
    return sorted(col.dropna().unique(), key=str)


def _is_factor(col: pd.Series) -> bool:
    return (isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == object
            or pd.api.types.is_string_dtype(col) or pd.api.types.is_bool_dtype(col))


def _grid_matrix(fit: Any, data: pd.DataFrame, specs: list[str], names: list[str]
                 ) -> tuple[np.ndarray, list[str], int]:
    """``L`` (one row per cell of ``specs``), the cells' labels, and the number of cells."""
    from ..formula import parse
    from ..lmm.frame import model_frame

    f = parse(fit.formula)
    resp = f.response
    variables = [v for v in f.fixed.variables if v != resp]
    for s in specs:
        if s not in variables:
            raise InputError(f"specs: {s!r} is not a variable of the fixed part of "
                             f"{fit.formula!r} (it has {', '.join(map(repr, variables))}).")
        if not _is_factor(data[s]):
            raise InputError(f"specs: {s!r} is numeric; marginal means are per level of a factor "
                             "(convert it with data[col].astype(str) before fitting).")
    levels = {v: _levels(data[v]) for v in variables if _is_factor(data[v])}
    means = {v: float(pd.to_numeric(data[v]).mean()) for v in variables if v not in levels}
    factors = list(levels)
    # emmeans' grid order: the first factor varies fastest
    combos = list(itertools.product(*[levels[v] for v in reversed(factors)]))
    grid = pd.DataFrame([dict(zip(reversed(factors), c, strict=True)) for c in combos],
                        columns=factors)
    for v, m in means.items():
        grid[v] = m
    train = data[variables].dropna()
    both = pd.concat([train, grid[variables]], ignore_index=True)
    for v in factors:
        if isinstance(data[v].dtype, pd.CategoricalDtype):
            both[v] = pd.Categorical(both[v], categories=data[v].cat.categories)
    both[resp] = np.arange(len(both), dtype=float) % 2          # placeholder, not used
    rhs = f.fixed.to_string(explicit_intercept=False) or "1"
    contrasts = dict(getattr(fit, "contrasts", None) or getattr(fit.model.spec, "contrasts", {}))
    spec = model_frame(f"{resp} ~ {rhs}", both, contrasts=contrasts)
    Xg = spec.X[len(train):]
    have = list(spec.fixef_names)
    missing = [n for n in names if n not in have]
    if missing:
        raise InputError(f"the reference grid does not give the fixed-effect columns {missing}.")
    Xg = Xg[:, [have.index(n) for n in names]]
    cells = list(itertools.product(*[levels[s] for s in reversed(specs)]))
    labels, rows = [], []
    for c in cells:
        key = dict(zip(reversed(specs), c, strict=True))
        mask = np.ones(len(grid), dtype=bool)
        for s in specs:
            mask &= (grid[s] == key[s]).to_numpy()
        rows.append(Xg[mask].mean(axis=0))
        labels.append(" ".join(str(key[s]) for s in specs))
    return np.array(rows), labels, len(cells)


def _df_and_se(fit: Any, family: Family, L: np.ndarray, V: np.ndarray, df_method: str
               ) -> tuple[np.ndarray, np.ndarray]:
    """SEs of ``L b`` and their df: t df where the family has a residual SD, else infinite."""
    se = np.sqrt(np.einsum("ij,jk,ik->i", L, V, L))
    if not family.has_sigma or df_method == "asymptotic":
        return se, np.full(len(L), np.inf)
    if df_method == "satterthwaite":
        return se, np.array([fit.contrast_df(row) for row in L])
    if fit.kr_fn is None or not fit.REML:
        raise InputError("df='kenward-roger' needs a REML fit of the native engine; use "
                         "df='satterthwaite' or df='asymptotic'.")
    out = [fit.kr_fn(row) for row in L]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


@dataclass(frozen=True, eq=False)
class MarginalMeans:
    """Estimated marginal means of one fit (see :func:`emmeans`).

    ``table`` holds the means; :meth:`contrast` (and :func:`pairs`) test their
    differences.
    """

    table: InferenceTable
    L: np.ndarray = field(repr=False)
    fit: Any = field(repr=False)
    family: Family = field(repr=False)
    df_method: str
    scale: str

    def to_frame(self) -> pd.DataFrame:
        return self.table.to_frame()

    def summary(self) -> str:
        return self.table.summary()

    def to_markdown(self, digits: int = 4) -> str:
        return self.table.to_markdown(digits)

    def to_latex(self, digits: int = 4, label: str | None = None) -> str:
        return self.table.to_latex(digits, label)

    def _repr_html_(self) -> str:
        return self.table._repr_html_()

    def __repr__(self) -> str:
        return f"MarginalMeans({len(self.L)} levels, {self.scale} scale, df={self.df_method})"

    def contrast(self, method: str = "pairwise", *, adjust: str = "tukey",
                 baseline: Any = None) -> InferenceTable:
        """All pairwise differences, or each level minus a baseline, with adjusted p-values.

        Parameters
        ----------
        method : {"pairwise", "baseline"}
            ``"pairwise"``: ``a - b`` for every pair in level order (emmeans'
            ``pairs``); ``"baseline"``: every other level minus ``baseline``
            (emmeans' ``trt.vs.ctrl``).
        adjust : {"tukey", "holm", "bonferroni", "fdr", "none"}
            Multiplicity adjustment over the family; ``"tukey"`` is for
            ``"pairwise"`` only.
        baseline : str, optional
            The reference level (default: the first).
        """
        method = check_choice("method", method, ("pairwise", "baseline"))
        if self.scale == "prob":
            raise InputError("contrasts of category probabilities are not implemented; contrast "
                             "the cells on the latent scale (scale='link').")
        adjust = check_choice("adjust", adjust, ADJUST)
        labels = list(self.table.frame.index)
        k = len(labels)
        if method == "pairwise":
            if adjust == "tukey" and k < 2:
                raise InputError("pairwise contrasts need at least two levels.")
            idx = [(i, j) for i in range(k) for j in range(i + 1, k)]
        else:
            if adjust == "tukey":
                raise InputError("adjust='tukey' is for all pairwise comparisons; vs a baseline "
                                 "use adjust='holm', 'bonferroni', 'fdr' or 'none'.")
            b = 0 if baseline is None else labels.index(str(baseline)) if str(baseline) in labels \
                else -1
            if b < 0:
                raise InputError(f"baseline={baseline!r} is not a level; the levels are {labels}.")
            idx = [(i, b) for i in range(k) if i != b]
        C = np.zeros((len(idx), k))
        for r, (i, j) in enumerate(idx):
            C[r, i], C[r, j] = 1.0, -1.0
        est, se, df = self._contrast_parts(C)
        t = est / se
        p = adjust_pvalues(t, df, adjust, k)
        stat = "t" if np.all(np.isfinite(df)) and self.family.has_sigma else "z"
        frame = pd.DataFrame({"estimate": est, "SE": se, "df": df, stat: t, "p": p},
                             index=[f"{labels[i]} - {labels[j]}" for i, j in idx])
        frame.index.name = "contrast"
        how = {"tukey": f"Tukey's method for comparing a family of {k} estimates",
               "holm": f"Holm's method for {len(idx)} tests",
               "bonferroni": f"Bonferroni for {len(idx)} tests",
               "fdr": f"Benjamini-Hochberg FDR for {len(idx)} tests", "none": "no adjustment"}
        notes = (f"P value adjustment: {how[adjust]}.", *self.table.notes)
        return InferenceTable(f"Contrasts ({method}) of marginal means", frame, notes)

    def _contrast_parts(self, C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fit = self.fit
        if self.scale == "response":
            means = self.table.frame
            V = self._response_vcov()
            est = C @ means.iloc[:, 0].to_numpy()
            return est, np.sqrt(np.einsum("ij,jk,ik->i", C, V, C)), np.full(len(C), np.inf)
        Lc = C @ self.L
        b, V, _ = fixed(fit)
        se, df = _df_and_se(fit, self.family, Lc, V, self.df_method)
        return Lc @ b, se, df

    def _response_vcov(self) -> np.ndarray:
        b, V, _ = fixed(self.fit)
        eta = self.L @ b
        D = np.diag(np.asarray(self.family.link.mu_eta(eta), dtype=float))
        return D @ (self.L @ V @ self.L.T) @ D


def _latent(fit: Any, L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """clmm: ``X b`` minus the mean threshold, with the thresholds' uncertainty in the SE."""
    m = fit.model
    a, p = m.n_alpha, m.p
    w = np.asarray(m.thr.jacobian, dtype=float).mean(axis=0)   # mean threshold = w' alpha
    Lx = np.hstack([np.tile(-w, (len(L), 1)), L])
    Vx = np.asarray(fit.core.vcov, dtype=float)[:a + p, :a + p]
    est = Lx @ np.concatenate([fit.core.alpha, fit.core.beta])
    return est, np.sqrt(np.einsum("ij,jk,ik->i", Lx, Vx, Lx))


def _category_probabilities(fit: Any, L: np.ndarray, labels: list[str]) -> pd.DataFrame:
    """clmm: ``P(Y = j)`` of each cell at the population level, delta-method SEs."""
    m = fit.model
    a, p = m.n_alpha, m.p
    J = np.asarray(m.thr.jacobian, dtype=float)                 # cuts = J alpha
    cuts = J @ fit.core.alpha
    Vx = np.asarray(fit.core.vcov, dtype=float)[:a + p, :a + p]
    F, dens = m.link.linkinv, m.link.mu_eta
    rows = []
    for lab, Lc in zip(labels, L, strict=True):
        eta = float(Lc @ fit.core.beta)
        up = np.concatenate([cuts - eta, [np.inf]])
        lo = np.concatenate([[-np.inf], cuts - eta])
        fu = np.where(np.isfinite(up), dens(np.where(np.isfinite(up), up, 0.0)), 0.0)
        fl = np.where(np.isfinite(lo), dens(np.where(np.isfinite(lo), lo, 0.0)), 0.0)
        prob = np.asarray(F(up), dtype=float) - np.asarray(F(lo), dtype=float)
        Ju = np.vstack([J, np.zeros((1, a))])
        Jl = np.vstack([np.zeros((1, a)), J])
        G = np.hstack([fu[:, None] * Ju - fl[:, None] * Jl, -(fu - fl)[:, None] * Lc[None, :]])
        se = np.sqrt(np.einsum("ij,jk,ik->i", G, Vx, G))
        rows += [(lab, c, pr, s_) for c, pr, s_ in zip(m.levels, prob, se, strict=True)]
    out = pd.DataFrame(rows, columns=["cell", "category", "prob", "SE"])
    out["df"] = np.inf
    z = 1.959963984540054
    return out.assign(lower=out["prob"] - z * out["SE"], upper=out["prob"] + z * out["SE"])


def emmeans(fit: Any, specs: str | list[str], *, data: Any = None, df: str | None = None,
            scale: str = "link") -> MarginalMeans:
    """Estimated marginal means per level of ``specs`` (emmeans' ``emmeans(fit, ~ specs)``).

    Parameters
    ----------
    fit : LmmFit, GlmmFit or ClmmFit
    specs : str or list of str
        A factor of the fixed part (``"system"``), or several for their cells.
    data : DataFrame, optional
        The data the model was fitted to (for its levels and covariate means);
        default: the data the fit carries (GLMM and clmm fits do).
    df : {"kenward-roger", "satterthwaite", "asymptotic"}, optional
        Gaussian fits, as emmeans: default ``"kenward-roger"`` for a REML fit
        and ``"satterthwaite"`` for an ML fit up to 3000 observations,
        ``"asymptotic"`` above (Kenward-Roger takes seconds from a thousand
        observations on).  Other families: infinite.
    scale : {"link", "response", "prob"}
        GLMMs: the linear predictor, or probabilities/rates by the inverse
        link (delta method; emmeans' ``regrid``).  clmm: ``"link"`` is the
        latent scale; ``"prob"`` the probability of each response category
        in each cell (emmeans' ``mode = "prob"``; one row per cell and
        category, no contrasts).

    Returns
    -------
    MarginalMeans
        ``.table``: ``emmean``, ``SE``, ``df``, ``lower``, ``upper`` (95%);
        ``.contrast(...)`` for differences.

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> d = pd.read_csv("tests/reference/data/crossed4.csv")
    >>> fit = nlpower.lmer("rating ~ system + (1 | worker) + (1 | item)", d)
    >>> em = emmeans(fit, "system", data=d, df="satterthwaite")
    >>> list(em.to_frame().index)
    ['A', 'B', 'C', 'D']
    >>> em.contrast(adjust="holm").to_frame().shape
    (6, 5)
    """
    from .. import _dist

    kind = kind_of(fit, where="emmeans")
    family = family_of(fit, where="emmeans")
    scale = check_choice("scale", scale, ("link", "response", "prob"))
    # the fit type: category probabilities come from a clmm fit's thresholds
    if scale == "prob" and kind != "ordinal":
        raise InputError("scale='prob' gives a clmm fit's category probabilities; for a GLMM "
                         "use scale='response'.")
    if scale == "response" and not family.is_glm:    # a mean by the family's inverse link
        raise InputError(f"scale='response' is for GLMM fits (probabilities, rates); this "
                         f"{type(fit).__name__} has only its {'latent' if kind == 'ordinal' else 'own'} "
                         "scale: use scale='link'.")
    if df is None:     # emmeans' defaults, with its pbkrtest.limit = lmerTest.limit = 3000
        small = family.has_sigma and fit.nobs <= DF_LIMIT
        df = ("kenward-roger" if small and fit.REML and fit.kr_fn is not None
              else "satterthwaite" if small and fit.df_fn is not None else "asymptotic")
    df = check_choice("df", df, DF_METHODS)
    specs_l = [specs] if isinstance(specs, str) else list(specs)
    d = _training_data(fit, data)
    b, V, names = fixed(fit)
    L, labels, _ = _grid_matrix(fit, d, specs_l, names)
    if scale == "prob":
        frame = _category_probabilities(fit, L, labels)
        table = InferenceTable("Category probabilities per cell (population level)", frame,
                               ("Delta-method SEs; intervals prob -/+ z SE.",))
        return MarginalMeans(table, L, fit, family, df, scale)
    est = L @ b
    se, dfs = _df_and_se(fit, family, L, V, df)
    if kind == "ordinal":      # the fit type: the latent scale is X b minus the mean threshold
        est, se = _latent(fit, L)
    crit = np.asarray(_dist.t_ppf(0.975, dfs), dtype=float)
    lo, hi = est - crit * se, est + crit * se
    col = "emmean"
    if scale == "response":
        link = family.link
        mu_eta = np.asarray(link.mu_eta(est), dtype=float)
        lo, hi = (np.asarray(link.linkinv(v), dtype=float) for v in (lo, hi))
        est, se = np.asarray(link.linkinv(est), dtype=float), se * np.abs(mu_eta)
        col = family.mean_name
    frame = pd.DataFrame({col: est, "SE": se, "df": dfs, "lower": lo, "upper": hi},
                         index=pd.Index(labels, name=" ".join(specs_l)))
    where = (f" ({scale} scale)" if family.is_glm else " (latent scale)" if kind == "ordinal"
             else "")
    notes = [f"Degrees of freedom: {df}." if family.has_sigma else
             "Degrees of freedom: asymptotic (z)."]
    from ..formula import parse
    others = [v for v in parse(fit.formula).fixed.variables if v not in specs_l]
    if others:
        notes.append("Averaged over the levels of the other factors; covariates at their mean.")
    table = InferenceTable(f"Estimated marginal means{where}", frame, tuple(notes))
    return MarginalMeans(table, L, fit, family, df, scale)


def pairs(fit: Any, specs: str | list[str], *, adjust: str = "tukey", data: Any = None,
          df: str | None = None, scale: str = "link", method: str = "pairwise",
          baseline: Any = None) -> InferenceTable:
    """Pairwise (or vs-baseline) contrasts of marginal means: ``emmeans(...).contrast(...)``.

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> d = pd.read_csv("tests/reference/data/crossed4.csv")
    >>> fit = nlpower.lmer("rating ~ system + (1 | worker) + (1 | item)", d)
    >>> pairs(fit, "system", data=d, df="satterthwaite", method="baseline",
    ...       adjust="holm").to_frame().index[0]
    'B - A'
    """
    return emmeans(fit, specs, data=data, df=df, scale=scale).contrast(
        method, adjust=adjust, baseline=baseline)
