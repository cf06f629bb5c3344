"""``likert_power_grid``: a thin alias of :func:`nlpower.power_grid` with ``outcome="likert"``.

The one grid entry point is :func:`nlpower.power_grid` (the package's
runner: key-derived cell seeds, so results do not depend on ``n_jobs``, the
backend or resuming; checkpoints, Dask, shards).  This alias keeps the
argument names of the Likert comparison benchmark: ``scenarios`` are
presets on [0, 1], every analysis of a cell sees the same replicates, and
``null=True`` by default (the Type I error is what the comparison is about).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..grid import GridResult
from ..params import LMMParams

__all__ = ["likert_power_grid"]


def likert_power_grid(scenarios: Mapping[str, LMMParams] | LMMParams, *, levels: int,
                      analysis: Any = "lmm", null: bool = True, **kwargs: Any) -> GridResult:
    """:func:`nlpower.power_grid` ``(scenarios, outcome="likert", levels=levels, ...)``.

    Examples
    --------
    >>> from nlpower import presets
    >>> g = likert_power_grid(presets.high_variance(), n_workers=[3, 5], n_items=20, effect=0.1,
    ...                       levels=5, n_sims=50, rng=1, progress=False)
    >>> list(g.to_frame()["n_workers"])
    [3, 5]
    """
    from ..powersim.grid import power_grid

    if isinstance(scenarios, LMMParams):
        scenarios = {"scenario": scenarios}
    if not isinstance(scenarios, Mapping) or not scenarios or not all(
            isinstance(v, LMMParams) for v in scenarios.values()):
        raise InputError("scenarios must be LMMParams or a dict of name -> LMMParams (presets).")
    params: Any = scenarios if len(scenarios) > 1 else next(iter(scenarios.values()))
    analyses = [analysis] if isinstance(analysis, str) and analysis != "both" else analysis
    return power_grid(params, outcome="likert", levels=levels, analysis=analyses, null=null,
                      **kwargs)
