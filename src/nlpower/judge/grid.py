"""Simulated power with a judge, on the grid runner (any outcome, any design).

Where the closed form of :mod:`nlpower.judge.power` does not apply (binary
outcomes, few workers, a biased judge's effect on Type I), power is
simulated: one cell of :func:`nlpower.grid.run_grid` draws ``n_sims`` studies
with :func:`~nlpower.judge.simulate_study`, fits each with
:func:`~nlpower.judge.fit` and counts rejections of the PPI++ test and of
the human-only test on the same human ratings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._rng import RNGLike
from .._validation import check_int
from ..errors import CheckpointError
from ..grid import GridResult, run_grid
from ..montecarlo import MonteCarloSummary
from .fit import fit
from .simulate import simulate_study

RESULT_COLUMNS = ("power", "ci_low", "ci_high", "rejection_rate", "power_human",
                  "rejection_rate_human", "lambda", "n_sims")
#: Axes a cell may set (the rest of simulate_study's arguments come from ``model``).
AXES = ("n_items", "n_labelled", "workers_per_item", "n_workers", "effect", "judge_noise",
        "judge_bias", "n_judge_samples")


@dataclass(frozen=True)
class JudgeCellResult:
    """Monte Carlo power of PPI++ and of the human-only test in one cell."""

    ppi: MonteCarloSummary
    human: MonteCarloSummary
    lam: float

    def to_record(self) -> dict[str, Any]:
        ci = self.ppi.ci
        return {"power": self.ppi.power, "ci_low": ci.low, "ci_high": ci.high,
                "se": float(np.sqrt(self.ppi.power * (1 - self.ppi.power) / self.ppi.n_sims))
                if self.ppi.effect else float("nan"),
                "type_m": self.ppi.type_m, "type_s": self.ppi.type_s,
                "rejection_rate": self.ppi.rejection_rate, "power_human": self.human.power,
                "rejection_rate_human": self.human.rejection_rate, "lambda": self.lam,
                "effect": self.ppi.effect, **self.ppi.to_record(),
                **{f"human_{k}": v for k, v in self.human.to_record().items()}}


@dataclass(frozen=True)
class JudgeProblem:
    """PPI++ power by simulation as a grid problem (axes: :data:`AXES`)."""

    model: Mapping[str, Any] = field(default_factory=dict)
    outcome: str = "gaussian"
    n_sims: int = 200
    alpha: float = 0.05

    name = "judge"
    result_columns = RESULT_COLUMNS

    def fingerprint(self) -> dict[str, Any]:
        return {"model": dict(self.model), "outcome": self.outcome, "n_sims": self.n_sims,
                "alpha": self.alpha}

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> JudgeCellResult:
        args = {**self.model, **key}
        effect = float(args.get("effect", 0.0))
        rows = []
        for seed in rng.spawn(self.n_sims):
            human, judge = simulate_study(**args, outcome=self.outcome, rng=seed)
            res = fit(human, judge, outcome=self.outcome)  # type: ignore[arg-type]
            p, h = res.ppi["B - A"], res.estimates["human"]["B - A"]
            rows.append((p.estimate, p.pvalue, h.estimate, h.pvalue, res.lam))
        a = np.array(rows)
        return JudgeCellResult(
            MonteCarloSummary.from_draws(a[:, 0], a[:, 1] < self.alpha, effect=effect),
            MonteCarloSummary.from_draws(a[:, 2], a[:, 3] < self.alpha, effect=effect),
            float(a[:, 4].mean()))

    def from_record(self, record: Mapping[str, Any]) -> JudgeCellResult:
        effect = float(record.get("effect") or 0.0)
        ppi = MonteCarloSummary.from_record(record, effect=effect)
        human = MonteCarloSummary.from_record(
            {k[6:]: v for k, v in record.items() if k.startswith("human_")}, effect=effect)
        if ppi is None or human is None:
            raise CheckpointError("a judge grid record lacks its Monte Carlo counts; it was not "
                                  "written by this grid: delete the checkpoint file.")
        return JudgeCellResult(ppi, human, float(record["lambda"]))


def simulate_judge_power(axes: Mapping[str, Any], *, model: Mapping[str, Any] | None = None,
                         outcome: str = "gaussian", n_sims: int = 200, alpha: float = 0.05,
                         rng: RNGLike = None, **run: Any) -> GridResult:
    """Simulated power of PPI++ (and of humans alone) over a grid of designs and judges.

    Parameters
    ----------
    axes : mapping
        Values or lists for :data:`AXES` (e.g. ``{"n_labelled": [20, 40],
        "judge_noise": [0.2, 0.8], "effect": 0.3, "n_items": 400}``).
    model : mapping, optional
        Other :func:`~nlpower.judge.simulate_study` arguments (variance
        components), fixed over the grid.
    outcome : {"gaussian", "binary"}
    n_sims : int, default 200
    alpha : float, default 0.05
    rng : seed, keyword-only
    **run
        :class:`~nlpower.grid.RunOptions` fields (``n_jobs``, ``checkpoint``,
        ``progress`` ...).

    Examples
    --------
    >>> g = simulate_judge_power({"n_items": 60, "n_labelled": 12, "effect": 1.0},
    ...                          n_sims=3, rng=1, progress=False)
    >>> sorted(g.to_frame()[["power", "power_human"]].columns)
    ['power', 'power_human']
    """
    n_sims = check_int("n_sims", n_sims, min=1)
    problem = JudgeProblem(dict(model or {}), outcome, n_sims, alpha)
    return run_grid(problem, axes, rng=rng, desc="judge power grid", **run)
