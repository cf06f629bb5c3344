"""Power by simulation for crossed worker x item designs (Card et al. 2020, Fig. 2, App. H.3).

``power()`` runs simulate -> fit -> test for one design (exact balanced fast
path, general native engine, or the analytic tier); ``analytic_power()``
gives the noncentral-t approximation; ``mde()`` and ``plan()`` search the
power curve.  See ``docs/power.md``.
"""

from __future__ import annotations

from .analytic import analytic_power
from .planning import MDEResult, PlanResult, mde, plan
from .replicate import power
from .result import AnalyticPower, ConfidenceInterval, PowerResult, Replicates

__all__ = [
    "AnalyticPower",
    "ConfidenceInterval",
    "MDEResult",
    "PlanResult",
    "PowerResult",
    "Replicates",
    "analytic_power",
    "mde",
    "plan",
    "power",
]

from .grid import GridResult, power_grid  # noqa: E402

__all__ += ["GridResult", "power_grid"]
