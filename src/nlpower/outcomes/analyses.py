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
from ..powersim.batches import by_rows, stop_early
from ..powersim.loop import Draw, EngineAnalysis, Fitted, Responses, onehot, replicate_batch
from ..powersim.models import build_model
from ..powersim.options import PowerOptions
from ..powersim.replicate import balanced_exact, balanced_replicates
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
    return balanced_replicates(st, proxy.x_values, [], opts)


def _lmm_general(design: CrossedDesign, y01: np.ndarray, proxy: LMMParams,
                 opts: PowerOptions) -> Replicates:
    """The one replicate loop over the rows of ``y01``: the design's LMM, engine-fitted."""
    analysis = EngineAnalysis(build_model(design, proxy), get_test(opts.test), opts,
                              "(LMM of Likert ratings)")
    return replicate_batch(Responses(y01), analysis, opts, 0, y01.shape[0], n_sims=y01.shape[0])


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
    """The cumulative link mixed model of the integer ratings ``y``, on the one replicate loop.

    :class:`ClmmAnalysis` over the rows of ``y``
    (:func:`nlpower.powersim.loop.replicate_batch`).
    """
    return replicate_batch(Responses(y), ClmmAnalysis(design, params, opts), opts, 0, y.shape[0],
                           n_sims=y.shape[0])


class ClmmAnalysis:
    """The cumulative link mixed model (``ordinal::clmm``) of the integer ratings.

    ``rating ~ x + (1 + x || worker) + (1 + x || item)`` (the LMM's random
    structure; items nested in systems: ``(1 | item)``) with flexible
    thresholds and the parameters' link, fitted by Laplace through the engine
    protocol's ordinal family (:mod:`nlpower.ordinal`).  The structure is
    prepared once per batch (:meth:`batch`); every replicate starts from the
    simulation's own parameters (SDs of at least 0.1: an SD at exactly 0 is a
    stationary point it would never leave), so a replicate's result does not
    depend on the others (chunking, ``n_jobs``).  The fit's optimiser is
    scaled by one reference Hessian per structure
    (:func:`nlpower.ordinal.scaling.reference_hessian`) and the fit is
    finished with the replicate's own Hessian, which the Wald SE needs anyway.  A replicate that leaves a
    category unused is fitted with that category dropped (as ``ordinal``
    does), from the ``clm`` start.  Tests (the registry's rules): Wald z, or
    the likelihood ratio against the fit without ``x``.
    """

    label = "(clmm of Likert ratings)"

    def __init__(self, design: CrossedDesign, params: Any, opts: PowerOptions) -> None:
        self.params, self.opts = params, opts
        self.dm = build_model(design, params.latent_params())
        self.rule = get_test(opts.test)
        # the ordinal model drops the intercept
        self.j = self.dm.spec.fixef_names.index(self.dm.effect_name) - 1

    def batch(self) -> _ClmmBatch:
        return _ClmmBatch(self)


class _ClmmBatch:
    """One batch's prepared models, by the set of categories a replicate uses."""

    def __init__(self, a: ClmmAnalysis) -> None:
        from ..lmm.family import Ordinal

        self.a = a
        self.family = Ordinal(a.params.link)
        self.k_levels = a.params.levels
        self.full = (np.arange(a.dm.spec.n) % self.k_levels + 1).astype(float)  # every category
        self.models: dict[tuple[int, ...], tuple[Any, Any]] = {}
        self.refs: dict[tuple[int, ...], tuple[Any, Any]] = {}

    def _models(self, used: tuple[int, ...], y: np.ndarray) -> tuple[Any, Any]:
        a = self.a
        if used not in self.models:
            resp = self.full if len(used) == self.k_levels else y.astype(float)
            engine = get_engine(a.opts.engine)
            m = engine.prepare(a.dm.spec.with_response(resp), family=self.family)
            m0 = (engine.prepare(a.dm.null_spec().with_response(resp), family=self.family)
                  if a.rule.needs_null else None)
            self.models[used] = (m, m0)
        return self.models[used]

    def fit(self, draw: Draw) -> Fitted:
        from ..ordinal.scaling import reference_hessian

        a, j, y = self.a, self.a.j, draw.y
        used = tuple(int(c) for c in np.unique(y))
        m, m0 = self._models(used, y)
        codes = np.searchsorted(np.asarray(used), y)
        if len(used) == self.k_levels:
            x0 = _truth_start(m, a.params, j)
            if used not in self.refs:
                self.refs[used] = (reference_hessian(m, x0), None if m0 is None else
                                   reference_hessian(m0, np.delete(x0, m.n_alpha + j)))
            core = m.refit(codes, start=x0, curvature=self.refs[used][0],
                           control=_REPLICATE_CONTROL)
        else:
            x0 = None
            core = m.refit(codes, control=_REPLICATE_CONTROL)
        s = float(core.se[j])
        if not (np.isfinite(s) and s > 0.0):     # the Hessian at the fit is not PD
            raise FitError(f"the fit's Hessian gives no positive SE of the effect ({s!r})")
        state = GeneralState(m, m0, j, onehot(len(core.beta), j), x0, 0)
        if m0 is None:
            return Fitted(core, state)
        ref0: Any = self.refs[used][1] if x0 is not None else None

        def null() -> Any:
            if x0 is None:
                return m0.refit(codes, control=_REPLICATE_CONTROL, hessian=False)
            return m0.refit(codes, start=np.delete(x0, m.n_alpha + j), curvature=ref0,
                            control=_REPLICATE_CONTROL, hessian=False)

        return Fitted(core, state, null)
#: The analyses of Likert ratings: name -> replicates function.
ANALYSES: dict[str, Callable[..., Replicates]] = {"lmm": lmm_replicates,
                                                  "clmm": clmm_replicates}
