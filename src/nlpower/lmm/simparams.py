"""The parameters a prepared model simulates at: one ``params=`` for every family.

Every prepared model's ``simulate(n, *, rng, params)`` takes the same
argument (:func:`sim_params` reads it once): a fit (``fit.simulate`` passes
itself), a light core, a :class:`~nlpower.study.ModelDesign`, a mapping
with the keys ``theta``, ``beta`` (or ``fixef``) and, where the family has
them, ``sigma`` (Gaussian residual SD) and ``alpha`` (ordinal threshold
parameters), or a :class:`SimParams`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["SimParams", "sim_params"]


@dataclass(frozen=True, eq=False)
class SimParams:
    """``theta`` (lme4's order), ``beta``, the Gaussian ``sigma`` and ordinal ``alpha``.

    Examples
    --------
    >>> sim_params({"theta": [1.0], "beta": [0.5, 2.0], "sigma": 3.0}).sigma
    3.0
    """

    theta: np.ndarray
    beta: np.ndarray
    sigma: float | None = None
    alpha: np.ndarray | None = None
    #: the family's own parameter (negative binomial ``theta``); None: the family's
    dispersion: float | None = None


_HINT = ("pass params= a fitted model (or its core), a ModelDesign, or a mapping "
         "{'theta': ..., 'beta': ...} (Gaussian: and 'sigma'; ordinal: and 'alpha')")


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def sim_params(params: Any, *, where: str = "simulate") -> SimParams:
    """The :class:`SimParams` in ``params`` (see the module's docstring).

    Raises
    ------
    InputError
        ``params`` is ``None`` or lacks ``theta`` or ``beta``.
    """
    if isinstance(params, SimParams):
        return params
    if params is None:
        raise InputError(f"{where} needs params: {_HINT}; or call fit.simulate(n, rng=...) on "
                         "a fitted model.")
    theta, beta = _get(params, "theta"), _get(params, "beta", "fixef")
    if theta is None or beta is None:
        raise InputError(f"{where}: params must give theta and beta; got "
                         f"{type(params).__name__}. {_HINT[0].upper()}{_HINT[1:]}.")
    sigma = _get(params, "sigma")
    alpha = _get(params, "alpha")
    dispersion = _get(params, "dispersion")
    return SimParams(theta=np.asarray(theta, dtype=float).ravel(),
                     beta=np.asarray(beta, dtype=float).ravel(),
                     sigma=None if sigma is None else float(sigma),
                     alpha=None if alpha is None else np.asarray(alpha, dtype=float).ravel(),
                     dispersion=None if dispersion is None else float(dispersion))


def legacy_params(params: Any, legacy: Mapping[str, Any], *, allowed: tuple[str, ...],
                  where: str) -> Any:
    """``params`` from the keywords older versions took (``theta=, beta=, sigma=``), with a
    :class:`DeprecationWarning`; ``params`` unchanged when there are none."""
    if not legacy:
        return params
    bad = sorted(set(legacy) - set(allowed))
    if bad:
        raise InputError(f"{where}() got unexpected keywords {bad}; it takes n, rng= and "
                         "params=.")
    if params is not None:
        raise InputError(f"{where}: give params= or the old keywords {sorted(legacy)}, not both.")
    warnings.warn(f"{where}({', '.join(f'{k}=' for k in legacy)}) is deprecated: pass "
                  f"params={{{', '.join(repr(k) + ': ...' for k in legacy)}}} (or a fit) instead.",
                  DeprecationWarning, stacklevel=3)
    return dict(legacy)
