"""Minimum detectable preference and sample size of a one-judgement head-to-head test.

Both search the exact power (:mod:`.power`), written per decisive count
``m`` as ``g(m) = P(reject towards the true direction | m)`` so that the power
of any ``n`` is ``sum_m P(m | n) g(m)``: one vector of tail probabilities
serves a whole scan of sample sizes.

Exact binomial power is not monotone in ``n`` (the discreteness of the test
makes it saw-toothed), so :func:`sample_size` reports both the smallest
``n`` with enough power and the smallest ``n`` from which power stays at or
above the target throughout the scanned range (``n_stable``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from .. import __version__
from .._choices import Alternative
from .._validation import check_int, check_real
from ..errors import InputError
from .power import (
    PreferenceTest,
    Ties,
    _check_common,
    _share,
    check_draw,
    check_probabilities,
    decisive_counts,
)
from .rules import thresholds

__all__ = ["PreferenceMDEResult", "PreferenceSampleSizeResult", "mde", "sample_size"]


def _target(value: Any) -> float:
    v = check_real("power", value)
    if not 0.0 < v < 1.0:
        raise InputError(f"power (the target) must be strictly between 0 and 1; got {v}. "
                         "The usual target is power=0.8.")
    return v


def _g(m: np.ndarray, q: float, test: str, alpha: float, alternative: str, up: bool) -> np.ndarray:
    """``P(reject towards B | m)`` (``up``) or towards A, ``W ~ Binomial(m, q)``."""
    lower, upper = thresholds(m, test, alpha, alternative)
    return stats.binom.sf(upper - 1, m, q) if up else stats.binom.cdf(lower, m, q)


def _power_n(n: int, q: float, p_draw: float, test: str, alpha: float, alternative: str,
             up: bool) -> float:
    m, w = decisive_counts(n, p_draw)
    return float(w @ _g(m, q, test, alpha, alternative, up))


@dataclass(frozen=True)
class PreferenceMDEResult:
    """Smallest preference a one-judgement head-to-head test of ``n`` judges detects.

    Attributes
    ----------
    p_win : float
        Probability of preferring B at the MDE (given ``p_draw``).
    share, effect : float
        The share preferring B (``ties``) and ``share - 1/2`` at the MDE.
    achieved : float
        Exact power there (at least ``power`` up to the search tolerance).
    """

    p_win: float
    share: float
    effect: float
    achieved: float
    n: int
    p_draw: float
    power: float
    ties: str
    test: str
    alpha: float
    alternative: str
    version: str = __version__

    def summary(self) -> str:
        return (f"Minimum detectable preference ({self.test} test, {self.alternative}, alpha "
                f"{self.alpha:g}, power {self.power:g})\n  n {self.n} judges, P(draw) "
                f"{self.p_draw:g}: P(B wins) {self.p_win:.4f}, share preferring B ({self.ties} "
                f"ties) {self.share:.4f} (effect {self.effect:+.4f}); power there "
                f"{self.achieved:.4f}")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{k: getattr(self, k) for k in self.__dataclass_fields__}])

    def __repr__(self) -> str:
        return (f"PreferenceMDEResult(p_win={self.p_win:.4f}, share={self.share:.4f}, "
                f"n={self.n}, power={self.power:g})")


@dataclass(frozen=True)
class PreferenceSampleSizeResult:
    """Judges a one-judgement head-to-head test needs for a target power.

    Attributes
    ----------
    n : int
        Smallest number of judges with exact power >= ``power``.
    n_stable : int
        Smallest ``n`` from which power stays >= ``power`` up to ``n_checked``
        (exact binomial power is saw-toothed in ``n``).
    achieved : float
        Power at ``n``.
    """

    n: int
    n_stable: int
    n_checked: int
    achieved: float
    p_win: float
    p_draw: float
    share: float
    power: float
    ties: str
    test: str
    alpha: float
    alternative: str
    version: str = __version__

    def summary(self) -> str:
        return (f"Sample size of a head-to-head test ({self.test} test, {self.alternative}, alpha "
                f"{self.alpha:g}, power {self.power:g})\n  P(B wins) {self.p_win:g}, P(draw) "
                f"{self.p_draw:g} (share preferring B {self.share:.4g}, {self.ties} ties)\n"
                f"  n {self.n} judges (power {self.achieved:.4f}); power stays >= "
                f"{self.power:g} from n {self.n_stable} (checked to n {self.n_checked})")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{k: getattr(self, k) for k in self.__dataclass_fields__}])

    def __repr__(self) -> str:
        return (f"PreferenceSampleSizeResult(n={self.n}, n_stable={self.n_stable}, "
                f"achieved={self.achieved:.4f})")


def mde(
    n: int,
    *,
    p_draw: float = 0.0,
    power: float = 0.8,
    ties: Ties = "exclude",
    test: PreferenceTest = "binomial",
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
) -> PreferenceMDEResult:
    """Smallest preference for B that ``n`` single judgements detect with the target power.

    Power rises with the share preferring B among decisive judgements
    ``q = p_win / (1 - p_draw)`` for every decisive count, so the MDE is a
    root in ``q`` (Brent's method, to 1e-10).  With ``alternative="less"``
    the search is for a preference for A (``p_win < p_lose``).

    Parameters
    ----------
    n : int
        Judges.
    p_draw : float, default 0
        Probability of a draw, held fixed.
    power : float, default 0.8
        Target power.
    ties, test, alpha, alternative
        As in :func:`nlpower.preference.power`.

    Returns
    -------
    PreferenceMDEResult

    Raises
    ------
    InputError
        No preference reaches the target at this ``n`` (too few judges).

    Examples
    --------
    >>> r = mde(100)
    >>> round(r.p_win, 3)
    0.645
    """
    n = check_int("n", n, min=1)
    p_draw = check_draw(p_draw)
    target = _target(power)
    test, ties, alpha, alternative = _check_common(test, ties, alpha, alternative)
    up = alternative != "less"

    def f(q: float) -> float:
        qq = q if up else 1.0 - q
        return _power_n(n, qq, p_draw, test, alpha, alternative, up) - target

    best = f(1.0)
    if best < 0:
        raise InputError(
            f"no preference reaches power {target:g} with n={n} judges (P(draw) {p_draw:g}): "
            f"even if every decisive judge preferred one system the power would be "
            f"{best + target:.3g}. Increase n (see sample_size) or lower the target.")
    q = float(optimize.brentq(f, 0.5, 1.0, xtol=1e-12)) if f(0.5) < 0 else 0.5
    q = q if up else 1.0 - q
    p_win = q * (1.0 - p_draw)
    share = _share(p_win, p_draw, ties)
    achieved = _power_n(n, q, p_draw, test, alpha, alternative, up)
    return PreferenceMDEResult(p_win=p_win, share=share, effect=share - 0.5, achieved=achieved,
                               n=n, p_draw=float(p_draw), power=target, ties=ties, test=test,
                               alpha=alpha, alternative=alternative)


def _normal_n(q: float, p_draw: float, alpha: float, target: float, two_sided: bool) -> float:
    za = float(stats.norm.isf(alpha / 2 if two_sided else alpha))
    zb = float(stats.norm.ppf(target))
    m = ((0.5 * za + zb * math.sqrt(q * (1 - q))) / abs(q - 0.5)) ** 2
    return m / (1.0 - p_draw)


def sample_size(
    p_win: float,
    *,
    p_draw: float = 0.0,
    power: float = 0.8,
    ties: Ties = "exclude",
    test: PreferenceTest = "binomial",
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    n_max: int = 1_000_000,
) -> PreferenceSampleSizeResult:
    """Number of single judgements a head-to-head test needs for the target power.

    Exact power is evaluated for every ``n`` from 1 to about twice the
    normal-approximation answer (``n_checked``); ``n`` is the first with
    enough power, ``n_stable`` the first after which it never drops below.

    Parameters
    ----------
    p_win : float
        Probability that a judge prefers B.
    p_draw : float, default 0
    power : float, default 0.8
        Target power.
    ties, test, alpha, alternative
        As in :func:`nlpower.preference.power`.
    n_max : int, default 1000000
        Refuse to search beyond this many judges.

    Returns
    -------
    PreferenceSampleSizeResult

    Raises
    ------
    InputError
        No preference (``p_win == p_lose``), a preference against the one-sided
        alternative, or more than ``n_max`` judges needed.

    Examples
    --------
    >>> r = sample_size(0.65)
    >>> r.n <= r.n_stable, r.achieved >= 0.8
    (True, True)
    """
    p_win, p_draw, p_lose = check_probabilities(p_win, p_draw)
    target = _target(power)
    test, ties, alpha, alternative = _check_common(test, ties, alpha, alternative)
    n_max = check_int("n_max", n_max, min=1)
    q = p_win / (1.0 - p_draw)
    up = q > 0.5
    if abs(q - 0.5) < 1e-12 or (alternative == "greater" and not up) or (
            alternative == "less" and up):
        raise InputError(
            f"p_win={p_win:g} and p_lose={p_lose:g} give no preference in the direction "
            f"alternative={alternative!r} tests, so no sample size has power; give p_win != "
            "p_lose (and on the tested side).")
    guess = _normal_n(q, p_draw, alpha, target, alternative == "two-sided")
    n_hi = int(min(max(2.0 * guess + 50, 60), n_max))
    if guess > n_max:
        raise InputError(f"about {guess:.0f} judges are needed, more than n_max={n_max}; "
                         "raise n_max or expect a larger preference.")
    ns = np.arange(1, n_hi + 1)
    if p_draw == 0.0:
        pw = _g(ns, q, test, alpha, alternative, up)
    else:
        pw = np.array([_power_n(int(k), q, p_draw, test, alpha, alternative, up) for k in ns])
    ok = pw >= target
    if not ok.any():
        raise InputError(f"power {target:g} is not reached by n={n_hi} judges; raise n_max.")
    first = int(ns[np.argmax(ok)])
    below = np.flatnonzero(~ok)
    stable = int(ns[below[-1] + 1]) if below.size and below[-1] + 1 < ns.size else first
    if below.size and below[-1] + 1 >= ns.size:
        raise InputError(f"power {target:g} is not held by n={n_hi} judges; raise n_max.")
    achieved = float(pw[first - 1])
    return PreferenceSampleSizeResult(
        n=first, n_stable=stable, n_checked=n_hi, achieved=achieved, p_win=p_win, p_draw=p_draw,
        share=_share(p_win, p_draw, ties), power=target, ties=ties, test=test, alpha=alpha,
        alternative=alternative)

