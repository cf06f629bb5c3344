"""A start for models with random slopes: the intercepts-only model's fit first.

``rating ~ system + (system || worker) + (system || item)`` has 28
parameters; from the clm start with unit SDs L-BFGS-B spends many
evaluations (each a factorisation of a crossed ``H``) before the variance
components are roughly right.  The same model with the intercept terms
only (``(1 | worker) + (1 | item)``: 8 parameters, a scalar per level, cheap
evaluations) gives thresholds, fixed effects and each factor's overall SD.
The full model starts from them: where a term's columns are a full dummy
coding with an unstructured covariance (each row sums to 1, so ``Z l = c``
for ``l = c 1``), the intercept term of that factor is redundant -- the
likelihood depends on ``s0^2 1 1' + L L'`` only, and every such matrix is
some ``L L'`` -- so its SD goes to the term's first column and the intercept
starts (and stays) at 0 instead of leaving L-BFGS-B a flat ridge to crawl
along; otherwise the intercept keeps it.  The other columns start at a
fifth of it.  On the crowd file of ``benchmarks/ordinal_crowd_scaling.py``
about half the evaluations; the optimum is the one the unit-SD start
reaches (log-likelihood and parameters, ``tests/ordinal/test_crowd_scale.py``
and the benchmark's ``--reference``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .model import ClmmModel

__all__ = ["EarlyStop", "intercepts_start"]

#: the smallest SD a start holds (the model's floor: an SD at 0 is a stationary point)
_FLOOR = 0.2


def _dummy_coded(Z: np.ndarray) -> bool:
    return bool(Z.shape[1] > 1 and np.allclose(Z.sum(axis=1), 1.0) and np.all((Z == 0) | (Z == 1)))


def intercepts_start(model: ClmmModel, x0: np.ndarray) -> np.ndarray:
    """``x0`` improved from the intercepts-only fit (``x0`` itself when it does not apply)."""
    rs = model.rs
    if rs is None or all(t.q == 1 for t in rs.terms):
        return x0
    icpt = [k for k, t in enumerate(rs.terms) if tuple(t.cnames) == ("(Intercept)",)]
    if not icpt or len(icpt) == len(rs.terms):
        return x0
    sub = dataclasses.replace(model.spec, re_terms=tuple(rs.terms[k] for k in icpt))
    m1 = type(model)(sub, model.family, model.response)      # a sibling of the same class
    m1.set_response(model.y)
    c1 = m1.refit(hessian=False)
    model.n_evals += c1.n_evals
    if not (c1.converged and math.isfinite(c1.loglik)):
        return x0
    k0 = model.n_alpha + model.p
    x = x0.copy()
    x[:k0] = c1.params[:k0]
    sd = {rs.terms[k].group: float(s) for k, s in zip(icpt, c1.theta, strict=True)}
    folded = {t.group for t in rs.terms if t.group in sd and _dummy_coded(np.asarray(t.Z))}
    th = x[k0:]
    for k, t in enumerate(rs.terms):
        s = sd.get(t.group)
        if s is None:
            continue                      # a factor without an intercept term: unit SDs
        sl = rs.theta_slices[k]
        if k in icpt:
            th[sl] = 0.0 if t.group in folded else max(s, _FLOOR)
            continue
        d = max(0.2 * s, _FLOOR)
        L = d * np.eye(t.q)
        if t.group in folded and _dummy_coded(np.asarray(t.Z)):
            L[:, 0] = math.sqrt(max(s * s - _FLOOR ** 2 - d * d, d * d))
        th[sl] = np.concatenate([L[j:, j] for j in range(t.q)])
    return x


class EarlyStop:
    """L-BFGS-B callback for vector terms: stop when an iteration gains < 1e-10 relative.

    The last tens of evaluations gain < 1e-6; ``_finish``'s Newton steps (the
    ``vcov`` Hessian) take the rest.  Not while an SD is in ``[1e-4, 1e-2)``:
    Newton steps cannot cross the bound at 0, so L-BFGS-B goes on.
    """

    def __init__(self, k0: int, lower: np.ndarray,
                 to_z: Callable[[np.ndarray], np.ndarray] | None = None):
        self.k0, self.sd, self.prev, self.stopped = k0, np.asarray(lower) == 0.0, math.inf, False
        self.to_z = to_z            # the optimiser's coordinates -> the fitter's (default: same)

    def __call__(self, intermediate_result: Any) -> None:
        f = float(intermediate_result.fun)
        prev, self.prev = self.prev, f
        if not prev - f <= 1e-10 * max(abs(f), 1.0):
            return
        z = np.asarray(intermediate_result.x)
        sd = (z if self.to_z is None else self.to_z(z))[self.k0:][self.sd]
        if np.any((sd >= 1e-4) & (sd < 1e-2)):
            return
        self.stopped = True
        raise StopIteration
