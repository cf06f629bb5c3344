"""Simulated Type I, power and expected cost of a crossed rating study bought in batches of items.

The study is a :class:`~nlpower.CrossedDesign` at its largest (every worker
rates every item it is given); look ``k`` sees the first ``m_k`` items, all
their ratings.  Each replicate draws the full data once
(:func:`nlpower.simulation.simulate`), then at each look refits the crossed
mixed model on the items so far (structure built once per look, the
response swapped per replicate: the engine behind :func:`nlpower.lmer`),
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

__all__ = ["SequentialPowerResult", "SequentialProblem", "look_items"]

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


def _z_from_t(t: float, df: float, sided: int) -> float:
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

    name = "sequential"
    result_columns = RESULT_COLUMNS

    def fingerprint(self) -> dict[str, Any]:
        return {"design": repr(self.design), "params": repr(self.params), "formula": self.formula,
                "boundaries": repr(self.boundaries), "futility": None if self.boundaries.futility is None
                else self.boundaries.futility.tolist(), "n_sims": self.n_sims}

    def _looks(self, layout: pd.DataFrame, ys0: np.ndarray) -> list[tuple[np.ndarray, Any, np.ndarray]]:
        from ..lmm import get_engine
        from ..lmm.frame import model_frame

        items = pd.unique(layout["item"])
        m = look_items(len(items), self.boundaries.information_rates)
        looks = []
        for mk in m:
            rows = np.flatnonzero(layout["item"].isin(items[:mk]).to_numpy())
            spec = model_frame(self.formula, layout.iloc[rows].assign(rating=ys0[rows]).reset_index(drop=True))
            model = get_engine("native").prepare(spec)
            col = list(spec.fixef_names).index("x")
            contrast = np.zeros(spec.X.shape[1])
            contrast[col] = 1.0
            looks.append((rows, model, contrast))
        return looks

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> SequentialPowerResult:
        from ..simulation import simulate

        effect = float(key["effect"])
        params = dataclasses.replace(self.params, effect=effect)
        sims = simulate(self.design, params, n_sims=self.n_sims, rng=rng)
        if isinstance(sims, pd.DataFrame):           # one replicate
            layout, ys = sims.drop(columns="rating"), sims["rating"].to_numpy()[None, :]
        else:
            layout, ys = sims.layout, sims.y
        looks = self._looks(layout, ys[0])
        upper, lower, sided = self.boundaries.efficacy, self.boundaries.futility, self.boundaries.sided
        crit = stats.norm.isf(self.boundaries.alpha / sided)
        est, sig, fest, fsig = (np.zeros(len(ys)) for _ in range(4))
        items, ratings = np.zeros(len(ys)), np.zeros(len(ys))
        eff_stop, fut_stop = np.zeros(len(looks)), np.zeros(len(looks))
        failed = 0
        n_items = look_items(self.design.n_items, self.boundaries.information_rates)
        for r, y in enumerate(ys):
            stopped = False
            for k, (rows, model, contrast) in enumerate(looks):
                core = model.refit(y[rows], REML=True)
                b, se = float(contrast @ core.beta), float(np.sqrt(contrast @ core.vcov_beta @ contrast))
                z = _z_from_t(b / se, float(model.satterthwaite_df(core, contrast)), sided)
                if not math.isfinite(z):
                    failed += int(not stopped)
                    z = 0.0
                reject = abs(z) >= upper[k] if sided == 2 else z >= upper[k]
                futile = lower is not None and z <= lower[k] and not reject
                if not stopped and (reject or futile or k == len(looks) - 1):
                    stopped = True
                    est[r], sig[r] = b, reject
                    items[r], ratings[r] = n_items[k], rows.size
                    eff_stop[k] += reject
                    fut_stop[k] += futile
                if k == len(looks) - 1:
                    fest[r], fsig[r] = b, (abs(z) if sided == 2 else z) >= crit
        n = len(ys)
        return SequentialPowerResult(
            MonteCarloSummary.from_draws(est, sig.astype(bool), effect=effect),
            MonteCarloSummary.from_draws(fest, fsig.astype(bool), effect=effect),
            float(items.mean()), int(self.design.n_items), float(ratings.mean()),
            int(looks[-1][0].size), tuple(eff_stop / n), tuple(fut_stop / n), failed)

    def from_record(self, record: Mapping[str, Any]) -> SequentialPowerResult:
        return SequentialPowerResult.from_record(record)
