"""Group-sequential studies: look after each batch of ratings, stop early with alpha kept.

:func:`group_sequential` gives efficacy and non-binding futility boundaries
from Lan-DeMets alpha-spending functions (O'Brien-Fleming type, Pocock type,
Hwang-Shih-DeCani), checked against rpact; :class:`Monitor` applies them to
accumulating ratings; :func:`sequential_power` simulates Type I, power and
expected cost of a crossed worker x item design bought in batches of items;
:func:`cheapest_design` searches looks, spending functions and maximum designs
for the smallest simulated expected cost at a target power;
:func:`calibrate_boundaries` makes boundaries hold alpha for a statistic that
is not exactly normal (a GLMM's Wald z with few workers).
See ``docs/sequential.md``.
"""

from __future__ import annotations

from .calibrate import CalibratedBoundaries, calibrate_boundaries
from .choose import compare_designs
from .design import GroupSequentialDesign, group_sequential
from .monitor import InterimLook, Monitor
from .power import sequential_power
from .search import cheapest_design
from .search_result import DesignSearchResult
from .simulate import SequentialPowerResult

__all__ = ["CalibratedBoundaries", "DesignSearchResult", "GroupSequentialDesign", "InterimLook",
           "Monitor", "SequentialPowerResult", "calibrate_boundaries", "cheapest_design",
           "compare_designs", "group_sequential", "sequential_power"]
