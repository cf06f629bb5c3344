"""``group_sequential``: boundaries of a study that looks at its data K times.

At look ``k`` (information fraction ``t_k``) the study rejects when the
z statistic reaches the efficacy boundary, may stop when it falls below the
futility boundary, and otherwise buys the next batch.  The efficacy
boundaries spend alpha by a Lan-DeMets function; futility is non-binding.
Checked against rpact 3.3.4 (``getDesignGroupSequential`` and
``getDesignCharacteristics``) to 1e-7 (``tests/reference/rpact_reference.R``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import optimize, stats

from .._validation import check_choice, check_int, check_probability, check_real
from ..errors import InputError
from .boundaries import (
    StageProbabilities,
    beta_spending_futility,
    efficacy_bounds,
    fixed_drift,
    stage_probabilities,
)
from .spending import SPENDING, spend

__all__ = ["GroupSequentialDesign", "group_sequential"]

Spending = Literal["obf", "pocock", "hsd"]
_NAMES = {"obf": "O'Brien-Fleming type", "pocock": "Pocock type", "hsd": "Hwang-Shih-DeCani"}


@dataclass(frozen=True, eq=False)
class GroupSequentialDesign:
    """Boundaries of a group-sequential test (:func:`group_sequential`).

    Attributes
    ----------
    information_rates : ndarray
        Planned information fractions ``t_1 < ... < t_K = 1``.
    alpha, beta : float
        One-sided (``sided=1``) or two-sided Type I error; Type II error the
        design is powered for.
    sided : {1, 2}
    spending, gamma : the alpha-spending function (``gamma`` for ``"hsd"``).
    efficacy : ndarray
        Efficacy boundaries on the z scale (two-sided: reject when ``|z| >=``).
    futility : ndarray or None
        Non-binding futility boundaries on the z scale (the last equals the
        last efficacy boundary), or ``None``.
    futility_spending, futility_gamma : the beta-spending function, if any.
    alpha_spent : ndarray
        Cumulative alpha spent by each look.
    drift : float
        The drift ``theta * sqrt(I_max)`` that gives power ``1 - beta``.
    """

    information_rates: np.ndarray
    alpha: float
    beta: float
    sided: int
    spending: str
    gamma: float
    efficacy: np.ndarray
    futility: np.ndarray | None
    futility_spending: str | None
    futility_gamma: float
    alpha_spent: np.ndarray
    drift: float

    @property
    def looks(self) -> int:
        return int(self.information_rates.size)

    def probabilities(self, drift: float) -> StageProbabilities:
        """Stopping probabilities at each look under ``drift`` (futility followed)."""
        return stage_probabilities(self.information_rates, self.efficacy, self.futility,
                                   self.sided, float(drift))

    def power(self, drift: float) -> float:
        """Probability of rejecting with the drift's sign (``drift > 0``)."""
        return float(self.probabilities(drift).efficacy.sum())

    @property
    def fixed_drift(self) -> float:
        """Drift a single-look test needs for power ``1 - beta``."""
        return fixed_drift(self.alpha, self.beta, self.sided)

    @property
    def inflation_factor(self) -> float:
        """Maximum information relative to the single-look design of equal power."""
        return self.drift**2 / self.fixed_drift**2

    def expected_information(self, drift: float) -> float:
        """Expected information at stopping, as a fraction of the maximum."""
        return float(np.dot(self.probabilities(drift).stop, self.information_rates))

    def expected_cost(self, effect: float = 1.0) -> float:
        """Expected sample size relative to the single-look design of equal power.

        ``effect`` is the true effect as a multiple of the one the design is
        powered for (1: H1, 0: H0, 0.5: halfway).
        """
        return self.expected_information(effect * self.drift) * self.inflation_factor

    def boundaries_at(self, fractions: Sequence[float]) -> tuple[np.ndarray, np.ndarray | None]:
        """Efficacy and futility boundaries (z) for looks at ``fractions`` (Lan-DeMets).

        The spending functions are evaluated at the observed information
        fractions, so looks need not be where planned; a fraction of 1 or more
        is the final look and spends what is left.
        """
        t = np.minimum(np.asarray(fractions, float), 1.0)
        upper, _ = efficacy_bounds(t, self.alpha, self.sided, self.spending, self.gamma)
        if self.futility is None:
            return upper, None
        if self.futility_spending is None:
            planned = self.futility[: t.size].copy()
            if t[-1] >= 1.0:
                planned[-1] = upper[-1]
            return upper, np.minimum(planned, upper)
        from .boundaries import _futility_given_drift

        beta_cum = spend(self.futility_spending, np.append(t, 1.0), self.beta, self.futility_gamma)
        lower, _ = _futility_given_drift(np.append(t, 1.0), np.append(upper, np.inf), beta_cum,
                                         self.drift)
        if t[-1] >= 1.0:
            lower[-1] = upper[-1]
        return upper, lower[: t.size]

    def to_frame(self) -> pd.DataFrame:
        """One row per look: fraction, boundaries, nominal level, alpha spent, stopping probabilities."""
        h0, h1 = self.probabilities(0.0), self.probabilities(self.drift)
        frame = pd.DataFrame({
            "look": np.arange(1, self.looks + 1), "information": self.information_rates,
            "efficacy_z": self.efficacy,
            "futility_z": self.futility if self.futility is not None else np.nan,
            "nominal_p": stats.norm.sf(self.efficacy) * self.sided,
            "alpha_spent": self.alpha_spent,
            "reject_h0": h0.efficacy + h0.wrong_sign, "reject_h1": h1.efficacy,
            "futility_h1": h1.futility})
        return frame

    def summary(self) -> str:
        fut = ("none" if self.futility is None else
               f"non-binding, {_NAMES[self.futility_spending]} beta spending (beta={self.beta})"
               if self.futility_spending else "non-binding, given on the z scale")
        head = [f"Group-sequential design: {self.looks} looks, {self.sided}-sided alpha={self.alpha}, "
                f"{_NAMES[self.spending]} alpha spending"
                + (f" (gamma={self.gamma})" if self.spending == "hsd" else ""),
                f"futility: {fut}",
                f"power {1 - self.beta:.2f} at drift {self.drift:.4f}; inflation factor "
                f"{self.inflation_factor:.4f}; expected size vs fixed design: H0 "
                f"{self.expected_cost(0.0):.4f}, H1 {self.expected_cost(1.0):.4f}"]
        table = self.to_frame().to_string(index=False, float_format=lambda v: f"{v:.6g}")
        return "\n".join(head) + "\n" + table

    def methods(self, format: str = "text", simulation: Any = None) -> str:
        """The paragraph a paper's methods section needs (``"text"`` or ``"latex"``).

        ``simulation`` is :func:`nlpower.sequential.sequential_power`'s grid; its
        Type I error, power and expected cost are then reported too.
        """
        from ..arena.result import _latex

        check_choice("format", format, ("text", "latex"))
        fracs = ", ".join(f"{t:.2f}" for t in self.information_rates)
        bounds = ", ".join(f"{c:.3f}" for c in self.efficacy)
        spend = _NAMES[self.spending] + (f" (gamma = {self.gamma:g})" if self.spending == "hsd" else "")
        parts = [f"We used a group-sequential design with {self.looks} analyses at information "
                 f"fractions {fracs}, with efficacy boundaries from the Lan-DeMets {spend} alpha-"
                 f"spending function ({self.sided}-sided alpha = {self.alpha:g}; z boundaries {bounds})."]
        if self.futility is not None:
            how = (f"{_NAMES[self.futility_spending]} beta spending with beta = {self.beta:g}"
                   if self.futility_spending else "fixed z values")
            parts.append(f"Non-binding futility boundaries ({how}; z "
                         + ", ".join(f"{v:.3f}" for v in self.futility[:-1])
                         + ") allowed stopping for futility; the efficacy boundaries ignore them, "
                         "so the Type I error stays at most alpha.")
        parts.append(f"For an i.i.d. endpoint the design needs {self.inflation_factor:.3f} times the "
                     f"information of a single analysis with power {1 - self.beta:.2f}, and its "
                     f"expected size relative to that analysis is {self.expected_cost(1.0):.3f} "
                     f"under the alternative and {self.expected_cost(0.0):.3f} under the null "
                     "(boundaries as computed by nlpower, which agrees with rpact to 1e-7).")
        if simulation is not None:
            parts.append(_simulation_sentence(simulation))
        text = " ".join(parts)
        return _latex(text) if format == "latex" else text

    def __repr__(self) -> str:
        return (f"GroupSequentialDesign({self.looks} looks, {self.spending}, alpha={self.alpha}, "
                f"efficacy={np.round(self.efficacy, 4).tolist()})")


def _simulation_sentence(grid: Any) -> str:
    frame = grid.to_frame()
    st = grid.settings
    n = int(st.get("n_sims", 0))
    out = [f"We simulated the study ({st.get('design')}, parameters {st.get('params')}; model "
           f"{st.get('formula')}, Satterthwaite t converted to z at each look) with {n} replicates "
           "per effect."]
    for _, row in frame.iterrows():
        mc_se = math.sqrt(max(row["rejection_rate"] * (1 - row["rejection_rate"]), 1e-12) / n)
        if row["effect"] == 0:
            out.append(f"Under the null, the rejection rate was {row['rejection_rate']:.4f} "
                       f"(Monte Carlo SE {mc_se:.4f}).")
        else:
            out.append(f"At effect {row['effect']:g}, power was {row['power']:.3f} (SE {mc_se:.3f}; "
                       f"a single analysis of all items: {row['fixed_power']:.3f}) with "
                       f"{row['expected_items']:.1f} of {row['max_items']} items expected.")
    return " ".join(out)


def _rates(looks: Any, information: Any) -> np.ndarray:
    if information is None:
        k = check_int("looks", looks, min=1, max=20)
        return np.arange(1, k + 1) / k
    try:
        t = np.asarray(information, dtype=float).ravel()
    except (TypeError, ValueError):
        t = np.array([np.nan])
    if (t.size < 1 or t.size > 20 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0)
            or t[0] <= 0 or abs(t[-1] - 1) > 1e-12):
        raise InputError(f"information must be 1 to 20 increasing fractions in (0, 1] ending at 1, "
                         f"e.g. [0.25, 0.5, 1]; got {information!r}.")
    if looks is not None and looks != t.size:
        raise InputError(f"looks={looks!r} but information has {t.size} fractions; give one of them.")
    return t


def _futility(futility: Any, t: np.ndarray, upper: np.ndarray, sided: int) -> tuple[np.ndarray | None, str | None]:
    if futility is None:
        return None, None
    if sided == 2:
        raise InputError("futility boundaries are for one-sided designs; use sided=1 or futility=None.")
    if isinstance(futility, str):
        return None, check_choice("futility", futility, SPENDING)
    z = np.asarray(futility, dtype=float).ravel()
    if z.size != t.size - 1 or not np.all(np.isfinite(z)):
        raise InputError(f"futility must name a beta-spending function ({', '.join(SPENDING)}) or give "
                         f"{t.size - 1} z values, one per look before the last; got {futility!r}.")
    if np.any(z >= upper[:-1]):
        raise InputError(f"futility boundaries {z.tolist()} must lie below the efficacy boundaries "
                         f"{np.round(upper[:-1], 4).tolist()} at the same looks.")
    return np.append(z, upper[-1]), None


def group_sequential(
    looks: int | None = None,
    *,
    information: Sequence[float] | None = None,
    alpha: float = 0.025,
    beta: float = 0.2,
    sided: int = 1,
    spending: Spending = "obf",
    gamma: float = -4.0,
    futility: Any = None,
    futility_gamma: float = -4.0,
) -> GroupSequentialDesign:
    """Boundaries of a group-sequential test from alpha-spending functions.

    Parameters
    ----------
    looks : int, default 3
        Number of looks, equally spaced in information (or give ``information``).
    information : sequence of float, optional
        Information fractions of the looks, increasing, the last 1.
    alpha : float
        Type I error: one-sided for ``sided=1`` (rpact's default 0.025), else two-sided.
    beta : float
        Type II error the design is powered for (sets :attr:`drift`; beta spending).
    sided : {1, 2}
        One-sided (reject for large z) or two-sided symmetric boundaries.
    spending : {"obf", "pocock", "hsd"}
        Lan-DeMets O'Brien-Fleming type, Pocock type, or Hwang-Shih-DeCani with ``gamma``.
    futility : None, sequence of float, or {"obf", "pocock", "hsd"}
        Non-binding futility: z values for the looks before the last (e.g.
        ``[0, 0]``: stop when the effect points the wrong way), or a beta-spending
        function (``futility_gamma`` for ``"hsd"``).

    Returns
    -------
    GroupSequentialDesign

    Examples
    --------
    >>> d = group_sequential(3, alpha=0.025, spending="obf")
    >>> d.efficacy.round(4).tolist()
    [3.7103, 2.5114, 1.993]
    >>> round(d.inflation_factor, 4)
    1.0128
    """
    t = _rates(3 if looks is None and information is None else looks, information)
    alpha = check_probability("alpha", alpha)
    beta = check_probability("beta", beta)
    if sided not in (1, 2):
        raise InputError(f"sided must be 1 or 2; got {sided!r}.")
    spending = check_choice("spending", spending, SPENDING)
    gamma = check_real("gamma", gamma, min=-40.0, max=40.0)
    futility_gamma = check_real("futility_gamma", futility_gamma, min=-40.0, max=40.0)
    upper, spent = efficacy_bounds(t, alpha, sided, spending, gamma)
    lower, fut_kind = _futility(futility, t, upper, sided)
    if fut_kind is not None:
        lower, drift = beta_spending_futility(t, upper, beta, fut_kind, futility_gamma)
    else:
        def gap(eta: float) -> float:
            return float(stage_probabilities(t, upper, lower, sided, eta).efficacy.sum()) - (1 - beta)
        drift = float(optimize.brentq(gap, 0.0, 40.0, xtol=1e-13))
    return GroupSequentialDesign(t, alpha, beta, sided, spending, gamma if spending == "hsd" else math.nan,
                                 upper, lower, fut_kind, futility_gamma if fut_kind == "hsd" else math.nan,
                                 spent, drift)
