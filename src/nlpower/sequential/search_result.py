"""The result of :func:`nlpower.sequential.cheapest_design`: ranking, choice and its confirmation."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..design import CrossedDesign
from ..errors import DesignError
from .design import GroupSequentialDesign

__all__ = ["DesignSearchResult", "candidate_label"]

_SPEND = {"obf": "O'Brien-Fleming type", "pocock": "Pocock type", "hsd": "Hwang-Shih-DeCani"}


def candidate_label(d: GroupSequentialDesign) -> str:
    """``"fixed"``, ``"3 x obf"`` or ``"3 x hsd(-2)"``."""
    if d.looks == 1:
        return "fixed"
    return f"{d.looks} x {d.spending}" + (f"({d.gamma:g})" if d.spending == "hsd" else "")


def _se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.0) / n) if n else math.nan


@dataclass(frozen=True, eq=False)
class DesignSearchResult:
    """The crossed sequential design with the smallest simulated expected cost (:func:`cheapest_design`).

    Attributes
    ----------
    table : DataFrame
        Every (candidate, maximum design) simulated in the search: ``power``
        at the effect, expected ratings (and under the null when simulated),
        ``cost``, ``feasible`` (power at least the target).
    ranking : DataFrame
        One row per candidate at its cheapest feasible maximum design, cheapest first
        (:meth:`to_frame`).
    boundaries : GroupSequentialDesign
        The chosen boundaries (one look: the fixed design).
    design : CrossedDesign
        The chosen maximum design.
    confirmation, fixed_confirmation : GridResult
        :func:`sequential_power` of the chosen design and of the cheapest fixed
        design on fresh replicates, effects 0 and ``effect``.
    """

    table: pd.DataFrame
    ranking: pd.DataFrame
    boundaries: GroupSequentialDesign
    design: CrossedDesign
    fixed_design: CrossedDesign
    confirmation: Any
    fixed_confirmation: Any
    params: Any
    effect: float
    target: float
    weight_null: float
    analysis: str
    n_sims: int
    alpha: float = 0.025
    #: null replicates per maximum design that calibrated every candidate's boundaries (0: none)
    calibrate: int = 0

    @classmethod
    def build(cls, grid: Any, candidates: tuple[GroupSequentialDesign, ...], *, params: Any,
              effect: float, target: float, weight_null: float, analysis: str,
              confirm: Callable[[CrossedDesign, GroupSequentialDesign], Any]) -> DesignSearchResult:
        table = _table(grid, candidates, target, weight_null)
        feasible = table[table["feasible"]]
        if feasible.empty:
            best = table.iloc[int(np.argmax(table["power"].to_numpy()))]
            raise DesignError(
                f"no maximum design searched reaches power {target}: the best is "
                f"{best['candidate']} at {best['n_workers']} workers x {best['n_items']} items "
                f"(power {best['power']:.3f}). Add larger values to items= or workers=.")
        ranking = (feasible.sort_values(["cost", "max_ratings"], kind="stable")
                   .drop_duplicates("candidate").reset_index(drop=True))
        fixed_cost = ranking.loc[ranking["looks"] == 1, "cost"]
        ranking["relative_to_fixed"] = ranking["cost"] / (fixed_cost.iloc[0] if len(fixed_cost) else np.nan)
        top = ranking.iloc[0]
        chosen = _at(candidates[int(top["candidate_index"])], float(top["alpha_spent"]))
        design = CrossedDesign(int(top["n_workers"]), int(top["n_items"]))
        conf = confirm(design, chosen)
        fixed, fixed_conf = design, conf
        if chosen.looks != 1 and len(fixed_cost):
            f = ranking[ranking["looks"] == 1].iloc[0]
            fixed = CrossedDesign(int(f["n_workers"]), int(f["n_items"]))
            fixed_conf = confirm(fixed, _at(candidates[0], float(f["alpha_spent"])))
        n = int(grid.settings.get("n_sims", 0))
        return cls(table, ranking, chosen, design, fixed, conf, fixed_conf, params, effect, target,
                   weight_null, analysis, n, candidates[0].alpha,
                   int(grid.settings.get("calibrate", 0)))

    # -- the confirmed numbers -------------------------------------------------
    def _row(self, grid: Any, effect: float) -> pd.Series:
        frame = grid.to_frame()
        return frame.loc[np.isclose(frame["effect"].astype(float), effect)].iloc[0]

    @property
    def type_i(self) -> float:
        """Rejection rate of the chosen design under the null (fresh replicates)."""
        return float(self._row(self.confirmation, 0.0)["rejection_rate"])

    @property
    def power(self) -> float:
        """Power of the chosen design at the effect (fresh replicates)."""
        return float(self._row(self.confirmation, self.effect)["power"])

    @property
    def expected_ratings(self) -> float:
        """Expected ratings (judgements) bought by the chosen design at the effect."""
        return float(self._row(self.confirmation, self.effect)["expected_ratings"])

    @property
    def fixed_power(self) -> float:
        return float(self._row(self.fixed_confirmation, self.effect)["power"])

    @property
    def fixed_ratings(self) -> int:
        return int(self._row(self.fixed_confirmation, self.effect)["max_ratings"])

    def confirmed(self) -> pd.DataFrame:
        """The chosen and the cheapest fixed design on fresh replicates: Type I, power, costs."""
        rows = []
        for name, grid, d, b in (("chosen", self.confirmation, self.design, self.boundaries),
                                 ("fixed", self.fixed_confirmation, self.fixed_design, None)):
            h0, h1 = self._row(grid, 0.0), self._row(grid, self.effect)
            n = int(h1["n_sims"])
            rows.append({"design": name, "n_workers": d.n_workers, "n_items": d.n_items,
                         "boundaries": "fixed" if b is None else candidate_label(b),
                         "type_i": h0["rejection_rate"],
                         "type_i_se": _se(float(h0["rejection_rate"]), int(h0["n_sims"])),
                         "power": h1["power"], "power_se": _se(float(h1["power"]), n),
                         "expected_ratings_h1": h1["expected_ratings"],
                         "expected_ratings_h0": h0["expected_ratings"],
                         "max_ratings": h1["max_ratings"], "n_sims": n})
        return pd.DataFrame(rows)

    def to_frame(self) -> pd.DataFrame:
        """The ranking: each candidate at its cheapest feasible maximum design, cheapest first."""
        cols = ["candidate", "looks", "spending", "gamma", "n_workers", "n_items", "max_ratings",
                "power", "expected_ratings", "cost", "relative_to_fixed"]
        cols += ["expected_ratings_h0"] if self.weight_null > 0 else []
        return self.ranking[cols + (["alpha_spent"] if self.calibrate else [])].copy()

    def summary(self) -> str:
        c = self.confirmed()
        ch, fx = c.iloc[0], c.iloc[-1]
        head = [f"Cheapest crossed design at power {self.target} (effect {self.effect:g}; "
                f"{self.n_sims} replicates per maximum design in the search):",
                f"  {candidate_label(self.boundaries)} with at most {self.design.n_workers} workers x "
                f"{self.design.n_items} items"
                + (f" (boundaries calibrated to alpha {self.alpha:g}: spending alpha "
                   f"{self.boundaries.alpha:.4f})" if self.calibrate else ""),
                f"  confirmed on {int(ch['n_sims'])} fresh replicates: Type I {ch['type_i']:.4f} "
                f"(SE {ch['type_i_se']:.4f}), power {ch['power']:.3f} (SE {ch['power_se']:.3f}), "
                f"expected ratings {ch['expected_ratings_h1']:.0f} under H1, "
                f"{ch['expected_ratings_h0']:.0f} under H0 (at most {int(ch['max_ratings'])})",
                f"  cheapest fixed design: {fx['n_workers']} workers x {fx['n_items']} items, "
                f"power {fx['power']:.3f}, {int(fx['max_ratings'])} ratings"]
        if ch["power"] < self.target - 2 * ch["power_se"]:
            head.append("  NOTE: the confirmed power is more than 2 SE below the target; "
                        "search with more replicates or larger designs.")
        shown = self.to_frame().drop(columns=["looks", "spending", "gamma"])
        table = shown.to_string(index=False, float_format=lambda v: f"{v:.4g}")
        return "\n".join(head) + "\n\nRanking (search replicates):\n" + table

    def methods(self, format: str = "text") -> str:
        """The paragraph a paper's methods section needs (``"text"`` or ``"latex"``)."""
        from ..arena.result import _latex

        check_choice("format", format, ("text", "latex"))
        c = self.confirmed()
        ch, fx = c.iloc[0], c.iloc[-1]
        b = self.boundaries
        what = ("a single analysis" if b.looks == 1 else
                f"{b.looks} analyses at equally spaced item fractions with "
                f"{_SPEND[b.spending]} alpha spending"
                + (f" (gamma = {b.gamma:g})" if b.spending == "hsd" else "")
                + f" (z boundaries {', '.join(f'{v:.3f}' for v in b.efficacy)})")
        cands = sorted(set(self.table["candidate"]))
        text = (
            f"We chose the design by simulation: for every maximum design of "
            f"{_span(self.table['n_workers'])} workers and {_span(self.table['n_items'])} items "
            f"(every worker rating every item of both systems) we simulated {self.n_sims} studies "
            f"at effect {self.effect:g} (parameters {self.params!r}) and evaluated "
            f"{len(cands)} candidate designs ({', '.join(cands)}) on the same replicates. "
            f"The design with the smallest expected number of ratings among those with simulated "
            f"power at least {self.target:g} was {what} with at most {self.design.n_workers} "
            f"workers and {self.design.n_items} items (one-sided alpha = {self.alpha:g}"
            + (f"; every candidate's boundaries calibrated on {self.calibrate} simulated null "
               f"studies per maximum design to hold it, this one's spending alpha = {b.alpha:.4f}"
               if self.calibrate else "") + "). On "
            f"{int(ch['n_sims'])} fresh simulated studies per effect it rejected the null "
            f"{100 * ch['type_i']:.2f}% of the time under the null (Monte Carlo SE "
            f"{100 * ch['type_i_se']:.2f}%), had power {ch['power']:.3f} (SE {ch['power_se']:.3f}) "
            f"and bought {ch['expected_ratings_h1']:.0f} ratings on average under the alternative "
            f"({ch['expected_ratings_h0']:.0f} under the null, at most {int(ch['max_ratings'])}); "
            f"the cheapest single-analysis design with that power needs "
            f"{int(fx['max_ratings'])} ratings (simulated power {fx['power']:.3f}).")
        return _latex(text) if format == "latex" else text

    def __repr__(self) -> str:
        return (f"DesignSearchResult({candidate_label(self.boundaries)}, {self.design.n_workers} x "
                f"{self.design.n_items}, power={self.power:.3f}, "
                f"expected_ratings={self.expected_ratings:.0f})")


def _at(d: GroupSequentialDesign, alpha: float) -> GroupSequentialDesign:
    """``d`` with its spending function at nominal ``alpha`` (itself when unchanged)."""
    from .calibrate import rebuild

    return d if alpha == d.alpha else rebuild(d, alpha)


def _span(values: Any) -> str:
    v = sorted({int(x) for x in values})
    return str(v[0]) if len(v) == 1 else f"{v[0]} to {v[-1]}"


def _table(grid: Any, candidates: tuple[GroupSequentialDesign, ...], target: float,
           weight_null: float) -> pd.DataFrame:
    """Every (candidate, maximum design) of the search grid, with its cost and feasibility."""
    by_design: dict[tuple[int, int], dict[float, Any]] = {}
    for cell in grid.cells:
        rec = cell.record
        if "candidates" not in rec:
            raise DesignError(f"the search cell {cell.key} failed: {rec.get('error')}")
        key = (int(cell.key["n_workers"]), int(cell.key["n_items"]))
        by_design.setdefault(key, {})[float(cell.key["effect"])] = rec["candidates"]
    rows = []
    for (w, n), by_effect in by_design.items():
        h1 = by_effect[max(by_effect)]
        h0 = by_effect.get(0.0)
        for j, c in enumerate(candidates):
            if h1[j] is None:
                continue
            e1 = float(h1[j]["expected_ratings"])
            e0 = float(h0[j]["expected_ratings"]) if h0 is not None else math.nan
            rows.append({"candidate": candidate_label(c), "candidate_index": j, "looks": c.looks,
                         "spending": None if c.looks == 1 else c.spending,
                         "gamma": c.gamma if c.spending == "hsd" and c.looks > 1 else None,
                         "n_workers": w, "n_items": n, "max_ratings": int(h1[j]["max_ratings"]),
                         "power": float(h1[j]["power"]), "expected_ratings": e1,
                         "expected_ratings_h0": e0,
                         "type_i_search": float(h0[j]["rejection_rate"]) if h0 is not None else math.nan,
                         "cost": e1 if weight_null == 0 else (1 - weight_null) * e1 + weight_null * e0,
                         "alpha_spent": float(h1[j].get("alpha", c.alpha)),
                         "n_failed": int(h1[j]["n_failed"])})
    frame = pd.DataFrame(rows)
    frame["feasible"] = frame["power"] >= target
    return frame
