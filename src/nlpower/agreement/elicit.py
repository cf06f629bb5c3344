"""Variance components for a power study from a target agreement.

A planner without a pilot often knows "annotators agree at about alpha = 0.6".
In the two-system crossed model (Card et al. 2020, eq. 5-10; +-1 coding) the
random part of one output's rating splits into

    target (item) variance   T = sd_item^2 + sd_item_slope^2
    worker variance          W = sd_worker^2 + sd_worker_slope^2
    residual variance        E = sigma^2

and the agreement measures are functions of them: Krippendorff's interval
alpha over units = outputs tends to ``T / (T + W + E)`` (its observed
disagreement estimates ``2 (W + E)``, its expected one ``2 (T + W + E)``),
which is ``ICC(A,1)``; ``ICC(C,1) = T / (T + E)`` (consistency: the workers'
offsets do not count); the ``k``-rater forms follow by Spearman-Brown.
An agreement fixes one ratio; the rest is a stated, changeable
:class:`AgreementSplit` (by default the shares of the paper's high-variance
scenario, Table 16) and a total SD (by default that scenario's).  System
mean differences (the fixed effect) are left out: alpha computed on data
with a large effect is slightly higher than the model's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from .._validation import check_int, check_probability, check_real
from ..errors import InputError
from ..params import LMMParams

Measure = Literal["alpha", "ICC(A,1)", "ICC(C,1)", "ICC(A,k)", "ICC(C,k)"]
MEASURES = ("alpha", "ICC(A,1)", "ICC(C,1)", "ICC(A,k)", "ICC(C,k)")


@dataclass(frozen=True)
class AgreementSplit:
    """How the variance is shared out, apart from the ratio the agreement fixes.

    Attributes
    ----------
    item_slope_share : float
        Share of the item (target) variance that is item x system
        (``sd_item_slope^2 / T``).
    worker_share : float
        Share of the non-target variance from workers (``W / (W + E)``).
    worker_slope_share : float
        Share of the worker variance that is worker x system
        (``sd_worker_slope^2 / W``).
    """

    item_slope_share: float = 0.5
    worker_share: float = 0.2
    worker_slope_share: float = 0.5

    def __post_init__(self) -> None:
        for name in ("item_slope_share", "worker_share", "worker_slope_share"):
            check_probability(name, getattr(self, name), open=False)
        if self.worker_share >= 1:
            raise InputError("worker_share must be < 1: the residual (rating noise) needs some "
                             "variance; got 1.")

    @classmethod
    def from_params(cls, params: LMMParams) -> AgreementSplit:
        """The split of existing parameters (e.g. a preset or a pilot's ``to_params()``)."""
        t = params.sd_item**2 + params.sd_item_slope**2
        w = params.sd_worker**2 + params.sd_worker_slope**2
        return cls(params.sd_item_slope**2 / t if t > 0 else 0.5,
                   w / (w + params.sigma**2),
                   params.sd_worker_slope**2 / w if w > 0 else 0.5)


def _high_variance() -> LMMParams:
    from ..presets import high_variance

    return high_variance()


def default_split() -> AgreementSplit:
    """The split of the paper's high-variance scenario (Table 16)."""
    return AgreementSplit.from_params(_high_variance())


def total_variance(params: LMMParams) -> float:
    """``T + W + E`` of one output's rating."""
    return sum(v**2 for v in params.sds.values())


def _single_rater(value: float, measure: str, k: float | None) -> float:
    if measure.endswith("k)"):
        if k is None:
            raise InputError(f"measure={measure!r} averages k raters; pass k (e.g. k=3).")
        return value / (k - (k - 1) * value)
    return value


def implied_agreement(params: LMMParams, measure: Measure = "alpha", *,
                      k: float | None = None) -> float:
    """The agreement a parameter set implies (the inverse of :func:`elicit`).

    Examples
    --------
    >>> from nlpower import presets
    >>> round(implied_agreement(presets.high_variance()), 3)
    0.21
    """
    if measure not in MEASURES:
        raise InputError(f"measure must be one of {', '.join(map(repr, MEASURES))}; got {measure!r}.")
    t = params.sd_item**2 + params.sd_item_slope**2
    w = params.sd_worker**2 + params.sd_worker_slope**2
    e = params.sigma**2
    err = e if measure.startswith("ICC(C") else w + e
    kk = 1.0 if not measure.endswith("k)") else check_real("k", k if k is not None else math.nan,
                                                          min=1.0)
    return t / (t + err / kk)


def elicit(agreement: float, *, measure: Measure = "alpha", k: float | None = None,
           total_sd: float | None = None, split: AgreementSplit | None = None,
           effect: float = 0.0, beta0: float = 0.5) -> LMMParams:
    """Variance components (as :class:`~nlpower.LMMParams`) from a target agreement.

    Parameters
    ----------
    agreement : float
        Target agreement in (0, 1).
    measure : {"alpha", "ICC(A,1)", "ICC(C,1)", "ICC(A,k)", "ICC(C,k)"}
        ``"alpha"`` is Krippendorff's interval alpha (= ``ICC(A,1)`` in the
        model; module docstring).
    k : float, optional
        Raters averaged, for the ``k`` forms.
    total_sd : float, optional
        SD of one rating's random part, ``sqrt(T + W + E)``, on the scale the
        effect is given in (default: the paper's high-variance scenario's,
        about 0.32 on the [0, 1] scale).
    split : AgreementSplit, optional
        Item/worker/slope shares (default: those of the high-variance scenario).
    effect, beta0 : float
        Fixed effects (+-1 coding: ``effect`` is half the mean difference).

    Returns
    -------
    LMMParams

    Examples
    --------
    >>> p = elicit(0.6)
    >>> round(implied_agreement(p), 6)
    0.6
    >>> p2 = elicit(0.6, split=AgreementSplit(worker_share=0.5))
    >>> p2.sd_worker_slope > p.sd_worker_slope
    True
    """
    rho = check_probability("agreement", agreement)
    if measure not in MEASURES:
        raise InputError(f"measure must be one of {', '.join(map(repr, MEASURES))}; got {measure!r}.")
    if k is not None:
        k = check_real("k", k, min=1.0)
    sp = default_split() if split is None else split
    if not isinstance(sp, AgreementSplit):
        raise InputError(f"split must be an AgreementSplit; got {type(sp).__name__}.")
    var = (math.sqrt(total_variance(_high_variance())) if total_sd is None else
           check_real("total_sd", total_sd, min=0.0, min_open=True)) ** 2
    rho1 = _single_rater(rho, measure, k)
    if measure.startswith("ICC(C"):
        a = 1 - sp.worker_share
        t = rho1 * a * var / (1 - rho1 * sp.worker_share)
    else:
        t = rho1 * var
    rest = var - t
    w = sp.worker_share * rest
    return LMMParams(beta0=beta0, effect=effect,
                     sd_worker=math.sqrt((1 - sp.worker_slope_share) * w),
                     sd_worker_slope=math.sqrt(sp.worker_slope_share * w),
                     sd_item=math.sqrt((1 - sp.item_slope_share) * t),
                     sd_item_slope=math.sqrt(sp.item_slope_share * t),
                     sigma=math.sqrt((1 - sp.worker_share) * rest), coding="sum")


_MEASURE_WORDS = {"alpha": "Krippendorff's interval alpha, = ICC(A,1) in the model",
                  "ICC(A,1)": "absolute agreement of one rater",
                  "ICC(C,1)": "consistency of one rater",
                  "ICC(A,k)": "absolute agreement of the mean of k raters",
                  "ICC(C,k)": "consistency of the mean of k raters"}


@dataclass(frozen=True)
class Elicitation:
    """Variance components from a target agreement, with the assumptions that made them.

    Made by :func:`elicitation`; ``params`` goes wherever parameters do
    (:func:`nlpower.power`, :func:`nlpower.plan`, :func:`nlpower.mde`,
    :func:`nlpower.power_grid`, :func:`nlpower.judge.judge_plan`).

    Attributes
    ----------
    agreement : float
        The target agreement.
    measure : str
        What ``agreement`` measures (``"alpha"`` or an ICC form).
    k : float or None
        Raters averaged, for the ``k`` forms.
    total_sd : float
        SD of one rating's random part, ``sqrt(T + W + E)``.
    split : AgreementSplit
        The shares assumed.
    params : LMMParams
        The variance components (and fixed effects) for a power study.
    default_split, default_total_sd : bool
        Whether the split / total SD are the defaults (the paper's
        high-variance scenario's) rather than given.
    """

    agreement: float
    measure: str
    k: float | None
    total_sd: float
    split: AgreementSplit
    params: LMMParams = field(repr=False)
    default_split: bool = True
    default_total_sd: bool = True

    def summary(self) -> str:
        """The agreement, the split and the SDs it gives, in words."""
        sp, p = self.split, self.params
        k = f", k = {self.k:g}" if self.k is not None else ""
        src = " (the paper's high-variance scenario's)"
        lines = [
            f"variance components from {self.measure} = {self.agreement:g}{k} "
            f"({_MEASURE_WORDS[self.measure]}):",
            f"  total SD of one rating {self.total_sd:.4g}{src if self.default_total_sd else ''}",
            f"  split{src if self.default_split else ''}: item x system "
            f"{sp.item_slope_share:.0%} of the item variance, workers {sp.worker_share:.0%} of "
            f"the worker + residual variance, worker x system {sp.worker_slope_share:.0%} of the "
            "worker variance",
            "  " + ", ".join(f"{name} {value:.4g}" for name, value in self.sds.items()),
            f"  implied: alpha {implied_agreement(p):.3f}, ICC(C,1) "
            f"{implied_agreement(p, 'ICC(C,1)'):.3f}{self._own_form()} (a different split "
            "changes the SDs and the budget: state it)",
        ]
        return "\n".join(lines)

    def _own_form(self) -> str:
        if self.measure in ("alpha", "ICC(C,1)"):
            return ""
        value = implied_agreement(self.params, self.measure, k=self.k)  # type: ignore[arg-type]
        return f", {self.measure} {value:.3f}"

    @property
    def sds(self) -> dict[str, float]:
        """The five SDs (``sd_worker`` ... ``sigma``) by name."""
        return {name: float(value) for name, value in self.params.sds.items()}

    def __repr__(self) -> str:
        sp = self.split
        return (f"Elicitation({self.measure}={self.agreement:g}, total_sd={self.total_sd:.3g}, "
                f"split=({sp.item_slope_share:.2f}, {sp.worker_share:.2f}, "
                f"{sp.worker_slope_share:.2f}))")

    def to_frame(self) -> pd.DataFrame:
        """One row: the target, the split and the SDs."""
        return pd.DataFrame([{"agreement": self.agreement, "measure": self.measure, "k": self.k,
                              "total_sd": self.total_sd, **dataclasses.asdict(self.split),
                              **self.sds}])


def elicitation(agreement: float, *, measure: Measure = "alpha", k: float | None = None,
                total_sd: float | None = None, split: AgreementSplit | None = None,
                effect: float = 0.0, beta0: float = 0.5) -> Elicitation:
    """:func:`elicit` with its assumptions kept, for stating them beside a plan.

    Same arguments as :func:`elicit`.

    Examples
    --------
    >>> e = elicitation(0.6, split=AgreementSplit(0.5, 0.2, 0.5))
    >>> print(e.summary().splitlines()[2])
      split: item x system 50% of the item variance, workers 20% of the worker + residual variance, worker x system 50% of the worker variance
    >>> from nlpower import plan
    >>> plan(e.params, effect=0.1, max_workers=20).power >= 0.8
    True
    """
    params = elicit(agreement, measure=measure, k=k, total_sd=total_sd, split=split,
                    effect=effect, beta0=beta0)
    return Elicitation(float(agreement), measure, None if k is None else float(k),
                       math.sqrt(total_variance(params)),
                       default_split() if split is None else split, params,
                       default_split=split is None, default_total_sd=total_sd is None)


def items_needed(agreements: Any = (0.2, 0.4, 0.6, 0.8), effects: Any = (0.05, 0.1, 0.15, 0.2),
                 *, n_workers: int = 10, target_power: float = 0.8, alpha: float = 0.05,
                 measure: Measure = "alpha", k: float | None = None,
                 total_sd: float | None = None, split: AgreementSplit | None = None,
                 max_items: int = 20000) -> pd.DataFrame:
    """Items needed for ``target_power`` against agreement, for the paper's effect sizes.

    Fully crossed paired designs with ``n_workers`` workers (every worker
    rates every item under both systems), analytic power
    (:func:`nlpower.plan` with the workers fixed); ``effects`` are beta1
    under +-1 coding (the paper's grid, 0.05-0.20 on the [0, 1] scale).
    ``NaN``: not reached with ``max_items`` items -- with a fixed set of
    workers the worker x system variance puts a floor under the standard
    error that no number of items removes (:func:`designs_needed` lets the
    number of workers grow instead).

    At a fixed total SD a higher agreement moves variance from the raters to
    the items; with the default split most item variance is item x system,
    which averaging over workers cannot remove, so more items are needed at
    higher agreement.  With an item variance that is mostly shared by the
    systems (``AgreementSplit(item_slope_share=0.1)``) the rater noise matters
    more.  The split is the assumption: state it.

    Examples
    --------
    >>> tab = items_needed((0.5,), (0.2,), n_workers=4)
    >>> tab.shape
    (1, 1)
    """
    n_workers = check_int("n_workers", n_workers, min=2)
    long = designs_needed(agreements, effects, n_workers=n_workers, target_power=target_power,
                          alpha=alpha, measure=measure, k=k, total_sd=total_sd, split=split,
                          max_items=max_items)
    tab = long.pivot(index="agreement", columns="effect", values="n_items").astype(float)
    tab.index.name, tab.columns.name = measure, "effect"
    return tab


def designs_needed(agreements: Any = (0.2, 0.4, 0.6, 0.8),
                   effects: Any = (0.05, 0.1, 0.15, 0.2), *, n_workers: int | None = None,
                   target_power: float = 0.8, alpha: float = 0.05, measure: Measure = "alpha",
                   k: float | None = None, total_sd: float | None = None,
                   split: AgreementSplit | None = None, cost_per_rating: float = 1.0,
                   cost_per_worker: float = 0.0, max_items: int = 20000) -> pd.DataFrame:
    """The cheapest fully crossed design for each agreement and effect (one row each).

    :func:`nlpower.plan` at the variance components :func:`elicit` gives
    (analytic power, paired two-system designs in which every worker rates
    every item).  ``n_workers=None`` lets the plan choose the workers (at the
    default costs: the fewest ratings); an integer fixes them, as
    :func:`items_needed` does.  A cell no design reaches has ``NaN`` sizes.

    Returns
    -------
    DataFrame
        ``agreement, effect, n_workers, n_items, n_ratings, power, cost``.

    Examples
    --------
    >>> tab = designs_needed((0.6,), (0.2,))
    >>> int(tab.n_workers[0] * tab.n_items[0] * 2) == int(tab.n_ratings[0])
    True
    """
    from ..powersim import plan

    fixed = None if n_workers is None else check_int("n_workers", n_workers, min=2)
    rows = []
    for a in agreements:
        p = elicit(a, measure=measure, k=k, total_sd=total_sd, split=split)
        for eff in effects:
            try:
                res = plan(p, effect=eff, target_power=target_power, alpha=alpha,
                           cost_per_rating=cost_per_rating, cost_per_worker=cost_per_worker,
                           max_items=max_items, min_workers=fixed or 2, max_workers=fixed)
                sizes: tuple[float, ...] = (res.n_workers, res.n_items, res.n_ratings, res.power,
                                            res.cost)
            except InputError:
                sizes = (math.nan,) * 5
            rows.append(dict(zip(("agreement", "effect", "n_workers", "n_items", "n_ratings",
                                  "power", "cost"), (a, eff, *sizes), strict=True)))
    return pd.DataFrame(rows)
