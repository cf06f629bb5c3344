"""Likert power over a grid of designs and effects, on the package's grid runner.

One cell simulates ``n_sims`` Likert data sets (and ``n_sims`` at effect 0
when ``null=True``) and analyses each with every requested analysis, so the
analyses of a cell compare on the same replicates; cells get key-derived
seeds (:func:`nlpower.grid.cell_seed`), so results do not depend on
``n_jobs``, the backend or resuming from a checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import __version__
from .._choices import Backend, OnError
from .._records import nan_to_none
from .._rng import RNGLike
from ..design import CrossedDesign
from ..errors import InputError
from ..grid import GridResult, check_run_options, run_grid
from ..params import LMMParams
from .likert import LikertParams, check_levels
from .power import AnalysisComparison, likert_power, resolve_analyses

__all__ = ["LikertCell", "LikertProblem", "likert_power_grid"]

_PER = ("power", "ci_low", "ci_high", "type1", "type1_ci_low", "type1_ci_high", "type_m",
        "type_s", "n_failed", "n_singular")



@dataclass(frozen=True)
class LikertCell:
    """One cell: the record of every analysis (``power_lmm``, ``type1_lmm``, ...)."""

    record: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_comparison(cls, c: AnalysisComparison, n_sims: int, seed: dict[str, Any]
                        ) -> LikertCell:
        first = next(iter(c.results.values()))
        rec: dict[str, Any] = {"power": nan_to_none(first.power), "ci_low": nan_to_none(first.ci.low),
                               "ci_high": nan_to_none(first.ci.high), "se": nan_to_none(first.se),
                               "type_m": nan_to_none(first.type_m),
                               "type_s": nan_to_none(first.type_s), "n_sims": n_sims,
                               "seed_entropy": seed.get("entropy"), "version": __version__}
        for a, r in c.results.items():
            t1 = r.type1_ci
            vals = (r.power, r.ci.low, r.ci.high, r.type1, None if t1 is None else t1.low,
                    None if t1 is None else t1.high, r.type_m, r.type_s, r.n_failed,
                    r.n_singular)
            rec.update({f"{k}_{a}": nan_to_none(v) for k, v in zip(_PER, vals, strict=True)})
            rec[f"effect_{a}"] = r.effect
        return cls(rec)

    def to_record(self) -> dict[str, Any]:
        return dict(self.record)


@dataclass(frozen=True)
class LikertProblem:
    """Likert power as a grid problem (axes: ``scenario``, ``n_workers``, ``n_items``, ``effect``)."""

    scenarios: Mapping[str, LMMParams]
    levels: int
    analyses: tuple[str, ...]
    n_sims: int
    alpha: float
    null: bool
    link: str = "probit"
    test: str | None = None

    name = "likert"

    @property
    def result_columns(self) -> tuple[str, ...]:
        return ("power", "ci_low", "ci_high", "n_sims",
                *(f"{k}_{a}" for a in self.analyses for k in _PER))

    def fingerprint(self) -> dict[str, Any]:
        return {"scenarios": {k: repr(v) for k, v in self.scenarios.items()},
                "levels": self.levels, "analyses": list(self.analyses), "n_sims": self.n_sims,
                "alpha": self.alpha, "null": self.null, "link": self.link, "test": self.test}

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> LikertCell:
        scen = self.scenarios[key["scenario"]] if "scenario" in key else \
            next(iter(self.scenarios.values()))
        p = scen.with_effect(float(key.get("effect", scen.effect)))
        lp = LikertParams.from_preset(p, self.levels, link=self.link)  # type: ignore[arg-type]
        design = CrossedDesign(int(key["n_workers"]), int(key["n_items"]))
        c = likert_power(design, lp, analysis=list(self.analyses), n_sims=self.n_sims,
                         alpha=self.alpha, null=self.null, rng=rng, keep_replicates=False,
                         test=self.test)
        assert isinstance(c, AnalysisComparison)
        first = next(iter(c.results.values()))
        return LikertCell.from_comparison(c, self.n_sims, first.seed)

    def from_record(self, record: Mapping[str, Any]) -> LikertCell:
        return LikertCell(dict(record))


def likert_power_grid(
    scenarios: Mapping[str, LMMParams] | LMMParams,
    *,
    n_workers: Any,
    n_items: Any,
    effect: Any,
    levels: int,
    analysis: Any = "lmm",
    n_sims: int = 1000,
    alpha: float = 0.05,
    null: bool = True,
    link: str = "probit",
    test: str | None = None,
    rng: RNGLike = None,
    n_jobs: int = 1,
    backend: Backend = "loky",
    client: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_error: OnError = "raise",
) -> GridResult:
    """Power and Type I error of Likert studies over scenarios x workers x items x effects.

    Each scenario is a preset on [0, 1] (Table 16) mapped to ``levels``-point
    ratings by :meth:`LikertParams.from_preset`; the effect axis replaces its
    (latent, sum-coded) effect.  Every analysis of a cell sees the same
    replicates; columns ``power_<analysis>``, ``type1_<analysis>`` etc.

    Examples
    --------
    >>> from nlpower import presets
    >>> g = likert_power_grid(presets.high_variance(), n_workers=[3, 5], n_items=20, effect=0.1,
    ...                       levels=5, n_sims=50, rng=1, progress=False)
    >>> list(g.to_frame()["n_workers"])
    [3, 5]
    """
    if isinstance(scenarios, LMMParams):
        scenarios = {"scenario": scenarios}
    if not isinstance(scenarios, Mapping) or not scenarios or not all(
            isinstance(v, LMMParams) for v in scenarios.values()):
        raise InputError("scenarios must be LMMParams or a dict of name -> LMMParams (presets).")
    names = resolve_analyses(analysis)
    levels = check_levels(levels)
    for scen in scenarios.values():          # every scenario maps, before any runs
        LikertParams.from_preset(scen, levels, link=link)  # type: ignore[arg-type]
    check_run_options(n_jobs, backend, client, on_error)
    axes: dict[str, Any] = {}
    if len(scenarios) > 1:
        axes["scenario"] = list(scenarios)
    axes.update(n_workers=n_workers, n_items=n_items, effect=effect)
    problem = LikertProblem(dict(scenarios), levels, names, n_sims, alpha, null, link, test)
    return run_grid(problem, axes, rng=rng, n_jobs=n_jobs, backend=backend, client=client,
                    checkpoint=checkpoint, progress=progress, on_error=on_error,
                    desc="Likert power grid")
