"""Head-to-head power over a grid of judges, preferences and draw rates (Card et al. 2020, Fig. 1).

A thin front end of the problem-agnostic runner :func:`nlpower.grid.run_grid`:
:func:`power_grid` validates once, builds a :class:`PreferenceProblem` (one
cell = one :func:`nlpower.preference.power` call) and its axes, and runs them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._choices import Alternative, Backend, OnError, check_choice
from .._rng import RNGLike
from .._validation import check_int
from ..errors import InputError
from ..grid import GridResult, check_run_options, run_grid
from ..grid.axes import axis_values, cell_keys, is_axis
from .power import (
    PreferenceMethod,
    PreferencePowerResult,
    PreferenceTest,
    Ties,
    _check_common,
    check_probabilities,
    power,
)

__all__ = ["RESULT_COLUMNS", "PreferenceProblem", "power_grid"]

#: Record keys a grid frame shows after its axis columns.
RESULT_COLUMNS = ("power", "ci_low", "ci_high", "se", "type_m", "type_s", "rejection_rate",
                  "mean_significant", "share", "n_sims", "test", "method")


@dataclass(frozen=True)
class PreferenceProblem:
    """One-judgement head-to-head power as a grid problem (axes: n, p_win, p_draw)."""

    ties: str = "exclude"
    test: str = "binomial"
    alpha: float = 0.05
    alternative: str = "two-sided"
    method: str = "exact"
    n_sims: int = 10_000
    p_draw: float = 0.0

    name = "preference"
    result_columns = RESULT_COLUMNS

    def fingerprint(self) -> dict[str, Any]:
        return {"ties": self.ties, "test": self.test, "alpha": self.alpha,
                "alternative": self.alternative, "method": self.method,
                "n_sims": self.n_sims if self.method == "simulate" else 0, "p_draw": self.p_draw}

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> PreferencePowerResult:
        return power(int(key["n"]), float(key["p_win"]),
                     p_draw=float(key.get("p_draw", self.p_draw)),
                     ties=self.ties, test=self.test, alpha=self.alpha,  # type: ignore[arg-type]
                     alternative=self.alternative, method=self.method,  # type: ignore[arg-type]
                     n_sims=self.n_sims, rng=rng)

    def from_record(self, record: Mapping[str, Any]) -> PreferencePowerResult:
        return PreferencePowerResult.from_record(record)


def power_grid(
    n: Any,
    p_win: Any,
    *,
    p_draw: Any = 0.0,
    ties: Ties = "exclude",
    test: PreferenceTest = "binomial",
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    method: PreferenceMethod = "exact",
    n_sims: int = 10_000,
    rng: RNGLike = None,
    n_jobs: int = 1,
    backend: Backend = "loky",
    client: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_error: OnError = "raise",
) -> GridResult:
    """Head-to-head power, Type-M and Type-S over every ``n`` x ``p_win`` (x ``p_draw``).

    Each of ``n``, ``p_win`` and ``p_draw`` may be a value or a list (an
    axis).  Cells are exact by default; ``method="simulate"`` gives each cell
    its own key-derived seed, so results do not depend on ``n_jobs``, the
    backend or resuming.  :func:`nlpower.preference.plots.plot_preference_grid`
    draws it.

    Examples
    --------
    >>> g = power_grid([25, 100], 0.65, progress=False)
    >>> [round(p, 2) for p in g.to_frame()["power"]]
    [0.31, 0.83]
    """
    test, ties, alpha, alternative = _check_common(test, ties, alpha, alternative)
    method = check_choice("method", method, PreferenceMethod)
    n_sims = check_int("n_sims", n_sims, min=1)
    check_run_options(n_jobs, backend, client, on_error)
    axes: dict[str, Any] = {"n": n, "p_win": p_win}
    if is_axis(p_draw):
        axes["p_draw"] = p_draw
    values = {k: axis_values(k, v) for k, v in axes.items()}
    for v in values["n"]:
        check_int("n", v, min=1)
    for key in cell_keys(values):           # every cell's probabilities exist, before any runs
        try:
            check_probabilities(key["p_win"], key.get("p_draw", p_draw))
        except InputError as exc:
            where = ", ".join(f"{k}={v!r}" for k, v in key.items())
            raise InputError(f"grid cell ({where}): {exc}") from exc
    fixed_draw = 0.0 if "p_draw" in axes else float(p_draw)
    problem = PreferenceProblem(ties=ties, test=test, alpha=alpha, alternative=alternative,
                                method=method, n_sims=n_sims, p_draw=fixed_draw)
    return run_grid(problem, axes, rng=rng, n_jobs=n_jobs, backend=backend, client=client,
                    checkpoint=checkpoint, progress=progress, on_error=on_error,
                    desc="head-to-head power grid")
