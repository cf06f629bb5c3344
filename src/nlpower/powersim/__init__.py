"""Power by simulation for crossed worker x item designs (Card et al. 2020, Fig. 2, App. H.3).

``power()`` runs simulate -> fit -> test for one design (exact balanced fast
path, general native engine, or the analytic tier); ``analytic_power()``
gives the noncentral-t approximation; ``mde()`` and ``plan()`` search the
power curve.  See ``docs/power.md``.
"""

from __future__ import annotations

from ..grid import GridResult
from .analytic import analytic_power
from .grid import RatingsProblem, power_grid
from .planning import MDEResult, PlanResult, mde, plan
from .replicate import power
from .result import AnalyticPower, ConfidenceInterval, PowerResult, Replicates

__all__ = [
    "AnalyticPower",
    "GridResult",
    "RatingsProblem",
    "ConfidenceInterval",
    "MDEResult",
    "PlanResult",
    "PowerResult",
    "Replicates",
    "analytic_power",
    "mde",
    "plan",
    "power",
    "power_grid",
]
