"""Results of the power layer: ``PowerResult`` (with ``Replicates``) and ``AnalyticPowerResult``.

:class:`PowerResult` is the one result type of simulated power
(:mod:`nlpower.powerresult`); it is imported here, where it always lived.
One rule for ``.design``: it is the :class:`~nlpower.design.CrossedDesign`
object (``result.design.describe()`` for text); records store its
constructor arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..design import CrossedDesign
from ..intervals import ConfidenceInterval, wilson_ci
from ..powerresult import PowerResult, Replicates, design_record


@dataclass(frozen=True)
class AnalyticPowerResult:
    """Power from the analytic (noncentral-t) approximation.

    Attributes
    ----------
    power : float
        Probability of a sign-correct rejection.
    ncp : float
        Noncentrality ``effect / sqrt(Var(estimate))`` at the true parameters.
    df : float
        Satterthwaite df of the expected information (``inf`` for test "z").
    se : float
        ``sqrt(Var(estimate))`` at the true parameters.
    method : str
        ``"balanced"`` (expected mean squares, Westfall, Kenny & Judd 2014) or
        ``"information"`` (expected information of the general design).
    """

    power: float
    ncp: float
    df: float
    se: float
    effect: float
    coding: str
    test: str
    alpha: float
    alternative: str
    method: str
    design: CrossedDesign

    def summary(self) -> str:
        return (f"Analytic power ({self.method}): {self.design!r}\n"
                f"  effect {self.effect:g} ({self.coding} coding), test {self.test!r}, "
                f"alternative {self.alternative!r}, alpha {self.alpha:g}\n"
                f"  power {self.power:.3f}; SE(estimate) {self.se:.4g}, ncp {self.ncp:.3f}, "
                f"df {self.df:.1f}")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{
            "effect": self.effect, "coding": self.coding, "power": self.power, "ncp": self.ncp,
            "df": self.df, "se": self.se, "test": self.test, "alpha": self.alpha,
            "alternative": self.alternative, "method": self.method,
        }])

    def __repr__(self) -> str:
        return (f"AnalyticPowerResult(power={self.power:.3f}, ncp={self.ncp:.3f}, df={self.df:.1f}, "
                f"method={self.method!r})")

    def _repr_html_(self) -> str:
        """The summary as a notebook block (monospace, escaped)."""
        import html
        return f"<pre class=\"nlpower-power\">{html.escape(self.summary())}</pre>"


__all__ = ["AnalyticPowerResult", "ConfidenceInterval", "PowerResult", "Replicates",
           "design_record", "wilson_ci"]
