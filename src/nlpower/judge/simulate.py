"""Simulated human-plus-judge studies (for examples, checks and power by simulation).

Quality of system ``s``'s output on item ``i``: ``q_is = mu_s + a_i + b_is``
with item effects ``a_i ~ N(0, sd_item^2)`` and item x system effects
``b_is ~ N(0, sd_item_system^2)``; ``mu`` is 0 for the baseline and
``effect`` for the other system.  A human rating adds a worker effect, a
worker x system effect and noise, ``y = q_is + u_w + v_ws + e`` (SDs
``sd_worker``, ``sd_worker_system``, ``sigma``); the judge sees ``f_is = judge_bias_s + judge_slope * q_is +
noise`` (``N(0, judge_noise^2)``, averaged over ``n_judge_samples`` draws).
``outcome="binary"``: the human label is ``1{y > threshold}``, the judge's
score ``Phi(f)``.  Each labelled item is rated for every system by
``workers_per_item`` workers drawn from a pool of ``n_workers``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._rng import RNGLike, as_generator
from .._validation import check_int, check_real
from ..errors import InputError


def _bias(judge_bias: Any) -> tuple[float, float]:
    if np.ndim(judge_bias) == 0:
        b = check_real("judge_bias", judge_bias)
        return (b, b)
    vals = tuple(check_real("judge_bias", v) for v in judge_bias)
    if len(vals) != 2:
        raise InputError(f"judge_bias must be one number or one per system (2); got {judge_bias!r}.")
    return vals  # type: ignore[return-value]


def simulate_study(*, n_items: int, n_labelled: int, workers_per_item: int = 3,
                   n_workers: int | None = None, effect: float = 0.0, sd_item: float = 0.5,
                   sd_item_system: float = 0.3, sd_worker: float = 0.3, sd_worker_system: float = 0.0, sigma: float = 0.8,
                   judge_slope: float = 1.0, judge_noise: float = 0.4,
                   judge_bias: Any = 0.0, n_judge_samples: int = 1, outcome: str = "gaussian",
                   threshold: float = 0.0, rng: RNGLike = None) -> tuple[pd.DataFrame,
                                                                          pd.DataFrame]:
    """Draw a human rating file and a judge score file for two systems (``A``, ``B``).

    Returns
    -------
    human : DataFrame
        ``worker, item, system, rating`` on the first ``n_labelled`` items.
    judge : DataFrame
        ``item, system, sample, score`` on all ``n_items`` items.

    Examples
    --------
    >>> human, judge = simulate_study(n_items=50, n_labelled=10, workers_per_item=2, rng=0)
    >>> len(human), len(judge)
    (40, 100)
    """
    n_items = check_int("n_items", n_items, min=3)
    n_labelled = check_int("n_labelled", n_labelled, min=2, max=n_items - 2)
    k = check_int("workers_per_item", workers_per_item, min=1)
    pool = check_int("n_workers", max(k, 2 * k) if n_workers is None else n_workers, min=k)
    n_samples = check_int("n_judge_samples", n_judge_samples, min=1)
    bias = _bias(judge_bias)
    gen = as_generator(rng)
    mu = np.array([0.0, check_real("effect", effect)])
    q = mu + gen.normal(0, sd_item, (n_items, 1)) + gen.normal(0, sd_item_system, (n_items, 2))
    f = np.array(bias) + judge_slope * q + gen.normal(
        0, judge_noise, (n_samples, n_items, 2))
    u = gen.normal(0, sd_worker, (pool, 1)) + gen.normal(0, sd_worker_system, (pool, 2))
    workers = np.stack([gen.choice(pool, k, replace=False) for _ in range(n_labelled)])
    ii, ww, ss = (a.ravel() for a in np.meshgrid(np.arange(n_labelled), np.arange(k),
                                                 np.arange(2), indexing="ij"))
    w_id = workers[ii, ww]
    y = q[ii, ss] + u[w_id, ss] + gen.normal(0, sigma, ii.size)
    if outcome == "binary":
        y = (y > threshold).astype(float)
        f = stats.norm.cdf(f)
    names = np.array(["A", "B"])
    human = pd.DataFrame({"worker": [f"w{w}" for w in w_id], "item": [f"i{i}" for i in ii],
                          "system": names[ss], "rating": y})
    sj, ij, sy = (a.ravel() for a in np.meshgrid(np.arange(n_samples), np.arange(n_items),
                                                 np.arange(2), indexing="ij"))
    judge = pd.DataFrame({"item": [f"i{i}" for i in ij], "system": names[sy], "sample": sj,
                          "score": f[sj, ij, sy]})
    return human, judge
