"""``power()``: simulate -> fit -> test, replicate after replicate (Card et al. 2020, Fig. 2).

Engines
-------
``"fast"``
    The exact balanced fast path (:mod:`nlpower.powersim.fastpath`): fully
    crossed, paired, 2 systems, :class:`~nlpower.params.LMMParams` in sum or
    half coding (treatment only without slope SDs).  Gaussian ratings: the
    five sums of squares and the estimate are drawn directly (O(1) per
    replicate); Likert ratings: computed from simulated rating arrays.
``"native"``
    Any design through :class:`~nlpower.lmm.native.NativeModel` (structure
    built once, ``refit_core`` per replicate, warm start at the true theta).
``"analytic"``
    No simulation: :func:`~nlpower.powersim.analytic.analytic_power`, wrapped
    in a :class:`PowerResult` with ``n_sims = 0``-style uncertainty (SE 0).
``"auto"``
    ``"fast"`` when it is exact, else ``"native"``.

Randomness: ``rng`` is turned into a :class:`~numpy.random.SeedSequence`;
its first two children seed the main run and the ``null=True`` run; each
replicate ``r`` of a run gets child ``r`` of that run's sequence.  So the
result does not depend on chunking, and the first ``m`` replicates of a run
with ``n_sims = N`` are those of a run with ``n_sims = m``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .. import __version__
from .._rng import root_seed, seed_record
from .._validation import check_choice, check_int
from ..design import CrossedDesign
from ..errors import DesignError, FitError, InputError
from ..params import LMMParams
from ..simulation import simulate_y
from . import fastpath as fp
from .balanced_fit import fit_balanced, null_deviance
from .analytic import analytic_power
from .models import Params, build_model, check_design_params, check_test_options, effect_of
from .result import ConfidenceInterval, PowerResult, Replicates, wilson_ci

ENGINES = ("auto", "fast", "native", "analytic")


# ----------------------------------------------------------------------------------------
# tests on per-replicate statistics
# ----------------------------------------------------------------------------------------


def pvalues(statistic: np.ndarray, df: np.ndarray, test: str, alternative: str) -> np.ndarray:
    """p-values of Wald t/z statistics or signed LR roots.

    ``"satterthwaite"``: t distribution with ``df``; ``"z"`` and ``"lrt"``
    (signed root of the LR statistic, so the two-sided p is the chi^2(1)
    p-value): standard normal.
    """
    s = np.asarray(statistic, dtype=float)
    if test == "satterthwaite":
        dist_sf = lambda v: stats.t.sf(v, np.asarray(df, dtype=float))  # noqa: E731
    else:
        dist_sf = stats.norm.sf
    with np.errstate(invalid="ignore"):
        if alternative == "two-sided":
            return np.minimum(1.0, 2.0 * dist_sf(np.abs(s)))
        if alternative == "greater":
            return np.asarray(dist_sf(s))
        return np.asarray(dist_sf(-s))


@dataclass(frozen=True)
class _Run:
    estimate: np.ndarray  # in the parameters' coding
    se: np.ndarray
    statistic: np.ndarray
    df: np.ndarray
    converged: np.ndarray
    singular: np.ndarray
    failed: np.ndarray


def _fast_exact(design: CrossedDesign, params: Params) -> str | None:
    """Why the fast path is not exact for this design/params (None when it is)."""
    if not design.is_balanced_crossed:
        why = "items are nested in systems" if design.items == "nested" else \
            f"each item is rated by {design.raters_per_item} of {design.n_workers} workers"
        return f"the design is not fully crossed and paired ({why})"
    if design.n_systems != 2 or not isinstance(params, LMMParams):
        return "the fast path handles 2 systems with LMMParams only"
    if params.coding == "treatment" and (params.sd_worker_slope > 0 or params.sd_item_slope > 0):
        return ("treatment coding with random slopes is a different model from the +-1 one "
                "(intercepts and slopes become correlated)")
    return None


def _fast_run(design: CrossedDesign, params: LMMParams, seeds: Sequence[np.random.SeedSequence],
              test: str, likert: int | None, REML: bool) -> _Run:
    p = params if params.coding == "sum" else params.to_coding("sum")
    w, i = design.n_workers, design.n_items
    gens = [np.random.Generator(np.random.PCG64(s)) for s in seeds]
    if likert is None:
        v = [p.sigma**2, p.sd_worker**2, p.sd_worker_slope**2, p.sd_item**2, p.sd_item_slope**2]
        st = fp.draw_stats(w, i, p.beta0, p.effect, v, gens)
    else:
        arrays = design.arrays()
        y = np.vstack([simulate_y(arrays, params, 1, g, likert=likert) for g in gens])
        # layout rows: item, then worker, then system
        st = fp.stats_from_ratings(y.reshape(len(gens), i, w, 2).transpose(0, 2, 1, 3))
    fit = fit_balanced(st, REML=REML, with_df=(test == "satterthwaite"))
    scale = 2.0 / (params.x_values[1] - params.x_values[0])  # sum -> params' coding
    if test == "lrt":
        lr = np.maximum(null_deviance(st) - fit.deviance, 0.0)
        stat = np.sign(fit.beta1) * np.sqrt(lr)
    else:
        stat = fit.t
    failed = ~np.isfinite(stat)
    return _Run(fit.beta1 * scale, fit.se * scale, stat,
                fit.df if test == "satterthwaite" else np.full(st.n_sims, np.inf),
                fit.converged, fit.singular, failed)


def _native_run(design: CrossedDesign, params: Params, seeds: Sequence[np.random.SeedSequence],
                test: str, likert: int | None, REML: bool) -> _Run:
    from ..lmm.native import NativeModel

    dm = build_model(design, params)
    model = NativeModel(dm.spec)
    null_model = NativeModel(dm.null_spec()) if test == "lrt" else None
    arrays = design.arrays()
    j = dm.effect_index
    L = np.zeros(dm.spec.p)
    L[j] = 1.0
    r = len(seeds)
    est, se, stat, df = (np.full(r, np.nan) for _ in range(4))
    conv = np.zeros(r, dtype=bool)
    sing = np.zeros(r, dtype=bool)
    failed = np.zeros(r, dtype=bool)
    for k, s in enumerate(seeds):
        y = simulate_y(arrays, params, 1, np.random.Generator(np.random.PCG64(s)), likert=likert)[0]
        try:
            core = model.refit_core(y, REML=REML, start=dm.theta)
            b = float(core.beta[j])
            sd = math.sqrt(float(core.vcov_beta[j, j]))
            est[k], se[k] = b, sd
            conv[k], sing[k] = bool(core.converged), bool(core.singular)
            if test == "lrt":
                assert null_model is not None
                core0 = null_model.refit_core(y, REML=False, start=dm.theta)
                lr = max(float(core0.deviance - core.deviance), 0.0)
                stat[k] = math.copysign(math.sqrt(lr), b)
                df[k] = math.inf
            else:
                stat[k] = b / sd
                df[k] = float(model.satterthwaite_df(core, L)) if test == "satterthwaite" else math.inf
        except (FitError, InputError, np.linalg.LinAlgError, FloatingPointError):
            failed[k] = True
    failed |= ~np.isfinite(stat)
    return _Run(est, se, stat, df, conv, sing, failed)


def _summarise(run: _Run, effect: float, alpha: float, test: str, alternative: str
               ) -> dict[str, Any]:
    p = pvalues(run.statistic, run.df, test, alternative)
    p = np.where(run.failed, np.nan, p)
    sig = np.nan_to_num(p, nan=1.0) <= alpha
    n = p.shape[0]
    sign_true = np.sign(effect)
    correct = sig & (np.sign(run.estimate) == sign_true) if effect != 0 else np.zeros(n, bool)
    n_sig = int(sig.sum())
    ok = ~run.failed
    out: dict[str, Any] = {
        "pvalue": p,
        "n_rejected": int(correct.sum()),
        "n_sig": n_sig,
        "rejection_rate": n_sig / n,
        "mean_estimate": float(np.mean(run.estimate[ok])) if ok.any() else math.nan,
        "n_failed": int(run.failed.sum()),
        "n_singular": int((run.singular & ok).sum()),
        "n_nonconverged": int((~run.converged & ok).sum()),
    }
    if effect != 0 and n_sig > 0:
        out["type_s"] = float(np.mean(np.sign(run.estimate[sig]) != sign_true))
        out["type_m"] = float(np.mean(np.abs(run.estimate[sig]) / abs(effect)))
    else:
        out["type_s"] = math.nan
        out["type_m"] = math.nan
    return out


def power(
    design: CrossedDesign,
    params: Params,
    *,
    n_sims: int = 1000,
    alpha: float = 0.05,
    test: str = "satterthwaite",
    alternative: str = "two-sided",
    null: bool = False,
    rng: Any = None,
    engine: str = "auto",
    likert: int | None = None,
    keep_replicates: bool = True,
    REML: bool | None = None,
) -> PowerResult:
    """Power of a design by simulation: simulate -> fit (ML) -> test (Card et al. 2020, Fig. 2).

    Parameters
    ----------
    design : CrossedDesign
        Who rates what.
    params : LMMParams or MultiSystemParams
        True model; the tested effect is ``params.effect`` (or ``effects[0]``,
        the first non-baseline system against the grand mean, for K systems).
    n_sims : int, default 1000
        Replicates.
    alpha : float, default 0.05
    test : {"satterthwaite", "z", "lrt"}
        ``"satterthwaite"`` (default): Wald t with Satterthwaite df (lmerTest);
        ``"z"``: Wald statistic against the normal -- the paper's rule (with
        ``alternative="greater"``: a detection is ``t > 1.645``; the paper's
        ``t > 1.96`` is ``alternative="two-sided"`` counting only sign-correct
        rejections, which is how power is always counted here); ``"lrt"``:
        likelihood ratio of ML fits with and without the effect (chi^2(1);
        the sign comes from the estimate).
    alternative : {"two-sided", "greater", "less"}
        As in scipy.  Power counts only rejections whose estimate has the
        sign of the true effect.
    null : bool, default False
        Also simulate the same design at effect 0 (own child seed) and report
        its rejection rate as ``type1``.
    rng : optional
        Anything :func:`numpy.random.default_rng` accepts, or a
        ``SeedSequence`` (what :func:`power_grid` passes per cell).  A
        ``Generator`` is advanced (128 bits drawn to seed the run), so two
        calls with the same ``Generator`` give different replicates.
    engine : {"auto", "fast", "native", "analytic"}
        Module docstring; ``"auto"`` uses the exact fast path when it applies.
    likert : int, optional
        Simulate ``likert``-point ratings (:func:`nlpower.simulate`); the
        analysis model stays the Gaussian LMM.
    keep_replicates : bool, default True
        Keep per-replicate arrays in ``result.replicates``.
    REML : bool, optional
        Fit criterion.  Default: REML for ``"satterthwaite"`` (lmerTest's
        default; with ML the variance components of a factor with few
        levels are biased down and the test is anti-conservative -- 3
        workers: rejection rate ~0.12 at alpha 0.05), ML for ``"z"`` (the
        paper) and ``"lrt"`` (a likelihood-ratio test of fixed effects needs
        ML; ``REML=True`` is refused).

    Returns
    -------
    PowerResult

    Raises
    ------
    InputError
        Bad ``n_sims``, ``alpha``, ``test``, ``alternative``, ``engine``.
    DesignError
        ``engine="fast"`` on a design where the fast path is not exact.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> res = power(CrossedDesign(3, 100), presets.high_variance(0.1), n_sims=200, rng=1)
    >>> 0 <= res.power <= 1
    True

    Reproduce the paper's rule (one-sided ``t > 1.96`` = two-sided z test at
    0.05 counting sign-correct rejections) with ``test="z"``.
    """
    design, params = check_design_params(design, params)
    n_sims = check_int("n_sims", n_sims, min=1)
    alpha, test, alternative = check_test_options(alpha, test, alternative)
    engine = check_choice("engine", engine, ENGINES)
    if likert is not None and (isinstance(likert, bool) or not isinstance(likert, (int, np.integer))
                               or likert < 2):
        raise InputError(
            f"likert must be None (Gaussian ratings) or the number of scale points, an integer "
            f">= 2; got {likert!r}."
        )
    if REML is None:
        REML = test == "satterthwaite"
    elif not isinstance(REML, (bool, np.bool_)):
        raise InputError(f"REML must be True, False or None (default for the test); got {REML!r}.")
    REML = bool(REML)
    if REML and test == "lrt":
        raise InputError(
            "test='lrt' compares ML fits with and without the effect; REML likelihoods of models "
            "with different fixed effects are not comparable. Use REML=False (or None)."
        )
    why = _fast_exact(design, params)
    if engine == "fast" and why is not None:
        raise DesignError(
            f"engine='fast' is exact only for a fully crossed, paired 2-system design; here "
            f"{why}. Use engine='native' (any design) or engine='auto'."
        )
    if engine == "auto":
        engine = "fast" if why is None else "native"
    effect = effect_of(params)
    mean_diff = float(params.mean_difference if isinstance(params, LMMParams)
                      else params.mean_differences[0])
    notes: list[str] = []
    if isinstance(params, LMMParams):
        coding = params.coding
    else:
        coding = "sum"
        notes.append(f"effect tested: {design.system_names[1]} minus the grand mean (sum "
                     "contrast x1)")
    root = root_seed(rng)  # a Generator is consumed (nlpower._rng)
    seed = seed_record(root)
    main_seq, null_seq = root.spawn(2)

    if engine == "analytic":
        ap = analytic_power(design, params, alpha=alpha, test=test, alternative=alternative)
        pw = ap.power if effect != 0 else math.nan
        t1 = None
        if null or effect == 0:
            t1 = analytic_power(design, _with_effect(params, 0.0), alpha=alpha, test=test,
                                alternative=alternative).power
        notes.append(f"analytic ({ap.method}): ncp {ap.ncp:.3f}, df {ap.df:.1f}; no Monte Carlo error")
        ci = ConfidenceInterval(pw, pw)
        return PowerResult(
            power=pw, se=0.0, ci=ci, n_sims=0, n_rejected=0,
            rejection_rate=ap.power, type_s=math.nan, type_m=math.nan, mean_estimate=effect,
            n_failed=0, n_singular=0, n_nonconverged=0, type1=t1,
            type1_ci=None if t1 is None else ConfidenceInterval(t1, t1), effect=effect,
            mean_difference=mean_diff, test=test, alpha=alpha, alternative=alternative,
            engine="analytic", coding=coding, design=repr(design), seed=seed,
            version=__version__, notes=tuple(notes),
        )

    def run(p: Params, seq: np.random.SeedSequence) -> _Run:
        seeds = seq.spawn(n_sims)
        if engine == "fast":
            assert isinstance(p, LMMParams)
            return _fast_run(design, p, seeds, test, likert, REML)
        return _native_run(design, p, seeds, test, likert, REML)

    main = run(params, main_seq)
    s = _summarise(main, effect, alpha, test, alternative)
    if effect != 0:
        pw = s["n_rejected"] / n_sims
        lo, hi = wilson_ci(s["n_rejected"], n_sims)
        se = math.sqrt(pw * (1 - pw) / n_sims)
    else:
        pw, lo, hi, se = math.nan, math.nan, math.nan, math.nan
        notes.append("effect is 0: power, Type-M and Type-S are undefined; the rejection rate "
                     "is the Type I error")
    type1: float | None = None
    type1_ci: ConfidenceInterval | None = None
    n_t1: int | None = None
    n_t1_sims: int | None = None
    if effect == 0:
        type1 = s["rejection_rate"]
        n_t1, n_t1_sims = s["n_sig"], n_sims
    elif null:
        s0 = _summarise(run(_with_effect(params, 0.0), null_seq), 0.0, alpha, test, alternative)
        type1 = s0["rejection_rate"]
        n_t1, n_t1_sims = s0["n_sig"], n_sims
    if type1 is not None:
        assert n_t1 is not None and n_t1_sims is not None
        type1_ci = ConfidenceInterval(*wilson_ci(n_t1, n_t1_sims))
    if s["n_failed"]:
        notes.append(f"{s['n_failed']} replicate fit(s) failed; counted as non-detections")
    reps = None
    if keep_replicates:
        reps = Replicates(main.estimate, main.se, main.statistic, main.df, s["pvalue"],
                          main.converged, main.singular, main.failed)
    return PowerResult(
        power=pw, se=se, ci=ConfidenceInterval(lo, hi), n_sims=n_sims,
        n_rejected=s["n_rejected"], rejection_rate=s["rejection_rate"], type_s=s["type_s"],
        type_m=s["type_m"], mean_estimate=s["mean_estimate"], n_failed=s["n_failed"],
        n_singular=s["n_singular"], n_nonconverged=s["n_nonconverged"], type1=type1,
        type1_ci=type1_ci, effect=effect, mean_difference=mean_diff, test=test, alpha=alpha,
        alternative=alternative, engine=engine, coding=coding, design=repr(design), seed=seed,
        version=__version__, notes=tuple(notes), replicates=reps, n_type1=n_t1,
        n_type1_sims=n_t1_sims, REML=REML,
    )


def _with_effect(params: Params, effect: float) -> Params:
    if isinstance(params, LMMParams):
        return params.with_effect(effect)
    return params.with_effects((effect,) + tuple(params.effects[1:]))


__all__ = ["ENGINES", "power", "pvalues"]
