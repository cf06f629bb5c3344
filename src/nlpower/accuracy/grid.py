"""Accuracy power over a grid of test-set sizes, gains and agreement rates (Figs 3, 7, 8).

A thin front end of the problem-agnostic runner :func:`nlpower.grid.run_grid`:
:func:`power_grid` validates once, builds an :class:`AccuracyProblem` (one
cell = one :func:`nlpower.accuracy.power` call) and its axes, and runs them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._choices import AccuracyMethod, Backend, McNemarTest, OnError, check_choice
from .._rng import RNGLike
from .._validation import check_int, check_real
from ..errors import InputError
from ..grid import GridResult, RunOptions, run_grid
from ..grid.axes import axis_values, cell_keys
from .power import AccuracyPowerResult, power, resolve_agreement
from .table import paired_table

__all__ = ["RESULT_COLUMNS", "AccuracyProblem", "power_grid"]

#: Record keys a grid frame shows after its axis columns.
RESULT_COLUMNS = ("power", "ci_low", "ci_high", "se", "type_m", "type_s", "rejection_rate",
                  "only_new", "only_old", "n_sims", "test", "method")


@dataclass(frozen=True)
class AccuracyProblem:
    """McNemar power of a paired test set as a grid problem (axes: n, delta, agreement, baseline)."""

    test: str = "exact"
    method: str = "exact"
    alpha: float = 0.05
    n_sims: int = 10_000
    baseline: float | None = None

    name = "accuracy"
    result_columns = RESULT_COLUMNS

    def fingerprint(self) -> dict[str, Any]:
        return {"test": self.test, "method": self.method, "alpha": self.alpha,
                "n_sims": self.n_sims if self.method == "simulate" else 0,
                "baseline": self.baseline}

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> AccuracyPowerResult:
        return power(int(key["n"]), float(key["delta"]), key["agreement"],
                     baseline=key.get("baseline", self.baseline), alpha=self.alpha,
                     test=self.test, method=self.method, n_sims=self.n_sims,  # type: ignore[arg-type]
                     rng=rng)

    def from_record(self, record: Mapping[str, Any]) -> AccuracyPowerResult:
        return AccuracyPowerResult.from_record(record)


def power_grid(
    n: Any,
    delta: Any,
    agreement: Any,
    *,
    baseline: Any = None,
    test: McNemarTest = "exact",
    method: AccuracyMethod = "exact",
    alpha: float = 0.05,
    n_sims: int = 10_000,
    rng: RNGLike = None,
    n_jobs: int = 1,
    backend: Backend = "loky",
    client: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_error: OnError = "raise",
) -> GridResult:
    """McNemar power, Type-M and Type-S over every combination of ``n`` x ``delta`` x ``agreement``.

    Each of ``n``, ``delta``, ``agreement`` (numbers or prior names) and
    ``baseline`` may be a value or a list (an axis).  Cells are exact by
    default; ``method="simulate"`` gives each cell its own key-derived seed, so
    results do not depend on ``n_jobs``, the backend or resuming.

    Examples
    --------
    >>> g = power_grid([500, 2000], 0.02, 0.9, progress=False)
    >>> [round(p, 2) for p in g.to_frame()["power"]]
    [0.25, 0.79]
    """
    test = check_choice("test", test, McNemarTest)
    method = check_choice("method", method, AccuracyMethod)
    alpha = check_real("alpha", alpha, min=0.0, max=1.0, min_open=True, max_open=True)
    n_sims = check_int("n_sims", n_sims, min=1)
    run = RunOptions(n_jobs=n_jobs, backend=backend, client=client, checkpoint=checkpoint,
                     progress=progress, on_error=on_error)
    axes: dict[str, Any] = {"n": n, "delta": delta, "agreement": agreement}
    if baseline is not None:
        axes["baseline"] = baseline
    values = {k: axis_values(k, v) for k, v in axes.items()}
    for v in values["n"]:
        check_int("n", v, min=1)
    for key in cell_keys(values):            # every cell's table exists, before any runs
        try:
            pa, _ = resolve_agreement(key["agreement"], key.get("baseline"), key["delta"])
            paired_table(key["delta"], pa, key.get("baseline"))
        except InputError as exc:
            where = ", ".join(f"{k}={v!r}" for k, v in key.items())
            raise InputError(f"grid cell ({where}): {exc}") from exc
    problem = AccuracyProblem(test=test, method=method, alpha=alpha, n_sims=n_sims)
    return run_grid(problem, axes, rng=rng, run=run, desc="accuracy power grid")
