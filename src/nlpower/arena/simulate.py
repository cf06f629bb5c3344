"""One simulated leaderboard: votes allocated over pairs, outcomes drawn, scores refitted.

Votes are drawn as counts per pair and outcome (multinomial), so a replicate
with 100,000 votes costs no more than one with 1,000.  Outcomes follow
Bradley-Terry, or Davidson's model when ties occur (``tie_rate``: the share
of ties between two equal systems, ``nu = 2 p / (1 - p)``); the fit uses
the same model.

Allocation of votes over the ``K (K - 1) / 2`` pairs:

* ``"uniform"``: every vote picks a pair uniformly;
* ``"adaptive"``: votes come in ``rounds`` equal batches; the first is
  uniform, each later one picks pairs with probability proportional to
  ``0.2 / n_pairs + 0.8 * phi(d_ij / se_ij) / sum``, where ``d_ij`` and
  ``se_ij`` are the current fit's score difference and its standard error:
  votes go where the order of two systems is still in doubt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import FitError
from .likelihood import A_WINS, B_WINS, TIE
from .newton import design_matrix, newton_fit

__all__ = ["Leaderboard", "ReplicateOutcome", "simulate_leaderboard"]

_UNIFORM_SHARE = 0.2


@dataclass(frozen=True)
class Leaderboard:
    """True scores (logit scale) and the tie model of a simulated arena."""

    scores: np.ndarray
    tie_rate: float = 0.0

    @property
    def model(self) -> str:
        return "davidson" if self.tie_rate > 0 else "bt"

    @property
    def nu(self) -> float:
        return 2 * self.tie_rate / (1 - self.tie_rate)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        i, j = np.triu_indices(self.scores.size, k=1)
        return i, j

    def outcome_probabilities(self) -> np.ndarray:
        """Rows: pairs; columns: P(A wins), P(B wins), P(tie)."""
        i, j = self.pairs()
        d = self.scores[i] - self.scores[j]
        z = np.column_stack([np.exp(d / 2), np.exp(-d / 2), np.full(d.size, self.nu)])
        return z / z.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class ReplicateOutcome:
    estimate: np.ndarray       # fitted scores, centred
    se_diff: np.ndarray        # model SE of s_i - s_j for every pair (upper triangle order)
    vcov: np.ndarray
    theta: np.ndarray          # the fit's free parameters (a warm start for the next round)


def _fit(board: Leaderboard, counts: np.ndarray, start: np.ndarray | None = None) -> ReplicateOutcome:
    """Fit pair-by-outcome counts (shape (n_pairs, 3))."""
    k = board.scores.size
    i, j = board.pairs()
    a = np.repeat(i, 3)
    b = np.repeat(j, 3)
    outcome = np.tile([A_WINS, B_WINS, TIE], i.size)
    w = counts.ravel().astype(float)
    keep = w > 0
    x = design_matrix(k, a[keep], b[keep], False)
    fit = newton_fit(board.model, x, outcome[keep], w[keep], start=start)
    v_free = np.linalg.inv(-fit.hessian)[: k - 1, : k - 1]
    full = np.zeros((k, k))
    full[1:, 1:] = v_free
    centre = np.eye(k) - 1.0 / k
    v = centre @ full @ centre
    est = centre @ np.append(0.0, fit.theta[: k - 1])
    se = np.sqrt(np.clip(v[i, i] + v[j, j] - 2 * v[i, j], 0, None))
    return ReplicateOutcome(est, se, v, fit.theta)


def _draw(board: Leaderboard, pair_votes: np.ndarray, probs: np.ndarray,
          gen: np.random.Generator) -> np.ndarray:
    if board.model == "bt":
        wins = gen.binomial(pair_votes, probs[:, 0] / (probs[:, 0] + probs[:, 1]))
        return np.column_stack([wins, pair_votes - wins, np.zeros_like(wins)])
    return gen.multinomial(pair_votes, probs)


def simulate_leaderboard(board: Leaderboard, n_votes: int, allocation: str, rounds: int,
                         gen: np.random.Generator) -> ReplicateOutcome | None:
    """Allocate ``n_votes``, draw outcomes, fit; ``None`` when the fit has no finite maximum."""
    probs = board.outcome_probabilities()
    n_pairs = probs.shape[0]
    counts = np.zeros((n_pairs, 3), dtype=np.int64)
    batches = [n_votes] if allocation == "uniform" else np.diff(
        np.linspace(0, n_votes, rounds + 1).round().astype(int)).tolist()
    weights = np.full(n_pairs, 1.0 / n_pairs)
    start = None
    for r, size in enumerate(batches):
        if r > 0:
            try:
                fit = _fit(board, counts, start)
                start = fit.theta
                i, j = board.pairs()
                dens = np.exp(-0.5 * ((fit.estimate[i] - fit.estimate[j]) / np.maximum(fit.se_diff, 1e-12)) ** 2)
                weights = _UNIFORM_SHARE / n_pairs + (1 - _UNIFORM_SHARE) * dens / dens.sum()
            except FitError:
                weights = np.full(n_pairs, 1.0 / n_pairs)
        counts += _draw(board, gen.multinomial(size, weights / weights.sum()), probs, gen)
    try:
        return _fit(board, counts, start)
    except FitError:
        return None
