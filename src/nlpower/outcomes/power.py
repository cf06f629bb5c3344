"""Power of Likert (ordinal) rating studies: simulate -> analyse -> test, for any analysis.

:func:`likert_power` draws ``K``-point ratings from the latent threshold
model (:mod:`.likert`) and analyses every simulated data set with each
requested analysis (:mod:`.analyses`) -- several analyses see the *same*
replicates, so their power and Type I error compare without extra Monte
Carlo noise between them (Howcroft & Rieser's comparison of linear and
ordinal analyses of Likert data).

Randomness: ``rng`` gives the root :class:`~numpy.random.SeedSequence`; its
first two children seed the main run and the ``null=True`` run (effect 0);
replicate ``r`` of a run draws from child ``r`` of that run's sequence, as in
:func:`nlpower.power`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._choices import Alternative, EngineName, FailurePolicy
from .._rng import RNGLike, root_seed, seed_record
from ..design import CrossedDesign
from ..errors import DesignError, InputError
from ..params import LMMParams
from ..powersim.batches import stopping
from ..powersim.options import PowerOptions, power_options
from ..powersim.replicate import balanced_exact
from ..powersim.result import PowerResult, Replicates
from ..powersim.summary import apply_failure_policy, power_result
from .analyses import ANALYSES
from .likert import LikertParams, simulate_likert_y

__all__ = ["ANALYSES", "AnalysisComparison", "likert_power", "run_likert"]

@dataclass(frozen=True)
class AnalysisComparison:
    """Power of several analyses of the same simulated Likert data sets.

    ``results[name]`` is each analysis's :class:`~nlpower.powersim.PowerResult`;
    all share the replicates (and, with ``null=True``, the effect-0 replicates).
    """

    results: Mapping[str, PowerResult]

    def __getitem__(self, name: str) -> PowerResult:
        return self.results[name]

    def to_frame(self) -> pd.DataFrame:
        """One row per analysis: power with its interval, Type I, Type-M/S."""
        rows = []
        for name, r in self.results.items():
            rows.append({"analysis": name, "power": r.power, "ci_low": r.ci.low,
                         "ci_high": r.ci.high, "type1": r.type1, "type_m": r.type_m,
                         "type_s": r.type_s, "effect": r.effect, "test": r.test,
                         "n_sims": r.n_sims, "n_failed": r.n_failed})
        return pd.DataFrame(rows)

    def summary(self) -> str:
        return "\n\n".join(f"[{name}]\n{r.summary()}" for name, r in self.results.items())

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}: power={v.power:.3f}" for k, v in self.results.items())
        return f"AnalysisComparison({inner})"


def _simulate(design: CrossedDesign, params: LikertParams, seq: np.random.SeedSequence,
              n_sims: int) -> np.ndarray:
    arrays = design.arrays()
    out = np.empty((n_sims, design.n_ratings), dtype=np.int64)
    for k, s in enumerate(seq.spawn(n_sims)):
        out[k] = simulate_likert_y(arrays, params, 1, np.random.Generator(np.random.PCG64(s)))[0]
    return out


class LinearAnalysis:
    """``"lmm"``: the paper's LMM of the ratings rescaled to [0, 1] by ``(r - 1)/(K - 1)``."""

    name = "lmm"

    def truth(self, params: LikertParams) -> float:
        """The true effect on this analysis's scale (:meth:`LikertParams.lmm_effect`)."""
        return params.lmm_effect()

    def replicates(self, design: CrossedDesign, y: np.ndarray, params: LikertParams,
                   opts: PowerOptions) -> Replicates:
        proxy = params.latent_params()
        proxy = LMMParams(beta0=0.5, effect=proxy.effect, sd_worker=proxy.sd_worker,
                          sd_worker_slope=proxy.sd_worker_slope, sd_item=proxy.sd_item,
                          sd_item_slope=proxy.sd_item_slope, sigma=proxy.sigma,
                          coding=proxy.coding)
        return ANALYSES[self.name](design, (y - 1.0) / (params.levels - 1), proxy, opts)

    def method(self, design: CrossedDesign, params: LikertParams) -> str:
        """``"balanced"`` where the exact balanced fitter fits all replicates at once."""
        exact = balanced_exact(design, LMMParams(coding=params.coding)) is None
        return "balanced" if exact else "simulate"

    def describe(self, params: LikertParams) -> str:
        return "LMM of ratings rescaled to [0, 1]"


class OrdinalAnalysis:
    """``"clmm"``: the cumulative link mixed model of the integer ratings."""

    name = "clmm"

    def truth(self, params: LikertParams) -> float:
        """The latent effect over the latent scale (clmm's parametrisation)."""
        return params.effect / params.scale

    def replicates(self, design: CrossedDesign, y: np.ndarray, params: LikertParams,
                   opts: PowerOptions) -> Replicates:
        return ANALYSES[self.name](design, y, params, opts)

    def method(self, design: CrossedDesign, params: LikertParams) -> str:
        return "simulate"

    def describe(self, params: LikertParams) -> str:
        return f"cumulative {params.link} mixed model (clmm)"


#: The analyses of Likert ratings, by name (their tests: ``nlpower.powersim.outcome.OUTCOMES``).
LIKERT_ANALYSES: dict[str, LinearAnalysis | OrdinalAnalysis] = {
    "lmm": LinearAnalysis(), "clmm": OrdinalAnalysis()}


def analyse(analysis: str, design: CrossedDesign, y: np.ndarray, params: LikertParams,
            opts: PowerOptions) -> Replicates:
    """Replicates of one analysis of integer ratings ``y`` (``(n_sims, n)``, values 1..K)."""
    return LIKERT_ANALYSES[analysis].replicates(design, y, params, opts)


def likert_power(
    design: CrossedDesign,
    params: LikertParams,
    *,
    analysis: Any = "lmm",
    n_sims: int = 1000,
    alpha: float = 0.05,
    test: str | None = None,
    alternative: Alternative = "two-sided",
    null: bool = False,
    engine: EngineName = "native",
    rng: RNGLike = None,
    keep_replicates: bool = True,
    on_failure: FailurePolicy = "ignore",
    precision: float | None = None,
) -> PowerResult | AnalysisComparison:
    """Power of a Likert rating study: latent threshold model -> analysis -> test.

    Parameters
    ----------
    design : CrossedDesign
        Who rates what (two systems).
    params : LikertParams
        The latent model and thresholds (:meth:`LikertParams.from_preset` maps
        the paper's presets).
    analysis : {"lmm", "clmm", "both"} or list of names
        ``"lmm"``: the paper's LMM of ratings rescaled to [0, 1]; ``"clmm"``:
        the cumulative link mixed model of the ratings (:mod:`nlpower.ordinal`,
        the parameters' link).  A list (or ``"both"``) analyses the same
        replicates with each and returns an :class:`AnalysisComparison`.
    n_sims : int, default 1000
    alpha : float, default 0.05
    test : str, optional
        ``"satterthwaite"`` (default), ``"z"``, ``"lrt"`` or ``"kenward-roger"`` for
        the LMM (:mod:`nlpower.powersim.rules`; no bootstrap tests); ``"z"``
        (default, Wald) or ``"lrt"`` for clmm.  With
        several analyses each uses ``test`` if it offers it, else its default.
    alternative : {"two-sided", "greater", "less"}
    null : bool, default False
        Also simulate effect 0 (own child seed) and report the Type I error.
    engine : {"native", "lme4"}
        Fitter of the LMM on designs off the balanced fast path.
    rng : optional
        Seed or Generator (the :mod:`nlpower._rng` policy).
    keep_replicates, on_failure, precision
        As in :func:`nlpower.power` (with several analyses each stops on its own).

    Returns
    -------
    PowerResult or AnalysisComparison
        ``effect`` is the true effect on the analysis's scale (for the LMM:
        half the difference of the mean rescaled ratings under sum coding,
        :meth:`LikertParams.lmm_effect`; for clmm the latent effect divided by
        the latent scale), which Type-M is measured against.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> lp = LikertParams.from_preset(presets.high_variance(0.1), 5)
    >>> r = likert_power(CrossedDesign(10, 50), lp, n_sims=200, rng=1)
    >>> 0.0 <= r.power <= 1.0
    True
    """
    opts = power_options(outcome="likert", analysis=analysis, test=test, n_sims=n_sims,
                         alpha=alpha, alternative=alternative, null=null, engine=engine,
                         keep_replicates=keep_replicates, on_failure=on_failure,
                         precision=precision)
    with stopping(opts.precision, opts.alpha):
        out = run_likert(design, params, opts, rng=rng)
    return out[opts.analysis] if isinstance(analysis, str) and analysis != "both" else \
        AnalysisComparison(out)


def run_likert(design: CrossedDesign, params: LikertParams, opts: PowerOptions, *,
               rng: RNGLike = None) -> dict[str, PowerResult]:
    """Every analysis of ``opts`` on the same simulated ratings (options validated)."""
    if not isinstance(design, CrossedDesign):
        raise DesignError(f"design must be a CrossedDesign; got {type(design).__name__}.")
    if not isinstance(params, LikertParams):
        raise InputError(f"params must be LikertParams (LikertParams.from_preset(preset, levels) "
                         f"for the paper's presets); got {type(params).__name__}.")
    if design.n_systems != 2:
        raise DesignError(f"Likert power handles two systems; the design has {design.n_systems}.")
    root = root_seed(rng)
    seed = seed_record(root)
    main_seq, null_seq = root.spawn(2)
    n = opts.n_sims
    y = _simulate(design, params, main_seq, n)
    y0 = _simulate(design, params.with_effect(0.0), null_seq, n) \
        if opts.null and params.effect != 0 else None
    x0, x1 = params.x_values
    diff = params.mean_rating01(x1) - params.mean_rating01(x0)
    out: dict[str, PowerResult] = {}
    for a in opts.analyses:
        o, an = opts.for_analysis(a), LIKERT_ANALYSES[a]
        main = an.replicates(design, y, params, o)
        apply_failure_policy(main, o, "main")
        null_reps = None
        if y0 is not None:
            null_reps = an.replicates(design, y0, params.with_effect(0.0), o)
            apply_failure_policy(null_reps, o, "null (effect 0)")
        note = (f"{params.levels}-point ratings from a latent {params.link} threshold model; "
                f"{an.describe(params)}")
        out[a] = power_result(main, null_reps, effect=an.truth(params), mean_difference=diff,
                              design=design, method=an.method(design, params),
                              coding=params.coding, opts=o, seed=seed, notes=[note],
                              params=params)
    return out
