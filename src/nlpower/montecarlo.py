"""The one Monte Carlo summary of a power simulation.

Every simulated power in nlpower -- human ratings (:func:`nlpower.power`),
BLEU, accuracy metrics, paired scores -- is summarised by
:class:`MonteCarloSummary`: from each replicate's estimate and whether its
test rejected,

* **power**: the share of replicates that reject *with the true sign*
  (Card et al. 2020, Fig. 2), with its Monte Carlo SE and Wilson interval;
* **rejection rate**: the share that reject at all (the Type I error at
  effect 0);
* **Type-S**: the share of rejections with the wrong sign, with a Wilson
  interval over the rejections (Gelman & Carlin 2014);
* **Type-M**: the mean of ``|estimate| / |effect|`` over the rejections
  (the exaggeration ratio), with a t interval from their SD.

With few rejections these are uncertain (Type-S 0.115 from 46 rejections
has a 95% interval of about 0.05-0.23), which is why they carry intervals.
At effect 0 power, Type-S and Type-M are undefined (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_probability
from .intervals import ConfidenceInterval, wilson_ci

__all__ = ["MonteCarloSummary"]

_NAN_CI = ConfidenceInterval(math.nan, math.nan)


@dataclass(frozen=True)
class MonteCarloSummary:
    """Counts of a power simulation and what follows from them (module docstring).

    Build with :meth:`from_draws`; stored and restored with :meth:`to_record`
    and :meth:`from_record`.

    Attributes
    ----------
    n_sims : int
        Replicates (failed ones count as non-rejections).
    n_rejected : int
        Sign-correct rejections.
    n_significant : int
        Rejections of either sign.
    n_wrong_sign : int
        Rejections with the wrong sign.
    effect : float
        The true effect (its sign defines "correct").
    type_m : float
        Mean ``|estimate| / |effect|`` over the rejections.
    type_m_sd : float
        Their standard deviation (for the interval of ``type_m``).
    n_max, precision : int or None, float or None
        With adaptive precision (``precision=`` of the power functions): the
        most replicates the run could use and the target half-width;
        :attr:`stopped_early` says whether the rule stopped it before
        ``n_max``.  None without the rule.

    Examples
    --------
    >>> est = np.array([0.3, 0.1, -0.2, 0.25, 0.05])
    >>> sig = np.array([True, False, True, True, False])
    >>> s = MonteCarloSummary.from_draws(est, sig, effect=0.1)
    >>> s.power, s.rejection_rate, round(s.type_s, 3), round(s.type_m, 2)
    (0.4, 0.6, 0.333, 2.5)
    >>> s.type_s_ci.low < s.type_s < s.type_s_ci.high
    True
    """

    n_sims: int
    n_rejected: int
    n_significant: int
    n_wrong_sign: int
    effect: float
    type_m: float = math.nan
    type_m_sd: float = math.nan
    n_max: int | None = None
    precision: float | None = None

    @classmethod
    def from_draws(cls, estimate: Any, significant: Any, *, effect: float,
                   n_max: int | None = None, precision: float | None = None
                   ) -> MonteCarloSummary:
        """From each replicate's estimate and rejection flag (NaN estimates never reject)."""
        est = np.asarray(estimate, dtype=float)
        sig = np.asarray(significant, dtype=bool)
        n = int(sig.shape[0])
        n_sig = int(sig.sum())
        n_max = None if precision is None else n_max
        if effect == 0 or n_sig == 0:
            return cls(n, 0, n_sig, 0, float(effect), n_max=n_max, precision=precision)
        sign = np.sign(effect)
        correct = sig & (np.sign(est) == sign)
        ratio = np.abs(est[sig]) / abs(effect)
        sd = float(np.std(ratio, ddof=1)) if n_sig > 1 else math.nan
        return cls(n, int(correct.sum()), n_sig, int(np.sum(np.sign(est[sig]) != sign)),
                   float(effect), float(np.mean(ratio)), sd, n_max, precision)

    @property
    def stopped_early(self) -> bool:
        """Whether adaptive precision stopped the run before ``n_max`` replicates."""
        return self.n_max is not None and self.n_sims < self.n_max

    def describe_precision(self) -> str:
        """How adaptive precision ended the run (empty without it)."""
        if self.precision is None:
            return ""
        lo, hi = wilson_ci(self.n_significant, self.n_sims)
        if self.stopped_early:
            how = f"stopped after {self.n_sims} of at most {self.n_max} replicates"
        elif (hi - lo) / 2.0 <= self.precision:
            how = f"target met only at the maximum, {self.n_sims} replicates"
        else:
            how = (f"target not met within the maximum of {self.n_sims} replicates (half-width "
                   f"{(hi - lo) / 2.0:.3g}); raise n_sims")
        return (f"adaptive precision: {how}; target half-width {self.precision:g} of the "
                "rejection rate's 95% interval")

    @staticmethod
    def spread(ratios: Any) -> float:
        """SD (``ddof=1``) of the rejections' ``|estimate| / |effect|`` (NaN for fewer than 2)."""
        r = np.asarray(ratios, dtype=float)
        return float(np.std(r, ddof=1)) if r.size > 1 else math.nan

    # -- power ---------------------------------------------------------------------------
    @property
    def power(self) -> float:
        """Share of sign-correct rejections (NaN at effect 0)."""
        return self.n_rejected / self.n_sims if self.effect != 0 and self.n_sims else math.nan

    @property
    def rejection_rate(self) -> float:
        """Share of rejections of either sign (the Type I error at effect 0)."""
        return self.n_significant / self.n_sims if self.n_sims else math.nan

    @property
    def se(self) -> float:
        """Monte Carlo SE of ``power``: ``sqrt(power (1 - power) / n_sims)``."""
        pw = self.power
        return math.sqrt(pw * (1 - pw) / self.n_sims) if math.isfinite(pw) else math.nan

    @property
    def ci(self) -> ConfidenceInterval:
        """95% Wilson interval of ``power`` (NaN at effect 0)."""
        if self.effect == 0:
            return _NAN_CI
        return ConfidenceInterval(*wilson_ci(self.n_rejected, self.n_sims))

    def proportion_ci(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Wilson interval of ``power`` (of the rejection rate at effect 0), like scipy's."""
        confidence_level = check_probability("confidence_level", confidence_level)
        k = self.n_rejected if self.effect != 0 else self.n_significant
        return ConfidenceInterval(*wilson_ci(k, self.n_sims, confidence_level))

    # -- Type-S and Type-M -----------------------------------------------------------------
    @property
    def type_s(self) -> float:
        """Share of rejections with the wrong sign (NaN without rejections or at effect 0)."""
        if self.effect == 0 or self.n_significant == 0:
            return math.nan
        return self.n_wrong_sign / self.n_significant

    def type_s_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Wilson interval of ``type_s`` over the ``n_significant`` rejections."""
        if not math.isfinite(self.type_s):
            return _NAN_CI
        return ConfidenceInterval(*wilson_ci(self.n_wrong_sign, self.n_significant,
                                             confidence_level))

    def type_m_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """t interval of ``type_m``: mean +- t_{k-1} SD / sqrt(k) over the k rejections.

        Type-M is a mean of magnitudes, never negative: the lower end is cut at 0
        (with few rejections the t interval would reach below it).
        """
        k = self.n_significant
        if not (math.isfinite(self.type_m) and math.isfinite(self.type_m_sd)) or k < 2:
            return _NAN_CI
        from scipy import stats  # on first use: a power run itself needs no scipy

        half = float(stats.t.ppf(0.5 + confidence_level / 2.0, k - 1)) * self.type_m_sd / math.sqrt(k)
        return ConfidenceInterval(max(self.type_m - half, 0.0), self.type_m + half)

    @property
    def type_s_ci(self) -> ConfidenceInterval:
        """95% interval of ``type_s`` (:meth:`type_s_interval`)."""
        return self.type_s_interval()

    @property
    def type_m_ci(self) -> ConfidenceInterval:
        """95% interval of ``type_m`` (:meth:`type_m_interval`)."""
        return self.type_m_interval()

    def describe(self) -> str:
        """``"Type-S 0.115 (95% CI 0.047-0.231)    Type-M 1.84 (95% CI 1.62-2.06)"``."""
        s, m = self.type_s_ci, self.type_m_ci
        if not (math.isfinite(self.type_s) and math.isfinite(self.type_m)):
            why = ("the true effect is 0" if self.effect == 0
                   else f"they need rejections; there were {self.n_significant}")
            return f"Type-S  -    Type-M  - (undefined: {why})"
        return (f"Type-S  {self.type_s:.3f} (95% CI {s.low:.3f}-{s.high:.3f})    "
                f"Type-M  {self.type_m:.2f} (95% CI {m.low:.2f}-{m.high:.2f}); "
                f"from {self.n_significant} rejections")

    # -- records ---------------------------------------------------------------------------
    def to_record(self) -> dict[str, Any]:
        """Flat JSON-able fields (NaN as None); :meth:`from_record` reads them back."""
        s, m = self.type_s_ci, self.type_m_ci
        out: dict[str, Any] = {"n_sims": self.n_sims, "n_rejected": self.n_rejected,
               "n_significant": self.n_significant, "n_wrong_sign": self.n_wrong_sign,
               "type_m_sd": self.type_m_sd, "type_s_ci_low": s.low, "type_s_ci_high": s.high,
               "type_m_ci_low": m.low, "type_m_ci_high": m.high}
        if self.precision is not None:
            out.update(n_sims_max=self.n_max, precision=self.precision)
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}

    @classmethod
    def from_record(cls, record: Mapping[str, Any], *, effect: float) -> MonteCarloSummary | None:
        """The summary of a record from :meth:`to_record` (None for a record without its counts)."""
        if record.get("n_significant") is None or record.get("n_sims") is None:
            return None

        def num(key: str) -> float:
            v = record.get(key)
            return math.nan if v is None else float(v)

        n_max, precision = record.get("n_sims_max"), record.get("precision")
        return cls(int(record["n_sims"]), int(record.get("n_rejected") or 0),
                   int(record["n_significant"]), int(record.get("n_wrong_sign") or 0),
                   float(effect), num("type_m"), num("type_m_sd"),
                   None if n_max is None else int(n_max),
                   None if precision is None else float(precision))
