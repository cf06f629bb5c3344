"""Responses drawn from a prepared GLMM at given parameters (lme4's ``simulate(use.u = FALSE)``).

Each response draws new random effects ``u ~ N(0, I)`` and then the
observations given ``mu = linkinv(X beta + offset + Z Lambda(theta) u)``
(the family's ``draw``: binomial proportions of ``weights`` trials, counts).
:func:`simulate_each` gives a batch of power replicates, one generator each,
the same numbers as :func:`simulate` with that generator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError

if TYPE_CHECKING:
    from .model import GlmmModel
    from .pirls import AtTheta

__all__ = ["simulate", "simulate_each"]


def _parts(model: GlmmModel, sp: Any) -> tuple[np.ndarray, Any, AtTheta]:
    """The fixed part of the linear predictor, the family at the parameters' dispersion and
    ``Z Lambda`` at the parameters' ``theta`` (:class:`~nlpower.glmm.pirls.AtTheta`)."""
    th = model.layout.check_start(sp.theta)
    be = np.asarray(sp.beta, dtype=float).ravel()
    if be.shape != (model.p,):
        raise InputError(f"beta must have {model.p} values ({', '.join(model.spec.fixef_names)}).")
    return (model.spec.X @ be + model.offset, model.family.with_dispersion(sp.dispersion),
            model.pirls.at(th))


def simulate(model: GlmmModel, n: int, *, rng: Any, params: Any, legacy: dict[str, Any]
             ) -> np.ndarray:
    """``n`` responses from one generator (:meth:`GlmmModel.simulate`)."""
    from .._rng import as_generator
    from ..lmm.simparams import legacy_params, sim_params
    sp = sim_params(legacy_params(params, legacy, allowed=("theta", "beta"), where="simulate"))
    gen = as_generator(rng)
    fixed, fam, at = _parts(model, sp)
    out = np.empty((int(n), model.spec.n))
    for i in range(int(n)):
        u = gen.standard_normal(model.pirls.q)
        out[i] = fam.draw(gen, fam.link.linkinv(fixed + at.zu(u)), model.wt)
    return out


def simulate_each(model: GlmmModel, gens: Any, *, params: Any) -> np.ndarray:
    """One response per generator: row ``i`` is ``simulate(model, 1, rng=gens[i], ...)[0]``.

    The same draws in the same order from each generator (the random
    effects, then the response); the linear predictors of all rows are
    formed at once.
    """
    from ..lmm.simparams import sim_params
    gens = list(gens)
    fixed, fam, at = _parts(model, sim_params(params))
    pir = model.pirls
    U = np.array([g.standard_normal(pir.q) for g in gens]).reshape(len(gens), pir.q)
    mu = fam.link.linkinv(fixed + np.einsum("ij,rij->ri", at.zl, U[:, pir.slots]))
    return np.array([fam.draw(g, m, model.wt) for g, m in zip(gens, mu, strict=True)]
                    ).reshape(len(gens), model.spec.n)
