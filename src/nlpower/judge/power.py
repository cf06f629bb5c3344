"""Power, MDE and the cheapest design of a paired two-system study with an LLM judge.

Closed form for the PPI++ estimate of the mean difference ``B - A`` with a
crossed rectifier, in the parameters of the paper's model
(:class:`~nlpower.LMMParams`, +-1 coding).  Per item the human contrast has
item x system variance ``V_i = 4 sd_item_slope^2``; the judge's contrast
correlates ``judge_r`` with it (the judge sees output quality, not the
workers), so its variance is ``V_i / judge_r^2`` on the scale where the
covariance is ``V_i``.  With ``n`` labelled items rated by ``k`` workers
each (``n_workers`` distinct, each rating an equal share) and ``N`` items
scored by the judge only,

    Var(lambda) = lambda^2 V_i / (judge_r^2 N)
                  + (V_i - 2 lambda V_i + lambda^2 V_i / judge_r^2) / n
                  + 4 sd_worker_slope^2 / n_workers + 2 sigma^2 / (n k)

minimised at ``lambda* = judge_r^2 / (1 + n / N)`` (PPI++).  ``lambda = 0``
is the human-only analysis.  Only the item part shrinks: the judge cannot
remove the workers' system-specific offsets or the rating noise.  Power is
the normal approximation of the two-sided (or one-sided) Wald test.
``tests/judge/test_power.py`` checks the variance against simulated
:func:`nlpower.judge.fit` estimates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
from scipy import stats

from .._validation import check_int, check_probability, check_real
from ..errors import InputError
from ..params import LMMParams


@dataclass(frozen=True)
class JudgeDesign:
    """Who rates what: ``n_labelled`` items x ``workers_per_item`` humans, ``n_unlabelled`` judge-only.

    ``n_workers`` defaults to ``workers_per_item`` (every worker rates every
    labelled item, the paper's fully crossed design).
    """

    n_labelled: int
    workers_per_item: int
    n_unlabelled: int
    n_workers: int | None = None

    def __post_init__(self) -> None:
        check_int("n_labelled", self.n_labelled, min=2)
        check_int("workers_per_item", self.workers_per_item, min=1)
        check_int("n_unlabelled", self.n_unlabelled, min=0)
        if self.n_workers is not None:
            check_int("n_workers", self.n_workers, min=self.workers_per_item)

    @property
    def workers(self) -> int:
        return self.workers_per_item if self.n_workers is None else self.n_workers

    @property
    def n_ratings(self) -> int:
        """Human ratings (both systems)."""
        return 2 * self.n_labelled * self.workers_per_item

    def cost(self, cost_per_rating: float, cost_per_worker: float,
             cost_per_judge_call: float) -> float:
        judged = 2 * (self.n_labelled + self.n_unlabelled)
        return (cost_per_rating * self.n_ratings + cost_per_worker * self.workers
                + cost_per_judge_call * judged)


def variance(design: JudgeDesign, params: LMMParams, judge_r: float,
             lam: float | None = None) -> tuple[float, float]:
    """(variance of the estimated mean difference, lambda used); ``lam=None``: PPI++'s."""
    p = params.to_coding("sum") if params.coding != "sum" else params
    v_item = 4 * p.sd_item_slope**2
    n, big_n = design.n_labelled, design.n_unlabelled
    rest = 4 * p.sd_worker_slope**2 / design.workers + 2 * p.sigma**2 / (n * design.workers_per_item)
    if big_n == 0 or judge_r == 0:
        lam_ = 0.0
    else:
        lam_ = judge_r**2 / (1 + n / big_n) if lam is None else lam
    v_judge = v_item / judge_r**2 if judge_r > 0 else 0.0
    judge_part = lam_**2 * v_judge / big_n if big_n else 0.0
    rect = (v_item - 2 * lam_ * v_item + lam_**2 * v_judge) / n
    return judge_part + rect + rest, lam_


def _power(diff: float, se: float, alpha: float, alternative: str) -> float:
    if alternative == "two-sided":
        z = stats.norm.ppf(1 - alpha / 2)
        return float(stats.norm.sf(z - abs(diff) / se) + stats.norm.cdf(-z - abs(diff) / se))
    z = stats.norm.ppf(1 - alpha)
    sign = 1.0 if alternative == "greater" else -1.0
    return float(stats.norm.sf(z - sign * diff / se))


@dataclass(frozen=True)
class JudgePower:
    """Power of a design with and without the judge.

    Attributes
    ----------
    power, se, lam : with the judge (PPI++).
    power_human, se_human : the same human ratings without the judge.
    mean_difference : the effect (B - A) the power is for.
    """

    design: JudgeDesign
    mean_difference: float
    power: float
    se: float
    lam: float
    power_human: float
    se_human: float

    def __repr__(self) -> str:
        return (f"JudgePower(power={self.power:.3f} with judge (lambda={self.lam:.2f}), "
                f"{self.power_human:.3f} human only; n_labelled={self.design.n_labelled}, "
                f"k={self.design.workers_per_item}, N={self.design.n_unlabelled})")


def _check(params: LMMParams, judge_r: float, alpha: float) -> tuple[float, float]:
    if not isinstance(params, LMMParams):
        raise InputError(f"params must be LMMParams (e.g. nlpower.agreement.elicit(...) or a "
                         f"preset); got {type(params).__name__}.")
    return (check_real("judge_r", judge_r, min=0.0, max=1.0, max_open=True),
            check_probability("alpha", alpha))


def judge_power(design: JudgeDesign, params: LMMParams, *, judge_r: float, alpha: float = 0.05,
                alternative: str = "two-sided") -> JudgePower:
    """Closed-form power of the PPI++ test of ``B - A`` (and of the human-only test).

    Parameters
    ----------
    design : JudgeDesign
    params : LMMParams
        The crossed model; its ``mean_difference`` is the effect.
    judge_r : float
        Correlation between the judge's per-item system difference and the
        true one (the item x system part the humans see), in [0, 1).
    alpha : float, default 0.05
    alternative : {"two-sided", "greater", "less"}

    Examples
    --------
    >>> from nlpower import presets
    >>> d = JudgeDesign(n_labelled=60, workers_per_item=5, n_unlabelled=1000)
    >>> res = judge_power(d, presets.high_variance(effect=0.05), judge_r=0.8)
    >>> res.power > res.power_human
    True
    """
    judge_r, alpha = _check(params, judge_r, alpha)
    diff = params.mean_difference
    v, lam = variance(design, params, judge_r)
    v0, _ = variance(design, params, judge_r, lam=0.0)
    return JudgePower(design, diff, _power(diff, math.sqrt(v), alpha, alternative), math.sqrt(v),
                      lam, _power(diff, math.sqrt(v0), alpha, alternative), math.sqrt(v0))


def judge_mde(design: JudgeDesign, params: LMMParams, *, judge_r: float, target_power: float = 0.8,
              alpha: float = 0.05) -> tuple[float, float]:
    """Minimum detectable mean difference (two-sided), with and without the judge."""
    judge_r, alpha = _check(params, judge_r, alpha)
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(check_probability("target_power",
                                                                         target_power))
    v, _ = variance(design, params, judge_r)
    v0, _ = variance(design, params, judge_r, lam=0.0)
    return float(z * math.sqrt(v)), float(z * math.sqrt(v0))


def _fewest_items(k: int, workers: int, big_n: int, params: LMMParams, judge_r: float,
                  lam0: bool, need_se: float, max_items: int) -> int | None:
    def se(n: int) -> float:
        d = JudgeDesign(n, k, big_n, workers)
        return math.sqrt(variance(d, params, judge_r, lam=0.0 if lam0 else None)[0])
    if se(max_items) > need_se:
        return None
    lo, hi = 2, max_items
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if se(mid) <= need_se else (mid + 1, hi)
    return max(lo, -(-workers // k))  # every worker rates at least one item


def layout(design: JudgeDesign) -> str:
    """Who rates what in words, e.g. ``"1 of 99 workers per item"``.

    Examples
    --------
    >>> layout(JudgeDesign(100, 1, 0, 40)), layout(JudgeDesign(100, 3, 0))
    ('1 of 40 workers per item', 'every worker rates every item (3 workers)')
    """
    k, w = design.workers_per_item, design.workers
    return (f"every worker rates every item ({w} workers)" if k == w
            else f"{k} of {w} workers per item")


def judge_plan(params: LMMParams, *, judge_r: float, n_unlabelled: int = 1000,
               target_power: float = 0.8, alpha: float = 0.05, cost_per_rating: float = 1.0,
               cost_per_worker: float = 0.0, cost_per_judge_call: float = 0.0,
               max_workers_per_item: int = 10, max_workers: int = 100,
               max_items: int = 20000) -> pd.DataFrame:
    """Cheapest design with and without the judge for the same target power.

    For each ``workers_per_item`` ``k`` and number of workers ``W >= k`` the
    fewest labelled items reaching the power is found (bisection on the
    closed-form SE), and the cheapest design under ``cost_per_rating *
    ratings + cost_per_worker * W + cost_per_judge_call * judged outputs``
    kept (each worker rates at least one item).  Workers' system-specific
    offsets (``sd_worker_slope``) set a floor ``4 sd_worker_slope^2 /
    n_workers`` on the variance that no number of items removes, so the
    worker range matters.  Returns two rows, ``"with judge"`` and ``"human only"``, with the
    ratings and cost saved in the first; the ``layout`` column says who rates what (each
    item by ``k`` of the ``W`` workers), which is seldom the fully crossed design of
    :func:`nlpower.plan` (every worker rates every item): the two plans' costs differ by
    their layouts.

    Examples
    --------
    >>> from nlpower import presets
    >>> tab = judge_plan(presets.high_variance(effect=0.1), judge_r=0.8, max_workers=20)
    >>> bool(tab.loc["with judge", "n_ratings"] < tab.loc["human only", "n_ratings"])
    True
    """
    judge_r, alpha = _check(params, judge_r, alpha)
    diff = params.mean_difference
    if diff == 0:
        raise InputError("params.effect must be non-zero: a plan needs an effect to detect.")
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(check_probability("target_power",
                                                                         target_power))
    need = abs(diff) / z
    rows: dict[str, dict[str, Any]] = {}
    for label, lam0, big_n in (("with judge", False, n_unlabelled), ("human only", True, 0)):
        best: tuple[float, JudgeDesign] | None = None
        for k in range(1, max_workers_per_item + 1):
            for w in range(k, max(k, max_workers) + 1):
                n = _fewest_items(k, w, big_n, params, judge_r, lam0, need, max_items)
                if n is None:
                    continue
                d = JudgeDesign(n, k, big_n, w)
                c = d.cost(cost_per_rating, cost_per_worker, cost_per_judge_call if big_n else 0)
                if best is None or c < best[0]:
                    best = (c, d)
        if best is None:
            raise InputError(f"no design with at most {max_items} items reaches power "
                             f"{target_power} ({label}); raise max_items or max_workers.")
        c, d = best
        v, lam = variance(d, params, judge_r, lam=0.0 if lam0 else None)
        rows[label] = {"layout": layout(d), "n_labelled": d.n_labelled, "workers_per_item": d.workers_per_item,
                       "n_workers": d.workers, "n_unlabelled": d.n_unlabelled,
                       "n_ratings": d.n_ratings, "cost": c, "lambda": lam,
                       "power": _power(diff, math.sqrt(v), alpha, "two-sided")}
    tab = pd.DataFrame.from_dict(rows, orient="index")
    human = rows["human only"]
    tab["ratings_saved"] = [human["n_ratings"] - r["n_ratings"] for r in rows.values()]
    tab["cost_saved"] = [human["cost"] - r["cost"] for r in rows.values()]
    return tab
