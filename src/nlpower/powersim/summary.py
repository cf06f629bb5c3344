"""Stage 3 of :func:`~nlpower.powersim.power`: replicates -> :class:`PowerResult`.

* **power** = mean(1[p <= alpha] * 1[sign(estimate) = sign(effect)]): only
  sign-correct rejections count (Card et al. 2020, Fig. 2); failed fits are
  non-detections (counted in ``n_failed``).
* **Type-S**: share of significant replicates with the wrong sign; **Type-M**:
  mean ``|estimate| / |effect|`` over significant replicates (Gelman & Carlin
  2014); both with Monte Carlo intervals.  All of it is
  :class:`~nlpower.montecarlo.MonteCarloSummary`, shared with the BLEU,
  accuracy and paired results.
* At effect 0 power, Type-S and Type-M are undefined (NaN) and the rejection
  rate is the Type I error.

The failure policy (STYLE 6) is applied here: ``"ignore"`` records failed
fits in the result, ``"warn"`` also warns, ``"raise"`` stops.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import __version__
from ..design import CrossedDesign
from ..errors import FitError, NlpowerWarning
from ..intervals import ConfidenceInterval, wilson_ci
from ..montecarlo import MonteCarloSummary
from ..powerresult import RatingsStudy
from .options import PowerOptions
from .result import AnalyticPowerResult, PowerResult, Replicates
from .rules import get_test


@dataclass(frozen=True)
class Counts:
    """What a run of replicates adds up to (before the power result is assembled)."""

    mc: MonteCarloSummary  # power, rejection rate, Type-S/M and their intervals
    mean_estimate: float
    n_failed: int
    n_singular: int
    n_nonconverged: int

    @property
    def n_sig(self) -> int:
        return self.mc.n_significant


def count(reps: Replicates, effect: float, alpha: float, *, n_max: int | None = None,
          precision: float | None = None) -> Counts:
    """Detections, Type-S/M and diagnostics of one run (module docstring).

    ``n_max`` and ``precision``: the run's adaptive-precision rule, recorded
    in the Monte Carlo summary.
    """
    sig = np.nan_to_num(reps.pvalue, nan=1.0) <= alpha
    ok = ~reps.failed
    return Counts(
        mc=MonteCarloSummary.from_draws(reps.estimate, sig, effect=effect, n_max=n_max,
                                        precision=precision),
        mean_estimate=float(np.mean(reps.estimate[ok])) if ok.any() else math.nan,
        n_failed=int(reps.failed.sum()),
        n_singular=int((reps.singular & ok).sum()),
        n_nonconverged=int((~reps.converged & ok).sum()),
    )


def apply_failure_policy(reps: Replicates, opts: PowerOptions, where: str) -> None:
    """Warn about or refuse failed replicate fits, as ``opts.on_failure`` says."""
    n_failed = int(reps.failed.sum())
    if n_failed == 0 or opts.on_failure == "ignore":
        return
    first = int(np.flatnonzero(reps.failed)[0])
    message = (f"{n_failed} of {reps.failed.shape[0]} replicate fits failed in the {where} run "
               f"(first: replicate {first}; no finite test statistic)")
    if opts.on_failure == "raise":
        raise FitError(f"{message}. on_failure='raise'; use 'ignore' or 'warn' to count failed fits "
                       "as non-detections.")
    warnings.warn(f"{message}; counted as non-detections.", NlpowerWarning, stacklevel=4)


def power_result(main: Replicates, null: Replicates | None, *, effect: float, mean_difference: float,
                 design: CrossedDesign, method: str, coding: str, opts: PowerOptions,
                 seed: dict, notes: list[str], params: Any = None,
                 elapsed: float | None = None) -> PowerResult:
    """Assemble the :class:`PowerResult` of a main run (and of an optional run at effect 0).

    ``elapsed``: the run's wall time in seconds, when the caller measured it.
    """
    n_sims = int(main.pvalue.shape[0])     # fewer than opts.n_sims when precision stopped it
    s = count(main, effect, opts.alpha, n_max=opts.n_sims, precision=opts.precision)
    mc = s.mc
    notes = list(notes)
    if effect == 0:
        notes.append("effect is 0: power, Type-M and Type-S are undefined; the rejection rate "
                     "is the Type I error")
    n_t1: int | None = None
    n_null = n_sims
    if effect == 0:
        n_t1 = s.n_sig
    elif null is not None:
        n_t1 = count(null, 0.0, opts.alpha).n_sig
        n_null = int(null.pvalue.shape[0])
    type1 = None if n_t1 is None else n_t1 / n_null
    type1_ci = None if n_t1 is None else ConfidenceInterval(*wilson_ci(n_t1, n_null))
    if s.n_failed:
        notes.append(f"{s.n_failed} replicate fit(s) failed; counted as non-detections")
    study = RatingsStudy(design=design, coding=coding, mean_difference=mean_difference,
                         REML=opts.REML,
                         n_resamples=opts.n_resamples if get_test(opts.test).bootstrap else None,
                         params=params)
    return PowerResult(
        power=mc.power, se=mc.se, ci=mc.ci, n_sims=n_sims, n_rejected=mc.n_rejected,
        rejection_rate=mc.rejection_rate, type_s=mc.type_s, type_m=mc.type_m, effect=effect,
        test=opts.test, alpha=opts.alpha, alternative=opts.alternative, study=study,
        method=method, engine=opts.engine if method == "simulate" else None,
        mean_estimate=s.mean_estimate, n_failed=s.n_failed, n_singular=s.n_singular,
        n_nonconverged=s.n_nonconverged, type1=type1, type1_ci=type1_ci,
        n_type1=n_t1, n_type1_sims=None if n_t1 is None else n_null,
        seed=seed, version=__version__, notes=tuple(notes), elapsed=elapsed, mc=mc,
        replicates=main if opts.keep_replicates else None,
    )


def analytic_power_result(ap: AnalyticPowerResult, type1: float | None, *, mean_difference: float,
                          design: CrossedDesign, opts: PowerOptions, seed: dict,
                          notes: list[str], params: Any = None) -> PowerResult:
    """An analytic power as a :class:`PowerResult` (no Monte Carlo error: zero-width CI)."""
    effect = ap.effect
    pw = ap.power if effect != 0 else math.nan
    notes = [*notes, f"analytic ({ap.method}): ncp {ap.ncp:.3f}, df {ap.df:.1f}; no Monte Carlo "
             "error"]
    study = RatingsStudy(design=design, coding=ap.coding, mean_difference=mean_difference,
                         REML=False, n_resamples=None, params=params)
    return PowerResult(
        power=pw, se=0.0, ci=ConfidenceInterval(pw, pw), n_sims=0, n_rejected=0,
        rejection_rate=ap.power, type_s=math.nan, type_m=math.nan, effect=effect,
        test=opts.test, alpha=opts.alpha, alternative=opts.alternative, study=study,
        method="analytic", engine=None, mean_estimate=effect, type1=type1,
        type1_ci=None if type1 is None else ConfidenceInterval(type1, type1),
        seed=seed, version=__version__, notes=tuple(notes),
    )


__all__ = ["Counts", "analytic_power_result", "apply_failure_policy", "count", "power_result"]
