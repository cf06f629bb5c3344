"""The result of a Bradley-Terry fit: scores, their intervals, ties and ranks."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_choice, check_probability
from ..errors import InputError

__all__ = ["ELO_SCALE", "BradleyTerryFit"]

#: Logit units to Elo points (Chatbot Arena's display scale): 400 / ln 10.
ELO_SCALE = 400 / math.log(10)

_INTERVALS = ("sandwich", "model", "bootstrap")
_MODEL_NAMES = {"bt": "Bradley-Terry", "davidson": "Davidson", "rao-kupper": "Rao-Kupper"}


def _latex(text: str) -> str:
    """Plain methods text as LaTeX (escape the specials; alpha and signs as maths)."""
    for a, b in (("\\", "\\textbackslash{}"), ("%", "\\%"), ("_", "\\_"), ("&", "\\&"),
                 ("#", "\\#"), ("alpha", "$\\alpha$"), (">=", "$\\geq$"), ("<=", "$\\leq$"),
                 (" x ", " $\\times$ ")):
        text = text.replace(a, b)
    return text


@dataclass(frozen=True, eq=False)
class BradleyTerryFit:
    """Scores of K systems from paired votes (:func:`nlpower.arena.bradley_terry`).

    Attributes
    ----------
    systems : tuple of str
        System names, sorted.
    model : {"bt", "davidson", "rao-kupper"}
        The likelihood (``"bt"`` with ties dropped or counted as half wins).
    ties : str
        How ties entered: ``"davidson"``, ``"rao-kupper"``, ``"half"``, ``"drop"``.
    reference : str or None
        The system whose score is 0, or ``None``: scores sum to zero.
    estimate : ndarray
        Scores on the logit scale: ``P(i beats j) = sigma(s_i - s_j)`` (without ties).
    vcov, vcov_sandwich : ndarray
        Model-based (inverse information) and sandwich covariances of the scores.
    tie, tie_se : float
        Davidson's ``log nu`` or Rao-Kupper's ``log theta`` (NaN for ``"bt"``).
    position, position_se : float
        The first-listed (A) advantage on the logit scale (NaN when not fitted).
    loglik : float
        Log-likelihood at the maximum (multinomial, without constants).
    n_votes, n_ties : int
        Votes used, and ties among them.
    bootstrap : ndarray or None
        Scores refitted on resampled votes, shape ``(n_boot, K)``.
    n_boot_failed : int
        Resamples without a finite maximum (left out).
    random_effects : DataFrame or None
        Variance components of worker/prompt random effects (GLMM fits).
    """

    systems: tuple[str, ...]
    model: str
    ties: str
    reference: str | None
    estimate: np.ndarray
    vcov: np.ndarray
    vcov_sandwich: np.ndarray
    tie: float
    tie_se: float
    position: float
    position_se: float
    loglik: float
    n_votes: int
    n_ties: int
    bootstrap: np.ndarray | None = None
    n_boot_failed: int = 0
    random_effects: pd.DataFrame | None = None

    @property
    def scores(self) -> pd.Series:
        """Scores by system (logit scale)."""
        return pd.Series(self.estimate, index=list(self.systems), name="score")

    def se(self, interval: str = "sandwich") -> np.ndarray:
        """Standard errors of the scores: ``"sandwich"``, ``"model"`` or ``"bootstrap"``."""
        check_choice("interval", interval, _INTERVALS)
        if interval == "bootstrap":
            return np.std(self._boot(), axis=0, ddof=1)
        v = self.vcov_sandwich if interval == "sandwich" else self.vcov
        return np.sqrt(np.clip(np.diag(v), 0, None))

    def _boot(self) -> np.ndarray:
        if self.bootstrap is None or len(self.bootstrap) < 2:
            raise InputError("interval='bootstrap' needs a fit with n_boot >= 2 resamples; refit "
                             "with bradley_terry(..., n_boot=1000) or use interval='sandwich'.")
        return self.bootstrap

    def intervals(self, interval: str = "sandwich", confidence_level: float = 0.95) -> pd.DataFrame:
        """Confidence intervals of the scores: Wald (sandwich or model SEs) or bootstrap percentiles."""
        level = check_probability("confidence_level", confidence_level)
        if interval == "bootstrap":
            lo, hi = np.quantile(self._boot(), [(1 - level) / 2, (1 + level) / 2], axis=0)
        else:
            z = stats.norm.ppf((1 + level) / 2)
            se = self.se(interval)
            lo, hi = self.estimate - z * se, self.estimate + z * se
        return pd.DataFrame({"low": lo, "high": hi}, index=list(self.systems))

    def ranking(self) -> tuple[str, ...]:
        """Systems from the highest score to the lowest."""
        return tuple(self.systems[i] for i in np.argsort(-self.estimate, kind="stable"))

    def difference(self, first: str, second: str, interval: str = "sandwich") -> tuple[float, float]:
        """Estimate and standard error of ``s_first - s_second``."""
        i, j = (self._index(s) for s in (first, second))
        est = float(self.estimate[i] - self.estimate[j])
        if interval == "bootstrap":
            b = self._boot()
            return est, float(np.std(b[:, i] - b[:, j], ddof=1))
        check_choice("interval", interval, _INTERVALS)
        v = self.vcov_sandwich if interval == "sandwich" else self.vcov
        return est, float(math.sqrt(max(v[i, i] + v[j, j] - 2 * v[i, j], 0.0)))

    def _index(self, system: Any) -> int:
        if system not in self.systems:
            raise InputError(f"system {system!r} is not among the fitted systems {list(self.systems)}.")
        return self.systems.index(system)

    def to_frame(self, interval: str = "sandwich", confidence_level: float = 0.95,
                 scale: str = "logit") -> pd.DataFrame:
        """One row per system, best first: score, SE, interval and rank.

        ``scale="elo"`` shows scores as Elo points (``400 / ln 10`` per logit,
        Chatbot Arena's display scale; only the differences mean anything).
        """
        check_choice("scale", scale, ("logit", "elo"))
        factor = ELO_SCALE if scale == "elo" else 1.0
        ci = self.intervals(interval, confidence_level)
        frame = pd.DataFrame({"system": list(self.systems), "score": self.estimate * factor,
                              "se": self.se(interval) * factor,
                              "ci_low": ci["low"].to_numpy() * factor,
                              "ci_high": ci["high"].to_numpy() * factor})
        frame = frame.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)
        frame.insert(0, "rank", np.arange(1, len(frame) + 1))
        return frame

    def summary(self, interval: str = "sandwich", scale: str = "logit") -> str:
        """The fit and its score table (``scale="elo"``: scores in Elo points, as
        :meth:`to_frame`)."""
        ref = f"{self.reference} = 0" if self.reference else "scores sum to 0"
        head = [f"{_MODEL_NAMES[self.model]} model ({self.ties} ties), {len(self.systems)} systems, "
                f"{self.n_votes} votes ({self.n_ties} ties); {ref}; log-likelihood {self.loglik:.3f}"]
        if not math.isnan(self.tie):
            name = "log nu" if self.model == "davidson" else "log theta"
            head.append(f"tie parameter ({name}): {self.tie:.4f} (SE {self.tie_se:.4f})")
        if not math.isnan(self.position):
            head.append(f"first-listed advantage: {self.position:.4f} (SE {self.position_se:.4f})")
        if self.random_effects is not None:
            head.append("random effects (SD): " + ", ".join(
                f"{g} {sd:.4f}" for g, sd in zip(self.random_effects["group"], self.random_effects["sd"], strict=True)))
        table = self.to_frame(interval, scale=scale).to_string(
            index=False, float_format=lambda v: f"{v:.4f}" if scale == "logit" else f"{v:.1f}")
        units = "" if scale == "logit" else "; Elo points, 400 / ln 10 per logit"
        return "\n".join(head) + f"\nscores ({interval} intervals{units}):\n" + table

    def methods(self, format: str = "text", interval: str = "sandwich") -> str:
        """The paragraph a paper's methods section needs for this fit (``"text"`` or ``"latex"``)."""
        check_choice("format", format, ("text", "latex"))
        ties = {"davidson": "ties modelled as in Davidson (1970)",
                "rao-kupper": "ties modelled as in Rao and Kupper (1967)",
                "half": "each tie counted as half a win for either system",
                "drop": "ties excluded"}[self.ties]
        how = {"sandwich": "sandwich (robust) standard errors",
               "model": "standard errors from the observed information",
               "bootstrap": f"percentile intervals from {0 if self.bootstrap is None else len(self.bootstrap)} "
                            "bootstrap resamples of the votes"}[interval]
        ref = (f"with {self.reference} fixed at 0" if self.reference else "constrained to sum to zero")
        parts = [f"We fitted a Bradley-Terry model (Bradley and Terry, 1952) to {self.n_votes} paired "
                 f"votes among {len(self.systems)} systems by maximum likelihood, with {ties}"
                 + (f" ({self.n_ties} ties)" if self.n_ties else "") + "."]
        if not math.isnan(self.position):
            parts.append("The model included an advantage of the first-listed system.")
        if self.random_effects is not None:
            groups = " and ".join(self.random_effects["group"])
            parts.append(f"Random intercepts for {groups} were included (binomial GLMM, Laplace "
                         "approximation).")
        parts.append(f"Scores are on the logit scale, {ref}; we report 95% confidence intervals "
                     f"from {how}.")
        text = " ".join(parts)
        return _latex(text) if format == "latex" else text

    def __repr__(self) -> str:
        best = self.ranking()[0]
        return (f"BradleyTerryFit({self.model}, {len(self.systems)} systems, "
                f"{self.n_votes} votes, best={best!r})")
