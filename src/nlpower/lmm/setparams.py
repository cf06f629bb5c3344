"""Set the parameters of a fitted mixed model: the truth of a power study.

simr's ``fixef<-``, ``VarCorr<-`` and ``sigma<-`` in one place, for every
family: a fit whose parameters were set generates data
(``fit.simulate``) and is what :func:`nlpower.power` takes as the truth.

* **fixed effects** by name (``{"x": -0.05}``; lme4's ``system1`` for
  ``system[A]`` too, :mod:`nlpower.lmm.names`); names not given keep
  their fitted value;
* **random-effect SDs** per term, by the term's group name as
  ``fit.varcorr()`` shows it (``"item"``, ``"item.1"`` for a second term
  on ``item``), or by the grouping factor when it has one term: a number
  for a one-column term, or ``{column: sd}`` for a term with several
  columns (columns not given keep their SD; correlations are kept);
  SDs are on the scale ``varcorr()`` reports (for a GLMM or a cumulative
  link model: the linear predictor's);
* **the residual SD** of a Gaussian model: the random-effect SDs are kept
  as they are (simr's ``sigma<-``), so ``theta`` changes with it.

The covariance of a term is ``sigma^2 Lambda Lambda'`` (Gaussian) or
``Lambda Lambda'`` (other families, ``scale=1``); ``theta`` holds the lower
triangle of ``Lambda`` column by column, as lme4's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..mixed.layout import ThetaLayout
from ..mixed.relfactor import factor_theta, relative_factor
from .names import canonical

__all__ = ["check_dispersion", "set_fixef", "set_theta", "term_covariances"]


def _number(name: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number; got {value!r}.")
    v = float(value)
    if not math.isfinite(v) or (positive and v < 0):
        what = "a finite number >= 0" if positive else "a finite number"
        raise InputError(f"{name} must be {what}; got {value!r}.")
    return v


def check_dispersion(value: Any) -> float | None:
    """``dispersion=`` of ``with_params``: None or a number (text and booleans refused)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"dispersion must be a number (the negative binomial theta, > 0); got "
                         f"{value!r} ({type(value).__name__}).")
    return float(value)


def set_fixef(fixef: pd.Series, new: Mapping[str, Any] | None,
              aliases: Mapping[str, str] | None = None) -> pd.Series:
    """``fixef`` with the coefficients named in ``new`` replaced.

    ``aliases``: lme4's names of sum-coded columns (``ModelSpec.aliases``),
    accepted for the names (``{"system1": 0.2}`` sets ``system[A]``).

    Examples
    --------
    >>> set_fixef(pd.Series({"(Intercept)": 1.0, "x": 0.2}), {"x": -0.05}).to_dict()
    {'(Intercept)': 1.0, 'x': -0.05}
    >>> set_fixef(pd.Series({"(Intercept)": 1.0, "s[A]": 0.2}), {"s1": 0.5},
    ...           {"s1": "s[A]"}).to_dict()
    {'(Intercept)': 1.0, 's[A]': 0.5}
    """
    out = fixef.copy()
    if new is None:
        return out
    if isinstance(new, pd.Series):         # e.g. another fit's fixef, or fixef * 2
        new = {str(k): v for k, v in new.items()}
    if not isinstance(new, Mapping):
        raise InputError(f"fixef must be a mapping of coefficient name to value, e.g. "
                         f"{{'x': -0.05}}; got {type(new).__name__}.")
    for k, v in new.items():
        name = canonical(k, map(str, out.index), aliases or {})
        if name is None:
            raise InputError(f"fixef: no coefficient {k!r}; the model has "
                             f"{', '.join(map(str, out.index))}.")
        out[name] = _number(f"fixef[{k!r}]", v)
    return out


def _lambda(theta: np.ndarray, off: int, q: int) -> np.ndarray:
    return relative_factor(theta[off:], q)


def term_covariances(layout: ThetaLayout, theta: np.ndarray, scale: float) -> list[np.ndarray]:
    """Each term's covariance ``scale^2 Lambda Lambda'``, in the layout's order."""
    return [scale ** 2 * (lam @ lam.T) for lam in
            (_lambda(theta, off, t.q) for t, off in zip(layout.terms, layout.term_offsets,
                                                          strict=True))]


def _cholesky_psd(cov: np.ndarray) -> np.ndarray:
    """Lower ``L`` with ``L L' = cov`` where the zero-variance columns have zero rows and columns."""
    q = cov.shape[0]
    L = np.zeros((q, q))
    idx = np.flatnonzero(np.diag(cov) > 0)
    if idx.size:
        sub = cov[np.ix_(idx, idx)]
        try:
            L[np.ix_(idx, idx)] = np.linalg.cholesky(sub)
        except np.linalg.LinAlgError:
            # a correlation of +-1: nudge the diagonal (the SDs move by < 1e-6 relative)
            L[np.ix_(idx, idx)] = np.linalg.cholesky(sub + np.diag(np.diag(sub)) * 1e-12)
    return L


def _term_index(layout: ThetaLayout, key: str) -> int:
    if key in layout.grp_names:
        return layout.grp_names.index(key)
    hits = [i for i, t in enumerate(layout.terms) if t.group == key]
    if len(hits) == 1:
        return hits[0]
    if hits:
        names = ", ".join(layout.grp_names[i] for i in hits)
        raise InputError(f"sd: {key!r} has {len(hits)} random-effects terms; name one of them "
                         f"as varcorr() does: {names}.")
    raise InputError(f"sd: no random-effects term {key!r}; the model has "
                     f"{', '.join(layout.grp_names)} (the 'grp' column of varcorr()).")


def _new_sds(term: Any, grp: str, old: np.ndarray, value: Any,
             aliases: Mapping[str, str]) -> np.ndarray:
    sds = old.copy()
    if isinstance(value, Mapping):
        for col, v in value.items():
            name = canonical(col, term.cnames, aliases)
            if name is None:
                raise InputError(f"sd[{grp!r}]: no column {col!r}; the term has "
                                 f"{', '.join(term.cnames)}.")
            sds[term.cnames.index(name)] = _number(f"sd[{grp!r}][{col!r}]", v, positive=True)
        return sds
    if term.q != 1:
        raise InputError(f"sd[{grp!r}]: the term has {term.q} columns ({', '.join(term.cnames)}); "
                         f"give {{column: sd}}, e.g. {{{term.cnames[0]!r}: 0.5}}.")
    sds[0] = _number(f"sd[{grp!r}]", value, positive=True)
    return sds


def set_theta(layout: ThetaLayout, theta: np.ndarray, sd: Mapping[str, Any] | None, *,
              scale: float, new_scale: float | None = None,
              aliases: Mapping[str, str] | None = None) -> np.ndarray:
    """``theta`` with the SDs in ``sd`` set (module docstring), for residual scale ``new_scale``.

    ``scale`` is the fit's residual SD (1 for non-Gaussian families);
    ``new_scale`` the one to express ``theta`` against (default: ``scale``);
    ``aliases``: lme4's names of sum-coded columns, accepted in ``sd``.

    Examples
    --------
    >>> from nlpower.lmm import model_frame, theta_layout
    >>> d = pd.DataFrame({"y": [1.0, 2, 3, 4, 5, 7], "g": list("aabbcc")})
    >>> lay = theta_layout(model_frame("y ~ 1 + (1 | g)", d).re_terms)
    >>> set_theta(lay, np.array([1.0]), {"g": 0.5}, scale=2.0)   # SD 0.5 on residual SD 2
    array([0.25])
    >>> set_theta(lay, np.array([1.0]), None, scale=2.0, new_scale=1.0)  # SD 2 kept
    array([2.])
    """
    target = scale if new_scale is None else new_scale
    if target <= 0:
        raise InputError(f"sigma must be > 0; got {target!r}.")
    covs = term_covariances(layout, np.asarray(theta, dtype=float), scale)
    if sd is not None:
        if not isinstance(sd, Mapping):
            raise InputError(f"sd must be a mapping of term to SD, e.g. {{'item': 0.1}}; got "
                             f"{type(sd).__name__}.")
        for key, value in sd.items():
            i = _term_index(layout, str(key))
            term, cov = layout.terms[i], covs[i]
            old = np.sqrt(np.maximum(np.diag(cov), 0.0))
            new = _new_sds(term, layout.grp_names[i], old, value, aliases or {})
            with np.errstate(invalid="ignore", divide="ignore"):
                corr = cov / np.outer(old, old)
            corr = np.where(np.isfinite(corr), corr, 0.0)
            np.fill_diagonal(corr, 1.0)
            covs[i] = corr * np.outer(new, new)
    out = np.empty(layout.size)
    for off, cov in zip(layout.term_offsets, covs, strict=True):
        th = factor_theta(_cholesky_psd(cov / target ** 2))
        out[off:off + th.size] = th
    return out
