"""New responses from a Gaussian mixed model at given parameters (lme4's ``simulate``).

:class:`GaussianSimulator` is built once per structure (each random-effects
term's level codes, model-matrix columns and ``theta`` slice, in lme4's
order) and draws ``y = X beta + sum_t Z_t b_t + e`` with ``b_t ~
N(0, sigma^2 Lambda_t Lambda_t')`` and ``e ~ N(0, sigma^2)``: new random
effects for every response (lme4's ``simulate(use.u = FALSE)``).  The
prepared Gaussian models' ``simulate`` and the parametric-bootstrap LRT
(:mod:`nlpower.powersim.pblrt`) use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._rng import as_generator
from ..errors import InputError
from ..mixed.layout import theta_layout
from ..mixed.relfactor import relative_factor
from .structure import ModelSpec

__all__ = ["GaussianSimulator", "SimulatesGaussian", "relative_factor"]


@dataclass(frozen=True, eq=False)
class GaussianSimulator:
    """Draws responses of one structure at given ``theta``, ``beta``, ``sigma``.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets, simulate
    >>> from nlpower.lmm import model_frame
    >>> spec = model_frame("rating ~ x + (1 | worker) + (1 | item)",
    ...                    simulate(CrossedDesign(4, 10), presets.high_variance(0.1), rng=1))
    >>> sim = GaussianSimulator.from_spec(spec)
    >>> sim.draw(np.array([0.5, 0.4]), np.array([0.5, 0.1]), 0.2, 3, rng=1).shape
    (3, 80)
    """

    X: np.ndarray
    terms: tuple[tuple[np.ndarray, np.ndarray, int, int], ...]

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> GaussianSimulator:
        layout = theta_layout(spec.re_terms)
        terms = tuple((np.asarray(t.codes), np.asarray(t.Z, dtype=float), t.n_levels, off)
                      for t, off in zip(layout.terms, layout.term_offsets, strict=True))
        return cls(np.asarray(spec.X, dtype=float), terms)

    def draw(self, theta: np.ndarray, beta: np.ndarray, sigma: float, n: int, *,
             rng: Any) -> np.ndarray:
        """``(n, nobs)`` responses; ``rng`` a Generator (consumed) or anything it accepts."""
        gen = as_generator(rng)
        nobs = self.X.shape[0]
        y = np.broadcast_to(self.X @ beta, (n, nobs)).copy()
        for codes, Z, n_levels, off in self.terms:
            q = Z.shape[1]
            lam = relative_factor(theta[off:], q)
            b = sigma * gen.standard_normal((n, n_levels, q)) @ lam.T
            y += np.einsum("nq,bnq->bn", Z, b[:, codes, :])
        y += sigma * gen.standard_normal((n, nobs))
        return y


class SimulatesGaussian:
    """``simulate`` for a prepared Gaussian model of any engine (needs ``self.spec``)."""

    spec: ModelSpec
    _simulator: GaussianSimulator | None = None

    def simulate(self, n: int = 1, *, rng: Any, params: Any = None, **legacy: Any
                 ) -> np.ndarray:
        """``(n, nobs)`` responses drawn at ``params`` (lme4's ``simulate``).

        ``params``: a fit, a core, or ``{"theta": ..., "beta": ..., "sigma": ...}``
        (:func:`~nlpower.lmm.simparams.sim_params`).  New random effects for
        every response (:class:`~nlpower.lmm.draw.GaussianSimulator`).
        """
        from .simparams import legacy_params, sim_params
        sp = sim_params(legacy_params(params, legacy, allowed=("theta", "beta", "sigma"),
                                      where="simulate"))
        if sp.sigma is None:
            raise InputError("simulate: a Gaussian model's params need 'sigma' (the residual SD) "
                             "beside 'theta' and 'beta'.")
        if self._simulator is None:
            self._simulator = GaussianSimulator.from_spec(self.spec)
        return self._simulator.draw(sp.theta, sp.beta, sp.sigma, int(n), rng=rng)
