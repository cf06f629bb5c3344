"""The test of one-judgement head-to-head counts: rejection thresholds per decisive count.

With one judgement per person (Card et al. 2020, section 2 and App. H.4), a
sample of ``n`` judgements is ``W`` wins of system B, ``L`` losses and
``D`` draws.  Under the null hypothesis that B and A are equally preferred
(``p_win == p_lose``), given the number of decisive judgements ``m = W + L``
the wins are ``Binomial(m, 1/2)``; every test here is a function of
``(W, m)`` only, so it is summarised by two thresholds per ``m``: reject for
A when ``W <= lower[m]``, for B when ``W >= upper[m]``.

* ``test="binomial"``: the exact binomial (sign) test, scipy's
  :func:`scipy.stats.binomtest` with ``p=0.5`` (two-sided p-value
  ``2 min(P(W' <= W), P(W' >= W))`` capped at 1; the paper's test for Fig. 1).
* ``test="z"``: the score z-test ``z = (W - L) / sqrt(m)`` against the normal
  (the chi-square goodness-of-fit test without continuity correction).

Splitting ties (each draw half a win, half a loss) changes the estimate, not
the test: the score statistic of the split scores ``u in {0, 1/2, 1}``
against 1/2 with its variance estimated as ``mean((u - 1/2)^2)`` is again
``(W - L) / sqrt(m)``, and conditionally on ``D`` the exact test is the sign
test.  It matters in the mixed model (:mod:`nlpower.outcomes`), not here.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["thresholds"]


def thresholds(m: np.ndarray, test: str, alpha: float,
               alternative: str) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``: reject towards A iff ``W <= lower``, towards B iff ``W >= upper``.

    ``lower = -1`` / ``upper = m + 1`` where no outcome rejects on that side
    (always for ``m = 0``: no decisive judgement, no test).

    Examples
    --------
    >>> lo, up = thresholds(np.array([25, 100]), "binomial", 0.05, "two-sided")
    >>> lo.tolist(), up.tolist()
    ([7, 39], [18, 61])
    """
    m = np.asarray(m, dtype=np.int64)
    never_lo, never_up = np.full(m.shape, -1), m + 1
    if test == "binomial":
        side = alpha / 2.0 if alternative == "two-sided" else alpha
        # largest c with P(W' <= c) <= side, W' ~ Binomial(m, 1/2); the relative slack
        # keeps p-values equal to alpha (to rounding) rejected, as scipy's p <= alpha does
        c = stats.binom.ppf(side, m, 0.5).astype(np.int64)
        c = np.where(stats.binom.cdf(c, m, 0.5) > side * (1 + 1e-12), c - 1, c)
        c = np.where(m > 0, c, -1)
    else:
        zc = float(stats.norm.isf(alpha / 2.0 if alternative == "two-sided" else alpha))
        # W - L = 2W - m <= -zc sqrt(m)  <=>  W <= (m - zc sqrt(m)) / 2
        c = np.floor((m - zc * np.sqrt(m)) / 2.0 + 1e-9).astype(np.int64)
        c = np.where(m > 0, np.maximum(c, -1), -1)
    lower, upper = c, m - c
    if alternative == "greater":
        lower = never_lo
    elif alternative == "less":
        upper = never_up
    return lower, upper
