"""How many levels of a factor a study needs: the smallest extension that reaches a target power.

``nlpower.study.plan_model(fit, term="x", along="worker", target=0.8)``
answers the question simr users answer by reading a ``powerCurve``: the
design is extended along ``along`` (:func:`nlpower.extend`: new workers rate
what pilot workers rated), and the number of levels is searched -- doubling
from the pilot's size until the power reaches the target, then bisecting --
with :func:`nlpower.power` at each size, down to a step of ``resolution``
(5%) of the size.  Every size is simulated from the
same seed (common random numbers), which keeps the estimated curve close to
monotone.  A plan never reports a size whose estimated power is below the
target: if none up to ``n_max`` reaches it, the result says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .._rng import RNGLike, root_seed
from ..errors import InputError
from ..powersim.simoptions import SimOptions, with_sim
from . import spec
from .design import model_design
from .power import model_study, power_keywords, power_model
from .result import ModelPowerResult

__all__ = ["ModelPlan", "plan_model", "plan_of_model_study"]


@dataclass(frozen=True)
class ModelPlan:
    """The smallest number of levels of ``along`` whose power reaches ``target``.

    Attributes
    ----------
    along : str
    target : float
    n : int or None
        The planned number of levels (``None``: no size up to ``n_max`` reached the target).
    result : ModelPowerResult or None
        The power at ``n``.
    evaluated : tuple of (int, ModelPowerResult)
        Every size simulated, in the order of the search.
    n_max : int
    cost : float or None
        ``n * cost_per_level`` plus ``rows * cost_per_row`` when costs were given.
    """

    along: str
    target: float
    n: int | None
    result: ModelPowerResult | None
    evaluated: tuple[tuple[int, ModelPowerResult], ...]
    n_max: int
    cost: float | None = None

    @property
    def reached(self) -> bool:
        return self.n is not None

    @property
    def seed(self) -> Any:
        """The one seed of every size simulated (the same call with it repeats the plan)."""
        return self.evaluated[0][1].seed if self.evaluated else {}

    @property
    def version(self) -> str:
        return str(self.evaluated[0][1].version) if self.evaluated else ""

    def _provenance(self) -> str:
        first = self.evaluated[0][1]
        return (f"  seed {(self.seed or {}).get('entropy')}; nlpower {self.version} "
                f"(engine {first.engine})")

    def to_frame(self) -> pd.DataFrame:
        """Every size simulated, sorted: ``n_<along>``, rows, power and its interval."""
        rows = [{f"n_{self.along}": n, "nobs": r.nobs, "power": r.power, "ci_low": r.ci.low,
                 "ci_high": r.ci.high, "n_sims": r.n_sims} for n, r in self.evaluated]
        return pd.DataFrame(rows).sort_values(f"n_{self.along}").reset_index(drop=True)

    def summary(self) -> str:
        first = self.evaluated[0][1]
        head = (f"Plan for {first.hypothesis} ({first.test} test, alpha = {first.alpha:g}): "
                f"levels of {self.along} for power >= {self.target:g}")
        if self.result is None:
            best = max(self.evaluated, key=lambda e: e[0])
            return (f"{head}\n  no size up to {self.n_max} levels reaches the target: at "
                    f"{best[0]} levels power is {best[1].power:.3f} "
                    f"({best[1].ci.low:.3f}-{best[1].ci.high:.3f}). Raise n_max, or change the "
                    f"design (more items per worker) or the effect.\n{self._provenance()}")
        r = self.result
        lines = [head, f"  {self.n} levels ({r.nobs} rows): power {r.power:.3f} "
                       f"(95% CI {r.ci.low:.3f}-{r.ci.high:.3f}, {r.n_sims} replicates)"]
        if self.cost is not None:
            lines.append(f"  cost {self.cost:,.2f}")
        if r.ci.low < self.target:
            lines.append("  the interval reaches below the target: raise n_sims for a firmer plan")
        lines.append("  sizes simulated: " + ", ".join(
            f"{n} ({res.power:.2f})" for n, res in sorted(self.evaluated, key=lambda e: e[0])))
        lines.append(self._provenance())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"ModelPlan(along={self.along!r}, n={self.n}, target={self.target:g}, "
                f"evaluated={len(self.evaluated)})")


def plan_model(model: Any, *, along: str, target: float = 0.8, term: str | None = None,
               compare: str | None = None, test: str | None = None,
               analysis: str | None = None, REML: bool | None = None, engine: str = "native",
               n_resamples: int = 99, n_min: int = 2, n_max: int = 1000, n_sims: int = 500,
               alpha: float = 0.05, alternative: str = "two-sided", on_failure: str = "ignore",
               cost_per_level: float | None = None, cost_per_row: float | None = None,
               resolution: float = 0.05, rng: RNGLike = None, n_jobs: int = 1,
               progress: bool = False, sim: SimOptions | None = None) -> ModelPlan:
    """The smallest number of levels of ``along`` whose power for ``term`` reaches ``target``.

    Parameters
    ----------
    model : fitted model, ModelDesign or Study
        The truth (parameters set with ``with_params``); or a whole
        ``Study.model(fit, term=...)`` (then the keywords it holds --
        ``term``, ``compare``, ``test``, ``analysis``, ``REML``, ``engine``,
        ``n_resamples`` -- are left out; one given with a different value
        is refused, naming it).
    along : str
        The grouping factor (or numeric covariate) to extend: ``"worker"``, ``"item"``.
    target : float, default 0.8
    term, compare, test, analysis, REML, engine, n_resamples, alpha, alternative, on_failure
        What :func:`nlpower.power` tests, and how.
    n_min, n_max : int
        The range of sizes searched.
    n_sims : int, default 500
        Replicates per size.
    cost_per_level, cost_per_row : float, optional
        Costs, to report the plan's cost.
    resolution : float, default 0.05
        The search stops when the smallest size known to reach the target is
        within this share of the largest known to miss it (0: to one level).
    rng, n_jobs, progress
        As :func:`nlpower.power`; every size uses the same seed.
    sim : SimOptions, optional
        The run's options as one value (``n_sims``, ``alpha``,
        ``alternative``, ``rng``, ``n_jobs``, ``progress``, ``on_failure``).

    Returns
    -------
    ModelPlan

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> from nlpower.study import plan_model
    >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    >>> m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
    >>> p = plan_model(m.with_params(fixef={"Days": 1.5}), along="Subject", term="Days",
    ...                test="z", n_sims=60, n_max=64, rng=1)
    >>> p.reached and p.result.power >= 0.8
    True
    """
    n_sims, alpha, alternative, rng, n_jobs, progress, on_failure = with_sim(
        sim, plan_model, n_sims=n_sims, alpha=alpha, alternative=alternative, rng=rng,
        n_jobs=n_jobs, progress=progress, on_failure=on_failure)
    study = model_study("plan_model", model, {
        "term": term, "compare": compare, "test": test, "analysis": analysis, "REML": REML,
        "engine": engine, "n_resamples": n_resamples})
    return plan_of_model_study(study, along=along, target=target, n_min=n_min, n_max=n_max,
                               cost_per_level=cost_per_level, cost_per_row=cost_per_row,
                               resolution=resolution, seed=root_seed(rng), run={
                                   "n_sims": n_sims, "alpha": alpha, "alternative": alternative,
                                   "n_jobs": n_jobs, "progress": progress,
                                   "on_failure": on_failure})


def _check_search(target: Any, n_min: Any, n_max: Any, resolution: Any) -> None:
    if not isinstance(target, (int, float)) or isinstance(target, bool) or not 0 < target < 1:
        raise InputError(f"target must be a power between 0 and 1, e.g. 0.8; got {target!r}.")
    for name, v in (("n_min", n_min), ("n_max", n_max)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive integer; got {v!r}.")
    if isinstance(resolution, bool) or not isinstance(resolution, (int, float)) or \
            not 0 <= resolution < 1:
        raise InputError(f"resolution must be a share in [0, 1), e.g. 0.05; got {resolution!r}.")
    if n_min > n_max:
        raise InputError(f"n_min ({n_min}) must not exceed n_max ({n_max}).")


def _refuse_zero_truth(d: Any, keywords: dict[str, Any]) -> None:
    """No size has power for a true value of 0: refuse before searching."""
    from ..lmm.names import coef_aliases
    from .analysis import coef_names
    from .hypothesis import resolve
    formula = keywords["analysis"] or d.formula
    model = d.prepare(formula, engine=keywords["engine"])
    hyp = resolve(keywords["term"], keywords["compare"], formula=formula,
                  names=coef_names(model), truth=d.fixef, aliases=coef_aliases(model))
    if hyp.one_df and hyp.effect == 0:
        raise InputError(f"the true value of {hyp.label} is 0, so no number of levels reaches "
                         "a power (every rejection is a Type I error). Set the effect to plan "
                         "for with with_params(fixef=...).")


def plan_of_model_study(study: spec.Study, *, along: str, target: float, n_min: int, n_max: int,
                        cost_per_level: float | None, cost_per_row: float | None,
                        resolution: float, seed: Any, run: dict[str, Any]) -> ModelPlan:
    """:func:`plan_model` of a fitted model's Study (both spellings run this).

    ``run``: :func:`~nlpower.study.power_model`'s run options; ``seed``: the
    one seed of every size.
    """
    _check_search(target, n_min, n_max, resolution)
    d = model_design(study.truth)
    pilot = int(d.data[along].nunique()) if along in d.data.columns else 0
    if pilot == 0:
        d.extend(along, n=1)        # the extension's own error for an unknown column
    keywords = power_keywords(study)
    _refuse_zero_truth(d, keywords)
    evaluated: dict[int, ModelPowerResult] = {}

    def at(n: int) -> float:
        if n not in evaluated:
            evaluated[n] = power_model(d.extend(along, n=n), rng=seed, **keywords, **run)
        return evaluated[n].power if not math.isnan(evaluated[n].power) else \
            evaluated[n].rejection_rate

    lo, hi = n_min - 1, None                     # lo: a size known (or assumed) below target
    n = min(max(pilot, n_min), n_max)
    while hi is None:
        if at(n) >= target:
            hi = n
        elif n >= n_max:
            break
        else:
            lo, n = n, min(2 * n, n_max)
    if hi is None:
        return ModelPlan(along, float(target), None, None, tuple(evaluated.items()), n_max)
    # bisect down to a step of about 5% of the size: finer steps are below the Monte Carlo
    # noise of a power estimate, so they cost simulations without changing the answer
    while hi - lo > max(1, math.ceil(resolution * hi)):
        mid = (lo + hi) // 2
        if at(mid) >= target:
            hi = mid
        else:
            lo = mid
    res = evaluated[hi]
    cost = None
    if cost_per_level is not None or cost_per_row is not None:
        cost = hi * float(cost_per_level or 0.0) + res.nobs * float(cost_per_row or 0.0)
    return ModelPlan(along, float(target), hi, res, tuple(evaluated.items()), n_max, cost)
