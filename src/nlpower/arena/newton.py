"""Maximum likelihood of a paired-comparison model by Newton's method.

The parameters are the scores of systems ``1..K-1`` (system 0 is the
internal reference, score 0), the position (first-listed) effect when asked,
and the tie parameter of Davidson's or Rao-Kupper's model.  The
log-likelihood is concave, so Newton steps with step halving converge from
zero scores; a score that runs off to infinity (a system that never loses)
is reported, not hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import FitError
from .likelihood import TIE, tie_start, vote_terms

__all__ = ["NewtonFit", "design_matrix", "newton_fit", "score_transform", "vote_scores"]


@dataclass(frozen=True)
class NewtonFit:
    theta: np.ndarray          # (K-1 scores, [position], [tie])
    loglik: float
    hessian: np.ndarray        # of the log-likelihood at theta (negative definite)
    iterations: int


def design_matrix(n_systems: int, a: np.ndarray, b: np.ndarray, position: bool) -> np.ndarray:
    """Rows ``+1`` at A and ``-1`` at B (system 0 dropped), and a column of ones for position."""
    x = np.zeros((a.size, n_systems))
    rows = np.arange(a.size)
    x[rows, a] = 1.0
    x[rows, b] = -1.0
    x = x[:, 1:]
    return np.column_stack([x, np.ones(a.size)]) if position else x


def _terms(model: str, x: np.ndarray, theta: np.ndarray, outcome: np.ndarray):
    p = x.shape[1]
    t = float(theta[p]) if model != "bt" else 0.0
    return vote_terms(model, x @ theta[:p], t, outcome)


def vote_scores(model: str, x: np.ndarray, theta: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Gradient of each vote's log-likelihood (rows), for sandwich covariances."""
    vt = _terms(model, x, theta, outcome)
    g = x * vt.gd[:, None]
    return np.column_stack([g, vt.gt]) if model != "bt" else g


def _grad_hess(model: str, x: np.ndarray, theta: np.ndarray, outcome: np.ndarray,
               w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    vt = _terms(model, x, theta, outcome)
    ll = float(np.dot(w, vt.loglik))
    grad = x.T @ (w * vt.gd)
    hess = (x * (w * vt.hdd)[:, None]).T @ x
    if model == "bt":
        return ll, grad, hess
    p = x.shape[1]
    full = np.empty((p + 1, p + 1))
    full[:p, :p] = hess
    full[:p, p] = full[p, :p] = x.T @ (w * vt.hdt)
    full[p, p] = np.dot(w, vt.htt)
    return ll, np.append(grad, np.dot(w, vt.gt)), full


def _loglik(model: str, x: np.ndarray, theta: np.ndarray, outcome: np.ndarray, w: np.ndarray) -> float:
    ll = float(np.dot(w, _terms(model, x, theta, outcome).loglik))
    return ll if np.isfinite(ll) else -np.inf


def start_values(model: str, x: np.ndarray, outcome: np.ndarray, w: np.ndarray) -> np.ndarray:
    theta = np.zeros(x.shape[1] + (model != "bt"))
    if model != "bt":
        theta[-1] = tie_start(model, float(w[outcome == TIE].sum() / w.sum()))
    return theta


def newton_fit(model: str, x: np.ndarray, outcome: np.ndarray, w: np.ndarray, *,
               start: np.ndarray | None = None, tol: float = 1e-10, max_iter: int = 100,
               names: tuple[str, ...] = ()) -> NewtonFit:
    """Maximise the log-likelihood of ``model``; raises :class:`FitError` when it has no maximum."""
    theta = start_values(model, x, outcome, w) if start is None else np.array(start, float)
    ll, grad, hess = _grad_hess(model, x, theta, outcome, w)
    for it in range(1, max_iter + 1):
        try:
            step = np.linalg.solve(hess, -grad)
        except np.linalg.LinAlgError:
            step = np.full_like(theta, np.nan)
        if not np.all(np.isfinite(step)):
            raise FitError(_divergence_message(theta, names))
        size = 1.0
        while size > 1e-10:
            new = theta + size * step
            new_ll = _loglik(model, x, new, outcome, w)
            if new_ll >= ll - 1e-12 * abs(ll):
                break
            size /= 2
        theta = new
        ll, grad, hess = _grad_hess(model, x, theta, outcome, w)
        if float(np.max(np.abs(size * step))) < tol or float(np.max(np.abs(grad))) < tol:
            if np.max(np.abs(theta)) > 20:
                raise FitError(_divergence_message(theta, names))
            return NewtonFit(theta, ll, hess, it)
    raise FitError(_divergence_message(theta, names))


def _divergence_message(theta: np.ndarray, names: tuple[str, ...]) -> str:
    big = [names[i + 1] for i in np.flatnonzero(np.abs(theta[: len(names) - 1]) > 20)]
    who = f" (scores of {big[:5]} grow without bound)" if big else ""
    return ("the Bradley-Terry likelihood has no finite maximum" + who + ": some system wins "
            "(or loses) every vote it is in, or the comparisons split into groups never compared "
            "with each other. Collect votes that connect every system in both directions, or drop "
            "the systems named.")


def score_transform(n_systems: int, reference: int | None) -> np.ndarray:
    """Maps the free scores (system 0 fixed at 0) to the reported scores."""
    full = np.vstack([np.zeros(n_systems - 1), np.eye(n_systems - 1)])
    centre = (np.eye(n_systems) - (1.0 / n_systems) if reference is None
              else np.eye(n_systems) - np.outer(np.ones(n_systems), np.eye(n_systems)[reference]))
    return centre @ full
