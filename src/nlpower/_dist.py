"""Distribution functions the package needs, without importing ``scipy.stats``.

``scipy.stats`` takes about a second to import (it builds every
distribution's docstring), which used to double the wall time of a first
fit. The functions here call the same ``scipy.special`` routines that
``scipy.stats`` calls for these distributions, so they return the same
numbers (the tests compare them to ``scipy.stats`` to 1e-12) at a fraction of
the import cost.  ``scipy.special`` itself is imported on the first call that
needs it: the Student t tails (the p-values of a fit's summary) are computed
without it, in :mod:`nlpower._student`, to within 1e-12 of ``scipy.special.stdtr``.

Modules import it as ``from .. import _dist as stats`` so that call sites
read as they would with ``scipy.stats`` (``stats.norm.sf(z)``,
``stats.t.sf(t, df)``, ``stats.chi2.sf(x, df)``, ``stats.f.sf(F, q, df2)``).

Every function takes scalars or arrays and broadcasts like NumPy; ``sf`` and
``isf`` are the upper tail, computed directly (not as ``1 - cdf``) so that
tiny p-values keep their precision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._lazy import special
from ._student import t_sf as _t_upper

__all__ = [
    "chi2",
    "f",
    "norm",
    "t",
    "chi2_cdf",
    "chi2_isf",
    "chi2_ppf",
    "chi2_sf",
    "f_cdf",
    "f_isf",
    "f_sf",
    "nct",
    "nct_sf",
    "norm_cdf",
    "norm_isf",
    "norm_pdf",
    "norm_ppf",
    "norm_sf",
    "t_cdf",
    "t_isf",
    "t_ppf",
    "t_sf",
]

_Arr = Any  # float or ndarray: the result follows NumPy's broadcasting


def _out(x: np.ndarray) -> _Arr:
    return x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x


def norm_cdf(x: _Arr) -> _Arr:
    """Standard normal lower tail, ``P(Z <= x)``."""
    return _out(special.ndtr(np.asarray(x, dtype=float)))


def norm_sf(x: _Arr) -> _Arr:
    """Standard normal upper tail, ``P(Z > x)``."""
    return _out(special.ndtr(-np.asarray(x, dtype=float)))


def norm_pdf(x: _Arr) -> _Arr:
    """Standard normal density."""
    x = np.asarray(x, dtype=float)
    return _out(np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi))


def norm_ppf(q: _Arr) -> _Arr:
    """Standard normal quantile (inverse of :func:`norm_cdf`)."""
    return _out(special.ndtri(np.asarray(q, dtype=float)))


def norm_isf(q: _Arr) -> _Arr:
    """Standard normal upper quantile (inverse of :func:`norm_sf`)."""
    return _out(-special.ndtri(np.asarray(q, dtype=float)))


def t_cdf(x: _Arr, df: _Arr) -> _Arr:
    """Student t lower tail; ``df`` may be ``inf`` (the normal)."""
    return _out(_t_upper(-np.asarray(x, dtype=float), np.asarray(df, dtype=float)))


def t_sf(x: _Arr, df: _Arr) -> _Arr:
    """Student t upper tail, ``P(T > x)``."""
    return _out(_t_upper(np.asarray(x, dtype=float), np.asarray(df, dtype=float)))


def t_ppf(q: _Arr, df: _Arr) -> _Arr:
    """Student t quantile (inverse of :func:`t_cdf`)."""
    return _out(special.stdtrit(np.asarray(df, dtype=float), np.asarray(q, dtype=float)))


def t_isf(q: _Arr, df: _Arr) -> _Arr:
    """Student t upper quantile (inverse of :func:`t_sf`)."""
    return _out(-np.asarray(t_ppf(q, df), dtype=float))


def chi2_cdf(x: _Arr, df: _Arr) -> _Arr:
    """Chi-squared lower tail."""
    x = np.asarray(x, dtype=float)
    return _out(special.chdtr(np.asarray(df, dtype=float), np.maximum(x, 0.0)))


def chi2_sf(x: _Arr, df: _Arr) -> _Arr:
    """Chi-squared upper tail, ``P(X > x)``."""
    x = np.asarray(x, dtype=float)
    return _out(special.chdtrc(np.asarray(df, dtype=float), np.maximum(x, 0.0)))


def chi2_ppf(q: _Arr, df: _Arr) -> _Arr:
    """Chi-squared quantile (inverse of :func:`chi2_cdf`)."""
    df = np.asarray(df, dtype=float)
    return _out(2.0 * special.gammaincinv(df / 2.0, np.asarray(q, dtype=float)))


def chi2_isf(q: _Arr, df: _Arr) -> _Arr:
    """Chi-squared upper quantile (inverse of :func:`chi2_sf`)."""
    return _out(special.chdtri(np.asarray(df, dtype=float), np.asarray(q, dtype=float)))


def f_cdf(x: _Arr, dfn: _Arr, dfd: _Arr) -> _Arr:
    """F distribution lower tail."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    return _out(special.fdtr(np.asarray(dfn, dtype=float), np.asarray(dfd, dtype=float), x))


def f_sf(x: _Arr, dfn: _Arr, dfd: _Arr) -> _Arr:
    """F distribution upper tail, ``P(F > x)``."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    return _out(special.fdtrc(np.asarray(dfn, dtype=float), np.asarray(dfd, dtype=float), x))


def f_isf(q: _Arr, dfn: _Arr, dfd: _Arr) -> _Arr:
    """F distribution upper quantile (inverse of :func:`f_sf`)."""
    q = np.asarray(q, dtype=float)
    return _out(special.fdtri(np.asarray(dfn, dtype=float), np.asarray(dfd, dtype=float), 1.0 - q))


def nct_sf(x: _Arr, df: _Arr, nc: _Arr) -> _Arr:
    """Noncentral t upper tail ``P(T > x)`` (Boost's, as ``scipy.stats.nct.sf``)."""
    x, df, nc = (np.asarray(v, dtype=float) for v in (x, df, nc))
    from scipy.special import _ufuncs  # the noncentral t tail scipy.stats.nct.sf calls

    fn = getattr(_ufuncs, "_nct_sf", None)
    with np.errstate(over="ignore"):
        out = fn(x, df, nc) if fn is not None else 1.0 - special.nctdtr(df, nc, x)
    return _out(np.clip(out, 0.0, 1.0))


class norm:
    """``scipy.stats.norm``-shaped access: ``norm.sf(x)`` and so on."""

    cdf = staticmethod(norm_cdf)
    sf = staticmethod(norm_sf)
    pdf = staticmethod(norm_pdf)
    ppf = staticmethod(norm_ppf)
    isf = staticmethod(norm_isf)


class t:
    """``scipy.stats.t``-shaped access: ``t.sf(x, df)`` and so on."""

    cdf = staticmethod(t_cdf)
    sf = staticmethod(t_sf)
    ppf = staticmethod(t_ppf)
    isf = staticmethod(t_isf)


class chi2:
    """``scipy.stats.chi2``-shaped access: ``chi2.sf(x, df)`` and so on."""

    cdf = staticmethod(chi2_cdf)
    sf = staticmethod(chi2_sf)
    ppf = staticmethod(chi2_ppf)
    isf = staticmethod(chi2_isf)


class nct:
    """``scipy.stats.nct``-shaped access: ``nct.sf(x, df, nc)``."""

    sf = staticmethod(nct_sf)


class f:
    """``scipy.stats.f``-shaped access: ``f.sf(x, dfn, dfd)`` and so on."""

    cdf = staticmethod(f_cdf)
    sf = staticmethod(f_sf)
    isf = staticmethod(f_isf)
