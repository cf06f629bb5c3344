"""A toy grid problem (a coin-flip 'test') for the grid runner, checkpoint and merge tests."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nlpower.intervals import ConfidenceInterval, wilson_ci


@dataclass(frozen=True)
class CoinResult:
    """Power of a coin-flip 'test': k successes in n_sims draws with probability p."""

    power: float
    ci: ConfidenceInterval
    n_sims: int

    def to_record(self) -> dict[str, Any]:
        se = math.sqrt(self.power * (1 - self.power) / self.n_sims)
        return {"power": self.power, "ci_low": self.ci.low, "ci_high": self.ci.high, "se": se,
                "type_m": math.nan, "type_s": math.nan, "n_sims": self.n_sims}


@dataclass(frozen=True)
class CoinProblem:
    n_sims: int = 50
    fail_at: float | None = None
    name = "coin"
    result_columns = ("power", "ci_low", "ci_high", "se", "n_sims")

    def fingerprint(self) -> dict[str, Any]:
        return {"n_sims": self.n_sims}

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> CoinResult:
        if self.fail_at is not None and key["p"] == self.fail_at:
            raise ArithmeticError(f"cannot flip p={key['p']}")
        k = int(np.random.default_rng(rng).binomial(self.n_sims, key["p"] * key["scale"]))
        return CoinResult(k / self.n_sims, ConfidenceInterval(*wilson_ci(k, self.n_sims)), self.n_sims)

    def from_record(self, record: Mapping[str, Any]) -> CoinResult:
        return CoinResult(record["power"], ConfidenceInterval(record["ci_low"], record["ci_high"]),
                          record["n_sims"])


AXES = {"scale": [0.5, 1.0], "p": [0.2, 0.4, 0.8]}
