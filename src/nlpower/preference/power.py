"""Power, Type-M and Type-S of a one-judgement head-to-head comparison (Card et al. 2020, Fig. 1).

``n`` people each judge one pair of outputs: system B wins with probability
``p_win``, draws with ``p_draw``, loses with ``p_lose = 1 - p_win - p_draw``.
The tested quantity is the share preferring B,

* ``ties="exclude"``: ``share = p_win / (p_win + p_lose)``, estimated by
  ``W / (W + L)`` (draws dropped);
* ``ties="split"``: ``share = p_win + p_draw / 2``, estimated by
  ``(W + D/2) / n`` (each draw half a win, half a loss);

and the effect is ``share - 1/2``.  The test (:mod:`.rules`) depends only on
``W`` and ``m = W + L``.

Two ways to the same numbers:

* ``method="exact"`` enumerates the outcome: ``m ~ Binomial(n, 1 - p_draw)``
  and, given ``m``, ``W ~ Binomial(m, q)`` with ``q = p_win / (1 - p_draw)``.
  Power, the rejection rate and Type-M come from binomial tails and the
  identity ``E[W 1(W >= c)] = m q P(W' >= c - 1)``, ``W' ~ Binomial(m - 1, q)``:
  no Monte Carlo error, O(sqrt(n)) values of ``m``.
* ``method="simulate"``: the paper's algorithm (Fig. 2) -- ``n_sims``
  multinomial samples of ``(W, D, L)``, the same test, counted.

Power counts only rejections in the direction of the true effect (Fig. 2);
Type-M is ``E[|estimate - 1/2| | significant] / |share - 1/2|`` and Type-S the
share of significant samples with the wrong sign (Gelman & Carlin 2014).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any, Literal, TypeAlias

import numpy as np
from scipy import stats

from .._choices import Alternative, check_choice
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int, check_real
from ..errors import InputError
from ..intervals import ConfidenceInterval, mc_se, wilson_ci
from ..powerresult import PowerResult, PreferenceStudy
from .rules import thresholds

__all__ = ["PreferencePowerResult", "PreferenceTest", "Ties", "check_draw", "check_probabilities",
           "power"]

#: Tests of the one-judgement counts (:mod:`nlpower.preference.rules`).
PreferenceTest: TypeAlias = Literal["binomial", "z"]
#: What a draw is: dropped, or half a win and half a loss.
Ties: TypeAlias = Literal["exclude", "split"]
#: Exact enumeration or the paper's simulation.
PreferenceMethod: TypeAlias = Literal["exact", "simulate"]
#: Decisive counts with binomial probability below this (each tail) are skipped.
_TAIL = 1e-15


def check_draw(p_draw: Any) -> float:
    """``p_draw`` checked: a probability in [0, 1)."""
    p_draw = check_real("p_draw", p_draw)
    if not 0.0 <= p_draw < 1.0:
        raise InputError(
            f"p_draw (the probability of a draw / 'no preference') must be in [0, 1); got "
            f"{p_draw}. Use p_draw=0 when judges must choose.")
    return p_draw


def check_probabilities(p_win: Any, p_draw: Any) -> tuple[float, float, float]:
    """``(p_win, p_draw, p_lose)`` checked: each in range and summing to 1.

    Examples
    --------
    >>> check_probabilities(0.5, 0.2)
    (0.5, 0.2, 0.3)
    """
    p_win = check_real("p_win", p_win)
    p_draw = check_draw(p_draw)
    if not 0.0 < p_win < 1.0:
        raise InputError(
            f"p_win (the probability that a judge prefers system B) must be strictly between 0 "
            f"and 1; got {p_win}. Pass a probability, e.g. p_win=0.65 (not a percentage).")
    p_lose = 1.0 - p_win - p_draw
    if p_lose < -1e-12:
        raise InputError(
            f"p_win + p_draw must be at most 1 (p_lose = 1 - p_win - p_draw is the probability "
            f"that A is preferred); got p_win={p_win} and p_draw={p_draw}, so p_lose = "
            f"{p_lose:.4g} < 0. Lower p_win or p_draw.")
    return p_win, p_draw, round(max(p_lose, 0.0), 15)


def _check_common(test: Any, ties: Any, alpha: Any, alternative: Any) -> tuple[Any, Any, float, Any]:
    test = check_choice("test", test, PreferenceTest)
    ties = check_choice("ties", ties, Ties)
    alpha = check_real("alpha", alpha)
    if not 0.0 < alpha < 0.5:
        raise InputError(f"alpha must be strictly between 0 and 0.5; got {alpha}. The usual "
                         "level is alpha=0.05.")
    alternative = check_choice("alternative", alternative, Alternative)
    return test, ties, alpha, alternative


def _share(p_win: float, p_draw: float, ties: str) -> float:
    return p_win / (1.0 - p_draw) if ties == "exclude" else p_win + p_draw / 2.0


#: The result of a one-judgement head-to-head power: the one
#: :class:`~nlpower.powerresult.PowerResult` (``result.study`` is a
#: :class:`~nlpower.powerresult.PreferenceStudy`: ``n``, ``p_win``, ``p_draw``, ``p_lose``,
#: ``share``, ``ties``, ``mean_significant``, read as the result's own); the former name, kept.
PreferencePowerResult = PowerResult


def power(
    n: int,
    p_win: float,
    *,
    p_draw: float = 0.0,
    ties: Ties = "exclude",
    test: PreferenceTest = "binomial",
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    method: PreferenceMethod = "exact",
    n_sims: int = 10_000,
    rng: RNGLike = None,
) -> PowerResult:
    """Power, Type-M and Type-S of a head-to-head test with one judgement per person.

    Parameters
    ----------
    n : int
        Number of judgements (people, one pair each).
    p_win : float
        Probability that a judge prefers system B, in (0, 1).
    p_draw : float, default 0
        Probability of a draw ("no preference"), in [0, 1); ``p_win + p_draw <= 1``.
    ties : {"exclude", "split"}
        Draws dropped (share ``p_win / (1 - p_draw)``) or counted half to each
        system (share ``p_win + p_draw / 2``).  The test is the same; the
        estimate, the effect and so Type-M differ (:mod:`.rules`).
    test : {"binomial", "z"}
        Exact binomial (sign) test (the paper's, scipy's ``binomtest``) or the
        score z-test.
    alpha : float, default 0.05
        Significance level, in (0, 0.5).
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: B preferred.  Power counts sign-correct rejections only.
    method : {"exact", "simulate"}
        Enumerate (no Monte Carlo error) or simulate ``n_sims`` samples.
    n_sims : int, default 10000
        Samples for ``method="simulate"``.
    rng : optional
        Randomness for ``method="simulate"`` (the :mod:`nlpower._rng` policy).

    Returns
    -------
    PowerResult
        Of a :class:`~nlpower.powerresult.PreferenceStudy` (``result.n``,
        ``result.p_win``, ..., ``result.mean_significant``;
        ``docs/results.md``).

    Raises
    ------
    InputError
        Probabilities out of range or summing above 1, a bad option.

    Examples
    --------
    Card et al. (2020), Fig. 1: 65% of people prefer system B.

    >>> r100, r25 = power(100, 0.65), power(25, 0.65)
    >>> round(r100.power, 2), round(r25.power, 2)
    (0.83, 0.31)
    >>> r25.mean_significant > r100.mean_significant > 0.65
    True
    """
    n = check_int("n", n, min=1)
    p_win, p_draw, p_lose = check_probabilities(p_win, p_draw)
    test, ties, alpha, alternative = _check_common(test, ties, alpha, alternative)
    method = check_choice("method", method, PreferenceMethod)
    share = _share(p_win, p_draw, ties)
    base = {"n": n, "p_win": p_win, "p_draw": p_draw, "p_lose": p_lose, "share": share,
            "effect": share - 0.5, "ties": ties, "test": test, "alpha": alpha,
            "alternative": alternative}
    start = time.perf_counter()
    if method == "exact":
        res = _exact(base)
    else:
        res = _simulate(base, check_int("n_sims", n_sims, min=1), root_seed(rng))
    return replace(res, elapsed=time.perf_counter() - start)


def decisive_counts(n: int, p_draw: float) -> tuple[np.ndarray, np.ndarray]:
    """``(m, P(m))``: the decisive counts worth enumerating and their probabilities."""
    if p_draw == 0.0:
        return np.array([n]), np.array([1.0])
    lo = int(stats.binom.ppf(_TAIL, n, 1.0 - p_draw))
    hi = int(stats.binom.isf(_TAIL, n, 1.0 - p_draw))
    m = np.arange(max(lo - 1, 0), min(hi + 1, n) + 1)
    return m, stats.binom.pmf(m, n, 1.0 - p_draw)


def tail_moments(m: np.ndarray, q: float, lower: np.ndarray,
                 upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per ``m``: ``P(W >= upper)``, ``P(W <= lower)``, ``E[W 1(W >= upper)]``, ``E[W 1(W <= lower)]``.

    ``W ~ Binomial(m, q)``; the expectations use ``E[W 1(W >= c)] = m q P(W' >= c - 1)``
    with ``W' ~ Binomial(m - 1, q)``.
    """
    mm1 = np.maximum(m - 1, 0)
    p_up = stats.binom.sf(upper - 1, m, q)
    p_lo = stats.binom.cdf(lower, m, q)
    e_up = np.where(m > 0, m * q * stats.binom.sf(upper - 2, mm1, q), 0.0)
    e_lo = np.where(m > 0, m * q * stats.binom.cdf(lower - 1, mm1, q), 0.0)
    return p_up, p_lo, e_up, e_lo


def _exact(base: dict[str, Any]) -> PowerResult:
    n, ties = base["n"], base["ties"]
    m, w = decisive_counts(n, base["p_draw"])
    q = base["p_win"] / (1.0 - base["p_draw"])
    lower, upper = thresholds(m, base["test"], base["alpha"], base["alternative"])
    p_up, p_lo, e_up, e_lo = tail_moments(m, q, lower, upper)
    safe_m = np.maximum(m, 1)
    if ties == "exclude":   # estimate W / m; |W/m - 1/2| = (2W - m) / 2m above, (m - 2W) / 2m below
        dev = ((2 * e_up - m * p_up) + (m * p_lo - 2 * e_lo)) / (2 * safe_m)
        level = (e_up + e_lo) / safe_m
    else:                   # estimate (W + (n - m)/2) / n
        dev = ((2 * e_up - m * p_up) + (m * p_lo - 2 * e_lo)) / (2 * n)
        level = (e_up + e_lo + (n - m) / 2 * (p_up + p_lo)) / n
    up, down = float(w @ p_up), float(w @ p_lo)
    return _result(base, up, down, float(w @ dev), float(w @ level), n_sims=0)


def _result(base: dict[str, Any], up: float, down: float, dev: float, level: float, *,
            n_sims: int, seed: dict[str, Any] | None = None) -> PowerResult:
    """The result from probabilities (or shares) of rejecting up / down and the moments."""
    effect = base["effect"]
    reject = up + down
    right, wrong = (up, down) if effect > 0 else (down, up)
    if effect == 0:
        pw, tm, ts = math.nan, math.nan, math.nan
    else:
        pw = right
        tm = dev / (abs(effect) * reject) if reject > 0 else math.nan
        ts = wrong / reject if reject > 0 else math.nan
    mean_sig = level / reject if reject > 0 else math.nan
    if n_sims:
        k = round((pw if effect != 0 else reject) * n_sims)
        se, ci = mc_se(k / n_sims, n_sims), ConfidenceInterval(*wilson_ci(k, n_sims))
        n_rej: int | None = round(right * n_sims) if effect != 0 else None
    else:
        se, ci, n_rej = (0.0 if effect != 0 else math.nan), ConfidenceInterval(pw, pw), None
    notes: tuple[str, ...] = ()
    if base["p_draw"] > 0 and base["test"] == "binomial":
        notes = ("the binomial test is conditional on the number of decisive judgements",)
    study = PreferenceStudy(n=base["n"], p_win=base["p_win"], p_draw=base["p_draw"],
                            p_lose=base["p_lose"], share=base["share"], ties=base["ties"],
                            mean_significant=mean_sig)
    return PowerResult(
        power=pw, se=se, ci=ci, n_sims=n_sims, n_rejected=n_rej, rejection_rate=reject,
        type_s=ts, type_m=tm, effect=effect, test=base["test"], alpha=base["alpha"],
        alternative=base["alternative"], study=study,
        method="exact" if not n_sims else "simulate", seed=seed or {}, notes=notes)


def _simulate(base: dict[str, Any], n_sims: int,
              seq: np.random.SeedSequence) -> PowerResult:
    gen = np.random.Generator(np.random.PCG64(seq))
    n = base["n"]
    counts = gen.multinomial(n, [base["p_win"], base["p_draw"], base["p_lose"]], size=n_sims)
    w, d = counts[:, 0], counts[:, 1]
    m = n - d
    lower, upper = thresholds(m, base["test"], base["alpha"], base["alternative"])
    sig_up, sig_lo = w >= upper, w <= lower
    sig = sig_up | sig_lo
    with np.errstate(invalid="ignore", divide="ignore"):
        est = w / m if base["ties"] == "exclude" else (w + d / 2.0) / n
    dev = float(np.abs(est[sig] - 0.5).sum()) / n_sims
    level = float(est[sig].sum()) / n_sims
    return _result(base, float(sig_up.mean()), float(sig_lo.mean()), dev, level,
                   n_sims=n_sims, seed=seed_record(seq))
