"""Analyses of simulated non-Gaussian ratings: replicate responses in, :class:`Replicates` out.

Each analysis takes the design, the simulated responses of all replicates
(``(n_sims, n_ratings)``, layout order) and validated
:class:`~nlpower.powersim.options.PowerOptions`, and returns the
per-replicate estimate, SE, statistic, df and p-value of the system effect --
the same record the Gaussian power path produces, so the same summary
(:func:`nlpower.powersim.summary.power_result`) turns it into power, Type-M/S
and Type I error.

``"lmm"``
    The paper's analysis (Card et al. 2020, App. H.3): ratings rescaled to
    [0, 1] by ``(r - 1)/(K - 1)`` and fitted by the crossed linear mixed
    model.  On a fully crossed, paired design the exact balanced fitter
    (:mod:`nlpower.powersim.balanced_fit`) fits all replicates at once from
    sufficient statistics; on any other design each replicate is refitted
    through the engine protocol with the structure built once.
``"clmm"``
    The cumulative link mixed model of the integer ratings
    (:func:`clmm_replicates`), the ordinal analysis Howcroft & Rieser argue for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..design import CrossedDesign
from ..errors import FitError
from ..lmm import get_engine
from ..params import LMMParams
from ..powersim import fastpath as fp
from ..powersim.balanced_fit import fit_balanced
from ..powersim.batches import by_rows, stop_early
from ..powersim.models import build_model
from ..powersim.options import PowerOptions
from ..powersim.replicate import _FIT_FAILURES, _replicates, balanced_exact, prepare
from ..powersim.result import Replicates
from ..powersim.rules import GeneralState, get_test

__all__ = ["ANALYSES", "clmm_replicates", "lmm_replicates"]


def lmm_replicates(design: CrossedDesign, y01: np.ndarray, proxy: LMMParams,
                   opts: PowerOptions) -> Replicates:
    """The crossed LMM of rescaled ratings, replicate by replicate (module docstring).

    ``proxy`` gives the coding of ``x`` and the warm start of the general path
    (its SDs relative to its ``sigma``); its values never enter a test.
    """
    if balanced_exact(design, proxy) is None:    # all at once; the stopping rule applied after
        return stop_early(_lmm_balanced(design, y01, proxy, opts))
    return by_rows(_lmm_general, "lmm", design, y01, proxy, opts)   # checkpointed batches


def _lmm_balanced(design: CrossedDesign, y01: np.ndarray, proxy: LMMParams,
                  opts: PowerOptions) -> Replicates:
    w, i, r = design.n_workers, design.n_items, y01.shape[0]
    # layout rows: item, then worker, then system
    st = fp.stats_from_ratings(y01.reshape(r, i, w, 2).transpose(0, 2, 1, 3))
    rule = get_test(opts.test)
    fit = fit_balanced(st, REML=opts.REML, with_df=rule.df_method == "satterthwaite")
    scale = 2.0 / (proxy.x_values[1] - proxy.x_values[0])  # sum -> the proxy's coding
    stat, df, _ = rule.balanced(st, fit, [], opts.n_resamples)
    return _replicates(fit.beta1 * scale, fit.se * scale, stat, df, fit.converged, fit.singular,
                       np.zeros(r, dtype=bool), opts)


def _lmm_general(design: CrossedDesign, y01: np.ndarray, proxy: LMMParams,
                 opts: PowerOptions) -> Replicates:
    dm = build_model(design, proxy)
    r = y01.shape[0]
    rule = get_test(opts.test)
    est, se, stat, df = (np.full(r, np.nan) for _ in range(4))
    conv, sing, failed = (np.zeros(r, dtype=bool) for _ in range(3))
    state: GeneralState | None = None
    gen = np.random.Generator(np.random.PCG64(0))     # unused: no bootstrap tests here
    for k in range(r):
        y = y01[k]
        try:
            if state is None:
                null_model = (prepare(opts.engine, dm.null_spec().with_response(y))
                              if rule.needs_null else None)
                model = prepare(opts.engine, dm.spec.with_response(y))
                state = rule.general_state(dm.spec, model, null_model, dm.effect_index,
                                           dm.theta, opts.n_resamples)
            core = state.model.refit(y, REML=opts.REML, start=dm.theta)
            conv[k], sing[k] = bool(core.converged), bool(core.singular)
            est[k], se[k], stat[k], df[k], _ = rule.general(state, core, y, gen, _FIT_FAILURES)
        except _FIT_FAILURES as exc:
            if opts.on_failure == "raise":
                raise FitError(f"replicate {k} of {r} failed to fit (LMM of Likert ratings): "
                               f"{exc}. Use on_failure='ignore' or 'warn' to count failed fits "
                               "as non-detections.") from exc
            failed[k] = True
    return _replicates(est, se, stat, df, conv, sing, failed, opts)




#: L-BFGS-B tolerances of a replicate: loose, because the Hessian the Wald SE needs anyway
#: finishes the fit with Newton steps (quadratic convergence from close by).
_REPLICATE_CONTROL = {"gtol": 1e-5, "ftol": 1e-10}

#: each scalar random term's SD in LikertParams, by (grouping factor, column)
_SD_NAMES = {("worker", "(Intercept)"): "sd_worker", ("worker", "x"): "sd_worker_slope",
             ("item", "(Intercept)"): "sd_item", ("item", "x"): "sd_item_slope"}

#: a true SD below this starts at it (an SD at exactly 0 is a stationary point)
_SD_FLOOR = 0.1


def _truth_start(model: Any, params: Any, j: int) -> np.ndarray:
    """The simulation's parameters on ``clmm``'s scale as ``(alpha, beta, theta)``.

    Every replicate starts here, so its fit does not depend on which replicates
    were fitted before it (any chunking, any ``n_jobs``).
    """
    sc = params.clmm_scale()
    alpha = model.thr.alpha_from_theta(np.asarray(sc["thresholds"], dtype=float))
    beta = np.zeros(model.p)
    beta[j] = sc["effect"]
    theta: list[float] = []
    for t in model.rs.terms:
        for jj in range(t.q):
            for ii in range(jj, t.q):
                if ii != jj:
                    theta.append(0.0)
                    continue
                name = _SD_NAMES.get((t.group, t.cnames[ii]))
                sd = sc[name] if name is not None else 0.0
                theta.append(max(float(sd), _SD_FLOOR))
    return np.concatenate([alpha, beta, np.asarray(theta)])


def clmm_replicates(design: CrossedDesign, y: np.ndarray, params: Any,
                    opts: PowerOptions) -> Replicates:
    """:func:`clmm_batch` over the fixed batches of :func:`nlpower.powersim.batches.by_rows`.

    Each batch prepares its own models, so a run resumed from a checkpoint
    (a grid cell's, or ``power(..., checkpoint=)``) gives the same numbers.
    """
    return by_rows(clmm_batch, "clmm", design, y, params, opts)


def clmm_batch(design: CrossedDesign, y: np.ndarray, params: Any,
               opts: PowerOptions) -> Replicates:
    """The cumulative link mixed model (``ordinal::clmm``) of the integer ratings, per replicate.

    ``rating ~ x + (1 + x || worker) + (1 + x || item)`` (the LMM's random
    structure; items nested in systems: ``(1 | item)``) with flexible
    thresholds and the parameters' link, fitted by Laplace through the engine
    protocol's ordinal family (:mod:`nlpower.ordinal`).  The structure is
    prepared once per call (a batch); every replicate starts from the simulation's own parameters
    (SDs of at least 0.1: an SD at exactly 0 is a stationary point it would
    never leave), so a replicate's result does not depend on the others
    (chunking, ``n_jobs``).  The fit takes Newton steps with one reference
    Hessian per structure (:mod:`nlpower.ordinal.chord`; L-BFGS-B where they do
    not converge) and is finished with the replicate's own Hessian, which the
    Wald SE needs anyway.  A replicate that leaves a
    category unused is fitted with that category dropped (as ``ordinal``
    does), from the ``clm`` start.  Tests: Wald z, or the likelihood ratio
    against the fit without ``x``.
    """
    from ..lmm.family import Ordinal
    from ..ordinal.chord import chord_refit, reference_hessian

    proxy = params.latent_params()
    dm = build_model(design, proxy)
    rule = get_test(opts.test)
    k_levels, r = params.levels, y.shape[0]
    j = dm.spec.fixef_names.index(dm.effect_name) - 1      # the ordinal model drops the intercept
    family = Ordinal(params.link)
    full = (np.arange(dm.spec.n) % k_levels + 1).astype(float)   # every category present
    models: dict[tuple[int, ...], tuple[Any, Any]] = {}
    est, se, stat, df = (np.full(r, np.nan) for _ in range(4))
    conv, sing, failed = (np.zeros(r, dtype=bool) for _ in range(3))
    refs: dict[tuple[int, ...], tuple[Any, Any]] = {}
    for k in range(r):
        used = tuple(int(c) for c in np.unique(y[k]))
        try:
            if used not in models:
                resp = full if len(used) == k_levels else y[k].astype(float)
                m = get_engine(opts.engine).prepare(dm.spec.with_response(resp), family=family)
                m0 = (get_engine(opts.engine).prepare(dm.null_spec().with_response(resp),
                                                      family=family) if rule.needs_null else None)
                models[used] = (m, m0)
            m, m0 = models[used]
            codes = np.searchsorted(np.asarray(used), y[k])
            if len(used) == k_levels:
                x0 = _truth_start(m, params, j)
                if used not in refs:
                    refs[used] = (reference_hessian(m, x0), None if m0 is None else
                                  reference_hessian(m0, np.delete(x0, m.n_alpha + j)))
                core = chord_refit(m, codes, x0, refs[used][0], control=_REPLICATE_CONTROL)
            else:
                x0 = None
                core = m.refit(codes, control=_REPLICATE_CONTROL)
            b, s = float(core.beta[j]), float(core.se[j])
            if not (np.isfinite(s) and s > 0.0):     # the Hessian at the fit is not PD
                raise FitError(f"the fit's Hessian gives no positive SE of the effect ({s!r})")
            est[k], se[k] = b, s
            conv[k], sing[k] = bool(core.converged), bool(core.singular)
            if m0 is not None:
                if x0 is None:
                    core0 = m0.refit(codes, control=_REPLICATE_CONTROL, hessian=False)
                else:
                    core0 = chord_refit(m0, codes, np.delete(x0, m.n_alpha + j), refs[used][1],
                                        control=_REPLICATE_CONTROL, hessian=False)
                stat[k] = np.copysign(np.sqrt(max(core0.deviance - core.deviance, 0.0)), b)
            else:
                stat[k] = b / s
            df[k] = np.inf
        except _FIT_FAILURES as exc:
            if opts.on_failure == "raise":
                raise FitError(f"replicate {k} of {r} failed to fit (clmm of Likert ratings): "
                               f"{exc}. Use on_failure='ignore' or 'warn' to count failed fits "
                               "as non-detections.") from exc
            failed[k] = True
    return _replicates(est, se, stat, df, conv, sing, failed, opts)


#: The analyses of Likert ratings: name -> replicates function.
ANALYSES: dict[str, Callable[..., Replicates]] = {"lmm": lmm_replicates,
                                                  "clmm": clmm_replicates}
