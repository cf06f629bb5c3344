"""Counting a fit's deviance evaluations and gradient calls per named optimiser stage.

:class:`StageCounter` wraps the criterion and the value-and-gradient function
of one optimisation; :func:`stage_counts` turns its record into the fit's
``optinfo["stages"]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

__all__ = ["StageCounter", "ValueGrad", "stage_counts"]

#: ``x -> (f(x), gradient at x, evaluations spent)``
ValueGrad = Callable[[np.ndarray], tuple[float, np.ndarray, int]]


class StageCounter:
    """Counts the calls of ``fn`` and ``fg`` per named stage (``mark(name)`` closes one); a
    gradient call of :func:`.optimize.fd_value_and_gradient` counts once, its differences as evaluations.
    """

    def __init__(self, fn: Callable[[np.ndarray], float]) -> None:
        self.n_fn = 0
        self.n_fg = 0
        self._last = (0, 0, time.perf_counter())
        self.stages: list[tuple[str, int, int, float]] = []
        self._last_fg: list[tuple[np.ndarray, float, np.ndarray]] = []

        def fn_c(x: np.ndarray) -> float:
            self.n_fn += 1
            return fn(x)

        self.fn = fn_c

    def counting(self, fg: ValueGrad) -> ValueGrad:
        """``fg`` with its calls counted, and its last result remembered.

        A call at the point of the previous call returns the remembered
        value and gradient (the gradient check after a quasi-Newton run asks
        again for its last point), uncounted and costing no evaluation.
        """
        last = self._last_fg

        def fg_c(x: np.ndarray) -> tuple[float, np.ndarray, int]:
            if last and np.array_equal(last[0][0], x):
                return last[0][1], last[0][2].copy(), 0
            self.n_fg += 1
            fx, g, n = fg(x)
            last[:] = [(np.array(x, dtype=float), fx, np.array(g, dtype=float))]
            return fx, g, n

        return fg_c

    def gradient_at(self, x: np.ndarray) -> np.ndarray | None:
        """The gradient at ``x`` if the last gradient call was there."""
        last = self._last_fg
        return last[0][2].copy() if last and np.array_equal(last[0][0], x) else None

    def mark(self, name: str) -> None:
        f0, g0, t0 = self._last
        t = time.perf_counter()
        self.stages.append((name, self.n_fn - f0, self.n_fg - g0, t - t0))
        self._last = (self.n_fn, self.n_fg, t)


def stage_counts(stages: tuple[tuple[str, int, int, float], ...]
                 ) -> dict[str, dict[str, float]]:
    """``{stage: {"evaluations", "gradients", "seconds"}}`` in pipeline order, repeats summed.

    Evaluations are deviance (criterion) evaluations, gradients calls of the
    analytic gradient (or of the finite-difference one, whose evaluations are
    counted as evaluations).
    """
    out: dict[str, dict[str, float]] = {}
    for name, n_f, n_g, secs in stages:
        d = out.setdefault(name, {"evaluations": 0, "gradients": 0, "seconds": 0.0})
        d["evaluations"] += n_f
        d["gradients"] += n_g
        d["seconds"] += secs
    return out
