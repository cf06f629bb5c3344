"""New ordinal responses from a cumulative link mixed model at given parameters.

``Y = j`` when the latent ``eta + e`` falls between the cut points
``theta_{j-1}`` and ``theta_j``; ``eta = x'beta + z'b`` with new random
effects ``b`` for every response (lme4's ``simulate(use.u = FALSE)``) and
``e`` drawn from the link's distribution (logistic, normal, Gumbel-min).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._rng import as_generator
from ..errors import InputError
from ..lmm.simparams import sim_params

__all__ = ["simulate_codes"]


def simulate_codes(model: Any, n: int, *, rng: Any, params: Any) -> np.ndarray:
    """``(n, nobs)`` category codes from ``model`` (a :class:`~.model.ClmmModel`) at ``params``."""
    gen = as_generator(rng)
    if isinstance(params, np.ndarray | list | tuple):
        alpha, beta, theta = model.split(np.asarray(params, dtype=float))
    else:
        sp = sim_params(params)
        if sp.alpha is None:
            raise InputError("simulate: an ordinal model's params need 'alpha' (the threshold "
                             "parameters) beside 'theta' and 'beta'.")
        alpha, beta, theta = sp.alpha, sp.beta, sp.theta
    cuts = model.thr.theta(alpha)
    eta = np.tile(model.X @ beta, (n, 1))
    if model.rs is not None:
        model.rs.at_theta(np.asarray(theta, dtype=float))
        for r in range(n):
            eta[r] += model.rs.eta(gen.standard_normal(model.rs.n_u))
    latent = eta + _latent_draws(model.link.name, gen, eta.shape)
    return np.searchsorted(cuts, latent, side="left").astype(np.intp)


def _latent_draws(link: str, gen: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Draws ``e`` with ``P(e <= t) = F(t)`` (so ``Y <= j`` iff ``eta + e <= theta_j``)."""
    if link == "logit":
        return gen.logistic(size=shape)
    if link == "probit":
        return gen.standard_normal(shape)
    return np.log(gen.exponential(size=shape))  # cloglog: P(e <= t) = 1 - exp(-exp(t))
