"""Head-to-head evaluations with repeated judgements: a logistic crossed model, analysed by glmer.

Card et al. (2020), App. H.4, second paragraph: when each worker judges many
item pairs and each pair is judged by several workers, the judgements are
not independent, and a mixed model "potentially ... modeling the outcome as a
logistic model (in the case of win or lose), with ties ... excluded".  Each
(worker, item pair) of a :class:`~nlpower.design.CrossedDesign` (its
``workers_per_item`` allocation; one judgement per pair) is a draw with
probability ``p_draw``, and otherwise a win for system B with probability::

    logit P(B wins | decisive) = effect + u_w + v_i + (position + s_w + t_i) * pos

``u_w ~ N(0, sd_worker^2)``, ``v_i ~ N(0, sd_item^2)`` (worker and item
intercepts), ``pos = +1/2`` when B is shown first and ``-1/2`` otherwise
(counterbalanced: ``+1/2`` when worker index + item index is even), with a
fixed position effect and worker / item position slopes ``s_w``, ``t_i``.

The analysis is ``glmer(win ~ 1 + pos + (1 | worker) + (1 | item)
[+ (0 + pos | worker)] [+ (0 + pos | item)], family=binomial)`` with draws
excluded (prior weight 0, so the structure is built once per replicate's
draw pattern and never re-parsed), and the test is the Wald z of the
intercept: no preference means ``effect = 0``.  Splitting ties has no
binomial likelihood (a draw is not a whole number of successes), so the
repeated-judgement model excludes them; the one-judgement analysis
(:mod:`nlpower.preference`) offers both.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from .._choices import Alternative, FailurePolicy
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_real
from ..design import CrossedDesign
from ..errors import DesignError, InputError
from ..lmm import get_engine
from ..lmm.family import Binomial
from ..lmm.frame import model_frame
from ..powersim.batches import (
    options_identity,
    replicate_jobs,
    run_batches,
    run_id,
    seeds_identity,
    stopping,
)
from ..powersim.loop import FIT_FAILURES, Draw, Fitted, onehot, replicate_batch
from ..powersim.options import PowerOptions, power_options
from ..powersim.result import PowerResult, Replicates
from ..powersim.rules import GeneralState
from ..powersim.summary import apply_failure_policy, power_result

if TYPE_CHECKING:
    from ..glmm.model import GlmmModel

#: what a replicate's fit may raise and count as failed (sequential looks read it here)
_FIT_FAILURES = FIT_FAILURES

__all__ = ["HeadToHeadParams", "headtohead_power"]


@dataclass(frozen=True)
class HeadToHeadParams:
    """Parameters of repeated head-to-head judgements (module docstring); logit scale.

    Examples
    --------
    >>> p = HeadToHeadParams.from_share(0.6, sd_worker=0.5, p_draw=0.1)
    >>> round(p.effect, 4)
    0.4055
    """

    effect: float = 0.0
    sd_worker: float = 0.0
    sd_item: float = 0.0
    position: float = 0.0
    sd_worker_position: float = 0.0
    sd_item_position: float = 0.0
    p_draw: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "effect", check_real("effect", self.effect))
        for name in ("sd_worker", "sd_item", "sd_worker_position", "sd_item_position"):
            v = check_real(name, getattr(self, name))
            if v < 0:
                raise InputError(f"{name} must be a standard deviation >= 0 (logit scale); got {v}.")
        object.__setattr__(self, "position", check_real("position", self.position))
        pd_ = check_real("p_draw", self.p_draw)
        if not 0.0 <= pd_ < 1.0:
            raise InputError(f"p_draw (the probability of a draw) must be in [0, 1); got {pd_}.")

    @classmethod
    def from_share(cls, share: float, **kwargs: float) -> HeadToHeadParams:
        """Parameters whose typical worker and item prefer B with probability ``share`` (decisive)."""
        s = check_real("share", share)
        if not 0.0 < s < 1.0:
            raise InputError(f"share (P(B preferred) among decisive judgements) must be strictly "
                             f"between 0 and 1; got {s}.")
        return cls(effect=math.log(s / (1.0 - s)), **kwargs)

    def with_effect(self, effect: float) -> HeadToHeadParams:
        return replace(self, effect=effect)


def _pairs(design: CrossedDesign) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.DataFrame]:
    """(worker codes, item codes, position, the pair frame): one judgement per (worker, item)."""
    lay = design.layout()
    lay = lay[lay["system"] == design.baseline].reset_index(drop=True)
    w = lay["worker"].astype("category").cat.codes.to_numpy()
    i = lay["item"].astype("category").cat.codes.to_numpy()
    pos = np.where((w + i) % 2 == 0, 0.5, -0.5)
    return w, i, pos, lay[["worker", "item"]].assign(pos=pos)


def simulate_judgements(design: CrossedDesign, params: HeadToHeadParams,
                        gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One replicate: ``(win, draw)`` arrays, one entry per (worker, item pair) of the design."""
    w, i, pos, _ = _pairs(design)
    return _draw(w, i, pos, design.n_workers, design.n_items, params, gen)


def _draw(w: np.ndarray, i: np.ndarray, pos: np.ndarray, nw: int, ni: int,
          params: HeadToHeadParams, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """:func:`simulate_judgements` on the design's pairs, computed once per run."""
    u, s = gen.standard_normal(nw), gen.standard_normal(nw)
    v, t = gen.standard_normal(ni), gen.standard_normal(ni)
    eta = (params.effect + params.sd_worker * u[w] + params.sd_item * v[i]
           + (params.position + params.sd_worker_position * s[w]
              + params.sd_item_position * t[i]) * pos)
    n = w.size
    draw = gen.random(n) < params.p_draw
    win = gen.random(n) < 1.0 / (1.0 + np.exp(-eta))
    return win & ~draw, draw


def _formula(params: HeadToHeadParams) -> str:
    terms = ["(1 | worker)", "(1 | item)"]
    if params.sd_worker_position > 0:
        terms.append("(0 + pos | worker)")
    if params.sd_item_position > 0:
        terms.append("(0 + pos | item)")
    return "win ~ 1 + pos + " + " + ".join(terms)


#: a zero SD in the truth starts theta here: 0 is a stationary point of the deviance in that
#: direction (its symmetry), where a gradient method would stay
_START_FLOOR = 0.05


def _truth(model: GlmmModel, params: HeadToHeadParams) -> dict[str, np.ndarray]:
    """The data-generating ``(theta, beta)`` in the fitted model's order: each replicate's start."""
    sd = {("worker", "(Intercept)"): params.sd_worker, ("item", "(Intercept)"): params.sd_item,
          ("worker", "pos"): params.sd_worker_position, ("item", "pos"): params.sd_item_position}
    theta = [max(sd[(t.group, t.cnames[0])], _START_FLOOR) for t in model.layout.terms]
    fixed = {"(Intercept)": params.effect, "pos": params.position}
    return {"theta": np.array(theta), "beta": np.array([fixed[n] for n in model.spec.fixef_names])}


@dataclass(frozen=True)
class Judgements:
    """The generator of repeated head-to-head judgements on the one replicate loop.

    Replicate ``k``: the wins of B among the design's (worker, item pair)
    judgements as the response, the draws as prior weight 0.
    """

    design: CrossedDesign
    params: HeadToHeadParams
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pairs", _pairs(self.design)[:3])    # once per run

    def draw(self, k: int, gen: np.random.Generator) -> Draw:
        w, i, pos = self.pairs
        win, draw = _draw(w, i, pos, self.design.n_workers, self.design.n_items, self.params, gen)
        return Draw(win.astype(float), (~draw).astype(float))


@dataclass(frozen=True)
class GlmerAnalysis:
    """``glmer(win ~ 1 + pos + ..., binomial)`` of the judgements (module docstring).

    Prepared once per batch through the engine protocol; the response and
    the draws' weights are swapped per replicate and Newton's method starts
    at the truth, so a replicate's fit depends on its own data only (not on
    the batch it runs in).  The effect is the intercept.
    """

    design: CrossedDesign
    params: HeadToHeadParams
    engine: str = "native"
    label = "(glmer of head-to-head judgements)"

    def batch(self) -> _GlmerBatch:
        _, _, _, frame = _pairs(self.design)
        spec = model_frame(_formula(self.params), frame.assign(win=np.arange(len(frame)) % 2))
        model = get_engine(self.engine).prepare(spec, family=Binomial())  # type: ignore[arg-type]
        start = _truth(cast('GlmmModel', model), self.params)
        return _GlmerBatch(model, start, GeneralState(model, None, 0, onehot(spec.p, 0),
                                                      start, 0))


@dataclass(frozen=True)
class _GlmerBatch:
    model: Any
    start: dict[str, np.ndarray]
    state: GeneralState

    def fit(self, draw: Draw) -> Fitted:
        return Fitted(self.model.refit(draw.y, start=self.start, weights=draw.weights), self.state)


def _run(design: CrossedDesign, params: HeadToHeadParams, seq: np.random.SeedSequence,
         opts: PowerOptions) -> Replicates:
    """All replicates on the one replicate loop, in checkpointed batches
    (:mod:`nlpower.powersim.batches`; in parallel under
    :func:`~nlpower.powersim.batches.replicate_jobs`)."""
    seeds = seq.spawn(opts.n_sims)
    run = run_id("glmer", params=repr(params), options=options_identity(opts),
                 seeds=seeds_identity(seeds))
    generator, analysis = Judgements(design, params), GlmerAnalysis(design, params)
    return run_batches(len(seeds), lambda lo, hi: replicate_batch(
        generator, analysis, opts, lo, hi, n_sims=len(seeds), seeds=seeds), run=run)


def headtohead_power(
    design: CrossedDesign,
    params: HeadToHeadParams,
    *,
    n_sims: int = 1000,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    null: bool = False,
    ties: str = "exclude",
    rng: RNGLike = None,
    keep_replicates: bool = True,
    on_failure: FailurePolicy = "ignore",
    n_jobs: int | None = None,
    precision: float | None = None,
) -> PowerResult:
    """Power of repeated head-to-head judgements analysed by glmer (module docstring).

    Parameters
    ----------
    design : CrossedDesign
        Workers and item pairs; each (worker, item) of its allocation is one
        judgement of the pair (``workers_per_item`` for k of W).
    params : HeadToHeadParams
        The logistic crossed model; ``effect`` the logit of the share
        preferring B (:meth:`HeadToHeadParams.from_share`).
    n_sims, alpha, alternative, null, rng, keep_replicates, on_failure, precision
        As in :func:`nlpower.power` (``null=True``: the Type I error at
        ``effect = 0``, own child seed).  The test is the Wald z of the intercept.
    ties : {"exclude"}
        Draws are excluded (prior weight 0).
    n_jobs : int, optional
        Processes for the batches of replicates (loky;
        :func:`~nlpower.powersim.batches.replicate_jobs`; default: the
        caller's, e.g. ``nlpower.power(..., n_jobs=)``, else 1): each replicate
        has its own child seed and starts at the truth, so the results are the
        same for any ``n_jobs``.

    Returns
    -------
    PowerResult
        ``effect`` on the logit scale; Type-M relative to it.

    Examples
    --------
    >>> p = HeadToHeadParams.from_share(0.65, sd_worker=0.5, sd_item=0.5)
    >>> r = headtohead_power(CrossedDesign(5, 20), p, n_sims=20, rng=1)
    >>> 0.0 <= r.power <= 1.0
    True
    """
    if not isinstance(design, CrossedDesign):
        raise DesignError(f"design must be a CrossedDesign; got {type(design).__name__}.")
    if design.n_systems != 2 or design.items != "paired":
        raise DesignError("head-to-head judgements compare two systems on the same items: use "
                          "CrossedDesign(n_workers, n_items) (paired, 2 systems).")
    if not isinstance(params, HeadToHeadParams):
        raise InputError(f"params must be HeadToHeadParams; got {type(params).__name__}.")
    if ties != "exclude":
        raise InputError(
            f"ties={ties!r}: with repeated judgements the analysis is a binomial GLMM, where a "
            "draw split half and half is not a whole number of successes; use ties='exclude' "
            "(draws get prior weight 0), or nlpower.preference for one judgement per person.")
    opts = power_options(n_sims=n_sims, alpha=alpha, test="z", alternative=alternative,
                         method="simulate", null=null, keep_replicates=keep_replicates,
                         on_failure=on_failure, precision=precision)
    root = root_seed(rng)
    main_seq, null_seq = root.spawn(2)
    with nullcontext() if n_jobs is None else replicate_jobs(n_jobs), \
            stopping(opts.precision, opts.alpha):
        main = _run(design, params, main_seq, opts)
        null_reps = None
        if null and params.effect != 0:
            null_reps = _run(design, params.with_effect(0.0), null_seq, opts)
    apply_failure_policy(main, opts, "main")
    if null_reps is not None:
        apply_failure_policy(null_reps, opts, "null (effect 0)")
    share = 1.0 / (1.0 + math.exp(-params.effect))
    note = (f"head-to-head judgements, logistic crossed model (P(draw) {params.p_draw:g}, draws "
            f"excluded); glmer {_formula(params)!r}, Wald z of the intercept; effect on the logit "
            f"scale (typical share preferring B {share:.3f})")
    return power_result(main, null_reps, effect=params.effect, mean_difference=share - 0.5,
                        design=design, method="simulate", coding="sum", opts=opts,
                        seed=seed_record(root), notes=[note], params=params)
