"""Results of power for a fitted model: one point (:class:`ModelPowerResult`) and a curve."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .._records import RecordCodec, RecordLayout
from ..intervals import ConfidenceInterval
from ..montecarlo import MonteCarloSummary

__all__ = ["ModelPowerResult", "PowerCurve", "model_parameters"]


@dataclass(frozen=True)
class ModelPowerResult(RecordCodec):
    """Power of a test of one term of a mixed model, by simulation (simr's ``powerSim``).

    Attributes
    ----------
    power : float
        One-df tests: share of replicates that reject with the sign of the
        true value (Card et al. 2020); comparisons: the rejection rate.
    rejection_rate : float
        Share of replicates with ``p <= alpha``, any sign (simr's power).
    mc : MonteCarloSummary
        Counts, Monte Carlo SE and intervals, Type-S and Type-M.
    effect : float
        True value of the tested coefficient or contrast (NaN for comparisons).
    hypothesis, test, alpha, alternative : what was tested and how.
    formula, analysis, family, engine, nobs : the model that generated the data,
        the one fitted to it, and the size of the design.
    n_failed, n_singular, n_nonconverged : replicate fits by outcome.
    first_error : the first failed replicate's error (empty if none).
    seed, version : how to repeat it.
    parameters : dict
        The truth the data were simulated from (:func:`model_parameters`):
        ``fixef``, ``varcorr`` (``(group, term, term2, SD or correlation)``
        rows), ``sigma`` and ``params_set`` (set by ``with_params``); for
        :meth:`methods`.  Empty when unknown (a record read back).
    """

    mc: MonteCarloSummary
    hypothesis: str
    test: str
    alpha: float
    alternative: str
    formula: str
    analysis: str
    family: str
    engine: str
    nobs: int
    mean_estimate: float
    n_failed: int
    n_singular: int
    n_nonconverged: int
    first_error: str = ""
    seed: Mapping[str, Any] = field(default_factory=dict)
    version: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    #: the record's layout (``to_record``/``from_record``: ``nlpower._records.RecordCodec``):
    #: the Monte Carlo summary's keys, then the fields; the seed and parameters are not kept
    _record_layout = RecordLayout(skip=frozenset({"seed"}), nan="keep", summary="effect",
                                  derived={"effect": "mc", "rejection_rate": "first_error"})

    # -- numbers ---------------------------------------------------------------------------
    @property
    def effect(self) -> float:
        return self.mc.effect

    @property
    def n_sims(self) -> int:
        return self.mc.n_sims

    @property
    def power(self) -> float:
        return self.mc.power

    @property
    def rejection_rate(self) -> float:
        return self.mc.rejection_rate

    @property
    def se(self) -> float:
        return self.mc.se

    @property
    def ci(self) -> ConfidenceInterval:
        return self.mc.ci

    def proportion_ci(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Wilson interval of :attr:`power` (``n_rejected`` of ``n_sims``)."""
        return self.mc.proportion_ci(confidence_level)

    @property
    def type_s(self) -> float:
        return self.mc.type_s

    @property
    def type_m(self) -> float:
        return self.mc.type_m

    # -- display ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"ModelPowerResult({self.hypothesis!r}, test={self.test!r}: power={self.power:.3f} "
                f"[{self.ci.low:.3f}, {self.ci.high:.3f}], n_sims={self.n_sims})")

    def summary(self) -> str:
        """Text in simr's spirit: the power with its interval, then what produced it."""
        one_df = not math.isnan(self.effect)
        ci = self.ci
        head = (f"Power for {self.hypothesis} ({self.test} test, alpha = {self.alpha:g}, "
                f"{self.alternative}): {100 * self.power:.1f}% "
                f"(95% CI {100 * ci.low:.1f}-{100 * ci.high:.1f}), "
                f"{self.mc.n_rejected} of {self.n_sims} replicates")
        lines = [head]
        if one_df:
            lines.append(f"  true value {self.effect:.4g}; rejections of either sign "
                         f"{self.rejection_rate:.3f}; Type-S {_fmt(self.type_s)}, "
                         f"Type-M {_fmt(self.type_m)}; mean estimate {_fmt(self.mean_estimate)}")
        else:
            lines.append("  a model comparison: power is the rejection rate")
        lines.append(f"  data: {self.formula} ({self.family}, {self.nobs} rows)")
        if self.analysis != self.formula:
            lines.append(f"  analysis: {self.analysis}")
        lines.append(f"  fits: {self.n_failed} failed, {self.n_singular} singular, "
                     f"{self.n_nonconverged} not converged (engine {self.engine})")
        if self.first_error:
            lines.append(f"  first failure: {self.first_error}")
        if self.mc.precision is not None:
            lines.append(f"  {self.mc.describe_precision()}")
        if self.seed:
            lines.append(f"  seed {self.seed.get('entropy')}; nlpower {self.version}")
        return "\n".join(lines)

    def methods(self, format: str = "text", source: str | None = None) -> str:
        """The paragraph a paper's methods section needs (``"text"`` or ``"latex"``).

        The model, its true parameters (``source``: where they came from),
        the size of the design, the test, alpha, replicates with the Monte
        Carlo error and adaptive precision, and the power
        (:func:`nlpower.methods.model_power_methods`).

        Examples
        --------
        >>> import pandas as pd, nlpower
        >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
        >>> m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
        >>> r = nlpower.power(m.with_params(fixef={"Days": 2.0}), term="Days", n_sims=20, rng=1)
        >>> "with_params" in r.methods(source="a pilot")
        True
        """
        from ..methods import model_power_methods
        return model_power_methods(self, source=source, format=format)

    def to_frame(self) -> pd.DataFrame:
        """One row: the record."""
        return pd.DataFrame([self.to_record()])


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
            "sigma": float(design.sigma) if design.family.name == "gaussian" else None,
            "params_set": bool(getattr(model, "params_set", False)),
            "theta": [float(t) for t in design.theta]}


def _fmt(x: float) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.3g}"


@dataclass(frozen=True)
class PowerCurve:
    """Power against the size of a design (simr's ``powerCurve``).

    Attributes
    ----------
    along : str
        The variable whose number of levels varies.
    points : tuple of ModelPowerResult
        One per break, in order.
    breaks : tuple of int
    """

    along: str
    breaks: tuple[int, ...]
    points: tuple[ModelPowerResult, ...]

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
            lines.append(f"  {b:>5d} ({r.nobs} rows): {100 * r.power:5.1f}% "
                         f"({100 * r.ci.low:.1f}-{100 * r.ci.high:.1f})")
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
