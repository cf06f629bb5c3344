"""Adaptive Gauss-Hermite quadrature (``nAGQ > 1``) for one scalar random-effects term.

With a single ``(1 | g)``-type term the integral over ``u`` factorises by
level (the rule and the sum over the nodes: :mod:`nlpower.mixed.quadrature`).  Around each level's conditional mode ``u0`` with the Laplace scale
``sd = 1 / L_ll`` (``L`` the Cholesky factor at the mode), level ``l``
contributes ``-2 log`` of

    int p(y_l | u) phi(u) du  ~  sd sqrt(2 pi) sum_k w_k exp(z_k^2 / 2)
                                  exp(-(devc_l(u0 + z_k sd) - devc_l(u0)) / 2)

times the Laplace terms, where ``devc_l(u)`` is the level's sum of the unit
terms of ``-2 log p(y | u)`` plus ``u^2`` and ``(z_k, w_k)`` the Gauss-Hermite rule for the
standard normal density (lme4's ``GHrule``).  ``nAGQ = 1`` would give the
Laplace deviance exactly; as lme4, the ``nAGQ > 1`` deviance is on the scale of
the deviance residuals: it leaves out the saturated model's ``-2 log p(y | mu = y)``
(so its ``logLik`` is not comparable with a Laplace fit's, as in lme4).  The same construction as lme4 1.1-31's
``glmerAGQ``, checked against it on ``cbpp`` (``nAGQ = 9, 25``).
"""

from __future__ import annotations

import numpy as np

from ..mixed.blocked import BlockedFactor
from ..mixed.quadrature import adaptive_nodes, gh_rule, level_logliks
from .pirls import Mode, Pirls

__all__ = ["agq_deviance", "gh_rule"]


def agq_deviance(pirls: Pirls, mode: Mode, nagq: int) -> float:
    """The ``nAGQ``-point adaptive quadrature deviance at a PIRLS mode (single scalar term)."""
    codes = pirls.blocks[0].codes
    m = pirls.m1
    u0 = mode.u
    assert isinstance(mode.factor, BlockedFactor)          # one block: never pairs
    sd = 1.0 / mode.factor.L1[:, 0, 0]
    fixed = mode.eta - mode.at.zu(u0)

    def devc(u: np.ndarray) -> np.ndarray:
        unit = pirls.working(fixed + mode.at.zu(u))[2]
        return np.bincount(codes, unit, minlength=m) + u * u

    dc0 = devc(u0)
    nodes = adaptive_nodes(u0, sd, nagq)                  # (m, nAGQ)
    h = np.empty_like(nodes)                              # h_l = -devc_l / 2 at the nodes
    for k, zk in enumerate(gh_rule(nagq)[0]):            # the centre (odd nAGQ): the mode's
        h[:, k] = -0.5 * (dc0 if zk == 0.0 else devc(nodes[:, k]))
    # lme4's nAGQ > 1 deviance leaves out the saturated model's -2 log-likelihood (it is
    # built from deviance residuals); kept so logLik compares one to one with lme4's
    return float(-2.0 * np.sum(level_logliks(h, sd)[0]) + pirls._const - pirls.saturated)
