"""Predictions of a mixed-model fit on new data, as lme4's ``predict.merMod``.

For ``lmer`` and ``glmer`` fits alike (the linear predictor; a GLMM's
``type="response"`` applies the inverse link afterwards).

``eta = X_new beta + sum_terms Z_new b + offset`` with the conditional modes
``b`` of the fit (:meth:`GlmmFit.ranef`).  The new rows are coded with the
fit's own factor levels and contrasts: they are appended to the rows the
model was fitted on and the formula layer builds ``X`` and the random-effects
columns of both at once (so a factor's coding cannot drift), then only the
new rows are kept.  A level of a grouping factor that the fit has not seen
gets random effects 0 -- the population level -- only with
``allow_new_levels=True`` (lme4's ``allow.new.levels``); a new level of a
factor in the fixed part is refused, as lme4 does.  ``re_form``: ``None``
(every random-effects term, lme4's ``re.form = NULL``), ``"NA"`` / ``"~0"``
/ ``nan`` (none: ``re.form = NA``), or a formula of random-effects terms
(``"~ (1 | worker)"``: those terms only).  Rows with a missing value in a
column the prediction needs get ``nan`` (lme4's ``na.pass``).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..formula import parse
from .frame import model_frame

if TYPE_CHECKING:
    from typing import Any as GlmmFit  # any fit with formula, data, fixef, ranef, contrasts

_PLACEHOLDER = "._response"


def _re_choice(re_form: Any) -> str | None | bool:
    """``True``: every term; ``False``: none; a string: those terms (``"(1 | g) + ..."``)."""
    if re_form is None:
        return True
    if re_form is pd.NA or (isinstance(re_form, float) and math.isnan(re_form)):
        return False
    if isinstance(re_form, str):
        text = re_form.strip()
        text = text[1:].strip() if text.startswith("~") else text
        if text in ("NA", "0", ""):
            return False
        if "|" in text:
            return text
    raise InputError(f"re_form must be None (every random effect, lme4's re.form = NULL), 'NA' "
                     f"or '~0' (none: the population level) or a formula of random-effects "
                     f"terms such as '~ (1 | worker)'; got {re_form!r}.")


def _columns(fit: GlmmFit, newdata: pd.DataFrame, needed: list[str]) -> None:
    missing = [c for c in needed if c not in newdata.columns]
    if missing:
        raise InputError(f"newdata lacks the column{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(map(repr, missing))} that the prediction needs "
                         f"(formula {fit.formula!r}).")


def _aligned(train: pd.Series, new: pd.Series, name: str, fixed: bool) -> pd.Series:
    """``train`` then ``new`` as one column coded like ``train`` (its categories first)."""
    both = pd.concat([train, new], ignore_index=True)
    if pd.api.types.is_numeric_dtype(train.dtype) and not isinstance(train.dtype, pd.CategoricalDtype):
        if not pd.api.types.is_numeric_dtype(new.dtype):
            raise InputError(f"newdata[{name!r}] must be numeric, as in the data of the fit; "
                             f"got dtype {new.dtype}.")
        return both
    seen = list(train.cat.categories) if isinstance(train.dtype, pd.CategoricalDtype) else \
        sorted(pd.unique(train.astype(str)))
    seen_str = [str(v) for v in seen]
    new_str = new.astype(str)
    fresh = sorted({str(v) for v in new_str} - set(seen_str))
    if fresh and fixed:
        raise InputError(f"newdata[{name!r}] has level{'s' if len(fresh) > 1 else ''} "
                         f"{', '.join(map(repr, fresh[:5]))} that the fit has not seen; a fixed "
                         f"effect cannot be predicted for a new level of a factor (lme4 refuses "
                         f"too). Known levels: {', '.join(map(repr, seen_str[:10]))}.")
    return pd.Series(pd.Categorical(both.astype(str), categories=seen_str + fresh))


def predict_newdata(fit: GlmmFit, newdata: Any, *, re_form: Any = None,
                    allow_new_levels: bool = False, offset: Any = None) -> np.ndarray:
    """The linear predictor of ``newdata``'s rows (module docstring)."""
    if not isinstance(newdata, pd.DataFrame):
        raise InputError(f"newdata must be a pandas DataFrame with the model's predictor columns; "
                         f"got {type(newdata).__name__}.")
    train = fit.data
    if train is None:
        raise InputError("predict(newdata=...) needs a fit made by nlpower.lmer or glmer from a "
                         "data frame (this one was built from a model structure); predict() "
                         "without newdata works.")
    offset_name = getattr(fit, "offset_name", None)
    offset_given = bool(getattr(fit, "offset_given", False))
    choice = _re_choice(re_form)
    f = parse(fit.formula)
    resp = f.response
    fixed_vars = [v for v in f.fixed.variables if v != resp]
    re_vars: list[str] = []
    if choice is not False:
        sub = parse(f"{resp} ~ 1 + {choice}") if isinstance(choice, str) else f
        re_vars = [v for v in sub.variables if v not in fixed_vars and v != resp]
        unknown = set(sub.grouping_variables) - set(f.grouping_variables)
        if unknown:
            raise InputError(f"re_form {re_form!r} names grouping factors "
                             f"{', '.join(map(repr, sorted(unknown)))} that the model "
                             f"{fit.formula!r} does not have.")
    needed = fixed_vars + re_vars
    if isinstance(offset_name, str):
        needed.append(offset_name)
    _columns(fit, newdata, needed)
    n_new = len(newdata)
    eta = np.full(n_new, np.nan)
    ok = ~newdata[needed].isna().any(axis=1).to_numpy() if needed else np.ones(n_new, dtype=bool)
    nd = newdata.loc[ok]
    m = len(train)
    grouping = set(f.grouping_variables)
    both = pd.DataFrame({v: _aligned(train[v], nd[v], v, v not in grouping or v in fixed_vars)
                         for v in dict.fromkeys(needed) if v != offset_name})
    both[resp] = np.arange(len(both), dtype=float) % 2        # the response is not used
    rhs = f.fixed.to_string(explicit_intercept=False) or "1"
    with warnings.catch_warnings():       # the fit's warnings (scales, dropped columns) again
        warnings.simplefilter("ignore")
        spec = model_frame(f"{resp} ~ {rhs}", both, fit.contrasts, allow_n=True)
        re_spec = None
        if choice is not False:
            terms = choice if isinstance(choice, str) else " + ".join(str(t) for t in f.random)
            re_spec = model_frame(f"{resp} ~ 1 + {terms}", both, fit.contrasts, allow_n=True)
    names = list(spec.fixef_names)
    lost = [nm for nm in fit.fixef.index if nm not in names]
    if lost:
        raise InputError(f"newdata does not give the fixed-effect column{'s' if len(lost) > 1 else ''} "
                         f"{', '.join(map(repr, lost))}.")
    X = spec.X[m:][:, [names.index(nm) for nm in fit.fixef.index]]
    e = X @ fit.fixef.to_numpy()
    if re_spec is not None:
        e = e + _random_part(fit, re_spec, m, allow_new_levels)
    if isinstance(offset_name, str):
        e = e + nd[offset_name].to_numpy(dtype=float)
    elif offset_given:
        if offset is None:
            raise InputError("the model was fitted with an offset given as values; give the new "
                             "rows' offset too: predict(newdata, offset=...).")
        off = np.asarray(offset, dtype=float).ravel()
        if off.shape != (n_new,):
            raise InputError(f"offset must have one value per row of newdata ({n_new}); got "
                             f"shape {off.shape}.")
        e = e + off[ok]
    eta[ok] = e
    return eta


def _random_part(fit: GlmmFit, spec: Any, m: int, allow_new_levels: bool) -> np.ndarray:
    """``Z_new b``: each random-effects term of ``spec`` with the fit's conditional modes."""
    tables = fit.ranef()
    out = np.zeros(spec.n - m)
    for term in spec.re_terms:
        table = tables.get(term.group)
        if table is None or any(c not in table.columns for c in term.cnames):
            raise InputError(f"re_form's term ({' + '.join(term.cnames)} | {term.group}) is not a "
                             f"random-effects term of the model {fit.formula!r}.")
        labels = np.asarray(term.levels, dtype=object)[term.codes[m:]]
        known = pd.Index(table.index.astype(str)).get_indexer(labels.astype(str)) >= 0
        if not np.all(known) and not allow_new_levels:
            fresh = sorted({str(v) for v in labels[~known]})
            raise InputError(
                f"newdata has level{'s' if len(fresh) > 1 else ''} "
                f"{', '.join(map(repr, fresh[:5]))} of {term.group!r} that the fit has not seen. "
                "Use predict(..., allow_new_levels=True) to predict them at the population level "
                "(their random effects 0, as lme4's allow.new.levels = TRUE), or re_form='NA' "
                "for no random effects at all.")
        b = table.set_axis(table.index.astype(str)).reindex(labels.astype(str))[list(term.cnames)]
        out += np.einsum("ij,ij->i", term.Z[m:], b.fillna(0.0).to_numpy(dtype=float))
    return out
