"""The log-likelihood of a prepared cumulative link mixed model as a function of ``(x, u0)``.

:func:`evaluate` computes ``-loglik`` (Laplace, or adaptive Gauss-Hermite
for ``nAGQ > 1``) at ``x = (alpha, beta, theta)`` from the conditional
modes' start ``u0``; :func:`gradient` its analytic gradient (and, for
the general structures, the modes' first-order change ``d u* / dx``);
:func:`loglik` both, ``(value, gradient, modes)``.  Nothing here keeps
state between calls: which start to take (the last modes, or their
first-order prediction) is the caller's choice (the fit's warm starts,
:class:`~.model.FitState`).  The model's response and structure are read,
and the structure's ``Lambda`` set to ``theta``
(:meth:`~.structure.ReStructure.at_theta`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .agq import scalar_agq
from .cumulative import bounds_parts
from .gradient import laplace_gradient
from .laplace import conditional_modes

if TYPE_CHECKING:
    from .model import ClmmModel

__all__ = ["Evaluation", "evaluate", "gradient", "loglik"]


@dataclass(frozen=True, eq=False)
class Evaluation:
    """One point: ``-loglik`` (``inf`` outside the parameter space) and what its gradient reads."""

    x: np.ndarray
    value: float
    bounds: np.ndarray | None = None        # [upper, lower] without the random effects
    inner: Any = None                       # the conditional modes (InnerResult / ScalarInner)
    agq_gradient: np.ndarray | None = None  # nAGQ > 1: computed with the value

    @property
    def modes(self) -> np.ndarray | None:
        return None if self.inner is None else self.inner.u


def evaluate(model: ClmmModel, x: np.ndarray, u0: np.ndarray, *,
             factor0: Any = None) -> Evaluation:
    """``-loglik`` at ``x`` with the conditional modes found from ``u0``.

    ``factor0``: the factor of ``H`` at a nearby point (its chord steps come
    first, :func:`~.laplace.conditional_modes`; general structures only).
    """
    x = np.asarray(x, dtype=float)
    alpha, beta, theta = model.split(x)
    if np.any(np.diff(model.thr.theta(alpha)) <= 0):
        return Evaluation(x, math.inf)
    B = model.bounds(alpha, beta)
    if model.rs is None:
        return Evaluation(x, -float(np.sum(bounds_parts(model.link, B, derivatives=False).logp)),
                          B)
    inner: Any
    if model._scalar is not None:
        inner = model._scalar.modes(model.link, B, float(theta[0]), u0)
    else:
        model.rs.at_theta(theta)
        inner = conditional_modes(model.rs, model.link, B[0], B[1], u0, factor0=factor0)
    if not np.isfinite(inner.h):
        return Evaluation(x, math.inf, B, inner)
    if model.nAGQ > 1:                 # one scalar term: its quadrature from its modes
        f, g = scalar_agq(model, inner, B, gradient=True)
        return Evaluation(x, float(f), B, inner, g)
    return Evaluation(x, float(-(inner.h - 0.5 * inner.logdet)), B, inner)


def gradient(model: ClmmModel, ev: Evaluation, *, want_du: bool = False
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """The gradient of ``-loglik`` at a finite evaluation with random effects.

    ``want_du`` (general structures): also ``d u* / dx`` (``(n_u, k)``), else ``None``.
    """
    assert model.rs is not None and ev.inner is not None and ev.bounds is not None
    if ev.agq_gradient is not None:
        return ev.agq_gradient, None
    inner = ev.inner
    up0, lo0 = ev.bounds
    if model._scalar is not None:
        ea = inner.a * inner.u[model._scalar.codes]
        return -model._scalar.gradient(model.link, up0 - ea, lo0 - ea, model.Bu, model.Bl,
                                       inner), None
    rs = model.rs
    rs.at_theta(model.split(ev.x)[2])
    ea = rs.eta(inner.u)
    g, du = laplace_gradient(rs, model.link, up0 - ea, lo0 - ea, model.Bu, model.Bl, inner,
                             rs.theta_index, want_du=True)
    return -g, (du if want_du else None)


def loglik(model: ClmmModel, x: np.ndarray, u0: np.ndarray
           ) -> tuple[float, np.ndarray, np.ndarray]:
    """``(-loglik, its gradient, the conditional modes)`` at ``x`` from the modes' start ``u0``.

    Outside the parameter space: ``(inf, NaN gradient, u0)``.  Models without
    random effects take the gradient by differences of the value.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from nlpower.ordinal import prepare_clmm
    >>> d = pd.read_csv("tests/reference/data/wine.csv")
    >>> m = prepare_clmm("rating ~ temp + contact + (1|judge)", d)
    >>> f, g, u = loglik(m, m.refit().params, np.zeros(m.n_u))
    >>> round(-f, 4), bool(np.abs(g).max() < 1e-3), u.shape
    (-81.5654, True, (9,))
    """
    x = np.asarray(x, dtype=float)
    ev = evaluate(model, x, u0)
    if not math.isfinite(ev.value):
        return ev.value, np.full(x.size, np.nan), u0
    if model.rs is None:
        from ..lmm.checkconv import gradient as fd_gradient
        return ev.value, fd_gradient(lambda z: evaluate(model, z, u0).value, x, ev.value,
                                     1e-5)[0], u0
    g, _ = gradient(model, ev)
    return ev.value, g, ev.inner.u
