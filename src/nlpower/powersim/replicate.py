"""Stage 2 of :func:`~nlpower.powersim.power`: replicate runs, simulate -> fit -> test.

Each run takes the design, the parameters, one child seed per replicate and
the validated :class:`~nlpower.powersim.options.PowerOptions`, and returns
:class:`~nlpower.powersim.result.Replicates` (estimate, SE, statistic, df,
p-value, flags per replicate):

:func:`run_balanced` (``method="balanced"``)
    The exact balanced fast path: fully crossed, paired, 2 systems,
    :class:`~nlpower.params.LMMParams` in sum or half coding (treatment only
    without slope SDs).  Gaussian ratings: the five sums of squares and the
    estimate are drawn directly (O(1) per replicate); Likert ratings:
    computed from simulated rating arrays.  All replicates are fitted at once
    (:mod:`nlpower.powersim.balanced_fit`).
:func:`run_simulate` (``method="simulate"``)
    Any design: the structure is prepared once by the engine
    (:func:`nlpower.lmm.get_engine`), each replicate swaps the response and
    refits (warm start at the true theta).

Tests: ``"satterthwaite"``/``"z"`` from the fit, ``"lrt"`` from the null
fit too; ``"kenward-roger"`` in closed form on the balanced path
(:func:`~nlpower.powersim.balanced_fit.kr_df`) and through
:func:`~nlpower.lmm.kenward_roger.kr_state` on the general one
(:class:`KRTest`); ``"pblrt"`` by :mod:`nlpower.powersim.pblrt` (vectorised
on the balanced path, ``2 n_boot`` refits per replicate on the general one;
the bootstrap continues the replicate's own random stream).

Replicate ``r`` draws from child ``r`` of the run's seed, so results do not
depend on chunking, and the first ``m`` replicates of a run of ``N`` are those
of a run of ``m``.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats
from tqdm.auto import tqdm

from ..design import CrossedDesign
from ..errors import FitError, InputError, NlpowerWarning
from ..lmm import PreparedModel, get_engine, theta_layout
from ..lmm.kenward_roger import covariance_basis, kr_state
from ..lmm.result import FitCore
from ..lmm.structure import ModelSpec
from ..params import LMMParams
from ..simulation import simulate_y
from . import fastpath as fp
from .balanced_fit import fit_balanced, kr_df, null_deviance
from .models import Params, build_model
from .options import PowerOptions
from .pblrt import GeneralPBLRT, pb_lrt_pvalues
from .result import Replicates

# ----------------------------------------------------------------------------------------
# the test on per-replicate statistics
# ----------------------------------------------------------------------------------------


def pvalues(statistic: np.ndarray, df: np.ndarray, test: str, alternative: str) -> np.ndarray:
    """p-values of Wald t/z statistics or signed LR roots.

    ``"satterthwaite"``, ``"kenward-roger"``: t distribution with ``df``;
    ``"z"`` and ``"lrt"`` (signed root of the LR statistic, so the two-sided
    p is the chi^2(1) p-value): standard normal.  (``"pblrt"`` p-values come
    from the bootstrap, :mod:`nlpower.powersim.pblrt`.)
    """
    s = np.asarray(statistic, dtype=float)
    if test in ("satterthwaite", "kenward-roger"):
        dist_sf = lambda v: stats.t.sf(v, np.asarray(df, dtype=float))  # noqa: E731
    else:
        dist_sf = stats.norm.sf
    with np.errstate(invalid="ignore"):
        if alternative == "two-sided":
            return np.minimum(1.0, 2.0 * dist_sf(np.abs(s)))
        if alternative == "greater":
            return np.asarray(dist_sf(s))
        return np.asarray(dist_sf(-s))


def _replicates(estimate: np.ndarray, se: np.ndarray, statistic: np.ndarray, df: np.ndarray,
                converged: np.ndarray, singular: np.ndarray, failed: np.ndarray,
                opts: PowerOptions, p_boot: np.ndarray | None = None) -> Replicates:
    failed = failed | ~np.isfinite(statistic)
    if p_boot is not None:
        failed |= ~np.isfinite(p_boot)
    p = p_boot if p_boot is not None else pvalues(statistic, df, opts.test, opts.alternative)
    p = np.where(failed, np.nan, p)
    return Replicates(estimate, se, statistic, df, p, converged, singular, failed)


# ----------------------------------------------------------------------------------------
# balanced fast path
# ----------------------------------------------------------------------------------------


def balanced_exact(design: CrossedDesign, params: Params) -> str | None:
    """Why the balanced fast path is not exact for this design and parameters (None when it is)."""
    if not design.is_balanced_crossed:
        why = "items are nested in systems" if design.items == "nested" else \
            f"each item is rated by {design.raters_per_item} of {design.n_workers} workers"
        return f"the design is not fully crossed and paired ({why})"
    if design.n_systems != 2 or not isinstance(params, LMMParams):
        return "the balanced fast path handles 2 systems with LMMParams only"
    if params.coding == "treatment" and (params.sd_worker_slope > 0 or params.sd_item_slope > 0):
        return ("treatment coding with random slopes is a different model from the +-1 one "
                "(intercepts and slopes become correlated)")
    return None


def run_balanced(design: CrossedDesign, params: LMMParams, seeds: Sequence[np.random.SeedSequence],
                 opts: PowerOptions) -> Replicates:
    """Replicates through the exact balanced fast path (module docstring)."""
    p = params if params.coding == "sum" else params.to_coding("sum")
    w, i = design.n_workers, design.n_items
    gens = [np.random.Generator(np.random.PCG64(s)) for s in seeds]
    if opts.likert is None:
        v = [p.sigma**2, p.sd_worker**2, p.sd_worker_slope**2, p.sd_item**2, p.sd_item_slope**2]
        st = fp.draw_stats(w, i, p.beta0, p.effect, v, gens)
    else:
        arrays = design.arrays()
        y = np.vstack([simulate_y(arrays, params, 1, g, likert=opts.likert) for g in gens])
        # layout rows: item, then worker, then system
        st = fp.stats_from_ratings(y.reshape(len(gens), i, w, 2).transpose(0, 2, 1, 3))
    t_df = opts.test in ("satterthwaite", "kenward-roger")
    fit = fit_balanced(st, REML=opts.REML, with_df=opts.test == "satterthwaite")
    scale = 2.0 / (params.x_values[1] - params.x_values[0])  # sum -> params' coding
    p_boot = None
    if opts.test == "pblrt":  # the bootstrap continues each replicate's stream
        p_boot, lr = pb_lrt_pvalues(st, opts.n_boot, gens)
        stat = np.sign(fit.beta1) * np.sqrt(lr)
    elif opts.test == "lrt":
        lr = np.maximum(null_deviance(st) - fit.deviance, 0.0)
        stat = np.sign(fit.beta1) * np.sqrt(lr)
    else:
        stat = fit.t
    # Kenward-Roger: pbkrtest's adjusted covariance equals the unadjusted one on this design, and
    # its df is the expected-mean-square df at the fitted variances (balanced_fit.kr_df)
    if opts.test == "kenward-roger":
        df = kr_df(fit.variances, w, i)
    else:
        df = fit.df if t_df else np.full(st.n_sims, np.inf)
    return _replicates(fit.beta1 * scale, fit.se * scale, stat, df, fit.converged, fit.singular,
                       np.zeros(st.n_sims, dtype=bool), opts, p_boot)


# ----------------------------------------------------------------------------------------
# general path through the engine protocol
# ----------------------------------------------------------------------------------------


def prepare(engine: str, spec: ModelSpec) -> PreparedModel:
    """The engine's prepared model of ``spec`` (structure built once, y swapped per replicate)."""
    return get_engine(engine).prepare(spec)  # type: ignore[arg-type]


_FIT_FAILURES = (FitError, InputError, np.linalg.LinAlgError, FloatingPointError)


#: above this many ratings the general-path Kenward-Roger test warns about its cost
KR_DENSE_WARN_N = 1000


class KRTest:
    """Kenward-Roger t test of one coefficient at REML fits of a fixed structure.

    The covariance basis (:func:`nlpower.lmm.kenward_roger.covariance_basis`)
    and lme4's ``theta`` layout are built once; :meth:`test` turns a fit's
    ``theta`` and ``sigma`` into each term's covariance and runs
    :func:`~nlpower.lmm.kenward_roger.kr_state` (dense ``n x n`` algebra).
    """

    def __init__(self, spec: ModelSpec) -> None:
        if spec.n > KR_DENSE_WARN_N:
            # measured: ~1 s per replicate at n = 300 on one core, growing as n^3
            warnings.warn(
                f"test='kenward-roger' on the general path uses dense n x n algebra "
                f"(kr_state) with n = {spec.n} ratings: expect about "
                f"{(spec.n / 300) ** 3:.0f} s per replicate. Where the REML fit is interior "
                "Kenward-Roger equals test='satterthwaite', which costs milliseconds.",
                NlpowerWarning, stacklevel=4)
        self.spec = spec
        self.basis = covariance_basis(spec)
        layout = theta_layout(spec.re_terms)
        where = {id(t): (off, t.q) for t, off in zip(layout.terms, layout.term_offsets,
                                                     strict=True)}
        self.slots = [where[id(t)] for t in spec.re_terms]

    def test(self, core: FitCore, j: int) -> tuple[float, float, float]:
        """``(estimate, KR standard error, KR df)`` of coefficient ``j`` at the REML fit ``core``."""
        covs = []
        for off, q in self.slots:
            lam = np.zeros((q, q))  # relative covariance factor: lower triangle, column-major
            cols, rows = np.triu_indices(q)
            lam[rows, cols] = core.theta[off:off + cols.size]
            covs.append(core.sigma**2 * lam @ lam.T)
        state = kr_state(self.spec, core.beta, covs, core.sigma, self.basis)
        Lj = np.zeros(self.spec.p)
        Lj[j] = 1.0
        est, se, df, _ = state.t_test(Lj)
        return est, se, df


def run_simulate(design: CrossedDesign, params: Params, seeds: Sequence[np.random.SeedSequence],
                 opts: PowerOptions, *, progress: bool = False, desc: str = "replicates") -> Replicates:
    """Replicates simulated and refitted with ``opts.engine`` (module docstring).

    A replicate whose fit raises is recorded as failed; with
    ``on_failure="raise"`` the first one stops the run with a
    :class:`~nlpower.errors.FitError` naming it.
    """
    dm = build_model(design, params)
    arrays = design.arrays()
    r = len(seeds)
    j = dm.effect_index
    L = np.zeros(dm.spec.p)
    L[j] = 1.0
    est, se, stat, df = (np.full(r, np.nan) for _ in range(4))
    p_boot = np.full(r, np.nan) if opts.test == "pblrt" else None
    conv = np.zeros(r, dtype=bool)
    sing = np.zeros(r, dtype=bool)
    failed = np.zeros(r, dtype=bool)
    model: PreparedModel | None = None
    null_model: PreparedModel | None = None
    boot: GeneralPBLRT | None = None
    kr = KRTest(dm.spec) if opts.test == "kenward-roger" else None
    bar = tqdm(seeds, desc=desc, unit="replicate", disable=not progress, leave=False,
               file=sys.stderr)
    for k, s in enumerate(bar):
        gen = np.random.Generator(np.random.PCG64(s))
        y = simulate_y(arrays, params, 1, gen, likert=opts.likert)[0]
        try:
            if model is None:
                # prepared once, with the first usable replicate's response (engines check it)
                null_model = (prepare(opts.engine, dm.null_spec().with_response(y))
                              if opts.test in ("lrt", "pblrt") else None)
                model = prepare(opts.engine, dm.spec.with_response(y))
                if opts.test == "pblrt":
                    assert null_model is not None
                    boot = GeneralPBLRT.build(model, null_model, j)
            core = model.refit(y, REML=opts.REML, start=dm.theta)
            b = float(core.beta[j])
            sd = math.sqrt(float(core.vcov_beta[j, j]))
            est[k], se[k] = b, sd
            conv[k], sing[k] = bool(core.converged), bool(core.singular)
            if opts.test in ("lrt", "pblrt"):
                assert null_model is not None
                core0 = null_model.refit(y, REML=False, start=dm.theta)
                lr = max(float(core0.deviance - core.deviance), 0.0)
                stat[k] = math.copysign(math.sqrt(lr), b)
                df[k] = math.inf
                if p_boot is not None:
                    assert boot is not None
                    p_boot[k] = boot.pvalue(lr, core0, opts.n_boot, gen, _FIT_FAILURES)
            elif kr is not None:
                est[k], se[k], df[k] = kr.test(core, j)
                stat[k] = est[k] / se[k]
            else:
                stat[k] = b / sd
                df[k] = (float(model.satterthwaite_df(core, L)) if opts.test == "satterthwaite"
                         else math.inf)
        except _FIT_FAILURES as exc:
            if opts.on_failure == "raise":
                raise FitError(
                    f"replicate {k} of {r} failed to fit with engine={opts.engine!r}: {exc} "
                    "(on_failure='raise'; use on_failure='ignore' or 'warn' to count failed fits "
                    "as non-detections)."
                ) from exc
            failed[k] = True
    return _replicates(est, se, stat, df, conv, sing, failed, opts, p_boot)


__all__ = ["balanced_exact", "prepare", "pvalues", "run_balanced", "run_simulate"]
