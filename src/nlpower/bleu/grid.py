"""BLEU power over grids of n x dB x P0 x b0 through the shared grid runner (Figs. 4 and 17)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._choices import Backend, BleuMethod, OnError, check_choice
from .._rng import RNGLike
from .._validation import check_int, check_probability, check_real
from ..errors import InputError
from ..grid import GridResult, RunOptions, run_grid
from .power import BleuPowerResult, _check_resamples, power

__all__ = ["BleuProblem", "power_grid"]


@dataclass(frozen=True)
class BleuProblem:
    """BLEU randomization-test power (:func:`nlpower.bleu.power`) as a grid problem.

    A cell's key holds ``n``, ``delta``, ``p0`` and ``b0``; the test settings
    are shared by every cell.
    """

    n_sims: int = 1000
    n_resamples: int = 1000
    alpha: float = 0.05
    method: BleuMethod = "randomization"

    name: ClassVar[str] = "bleu"
    result_columns: ClassVar[tuple[str, ...]] = (
        "power", "ci_low", "ci_high", "se", "type_m", "type_s", "rejection_rate",
        "mean_estimate", "n_sims", "n_resamples", "method",
    )

    def fingerprint(self) -> dict[str, Any]:
        return {"n_sims": self.n_sims, "n_resamples": self.n_resamples,
                "alpha": self.alpha, "method": self.method}

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> BleuPowerResult:
        return power(key["n"], key["delta"], key["p0"], key["b0"], n_sims=self.n_sims,
                     n_resamples=self.n_resamples, alpha=self.alpha, method=self.method,
                     rng=rng, keep_replicates=False)

    def from_record(self, record: Mapping[str, Any]) -> BleuPowerResult:
        return BleuPowerResult.from_record(record)


def _values(name: str, value: Any, check: Any) -> Any:
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) == 0:
            raise InputError(f"{name}: an empty list gives no grid cells; pass a value or a non-empty list.")
        return [check(name, v) for v in value]
    return check(name, value)


def power_grid(n: Any, delta: Any, p0: Any, b0: Any, *, n_sims: int = 1000,
               n_resamples: int = 1000, alpha: float = 0.05,
               method: BleuMethod = "randomization", rng: RNGLike = None, n_jobs: int = 1,
               backend: Backend = "loky", client: Any = None,
               checkpoint: str | os.PathLike[str] | None = None, progress: bool = True,
               on_error: OnError = "raise", shard: str | tuple[int, int] | None = None) -> GridResult:
    """BLEU power over every cell of ``p0 x b0 x n x delta`` (Card et al. 2020, Figs. 4 and 17).

    Each of ``n``, ``delta``, ``p0``, ``b0`` is a value (a fixed column) or a
    list (an axis); cells run in the order p0, b0, n, delta (delta fastest),
    each with its own seed derived from its axis values, so results do not
    depend on ``n_jobs``, ``backend`` or resuming a ``checkpoint``.  The
    scheduling options (and ``shard``) are those of :func:`nlpower.grid.run_grid`.

    Examples
    --------
    >>> g = power_grid([500, 2000], [0.5, 1.0], 0.125, 25.8, n_sims=100, method="normal",
    ...                rng=1, progress=False)
    >>> g.to_frame()[["n", "delta"]].to_dict("list")
    {'n': [500, 500, 2000, 2000], 'delta': [0.5, 1.0, 0.5, 1.0]}
    """
    axes = {
        "p0": _values("p0", p0, lambda k, v: check_real(k, v, min=0.0, max=1.0, max_open=True)),
        "b0": _values("b0", b0, lambda k, v: check_real(k, v, min=0.0, min_open=True)),
        "n": _values("n", n, lambda k, v: check_int(k, v, min=2)),
        "delta": _values("delta", delta, check_real),
    }
    alpha = check_probability("alpha", alpha)
    method = check_choice("method", method, BleuMethod)
    problem = BleuProblem(n_sims=check_int("n_sims", n_sims, min=1),
                          n_resamples=_check_resamples(n_resamples, alpha, method),
                          alpha=alpha, method=method)
    run = RunOptions(n_jobs=n_jobs, backend=backend, client=client, checkpoint=checkpoint,
                     progress=progress, on_error=on_error, shard=shard)
    return run_grid(problem, axes, rng=rng, run=run, desc="BLEU power grid")
