"""Simulated Type I, power and expected cost of a crossed rating study bought in batches of items.

The study is a :class:`~nlpower.CrossedDesign` at its largest (every worker
rates every item it is given); look ``k`` sees the first ``m_k`` items, all
their ratings.  Each replicate draws the full data once
(:func:`nlpower.simulation.simulate`), then at each look refits the crossed
mixed model on the items so far (structure built once per look, the
response swapped per replicate: the engine behind :func:`nlpower.lmer`; on a
fully crossed design with the default maximal model, the exact balanced
fitter, all replicates at once),
turns the effect's Satterthwaite t statistic into a z statistic with the
same one-sided p-value, and compares it with the look's boundaries.  The
planned information fractions are the item fractions ``m_k / m_K``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..design import CrossedDesign
from ..montecarlo import MonteCarloSummary
from .design import GroupSequentialDesign
from .outcomes import LookStatistics, gaussian_balanced, look_statistics, outcome_of

__all__ = ["SequentialPowerResult", "SequentialProblem", "look_items", "statistics_at", "with_effect"]

RESULT_COLUMNS = ("power", "ci_low", "ci_high", "se", "rejection_rate", "fixed_power", "fixed_rejection_rate",
                  "expected_items", "max_items", "expected_ratings", "max_ratings",
                  "stop_efficacy", "stop_futility", "n_failed", "n_sims")


def look_items(n_items: int, fractions: np.ndarray) -> np.ndarray:
    """Items seen at each look: ``round(n_items * t_k)``, at least 1, the last all."""
    m = np.maximum(np.rint(n_items * np.asarray(fractions)).astype(int), 1)
    m[-1] = n_items
    return m


@dataclass(frozen=True)
class SequentialPowerResult:
    """One effect's simulated operating characteristics (:func:`sequential_power`).

    ``mc`` counts rejections of the sequential test (with the effect's sign);
    ``fixed`` those of a single look at all items with the same statistic at
    level alpha, on the same replicates.  Costs are averages over replicates of
    the items and ratings bought before stopping.
    """

    mc: MonteCarloSummary
    fixed: MonteCarloSummary
    expected_items: float
    max_items: int
    expected_ratings: float
    max_ratings: int
    stop_efficacy: tuple[float, ...]
    stop_futility: tuple[float, ...]
    n_failed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        ci = self.mc.ci
        return {"power": self.mc.power, "ci_low": ci.low, "ci_high": ci.high, "se": self.mc.se,
                "type_m": self.mc.type_m, "type_s": self.mc.type_s,
                "rejection_rate": self.mc.rejection_rate, "fixed_power": self.fixed.power,
                "fixed_rejection_rate": self.fixed.rejection_rate,
                "expected_items": self.expected_items, "max_items": self.max_items,
                "expected_ratings": self.expected_ratings, "max_ratings": self.max_ratings,
                "stop_efficacy": list(self.stop_efficacy), "stop_futility": list(self.stop_futility),
                "n_failed": self.n_failed, "n_sims": self.mc.n_sims, "effect": self.mc.effect,
                "mc": {**self.mc.to_record(), "type_m": _none(self.mc.type_m)},
                "fixed": {**self.fixed.to_record(), "type_m": _none(self.fixed.type_m)}}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SequentialPowerResult:
        effect = float(record["effect"])
        mc = MonteCarloSummary.from_record(record["mc"], effect=effect)
        fixed = MonteCarloSummary.from_record(record["fixed"], effect=effect)
        if mc is None or fixed is None:
            raise ValueError("a sequential power record without its Monte Carlo counts")
        return cls(mc, fixed, float(record["expected_items"]), int(record["max_items"]),
                   float(record["expected_ratings"]), int(record["max_ratings"]),
                   tuple(record["stop_efficacy"]), tuple(record["stop_futility"]),
                   int(record["n_failed"]))

    def summary(self) -> str:
        return (f"sequential: power {self.mc.power:.3f}, rejection rate {self.mc.rejection_rate:.4f} "
                f"({self.mc.n_sims} replicates); fixed design: rejection rate "
                f"{self.fixed.rejection_rate:.4f}; expected items {self.expected_items:.1f} of "
                f"{self.max_items}")

    def __repr__(self) -> str:
        return (f"SequentialPowerResult(rejection_rate={self.mc.rejection_rate:.4f}, "
                f"expected_items={self.expected_items:.1f}/{self.max_items})")


def _none(v: float) -> float | None:
    return None if math.isnan(v) else v


def _z_from_t(t: float, df: float) -> float:
    """The z with the same one-sided p-value as ``t`` on ``df`` degrees of freedom."""
    if not (math.isfinite(t) and math.isfinite(df) and df > 0):
        return math.nan
    return float(stats.norm.isf(stats.t.sf(t, df)))


@dataclass(frozen=True)
class SequentialProblem:
    """A group-sequential crossed rating study as a grid problem (axis: ``effect``)."""

    design: CrossedDesign
    params: Any
    boundaries: GroupSequentialDesign
    formula: str
    n_sims: int = 500
    #: the analysis of the ratings: "lmm" (Gaussian and Likert), "clmm" (Likert), "glmer"
    analysis: str = "lmm"

    name = "sequential"
    result_columns = RESULT_COLUMNS

    def fingerprint(self) -> dict[str, Any]:
        out = {"design": repr(self.design), "params": repr(self.params), "formula": self.formula,
               "boundaries": repr(self.boundaries), "futility": None if self.boundaries.futility is None
               else self.boundaries.futility.tolist(), "n_sims": self.n_sims}
        return out if outcome_of(self.params) == "gaussian" else {**out, "analysis": self.analysis}

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> SequentialPowerResult:
        effect = float(key["effect"])
        params = with_effect(self.params, effect)
        n_items = look_items(self.design.n_items, self.boundaries.information_rates)
        looks = statistics_at(self.design, params, self.formula, self.analysis, n_items,
                              self.n_sims, rng)
        return _operating(looks, self.boundaries, n_items, int(self.design.n_items))

    def from_record(self, record: Mapping[str, Any]) -> SequentialPowerResult:
        return SequentialPowerResult.from_record(record)


def with_effect(params: Any, effect: float) -> Any:
    """``params`` with its effect replaced (latent scale for Likert, logit for head-to-head)."""
    return (params.with_effect(effect) if hasattr(params, "with_effect")
            else dataclasses.replace(params, effect=effect))


def statistics_at(design: CrossedDesign, params: Any, formula: str, analysis: str,
                  items: np.ndarray, n_sims: int, rng: np.random.SeedSequence) -> LookStatistics:
    """Every replicate's estimate and z after the first ``items[k]`` items (the looks).

    Each replicate is drawn once at the full ``design`` from ``rng``; the
    looks analyse prefixes of it, so any set of looks sees the same data.
    """
    if not (analysis == "lmm" and outcome_of(params) == "gaussian"):
        return look_statistics(design, params, items, analysis, n_sims, rng)
    from ..powersim.models import design_formula
    from ..powersim.replicate import balanced_exact
    from ..simulation import simulate

    sims = simulate(design, params, n_sims=n_sims, rng=rng)
    if isinstance(sims, pd.DataFrame):           # one replicate
        layout, ys = sims.drop(columns="rating"), sims["rating"].to_numpy()[None, :]
    else:
        layout, ys = sims.layout, sims.y
    if balanced_exact(design, params) is None and formula == design_formula(design, params):
        return gaussian_balanced(design, params, ys, items)
    return _gaussian_general(layout, ys, formula, items, float(params.effect))


def _gaussian_general(layout: pd.DataFrame, ys: np.ndarray, formula: str, items: np.ndarray,
                      truth: float) -> LookStatistics:
    """Refit ``formula`` per replicate and look (structure built once per look; REML, Satterthwaite)."""
    from ..lmm import get_engine
    from ..lmm.frame import model_frame

    levels = pd.unique(layout["item"])
    looks = []
    for mk in items:
        rows = np.flatnonzero(layout["item"].isin(levels[:mk]).to_numpy())
        spec = model_frame(formula, layout.iloc[rows].assign(rating=ys[0][rows]).reset_index(drop=True))
        model = get_engine("native").prepare(spec)
        contrast = np.zeros(spec.X.shape[1])
        contrast[list(spec.fixef_names).index("x")] = 1.0
        looks.append((rows, model, contrast))
    est, z = np.zeros((len(ys), len(looks))), np.zeros((len(ys), len(looks)))
    for r, y in enumerate(ys):
        for k, (rows, model, contrast) in enumerate(looks):
            core = model.refit(y[rows], REML=True)
            b, se = float(contrast @ core.beta), float(np.sqrt(contrast @ core.vcov_beta @ contrast))
            est[r, k] = b
            z[r, k] = _z_from_t(b / se, float(model.satterthwaite_df(core, contrast)))
    return LookStatistics(est, z, truth, np.array([rows.size for rows, _, _ in looks]))


def _operating(looks: LookStatistics, boundaries: GroupSequentialDesign, n_items: np.ndarray,
               max_items: int) -> SequentialPowerResult:
    """Stop every replicate at its first boundary crossed; the single look at all items beside.

    A look whose statistic could not be computed (a failed fit) counts as
    ``z = 0`` (no rejection) and the replicate as failed.
    """
    upper, lower, sided = boundaries.efficacy, boundaries.futility, boundaries.sided
    crit = stats.norm.isf(boundaries.alpha / sided)
    n, k_last = looks.z.shape[0], looks.z.shape[1] - 1
    est, sig = np.zeros(n), np.zeros(n, dtype=bool)
    items, ratings = np.zeros(n), np.zeros(n)
    eff_stop, fut_stop = np.zeros(k_last + 1), np.zeros(k_last + 1)
    failed = 0
    for r in range(n):
        for k in range(k_last + 1):
            z = float(looks.z[r, k])
            if not math.isfinite(z):
                failed += 1 if k == 0 or math.isfinite(float(looks.z[r, :k].sum())) else 0
                z = 0.0
            reject = abs(z) >= upper[k] if sided == 2 else z >= upper[k]
            futile = lower is not None and z <= lower[k] and not reject
            if reject or futile or k == k_last:
                est[r], sig[r] = looks.estimate[r, k], reject
                items[r], ratings[r] = n_items[k], looks.ratings[k]
                eff_stop[k] += reject
                fut_stop[k] += futile
                break
    z_all = np.nan_to_num(looks.z[:, k_last], nan=0.0)
    fsig = (np.abs(z_all) if sided == 2 else z_all) >= crit
    return SequentialPowerResult(
        MonteCarloSummary.from_draws(est, sig, effect=looks.truth),
        MonteCarloSummary.from_draws(looks.estimate[:, k_last], fsig, effect=looks.truth),
        float(items.mean()), max_items, float(ratings.mean()), int(looks.ratings[k_last]),
        tuple(eff_stop / n), tuple(fut_stop / n), failed)
