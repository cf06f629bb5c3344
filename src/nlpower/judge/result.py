"""The result of :func:`nlpower.judge.fit`: a frozen value with a table and summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .iid import MeanEstimate

COLUMNS = ("contrast", "method", "estimate", "se", "df", "ci_low", "ci_high", "statistic",
           "pvalue", "lam")


@dataclass(frozen=True)
class JudgeFit:
    """System differences on the human scale from human ratings and judge scores.

    Attributes
    ----------
    estimates : dict
        ``{method: {contrast: MeanEstimate}}`` for the methods ``"ppi++"``
        (or ``"ppi"`` with a fixed lambda), ``"human"`` (the crossed model on
        the human ratings alone), ``"judge"`` (the judge's scores alone,
        biased if the judge is) and, for binary outcomes, ``"human-glmer"``
        (log-odds scale).
    lam : float
        The lambda used (tuned by PPI++ unless given).
    rectifier : str
        ``"crossed"`` (mixed model with worker and item effects) or ``"iid"``
        (item means, the i.i.d. PPI++ of ``ppi-python``).
    formula : str
        The rectifier model's formula (``""`` for ``"iid"``).
    systems : tuple of str
        Baseline first.
    n_labelled, n_unlabelled, n_ratings, n_workers : int
        Items with human ratings, items scored only by the judge, human
        ratings, distinct workers.
    confidence_level : float
    rectifier_fit, human_fit : fitted models (``None`` for ``"iid"``).
    judge_r : float
        Estimated correlation of the judge's per-item system difference with
        the true one (item x system), the planning input of
        :func:`~nlpower.judge.judge_plan`; ``NaN`` when not estimable
        (``"iid"``, one system, no ``item:system`` variance); above 1 when
        that variance is poorly estimated (the summary then says so).
    """

    estimates: dict[str, dict[str, MeanEstimate]]
    lam: float
    rectifier: str
    formula: str
    systems: tuple[str, ...]
    n_labelled: int
    n_unlabelled: int
    n_ratings: int
    n_workers: int
    outcome: str
    confidence_level: float
    rectifier_fit: Any = field(default=None, repr=False, compare=False)
    human_fit: Any = field(default=None, repr=False, compare=False)
    judge_r: float = float("nan")

    @property
    def ppi(self) -> dict[str, MeanEstimate]:
        """The prediction-powered estimates by contrast."""
        return self.estimates["ppi++"] if "ppi++" in self.estimates else self.estimates["ppi"]

    def _judge_r_line(self) -> list[str]:
        if self.judge_r != self.judge_r:  # NaN: not estimable
            return []
        head = "  judge-human correlation of system differences (item x system): "
        if self.judge_r > 1:
            return [head + "not estimable here (the item x system variance is near 0 or "
                    "poorly estimated; more labelled items needed)"]
        return [head + f"{self.judge_r:.3f}"]

    def to_frame(self) -> pd.DataFrame:
        """One row per (contrast, method): estimate, se, df, interval, test, lambda."""
        rows = [{"contrast": c, "method": m, **{k: getattr(e, k) for k in COLUMNS[2:]}}
                for m, by_c in self.estimates.items() for c, e in by_c.items()]
        return pd.DataFrame(rows, columns=list(COLUMNS))

    def summary(self) -> str:
        """Text: the design, lambda and each method's estimate side by side."""
        pct = f"{100 * self.confidence_level:g}%"
        head = [
            f"Prediction-powered estimates ({self.outcome}, rectifier: {self.rectifier})",
            f"  human ratings: {self.n_ratings} by {self.n_workers} workers on "
            f"{self.n_labelled} items; judge only: {self.n_unlabelled} items",
            f"  lambda = {self.lam:.4g}" + (f"; rectifier model: {self.formula}"
                                            if self.formula else ""),
            *self._judge_r_line(),
            "",
            f"{'contrast':<22} {'method':<12} {'estimate':>9} {'se':>8} {'df':>7} "
            f"{pct + ' CI':>22} {'p':>9}",
        ]
        for m, by_c in self.estimates.items():
            for c, e in by_c.items():
                ci = f"[{e.ci_low:.4g}, {e.ci_high:.4g}]"
                df = "inf" if e.df == float("inf") else f"{e.df:.1f}"
                head.append(f"{c:<22} {m:<12} {e.estimate:>9.4g} {e.se:>8.3g} {df:>7} {ci:>22} "
                            f"{e.pvalue:>9.3g}")
        if "judge" in self.estimates:
            head += ["", "The judge-only row is biased if the judge is; the ppi rows are not."]
        return "\n".join(head)

    def __repr__(self) -> str:
        parts = ", ".join(f"{c}: {e.estimate:.4g} (se {e.se:.3g})" for c, e in self.ppi.items())
        return (f"JudgeFit({parts}; lam={self.lam:.3g}, n_labelled={self.n_labelled}, "
                f"n_unlabelled={self.n_unlabelled})")
