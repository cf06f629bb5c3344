"""Denominator degrees of freedom of fixed-effect tests at a fit, for every engine.

``coef_table(ddf=...)`` and the power layer's Wald tests need, for a contrast
``L``, a standard error and a df:

* ``"satterthwaite"``: lmerTest's df (:mod:`nlpower.lmm.satterthwaite`),
  evaluated by the native code at the fit's ``theta`` and ``sigma`` -- for an
  lme4 fit too (the df are a function of those and the response alone);
* ``"kenward-roger"``: pbkrtest's adjusted covariance and df
  (:mod:`nlpower.lmm.kenward_roger`) at a REML fit;
* ``"normal"``: df = inf.

:func:`term_covariances` is the one place the power layer turns ``theta``
into each term's covariance ``sigma^2 Lambda Lambda'`` in formula order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InputError
from ..mixed.layout import theta_layout
from ..mixed.relfactor import relative_factor
from .kenward_roger import KRState, covariance_basis, kr_state
from .structure import ModelSpec

__all__ = ["DDF", "kenward_roger_fn", "term_covariances", "term_slots"]

#: The denominator-df methods of ``coef_table`` (lmerTest's ``ddf=``, plus the normal limit).
DDF = ("satterthwaite", "kenward-roger", "normal")


def term_slots(spec: ModelSpec) -> list[tuple[int, int]]:
    """``(offset into theta, q)`` of each term of ``spec.re_terms`` (formula order)."""
    layout = theta_layout(spec.re_terms)
    where = {id(t): (off, t.q) for t, off in zip(layout.terms, layout.term_offsets, strict=True)}
    return [where[id(t)] for t in spec.re_terms]


def term_covariances(slots: list[tuple[int, int]], theta: np.ndarray, sigma: float
                     ) -> list[np.ndarray]:
    """Each term's covariance ``sigma^2 Lambda Lambda'`` from lme4's ``theta``.

    ``slots`` from :func:`term_slots`; ``Lambda`` is the lower triangle of the
    relative covariance factor, filled column by column (lme4's order).

    Examples
    --------
    >>> term_covariances([(0, 2)], np.array([1.0, 0.5, 2.0]), 1.0)[0]
    array([[1.  , 0.5 ],
           [0.5 , 4.25]])
    """
    covs = []
    for off, q in slots:
        lam = relative_factor(theta[off:], q)
        covs.append(sigma**2 * lam @ lam.T)
    return covs


def kenward_roger_fn(spec: ModelSpec, theta: np.ndarray, sigma: float, beta: np.ndarray,
                     *, REML: bool) -> Callable[[np.ndarray], tuple[float, float]]:
    """``L -> (KR standard error, KR df)`` at a fit (the state is built on the first call).

    Raises :class:`~nlpower.errors.InputError` on the first call for an ML fit
    (Kenward-Roger is defined at a REML fit, as in pbkrtest).
    """
    state: dict[str, KRState] = {}

    def fn(L: Any) -> tuple[float, float]:
        if not REML:
            raise InputError("ddf='kenward-roger' is defined at a REML fit (pbkrtest refuses ML "
                             "fits); refit with REML=True or use ddf='satterthwaite'.")
        if "s" not in state:
            covs = term_covariances(term_slots(spec), theta, sigma)
            state["s"] = kr_state(spec, beta, covs, sigma, covariance_basis(spec))
        _, se, df, _ = state["s"].t_test(np.asarray(L, dtype=float))
        return se, df

    return fn
