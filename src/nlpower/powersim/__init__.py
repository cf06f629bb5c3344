"""Power by simulation for crossed worker x item designs (Card et al. 2020, Fig. 2, App. H.3).

``power()`` is three stages -- validated options (:mod:`.options`), replicate
runs (:mod:`.replicate`: the exact balanced fast path of :mod:`.fastpath` and
:mod:`.balanced_fit`, or any design through the engine protocol), and the
summary into a :class:`PowerResult` (:mod:`.summary`); ``analytic_power()``
gives the noncentral-t approximation; ``mde()`` and ``plan()`` search the
power curve; ``power_grid()`` runs ``power()`` over a grid.  See
``docs/power.md``.
"""

from __future__ import annotations

from ..grid import GridResult
from .analytic import analytic_power
from .grid import RatingsProblem, power_grid
from .options import PowerOptions, power_options
from .planning import MDEResult, PlanResult, mde, plan
from .result import AnalyticPowerResult, ConfidenceInterval, PowerResult, Replicates
from .run import power
from .simoptions import SimOptions

__all__ = [
    "AnalyticPowerResult",
    "ConfidenceInterval",
    "GridResult",
    "MDEResult",
    "PlanResult",
    "PowerOptions",
    "PowerResult",
    "RatingsProblem",
    "Replicates",
    "SimOptions",
    "analytic_power",
    "mde",
    "plan",
    "power",
    "power_grid",
    "power_options",
]
