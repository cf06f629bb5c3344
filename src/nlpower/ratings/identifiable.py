"""What rating data determine whatever the optimiser's split of variances (:class:`IdentifiableEstimates`).

Built by :meth:`nlpower.ratings.RatingsFit.identifiable`; see
:mod:`nlpower.ratings.result`, "Identifiability".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import RatingsError
from .model import GROUPS

__all__ = ["IdentifiableEstimates"]


@dataclass(frozen=True)
class IdentifiableEstimates:
    """What the rating data determine, whatever the optimiser's split of variances.

    Attributes
    ----------
    systems : DataFrame
        One row per system (fitted level order): ``system``, ``mean`` (on the
        [0, 1] scale), ``se_mean``, ``effect`` (mean minus the grand mean, the
        unweighted mean of the system means -- the sum-coding effect of every
        system including the baseline), ``se_effect``, ``sd_worker_total`` and
        ``sd_item_total`` (SD of the total worker / item random effect under
        that system: sqrt(s_0^2 + s_k^2)).
    grand_mean : float
    sigma : float
        Residual SD.
    worker_cov, item_cov : DataFrame
        K x K total covariance ``s_0^2 J + Sigma`` of the per-system random
        effects; entries that the design does not identify (no worker / item
        rated under both systems) are NaN.
    baseline : str
    """

    systems: pd.DataFrame
    grand_mean: float
    sigma: float
    worker_cov: pd.DataFrame
    item_cov: pd.DataFrame
    baseline: str

    def cor(self, group: str) -> pd.DataFrame:
        """Correlation matrix of the per-system effects of ``"worker"`` or ``"item"``."""
        if group not in GROUPS:
            raise RatingsError(f"group must be 'worker' or 'item'; got {group!r}.")
        cov = self.worker_cov if group == "worker" else self.item_cov
        sd = np.sqrt(np.diag(cov.to_numpy()))
        with np.errstate(invalid="ignore", divide="ignore"):
            cor = cov.to_numpy() / np.outer(sd, sd)
        return pd.DataFrame(cor, index=cov.index, columns=cov.columns)

    def to_frame(self) -> pd.DataFrame:
        """The per-system table plus ``sigma`` and ``grand_mean`` columns."""
        df = self.systems.copy()
        df["grand_mean"] = self.grand_mean
        df["sigma"] = self.sigma
        return df

    def summary(self) -> str:
        lines = [
            "Identified quantities (the same for every optimiser start and engine):",
            f"  grand mean = {self.grand_mean:.4f}   residual sd (sigma) = {self.sigma:.4f}",
            self.systems.to_string(index=False, float_format=lambda v: f"{v:.4f}"),
        ]
        for g, cov in (("worker", self.worker_cov), ("item", self.item_cov)):
            if cov.shape[0] > 1:
                cor = self.cor(g)
                lines.append(f"  correlation of per-system {g} effects (NaN = not identified):")
                lines.append(cor.to_string(float_format=lambda v: f"{v:.3f}"))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"IdentifiableEstimates(systems={list(self.systems['system'])}, "
                f"grand_mean={self.grand_mean:.4g}, sigma={self.sigma:.4g})")
