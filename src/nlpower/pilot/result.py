"""Results of the pilot-based planners: :class:`AssuranceResult`, :class:`PilotPlanResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..intervals import ConfidenceInterval
from ..powersim import PlanResult

__all__ = ["AssuranceResult", "PilotPlanResult", "plan_notes", "summarise_powers"]

_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)

def _effect_scale(a: Any) -> str:
    """What the effect is measured in, for a summary's first line."""
    if getattr(a, "outcome", None) == "preference":
        return "logit of the share preferring B"
    if getattr(a, "outcome", None) == "likert":
        return f"latent scale, {a.coding} coding"
    return f"{a.coding} coding"


def summarise_powers(p_draws: np.ndarray, target_power: float) -> dict[str, Any]:
    """Assurance (mean), its Monte Carlo SE and interval, quantiles and ``prob_target`` of draws."""
    n = len(p_draws)
    mean = float(p_draws.mean())
    se = float(p_draws.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    qs = np.quantile(p_draws, _QUANTILES)
    return {"assurance": mean, "se": se,
            "ci": ConfidenceInterval(max(0.0, mean - 1.96 * se), min(1.0, mean + 1.96 * se)),
            "quantiles": dict(zip(_QUANTILES, qs.tolist(), strict=True)),
            "prob_target": float(np.mean(p_draws >= target_power))}



def plan_notes(point: PlanResult, safeguard: PlanResult | None) -> str:
    """The two plans' notes (few workers, caps, SDs set to 0), each once, as one paragraph."""
    seen: dict[str, list[str]] = {}
    for name, pl in (("point", point), ("safeguard", safeguard)):
        for n in () if pl is None else pl.notes:
            seen.setdefault(n, []).append(name)
    out = ""
    for n, names in seen.items():
        who = "" if len(names) == 2 or safeguard is None else f"the {names[0]} plan: "
        text = who + n
        out += f" {text[0].upper()}{text[1:]}"
    return out


@dataclass(frozen=True)
class AssuranceResult:
    """Power of a design at a pilot's estimates and over its sampling distribution.

    Attributes
    ----------
    power : float
        Power at the pilot's point estimates: analytic for a Gaussian pilot
        (what ``analytic_power`` gives for ``as_params(fit, effect=...)``),
        simulated with ``point_sims`` replicates for an ordinal or binary one.
    assurance : float
        Mean power over the ``n_boot`` draws of the variance components.
    se, ci : float, ConfidenceInterval
        Monte Carlo SE of ``assurance`` and its 95% normal interval.
    quantiles : dict
        Quantiles (5%, 25%, 50%, 75%, 95%) of power over the draws.
    prob_target : float
        Share of draws under which the design reaches ``target_power``.
    safeguard_power : float
        Power at the upper ``confidence_level`` bounds of the variances.
    sd_point, sd_upper : dict
        Point estimates and upper bounds of the SDs (+-1 scale, sum coding;
        latent or logit scale for ordinal and binary pilots).
    effect, coding : the effect planned for (the user's, never the pilot's).
    power_draws : ndarray
        Power under each draw (``to_frame()`` has the draws' SDs as well).
    n_sims : int
        Replicates per draw when power was simulated, 0 when analytic.
    outcome, analysis : str
        The planned outcome (``"gaussian"``, ``"likert"``, ``"preference"``)
        and its analysis (``"lmm"``, ``"clmm"``, ``"glmer"``).
    """

    power: float
    assurance: float
    se: float
    ci: ConfidenceInterval
    quantiles: dict[float, float]
    prob_target: float
    safeguard_power: float
    sd_point: dict[str, float]
    sd_upper: dict[str, float]
    effect: float
    coding: str
    target_power: float
    confidence_level: float
    design: str
    pilot: str
    test: str
    alpha: float
    alternative: str
    method: str
    n_boot: int
    n_sims: int
    seed: dict[str, Any] = field(repr=False)
    version: str = field(default=__version__, repr=False)
    power_draws: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    sd_draws: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)), repr=False)
    outcome: str = "gaussian"
    analysis: str = "lmm"
    point_sims: int = 0

    def __repr__(self) -> str:
        return (f"AssuranceResult(power={self.power:.3f}, assurance={self.assurance:.3f}, "
                f"safeguard_power={self.safeguard_power:.3f}, method={self.method!r}, "
                f"n_boot={self.n_boot})")

    def summary(self) -> str:
        q = self.quantiles
        w = max(15, *map(len, self.sd_point))
        pw = "analytic" if self.n_sims == 0 else f"simulated, {self.n_sims} replicates per draw"
        at = "" if self.point_sims == 0 else f" (simulated, {self.point_sims} replicates)"
        lines = [
            f"Assurance of {self.design} for effect {self.effect:g} ({_effect_scale(self)}), "
            f"test {self.test!r} ({self.alternative}, alpha {self.alpha:g}); pilot {self.pilot}",
            f"  power at the pilot's estimates{at}: {self.power:.3f}",
            f"  assurance (mean power, {self.method}, {self.n_boot} draws, {pw}): "
            f"{self.assurance:.3f} (MC SE {self.se:.3f})",
            f"  power quantiles over the draws:     5% {q[0.05]:.3f}  25% {q[0.25]:.3f}  "
            f"50% {q[0.5]:.3f}  75% {q[0.75]:.3f}  95% {q[0.95]:.3f}",
            f"  P(power >= {self.target_power:g}) over the draws: {self.prob_target:.2f}",
            f"  safeguard power (SDs at their upper {self.confidence_level:.0%} bounds): "
            f"{self.safeguard_power:.3f}",
            "  SD" + " " * (w - 3) + "estimate  upper bound",
        ]
        for k in self.sd_point:
            lines.append(f"  {k:<{w}} {self.sd_point[k]:8.4f}  {self.sd_upper[k]:8.4f}")
        return "\n".join(lines)

    def methods(self, format: str = "text") -> str:
        """The paragraph a paper's methods section needs (``"text"`` or ``"latex"``).

        The pilot and its variance components, power at its estimates,
        assurance with its Monte Carlo error, and safeguard power
        (:func:`nlpower.methods.assurance_methods`).
        """
        from ..methods import assurance_methods
        return assurance_methods(self, format=format)

    def to_frame(self) -> pd.DataFrame:
        """One row per draw: the SDs (as ``sd_point``) and the design's power."""
        df = pd.DataFrame(np.sqrt(np.clip(self.sd_draws, 0.0, None)), columns=list(self.sd_point))
        df["power"] = self.power_draws
        return df

    def to_record(self) -> dict[str, Any]:
        """Flat, JSON-able summary (no per-draw arrays)."""
        rec: dict[str, Any] = {
            "power": self.power, "assurance": self.assurance, "se": self.se,
            "ci_low": self.ci.low, "ci_high": self.ci.high, "prob_target": self.prob_target,
            "safeguard_power": self.safeguard_power, "effect": self.effect, "coding": self.coding,
            "target_power": self.target_power, "confidence_level": self.confidence_level,
            "design": self.design, "pilot": self.pilot, "test": self.test, "alpha": self.alpha,
            "alternative": self.alternative, "method": self.method, "n_boot": self.n_boot,
            "n_sims": self.n_sims, "outcome": self.outcome, "analysis": self.analysis,
            "point_sims": self.point_sims, "version": self.version,
        }
        rec.update({f"q{int(round(100 * k)):02d}": v for k, v in self.quantiles.items()})
        rec.update({f"{k}_point": v for k, v in self.sd_point.items()})
        rec.update({f"{k}_upper": v for k, v in self.sd_upper.items()})
        return rec


@dataclass(frozen=True)
class PilotPlanResult:
    """The cheapest design at a pilot's estimates and the safeguard design.

    Attributes
    ----------
    point : PlanResult
        Cheapest design reaching ``target_power`` at the point estimates.
    safeguard : PlanResult or None
        Cheapest design reaching it at the upper ``confidence_level`` bounds of
        the SDs (None when no design in the searched range does; see ``note``).
    point_assurance, safeguard_assurance : AssuranceResult
        Assurance of each chosen design over the pilot's sampling distribution.
    note : str
        What the reader must know: plans with fewer than 3 workers, a cap
        reached, variance components the pilot sets to 0.
    compared : (str, str) or None
        The systems compared ``(a, b)``, ``a`` coded +1, when the pilot names them.
    """

    point: PlanResult
    safeguard: PlanResult | None
    point_assurance: AssuranceResult
    safeguard_assurance: AssuranceResult | None
    confidence_level: float
    method: str
    note: str = ""
    compared: tuple[str, str] | None = None

    def __repr__(self) -> str:
        sg = (f"{self.safeguard.n_workers}x{self.safeguard.n_items}" if self.safeguard
              else "none")
        return (f"PilotPlanResult(point={self.point.n_workers}x{self.point.n_items}, "
                f"safeguard={sg}, method={self.method!r})")

    def to_frame(self) -> pd.DataFrame:
        """One row per plan: design, cost, power at the estimates, assurance, safeguard power."""
        rows = []
        for name, p, a in (("point", self.point, self.point_assurance),
                           ("safeguard", self.safeguard, self.safeguard_assurance)):
            if p is None or a is None:
                continue
            rows.append({"plan": name, "n_workers": p.n_workers, "n_items": p.n_items,
                         "n_ratings": p.n_ratings, "cost": p.cost,
                         "power_at_estimates": a.power, "assurance": a.assurance,
                         "assurance_se": a.se, "prob_target": a.prob_target,
                         "power_at_upper_sds": a.safeguard_power})
        return pd.DataFrame(rows)

    def summary(self) -> str:
        a = self.point_assurance
        scale = {"likert": "latent scale", "preference": "logit scale"}.get(a.outcome,
                                                                            "+-1 scale")
        how = ("analytic" if a.point_sims == 0 else
               f"simulated ({a.point_sims} replicates, analysis {a.analysis!r})")
        lines = [
            f"Plans for effect {a.effect:g} ({_effect_scale(a)}) at target power "
            f"{a.target_power:g}, test {a.test!r} ({a.alternative}, alpha {a.alpha:g}); "
            f"pilot {a.pilot}",
            *([] if self.compared is None else
              [f"systems compared: {self.compared[0]} vs {self.compared[1]} "
               f"({self.compared[0]} coded +1, {self.compared[1]} -1)"]),
            "",
            f"SDs ({scale})  estimate  upper {self.confidence_level:.0%} bound ({self.method})",
        ]
        w = max(15, *map(len, a.sd_point))
        for k in a.sd_point:
            lines.append(f"  {k:<{w}} {a.sd_point[k]:8.4f}  {a.sd_upper[k]:8.4f}")
        lines.append("")
        frame = self.to_frame()
        lines.append(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        lines.append("")
        lines.append(
            f"power_at_estimates: {how} power if the pilot's SDs were the truth; assurance: "
            f"mean power over the pilot's sampling distribution ({self.method}, "
            f"{a.n_boot} draws); prob_target: share of draws reaching {a.target_power:g}; "
            "power_at_upper_sds: power if every SD were at its upper bound."
        )
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)
