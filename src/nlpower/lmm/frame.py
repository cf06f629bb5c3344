"""Model frame: formula + data frame -> :class:`~nlpower.lmm.structure.ModelSpec`.

The stages, each a function that can be called and tested alone (lme4's
``lFormula``: ``model.frame`` -> ``model.matrix`` -> ``mkReTrms``)::

    parse(formula)                       nlpower.formula
    frame_columns(formula, data)         used columns, NA rows dropped
    _response(formula, frame)            numeric, finite, not constant y
    _variables(formula, frame)           numeric arrays / factor codes   (columns.py)
    _contrasts(contrasts, variables)     coding of each factor
    model_matrix(terms, variables, ...)  X and each term's Z, lme4 names (model_matrix.py)
    drop_aliased(X, names)               rank-deficient columns removed  (model_matrix.py)
    _re_term(...)                        grouping codes + lme4's checks

Semantics (checked against R 4.2.2 / lme4 1.1-31 ``model.matrix`` and
``lFormula``):

* **Factors** are object, string, categorical and bool columns.  Level order
  is the pandas categorical order when the column is a ``Categorical`` (this
  is how to choose the baseline level), else the sorted unique values (as R's
  ``factor()`` in the C locale).  Bool levels are labelled ``FALSE``/``TRUE``
  like R's logicals.  Unused levels are dropped (lme4 calls ``model.frame``
  with ``drop.unused.levels = TRUE``).  Numeric columns are numeric
  predictors; as grouping factors they are converted to factors.
* **Contrasts** (``contrasts={"system": "sum"}``; default ``"treatment"``):

  - ``"treatment"`` (R's ``contr.treatment``): one column per non-baseline
    level, named ``systemB``; the first level is the baseline.
  - ``"sum"`` (``contr.sum``): K-1 columns named by level, ``system[A]``,
    ``system[B]``, ... (R: ``system1``, ``system2``; lme4's names are
    accepted as aliases, :mod:`nlpower.lmm.names`); column j is +1 for level
    j, -1 for the *last* level, 0 otherwise.  With two levels (A, B):
    ``system[A]`` = +1 for A and -1 for B, so its coefficient is half of
    mean(A) - mean(B) (Card et al. 2020's coding).
  - ``"half"``: ``contr.sum`` times 0.5, also named ``system[A]``, ...  With
    two levels: +0.5 for A (the first level), -0.5 for B, so the
    coefficient is mean(A) - mean(B).

  The same contrasts are used in the random-effects terms, which matches R
  code that sets ``contrasts(data$system) <- contr.sum(K)`` before calling
  ``lmer`` (lme4's own ``contrasts=`` argument only reaches the fixed part).
* **Which factors get contrasts** follows R's ``terms``/``model.matrix``
  rule: in a term, a factor is coded by contrasts when the term without that
  factor is already in the model (the empty term = the intercept), else by
  full indicators (``x:fA, x:fB, ...`` for ``y ~ x:f``); without an
  intercept the first factor gets full indicators (``y ~ 0 + f`` gives
  ``fA, fB``; ``(0 + f | g)`` gives one column per level).  In an
  interaction the first variable varies fastest (``fB:hv, fC:hv``).
* **Missing values**: rows with a missing value in any used column are
  dropped (``na.omit``) with a warning; the count is ``ModelSpec.n_dropped``.
* **Rank deficiency**: columns of X that are linear combinations of earlier
  columns (pivoted QR, tolerance 1e-7 as R's ``qr``) are dropped with a
  warning, like lme4's "fixed-effect model matrix is rank deficient so
  dropping N columns / coefficients"; they are listed in ``ModelSpec.dropped``.
* **Checks** as lme4's defaults: a grouping factor needs > 1 level and fewer
  levels than observations; each term needs fewer random effects
  (q x levels) than observations (errors); continuous columns of X on very
  different scales (standard deviations beyond 1e3 or 1e-3, or ratios
  beyond 1e3) give lme4's "consider rescaling" warning.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from .._validation import check_choice, closest_name
from ..errors import FormulaError, InputError, NlpowerWarning
from ..formula import Formula, RandomTerm, parse
from .columns import Factor, Variable, as_numeric, combine, factor_of, numeric_dtype, row_key
from .model_matrix import (
    CONTRASTS,
    _clearly_full_rank,
    contrast_matrix,
    drop_aliased,
    model_matrix,
)
from .names import lme4_aliases
from .structure import ModelSpec, ReTerm

__all__ = [
    "CONTRASTS",
    "Factor",
    "FrameColumns",
    "contrast_matrix",
    "drop_aliased",
    "fitted_rows",
    "frame_columns",
    "model_frame",
    "model_matrix",
    "spec_from_columns",
]

# ---------------------------------------------------------------------------
# the public stage


def _check_inputs(formula: Any, data: Any, contrasts: Any) -> tuple[Formula, dict[str, str]]:
    f = formula if isinstance(formula, Formula) else parse(formula)
    if not f.text:
        f = dataclasses.replace(f, text=str(f))
    if not isinstance(data, pd.DataFrame):
        raise InputError(
            f"data must be a pandas DataFrame with one row per rating; got "
            f"{type(data).__name__}. Convert it with pandas.DataFrame(...)."
        )
    if contrasts is None:
        contrasts = {}
    if not isinstance(contrasts, Mapping):
        raise InputError(
            f"contrasts must be a dict mapping factor columns to one of "
            f"{', '.join(map(repr, CONTRASTS))}, e.g. {{'system': 'sum'}}; got {contrasts!r}."
        )
    out: dict[str, str] = {}
    for key, kind in contrasts.items():
        out[str(key)] = check_choice(f"contrasts[{key!r}]", kind, CONTRASTS)
    return f, out


def model_frame(
    formula: str | Formula,
    data: pd.DataFrame,
    contrasts: Mapping[str, str] | None = None,
    *,
    allow_n: bool = False,
) -> ModelSpec:
    """Build the model structure of an lme4 formula on a data frame.

    Parameters
    ----------
    formula : str or Formula
        lme4 formula, e.g. ``"rating ~ system + (1 + system | worker) + (1 | item)"``,
        or an already parsed :class:`nlpower.formula.Formula`.  See ``docs/formula.md``.
    data : pandas.DataFrame
        One row per observation.
    contrasts : dict, optional
        Coding of factor columns: ``{"system": "sum"}``; ``"treatment"``
        (default, like R), ``"sum"`` (R's ``contr.sum``, +1/-1 for two levels,
        first level positive) or ``"half"`` (``contr.sum / 2``).  Used in the
        fixed part and inside random-effects terms.

    Returns
    -------
    ModelSpec
        ``X`` and ``fixef_names`` (aliased columns dropped), ``y``, and the
        random-effects terms after ``||`` and nesting expansion.

    Raises
    ------
    FormulaError
        Syntax errors and unknown columns (with a caret and the closest name).
    InputError
        Empty data, non-numeric/factor/constant response, grouping factors
        with one level or with at least as many levels as observations,
        too many random effects for the observations, bad ``contrasts``.

    Warns
    -----
    NlpowerWarning
        When rows with missing values are dropped, and when fixed-effect
        columns are dropped because ``X`` is rank deficient.

    Notes
    -----
    Column construction and checks follow R 4.2.2 ``model.matrix`` and
    lme4 1.1-31 ``lFormula`` (see the module docstring).

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"y": [1., 2, 3, 4, 5, 7], "sys": list("ABABAB"),
    ...                   "w": list("uuvvww")})
    >>> spec = model_frame("y ~ sys + (1 | w)", d, contrasts={"sys": "sum"})
    >>> spec.fixef_names, spec.X[:2, 1].tolist(), spec.re_terms[0].levels
    (('(Intercept)', 'sys[A]'), [1.0, -1.0], ('u', 'v', 'w'))
    >>> spec.aliases                      # lme4's name of the column, accepted as input
    {'sys1': 'sys[A]'}
    """
    f, contrasts_in = _check_inputs(formula, data, contrasts)
    frame = frame_columns(f, data)
    return spec_from_columns(f, frame, contrasts_in, frame.names, allow_n=allow_n)


def spec_from_columns(
    f: Formula,
    frame: FrameColumns,
    contrasts: Mapping[str, str],
    columns: list[str],
    *,
    allow_n: bool = False,
    y: np.ndarray | None = None,
) -> ModelSpec:
    """The :class:`ModelSpec` of ``f`` on the columns :func:`frame_columns` took.

    The stages of :func:`model_frame` after the column selection (``contrasts``
    as :func:`_check_inputs` returns them; ``columns``: the data's column
    names, for messages).  ``y``: the response values of the rows kept, used
    instead of the data's response column without its numeric checks (the
    ordinal fitter passes category codes).
    """
    n = frame.n
    y = _response(f, frame) if y is None else np.asarray(y, dtype=float)
    variables = _variables(f, frame)
    used_contrasts = _contrasts(contrasts, variables, columns)

    X, names = model_matrix(f.fixed, variables, used_contrasts, n)
    dropped: list[str] = []
    if X.shape[1] and not _clearly_full_rank(X):    # (the common case needs no row key)
        X, names, dropped = drop_aliased(
            X, names, row_key=row_key(variables, f.fixed.variables, n)
        )
    if dropped:
        warnings.warn(
            f"fixed-effect model matrix is rank deficient so dropping {len(dropped)} "
            f"column{'s' if len(dropped) > 1 else ''} / coefficient"
            f"{'s' if len(dropped) > 1 else ''}: {', '.join(dropped)}.",
            NlpowerWarning, stacklevel=3,
        )

    if not all(isinstance(variables[v], Factor) and used_contrasts[v] == "treatment"
               for v in f.fixed.variables):
        # (intercept and treatment-coded factors only: every column is 0/1, nothing to check)
        _check_scale(X, names, stacklevel=4)

    group_factors = {  # a grouping column that is also a predictor factor is coded once
        g: var if isinstance(var := variables.get(g), Factor) else factor_of(frame.values[g], g)
        for g in f.grouping_variables
    }
    re_terms = tuple(
        _re_term(rt, variables, used_contrasts, group_factors, n, allow_n) for rt in f.expanded_random()
    )
    return ModelSpec(
        formula=f.text,
        response=f.response,
        y=y,
        X=X,
        fixef_names=tuple(names),
        re_terms=re_terms,
        contrasts=used_contrasts,
        data_columns=f.variables,
        dropped=tuple(dropped),
        n_dropped=frame.n_dropped,
        aliases=lme4_aliases({v: var.levels for v, var in variables.items()
                              if isinstance(var, Factor)}, used_contrasts),
    )


def _check_scale(X: np.ndarray, names: list[str], tol: float = 1e3, stacklevel: int = 3) -> None:
    """lme4's ``checkScaleX``: warn when continuous columns have very different scales.

    Columns with values other than 0/1 are "continuous"; lme4 1.1-31 warns when
    the ratio of two of their standard deviations, or one standard deviation
    itself, is beyond ``tol`` (or ``1/tol``) -- badly scaled predictors make
    the optimisation harder.
    """
    if X.shape[0] < 2 or X.shape[1] == 0:
        return
    cont = ~np.all((X == 0.0) | (X == 1.0), axis=0)
    if not cont.any():
        return
    sd = X[:, cont].std(axis=0, ddof=1)
    sd = sd[sd > 0]
    if sd.size == 0:
        return
    logsd = np.log(sd)
    if np.abs(logsd).max() > np.log(tol) or logsd.max() - logsd.min() > np.log(tol):
        cols = [n for n, c in zip(names, cont, strict=True) if c]
        warnings.warn(
            "Some predictor variables are on very different scales: consider rescaling "
            f"(standard deviations of {', '.join(cols)} range from {sd.min():.3g} to "
            f"{sd.max():.3g}).",
            NlpowerWarning, stacklevel=stacklevel,
        )


@dataclasses.dataclass(frozen=True, eq=False)
class FrameColumns:
    """The used columns of the rows kept, as :func:`frame_columns` takes them.

    ``values``: column name -> the column's values (a numpy or pandas
    extension array, as the data stores it: read, never written);
    ``frame[name]`` is the column as a Series (made when first asked for:
    only messages and uncommon column types need one).  ``rows``: positions
    in the data of the rows kept (``None``: all ``n``); ``n_dropped``: rows
    dropped for missing values; ``names``: the data's column names as
    strings (for messages).
    """

    values: dict[str, Any]
    n: int
    rows: np.ndarray | None
    n_dropped: int
    data_index: pd.Index | None = None
    names: list[str] = dataclasses.field(default_factory=list)
    _series: dict[str, pd.Series] = dataclasses.field(default_factory=dict, repr=False)

    def __getitem__(self, name: str) -> pd.Series:
        s = self._series.get(name)
        if s is None:
            v = self.values[name]
            index = self.data_index if self.rows is None or self.data_index is None \
                else self.data_index.take(self.rows)
            # dtype given: an object array stays object (pandas 3 would infer strings)
            s = pd.Series(v, index=index, name=name, dtype=v.dtype, copy=False)
            self._series[name] = s
        return s


def _isna(values: Any) -> np.ndarray | None:
    """Missing values of a column's values (``None``: numpy integers or bools, which have none)."""
    dt = values.dtype
    if isinstance(values, np.ndarray):
        if dt.kind in "iub":
            return None
        if dt.kind == "f":
            return np.isnan(values)
        return np.asarray(pd.isna(values), dtype=bool)
    return np.asarray(values.isna(), dtype=bool)      # extension arrays (strings, categoricals)


def _column_values(data: pd.DataFrame, k: int) -> Any:
    """The values of the ``k``-th column as the data stores them (read only).

    ``DataFrame._get_column_array`` (pandas >= 1.3) hands out the stored
    array without making a Series (a tenth of a tiny fit's set-up with pandas
    3); the public route is the fallback.
    """
    get = getattr(data, "_get_column_array", None)
    if get is not None:
        return get(k)
    col = data.iloc[:, k]
    return col.to_numpy() if isinstance(col.dtype, np.dtype) else col.array


def _column_names(data: pd.DataFrame) -> list[str]:
    """``str`` of each column label (pyarrow string labels read from arrow, not one by one)."""
    labels = data.columns
    dt = labels.dtype
    if isinstance(dt, pd.StringDtype) and dt.storage == "pyarrow":
        names = cast(Any, labels.array).__arrow_array__().to_pylist()
        if None not in names:
            return names
    return list(map(str, labels))


def frame_columns(f: Formula, data: pd.DataFrame, *,
                  names: list[str] | None = None) -> FrameColumns:
    """The used columns (named as strings) without rows that have missing values.

    ``names``: the data's column names as strings, when the caller has them.
    The values are read from ``data`` without copies: a caller that keeps the
    result beyond its own use passes a shallow copy (copy-on-write keeps it
    from later edits of the data).
    """
    columns = _column_names(data) if names is None else names
    used = f.variables
    for name in used:
        if name not in columns:
            close = closest_name(name, columns)
            hint = f" Did you mean {close!r}?" if close else ""
            raise FormulaError(
                f"column {name!r} is not in the data.{hint} Available columns: "
                f"{', '.join(map(repr, columns[:30]))}{' ...' if len(columns) > 30 else ''}.",
                "".join(" " if c.isspace() else c for c in f.text), f.positions.get(name),
            )
    n = len(data)
    if n == 0:
        raise InputError("data has no rows; a model needs at least a few observations.")
    used_set = set(used)
    picked = [(name, k) for k, name in enumerate(columns) if name in used_set]
    seen: set[str] = set()
    for name, _ in picked:
        if name in seen:
            raise InputError(f"data has more than one column named {name!r}; rename them.")
        seen.add(name)
    values = {name: _column_values(data, k) for name, k in picked}
    na = {name: _isna(v) for name, v in values.items()}
    missing = np.zeros(n, dtype=bool)
    for m in na.values():
        if m is not None:
            missing |= m
    n_dropped = int(missing.sum())
    if not n_dropped:
        return FrameColumns(values, n, None, 0, data.index, columns)
    if n_dropped == n:
        raise InputError(
            f"every row of data has a missing value in a column the formula uses "
            f"({', '.join(map(repr, used))}); nothing is left to fit."
        )
    counts = {name: 0 if m is None else int(m.sum()) for name, m in na.items()}
    detail = ", ".join(f"{c}: {k}" for c, k in counts.items() if k)
    warnings.warn(
        f"dropped {n_dropped} of {n} rows with missing values "
        f"(missing per column: {detail}).",
        NlpowerWarning, stacklevel=3,
    )
    keep = ~missing
    return FrameColumns({name: v[keep] for name, v in values.items()}, n - n_dropped,
                        np.flatnonzero(keep), n_dropped, data.index, columns)


def _response(f: Formula, frame: FrameColumns) -> np.ndarray:
    """The response as floats: numeric, finite and not constant."""
    dt = frame.values[f.response].dtype
    if isinstance(dt, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dt):
        raise InputError(
            f"the response {f.response!r} is a factor (dtype {dt}); a linear mixed "
            "model needs a numeric response. Convert it, e.g. data[col].astype(float) or map "
            "Likert labels to numbers."
        )
    if not numeric_dtype(dt):
        raise InputError(
            f"the response {f.response!r} must be numeric; got dtype {dt} "
            f"(e.g. {frame[f.response].iloc[0]!r}). Convert it with "
            f"pandas.to_numeric(data[{f.response!r}])."
        )
    y = _numeric(frame, f.response, "response")
    if np.ptp(y) == 0.0:
        raise InputError(
            f"the response {f.response!r} is constant ({float(y[0])!r} in all {len(y)} rows): a mixed "
            "model cannot be fitted to a constant response."
        )
    return y


def _numeric(frame: FrameColumns, name: str, role: str) -> np.ndarray:
    """:func:`~.columns.as_numeric` of a column (numpy columns read without a Series)."""
    v = frame.values[name]
    if isinstance(v, np.ndarray) and v.dtype.kind in "iuf":
        x = np.array(v, dtype=float)
        if v.dtype.kind != "f" or np.isfinite(x).all():
            return x
    return as_numeric(frame[name], role)       # other dtypes; the message for infinite values


def _variables(f: Formula, frame: FrameColumns) -> dict[str, Variable]:
    """Predictors of the fixed part and of the random terms: floats or :class:`Factor`."""
    names: dict[str, None] = dict.fromkeys(f.fixed.variables)
    for r in f.random:
        names.update(dict.fromkeys(r.expr.variables))
    return {
        v: _numeric(frame, v, "predictor") if numeric_dtype(frame.values[v].dtype)
        else factor_of(frame.values[v], v)
        for v in names
    }


def _contrasts(
    requested: Mapping[str, str],
    variables: Mapping[str, Variable],
    columns: list[str] | None = None,
) -> dict[str, str]:
    """Contrast of every factor predictor (``"treatment"`` unless requested).

    Like R, a contrast for a data column the formula does not use is ignored
    with a warning (so one ``contrasts`` dict can serve a model and its null
    model); a name that is not a column at all is an error.
    """
    factors = [v for v, var in variables.items() if isinstance(var, Factor)]
    for key in requested:
        if key not in variables:
            if columns is not None and key in columns:
                warnings.warn(
                    f"contrasts[{key!r}] is ignored: column {key!r} is not a predictor in the "
                    "formula (R: 'variable is absent, its contrast will be ignored').",
                    NlpowerWarning, stacklevel=4,
                )
                continue
            close = closest_name(key, factors + list(columns or []))
            hint = f" Did you mean {close!r}?" if close else ""
            raise InputError(
                f"contrasts names {key!r}, which is not a column of the data.{hint} "
                f"Factors in the model: {factors}."
            )
        if not isinstance(variables[key], Factor):
            raise InputError(
                f"contrasts[{key!r}]: column {key!r} is numeric, and contrasts apply to "
                "factors. Code it numerically yourself or make it a pandas Categorical."
            )
    return {v: requested.get(v, "treatment") for v in factors}


def _re_term(
    rt: RandomTerm,
    variables: Mapping[str, Variable],
    contrasts: Mapping[str, str],
    group_factors: Mapping[str, Factor],
    n: int,
    allow_n: bool = False,
) -> ReTerm:
    """One expanded random term: Z, grouping codes, lme4's level checks.

    ``allow_n``: a model without a residual variance (a GLMM) may have one level
    (or random effect) per observation, as lme4's ``glmer`` checks.
    """
    Z, cnames = model_matrix(rt.expr, variables, contrasts, n)
    fac = combine([group_factors[g] for g in rt.group])
    name = rt.group_name
    label = f"({rt.expr} | {name})"
    if fac.n_levels <= 1:
        raise InputError(
            f"grouping factors must have > 1 sampled level: {name!r} has "
            f"{fac.n_levels} level ({fac.levels[0]!r}) in the rows used, in term {label}. "
            "Remove the term or check the data."
        )
    if fac.n_levels > n or (fac.n_levels == n and not allow_n):
        raise InputError(
            f"number of levels of each grouping factor must be < number of observations: "
            f"{name!r} has {fac.n_levels} levels for {n} observations in term {label} "
            "(one level per observation cannot be told apart from the residual). "
            "Remove the term."
        )
    n_re = Z.shape[1] * fac.n_levels
    if n < n_re or (n == n_re and not allow_n):
        raise InputError(
            f"number of observations (={n}) <= number of random effects (={n_re}) for term "
            f"{label}; the random-effects parameters and the residual variance are probably "
            "unidentifiable. Use a simpler term, e.g. (1 | " + name + ")."
        )
    return ReTerm(group=name, codes=fac.codes, levels=fac.levels, Z=Z, cnames=tuple(cnames))


def fitted_rows(data: Any, spec: ModelSpec) -> pd.DataFrame:
    """The rows of ``data`` that ``spec`` was built from (no missing value in a used column), a copy."""
    used = [c for c in spec.data_columns if c in data.columns]
    keep = ~data[used].isna().any(axis=1) if used else np.ones(len(data), dtype=bool)
    return data.loc[keep].copy()
