"""Results of power for a fitted model: one point (a :class:`~nlpower.powerresult.PowerResult`
of a :class:`~nlpower.powerresult.ModelStudy`, also named ``ModelPowerResult``) and a curve."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..powerresult import PowerResult

__all__ = ["ModelPowerResult", "PowerCurve", "model_parameters"]


#: The result of a power for a term of a fitted model: the one :class:`~nlpower.powerresult.PowerResult`
#: (``result.study`` is a :class:`~nlpower.powerresult.ModelStudy`); the former name, kept.
ModelPowerResult = PowerResult


def model_parameters(model: Any, design: Any) -> dict[str, Any]:
    """The true parameters of a power study of ``model`` (a fit, or a ModelDesign) for its record."""
    rows: list[tuple[str, str, str, float]] = []
    varcorr = getattr(model, "varcorr", None)
    if callable(varcorr):
        for r in varcorr().itertuples(index=False):
            if isinstance(r.var1, str):
                rows.append((str(r.grp), r.var1, r.var2 if isinstance(r.var2, str) else "",
                             float(r.sdcor)))
    return {"fixef": {str(k): float(v) for k, v in design.fixef.items()},
            "varcorr": tuple(rows),
            "sigma": float(design.sigma) if design.family.has_sigma else None,
            "params_set": bool(getattr(model, "params_set", False)),
            "theta": [float(t) for t in design.theta]}


@dataclass(frozen=True)
class PowerCurve:
    """Power against the size of a design (simr's ``powerCurve``).

    Attributes
    ----------
    along : str
        The variable whose number of levels varies.
    points : tuple of PowerResult
        One per break, in order.
    breaks : tuple of int
    seed : dict
        The root seed (``entropy``, ``spawn_key``): the same call with it repeats the
        curve; each point's own seed is ``points[i].seed``.
    version : str
        The nlpower version that computed it.
    """

    along: str
    breaks: tuple[int, ...]
    points: tuple[PowerResult, ...]
    seed: Mapping[str, Any] = field(default_factory=dict)
    version: str = ""

    def to_frame(self) -> pd.DataFrame:
        """One row per break: ``n_<along>``, ``nobs``, power with its interval, rejection rate."""
        rows = []
        for b, r in zip(self.breaks, self.points, strict=True):
            rows.append({f"n_{self.along}": b, "nobs": r.nobs, "power": r.power,
                         "ci_low": r.ci.low, "ci_high": r.ci.high, "se": r.se,
                         "rejection_rate": r.rejection_rate, "n_sims": r.n_sims,
                         "n_failed": r.n_failed})
        return pd.DataFrame(rows)

    def summary(self) -> str:
        first = self.points[0]
        lines = [f"Power for {first.hypothesis} ({first.test} test, alpha = {first.alpha:g}) "
                 f"by number of levels of {self.along}:"]
        for b, r in zip(self.breaks, self.points, strict=True):
            if r.type1_ci is not None:          # a true value of 0: the Type I error
                lines.append(f"  {b:>5d} ({r.nobs} rows): Type I error "
                             f"{100 * r.rejection_rate:5.1f}% ({100 * r.type1_ci.low:.1f}-"
                             f"{100 * r.type1_ci.high:.1f})")
                continue
            lines.append(f"  {b:>5d} ({r.nobs} rows): {100 * r.power:5.1f}% "
                         f"({100 * r.ci.low:.1f}-{100 * r.ci.high:.1f})")
        if self.seed:
            lines.append(f"  seed {self.seed.get('entropy')}; nlpower {self.version} "
                         f"(engine {first.engine})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"PowerCurve(along={self.along!r}, breaks={list(self.breaks)})"

    def plot(self, ax: Any = None) -> Any:
        """Power with its 95% intervals against the number of levels (matplotlib figure)."""
        import matplotlib.pyplot as plt
        frame = self.to_frame()
        if ax is None:
            fig, ax = plt.subplots(figsize=(5, 3.5), layout="constrained")
        else:
            fig = ax.figure
        x = frame[f"n_{self.along}"]
        ax.errorbar(x, frame["power"], yerr=[frame["power"] - frame["ci_low"],
                                             frame["ci_high"] - frame["power"]],
                    marker="o", capsize=3)
        ax.axhline(0.8, color="grey", lw=0.8, ls="--")
        ax.set_ylim(0, 1)
        ax.set_xlabel(f"levels of {self.along}")
        ax.set_ylabel("power")
        ax.set_title(f"{self.points[0].hypothesis} ({self.points[0].test})")
        return fig
