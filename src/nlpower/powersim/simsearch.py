"""Searching a *simulated* power curve: the MDE and plan of outcomes without analytic power.

Likert and repeated head-to-head outcomes (:mod:`nlpower.powersim.outcome`,
``analytic=False``) have no closed-form power, so :func:`nlpower.mde` and
:func:`nlpower.plan` search the simulated one, by the same searches as the
Gaussian path (bisection in the effect for the MDE; for every number of
workers, bisection in the items for the plan).

Monte Carlo error is handled in two ways:

- **Common random numbers.**  Every evaluation of the curve uses the same
  root seed (:class:`SimulatedPower`), so replicate ``r`` draws the same
  random effects and residuals at every effect.  The simulated curve in the
  effect is then a fixed function of the seed -- each simulated rating moves
  up with the latent effect -- so the bisection does not chase noise between
  evaluations.  (Across item counts the draws cannot be shared one for one,
  and the curve in ``n_items`` keeps its Monte Carlo wiggle; the bisection
  still returns adjacent counts whose *simulated* powers straddle the target.)
- **Reported, not hidden.**  The MDE comes with the interval between the
  effect where the curve's Wilson 95% interval first reaches the target
  (upper bound >= target) and the effect where all of it does (lower bound
  >= target): the effects whose power the simulation cannot tell from the
  target (as :func:`nlpower.bleu.mde` does); its upper end is ``inf``
  when too few replicates make the whole interval unreachable (the Wilson
  interval of 10 out of 10 starts at 0.72).  A plan reports the simulated
  power of the chosen design with its Wilson interval and the power of one
  item fewer, so the reader sees how close the step is.  More ``n_sims``
  narrows both like ``1/sqrt(n_sims)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..design import CrossedDesign
from ..errors import DesignError, InputError
from ..intervals import ConfidenceInterval, wilson_ci
from .options import PowerOptions
from .outcome import OutcomeKind
from .result import PowerResult

__all__ = ["SimulatedPower", "simulated_mde"]

#: Relative width at which the bisection in the effect stops.
RTOL = 0.01
_MAX_STEPS = 20       # doublings / halvings of the bracket (a factor of 1e6)
_MAX_UP = 8           # steps of 1.5 looking for the interval's upper end (a factor of 25)


class SimulatedPower:
    """Simulated power of one outcome at (design, effect), common random numbers, cached.

    ``root`` is the one :class:`~numpy.random.SeedSequence` of every
    evaluation (the run functions copy it, so it is replayed, never consumed).
    """

    def __init__(self, kind: OutcomeKind, params: Any, opts: PowerOptions,
                 root: np.random.SeedSequence) -> None:
        self.model, self.params, self.opts, self.root = kind.model, params, opts, root
        self.cache: dict[tuple[Any, ...], PowerResult] = {}

    def __call__(self, design: CrossedDesign, effect: float) -> PowerResult:
        key = (design.n_workers, design.n_items, design.workers_per_item, float(effect))
        if key not in self.cache:
            p = self.model.with_effect(self.params, float(effect))
            self.cache[key] = self.model.run(design, p, self.opts, rng=self.root, progress=False)
        return self.cache[key]

    @property
    def evaluations(self) -> int:
        """Simulations run so far (each ``n_sims`` replicates)."""
        return len(self.cache)


def _crossing(curve: Callable[[float], PowerResult], reached: Callable[[PowerResult], bool],
              lo: float, hi: float) -> float:
    """Smallest effect (to :data:`RTOL`) in ``(lo, hi]`` where ``reached``; ``reached(hi)``."""
    while hi - lo > RTOL * hi:
        mid = 0.5 * (lo + hi)
        if reached(curve(mid)):
            hi = mid
        else:
            lo = mid
    return hi


def simulated_mde(curve: Callable[[float], PowerResult], start: float, target: float
                  ) -> tuple[float, ConfidenceInterval]:
    """The MDE of a simulated power curve and its Monte Carlo interval (module docstring).

    ``curve(effect)`` is the simulated power at a positive effect; ``start``
    a positive effect to bracket from.
    """
    def ok(r: PowerResult) -> bool:
        return r.power >= target

    def maybe(r: PowerResult) -> bool:       # the target inside or below the interval
        return r.ci.high >= target

    def surely(r: PowerResult) -> bool:      # the whole interval at or above the target
        return r.ci.low >= target

    hi, best = start, None
    for _ in range(_MAX_STEPS):
        r = curve(hi)
        if ok(r):
            break
        if best is not None and r.ci.high < best[1]:      # surely below an earlier effect's power
            raise DesignError(
                f"the simulated power peaks below {target} (at {best[1]:.3f}, effect "
                f"{best[0]:.3g}) and falls at larger effects (to {r.power:.3f} at {hi:.3g}): a Wald "
                "test's standard error grows as responses approach separation, so no effect "
                "reaches the target with this design; add workers or items.")
        if best is None or r.power > best[1]:
            best = (hi, r.power)
        hi *= 2.0
    else:
        raise DesignError(f"no effect up to {hi:.3g} reaches power {target} with this design; add "
                          "workers or items.")
    lo = hi / 2.0
    for _ in range(_MAX_STEPS):
        if not maybe(curve(lo)):
            break
        lo /= 2.0
    else:
        raise InputError(
            f"target_power={target:g} is reached with (almost) no effect at all, so there is no "
            "smallest detectable effect; choose target_power above alpha, e.g. 0.8.")
    point = _crossing(curve, ok, lo, hi)
    low = _crossing(curve, maybe, lo, point)
    n = curve(point).n_sims
    if wilson_ci(n, n)[0] < target:        # e.g. 10 replicates: Wilson's low end of 10/10 is 0.72
        return point, ConfidenceInterval(low, math.inf)
    top = point
    for _ in range(_MAX_UP):               # the whole Wilson interval above the target
        if surely(curve(top)):
            break
        top *= 1.5
    else:
        return point, ConfidenceInterval(low, math.inf)
    high = point if top == point else _crossing(curve, surely, max(point, top / 1.5), top)
    return point, ConfidenceInterval(low, high)
