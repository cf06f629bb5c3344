"""Per-vote log-likelihoods of the paired-comparison models and their derivatives.

A vote compares system A with system B; ``d = s_A - s_B (+ position)`` is the
linear predictor and ``outcome`` is 0 (A wins), 1 (B wins) or 2 (tie).  Each
model is a function of ``d`` and at most one tie parameter ``t``:

* ``"bt"`` (Bradley & Terry 1952): ``P(A) = sigma(d)``; a tie counts as half a
  win for each side (``ties="half"``) or is dropped before the fit;
* ``"davidson"`` (Davidson 1970): ``P(A) : P(B) : P(tie) = e^{d/2} : e^{-d/2} : nu``
  with ``t = log nu``, a softmax over three linear logits;
* ``"rao-kupper"`` (Rao & Kupper 1967): ``P(A) = sigma(d - t)``,
  ``P(B) = sigma(-d - t)``, the tie the rest (``t = log theta >= 0``), a
  cumulative-logit model with thresholds ``-t`` and ``t``.

:func:`vote_terms` returns the log-likelihood of each vote and its first and
second derivatives in ``(d, t)``; the fit chains them through the design.
All three are concave in ``(d, t)`` (softmax and cumulative logit), so
Newton's method with step halving finds the maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

__all__ = ["VoteTerms", "tie_start", "vote_terms"]

A_WINS, B_WINS, TIE = 0, 1, 2


@dataclass(frozen=True)
class VoteTerms:
    """Log-likelihood of each vote and its derivatives in ``(d, t)`` (arrays of votes)."""

    loglik: np.ndarray
    gd: np.ndarray
    gt: np.ndarray
    hdd: np.ndarray
    hdt: np.ndarray
    htt: np.ndarray


def vote_terms(model: str, d: np.ndarray, t: float, outcome: np.ndarray) -> VoteTerms:
    """Per-vote log-likelihood, gradient and Hessian of ``model`` at ``(d, t)``."""
    if model == "bt":
        return _bt(d, outcome)
    if model == "davidson":
        return _davidson(d, t, outcome)
    return _rao_kupper(d, t, outcome)


def tie_start(model: str, tie_share: float) -> float:
    """The tie parameter whose tie probability at ``d = 0`` is ``tie_share``."""
    p = min(max(tie_share, 1e-6), 1 - 1e-6)
    if model == "davidson":
        return float(np.log(2 * p / (1 - p)))
    return float(np.log((1 + p) / (1 - p)))


def _bt(d: np.ndarray, outcome: np.ndarray) -> VoteTerms:
    # a tie is half a win: y = 1, 0, 1/2
    y = np.where(outcome == A_WINS, 1.0, np.where(outcome == B_WINS, 0.0, 0.5))
    p = expit(d)
    ll = y * log_expit(d) + (1 - y) * log_expit(-d)
    zero = np.zeros_like(d)
    return VoteTerms(ll, y - p, zero, -p * (1 - p), zero, zero)


def _davidson(d: np.ndarray, t: float, outcome: np.ndarray) -> VoteTerms:
    z = np.stack([d / 2, -d / 2, np.full_like(d, t)], axis=1)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    p = np.exp(z - lse[:, None])
    pa, pb, pt = p[:, 0], p[:, 1], p[:, 2]
    ll = z[np.arange(d.size), outcome] - lse
    e = np.zeros_like(p)
    e[np.arange(d.size), outcome] = 1.0
    g = e - p
    # Hessian in z is -(diag p - p p'); chain through z = (d/2, -d/2, t)
    haa, hbb, hab = -(pa - pa * pa), -(pb - pb * pb), pa * pb
    hat, hbt, htt = pa * pt, pb * pt, -(pt - pt * pt)
    return VoteTerms(ll, 0.5 * (g[:, 0] - g[:, 1]), g[:, 2],
                     0.25 * (haa - 2 * hab + hbb), 0.5 * (hat - hbt), htt)


def _rao_kupper(d: np.ndarray, t: float, outcome: np.ndarray) -> VoteTerms:
    f1, f2 = expit(d - t), expit(-d - t)        # P(A wins), P(B wins)
    q1, q2 = f1 * (1 - f1), f2 * (1 - f2)       # their densities
    a1, a2 = q1 * (1 - 2 * f1), q2 * (1 - 2 * f2)
    tie = np.clip(1 - f1 - f2, 1e-300, None)
    ll = np.where(outcome == A_WINS, log_expit(d - t),
                  np.where(outcome == B_WINS, log_expit(-d - t), np.log(tie)))
    td, tt = -q1 + q2, q1 + q2
    tdd, tdt, ttt = -a1 - a2, a1 - a2, -a1 - a2
    is_a, is_b = outcome == A_WINS, outcome == B_WINS
    gd = np.where(is_a, 1 - f1, np.where(is_b, -(1 - f2), td / tie))
    gt = np.where(is_a, -(1 - f1), np.where(is_b, -(1 - f2), tt / tie))
    hdd = np.where(is_a, -q1, np.where(is_b, -q2, tdd / tie - td * td / tie**2))
    hdt = np.where(is_a, q1, np.where(is_b, -q2, tdt / tie - td * tt / tie**2))
    htt = np.where(is_a, -q1, np.where(is_b, -q2, ttt / tie - tt * tt / tie**2))
    if t <= 0:                                   # no room for a tie: outside the model
        ll = np.where(outcome == TIE, -np.inf, ll)
    return VoteTerms(ll, gd, gt, hdd, hdt, htt)
