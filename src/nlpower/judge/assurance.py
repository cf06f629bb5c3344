"""Assurance of a judge design when the judge's quality comes from a pilot.

The judge-human correlation ``judge_r`` of :func:`~nlpower.judge.judge_power`
is estimated from a pilot (human ratings by >= 2 workers per item on some
items, judge scores on all) by item-level moments: with ``d_wi`` worker
``w``'s system difference on item ``i`` and ``g_i`` the judge's,

* the true item x system contrast variance is the covariance of two
  different workers' differences on the same item (their own offsets and
  noise are independent): ``mean_i U_i - dbar^2`` with
  ``U_i = ((sum_w d_wi)^2 - sum_w d_wi^2) / (k_i (k_i - 1))``;
* ``Cov(mean_w d_wi, g_i)`` over items; ``Var(g)`` over all judged items;

and ``judge_r = Cov / sqrt(V_true Var(g))``.  Resampling the labelled items
(bootstrap) gives its uncertainty, and the design's power at each draw its
distribution: expected power and assurance ``P(power >= target)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._rng import RNGLike, as_generator
from .._validation import check_int, check_probability
from ..errors import InputError
from ..params import LMMParams
from .data import prepare
from .power import JudgeDesign, judge_power


def _item_stats(human: Any, judge: Any, **columns: Any) -> tuple[np.ndarray, ...]:
    """Per labelled item (k >= 2 workers with both systems): S, Q, k, g; and judge-only g."""
    data = prepare(human, judge, **columns)
    if len(data.systems) != 2:
        raise InputError(f"a judge assurance needs exactly two systems; got {len(data.systems)}.")
    wide = data.labelled.pivot_table(index=["item", "worker"], columns="system", values="y",
                                     aggfunc="mean", observed=True)
    d = (wide[data.systems[1]] - wide[data.systems[0]]).dropna()
    grp = d.groupby(level="item")
    s, q, k = grp.sum(), grp.apply(lambda v: float((v**2).sum())), grp.size()
    keep = k[k >= 2].index
    if len(keep) < 5:
        raise InputError(f"the pilot has {len(keep)} item(s) rated by >= 2 workers under both "
                         "systems; at least 5 are needed to estimate the judge's quality.")
    items = list(data.labelled_items)
    g_lab = (data.judge_labelled[:, 1] - data.judge_labelled[:, 0])
    g = np.array([g_lab[items.index(i)] for i in keep])
    g_u = data.judge_unlabelled[:, 1] - data.judge_unlabelled[:, 0]
    return (s[keep].to_numpy(dtype=float), q[keep].to_numpy(dtype=float),
            k[keep].to_numpy(dtype=float), g, g_u)


def _r_from(s: np.ndarray, q: np.ndarray, k: np.ndarray, g: np.ndarray, g_u: np.ndarray) -> float:
    dbar = s.sum() / k.sum()
    v_true = float(np.mean((s**2 - q) / (k * (k - 1))) - dbar**2)
    h = s / k
    cov = float(np.cov(h, g)[0, 1])
    var_g = float(np.var(np.concatenate([g, g_u]), ddof=1))
    if v_true <= 0 or var_g <= 0:
        return math.nan
    return cov / math.sqrt(v_true * var_g)


@dataclass(frozen=True)
class JudgeAssurance:
    """Power of a judge design over the pilot's uncertainty about the judge.

    Attributes
    ----------
    judge_r : float
        The pilot's estimate.
    judge_r_draws : ndarray
        Bootstrap draws (clipped to [0, 0.999]).
    expected_power, assurance : float
        Mean power over the draws and the share with power >= ``target_power``.
    power_at_estimate : float
    """

    judge_r: float
    judge_r_draws: np.ndarray
    power_at_estimate: float
    expected_power: float
    assurance: float
    target_power: float

    def __repr__(self) -> str:
        lo, hi = np.quantile(self.judge_r_draws, [0.025, 0.975])
        return (f"JudgeAssurance(judge_r={self.judge_r:.3f} [{lo:.3f}, {hi:.3f}], power at "
                f"estimate {self.power_at_estimate:.3f}, expected {self.expected_power:.3f}, "
                f"assurance {self.assurance:.3f})")


def judge_assurance(design: JudgeDesign, params: LMMParams, human: Any, judge: Any, *,
                    target_power: float = 0.8, alpha: float = 0.05, n_boot: int = 1000,
                    rng: RNGLike = None, **columns: Any) -> JudgeAssurance:
    """Power of ``design`` with the judge's quality estimated from a pilot, and its assurance.

    Parameters
    ----------
    design : JudgeDesign
    params : LMMParams
        The human side (e.g. ``nlpower.as_params`` of the pilot's fit).
    human, judge : DataFrame or path
        The pilot: human ratings (>= 2 workers per item under both systems)
        and judge scores on all items, as for :func:`~nlpower.judge.fit`.
    target_power, alpha : float
    n_boot : int, default 1000
        Bootstrap resamples of the labelled items.
    rng : seed, keyword-only
    **columns
        Column names (``worker=``, ``item=``, ``system=``, ``rating=``, ``score=``).

    Examples
    --------
    >>> from nlpower import presets
    >>> from nlpower.judge import simulate_study
    >>> h, j = simulate_study(n_items=300, n_labelled=60, workers_per_item=3, rng=2)
    >>> res = judge_assurance(JudgeDesign(200, 2, 1000, n_workers=100),
    ...                       presets.high_variance(effect=0.05), h, j, n_boot=200, rng=1)
    >>> 0 <= res.assurance <= 1
    True
    """
    n_boot = check_int("n_boot", n_boot, min=10)
    check_probability("target_power", target_power)
    s, q, k, g, g_u = _item_stats(human, judge, **columns)
    r_hat = _r_from(s, q, k, g, g_u)
    if not 0 < r_hat < 1:
        raise InputError(f"the pilot's judge-human correlation estimate is {r_hat:.3g}, outside "
                         "(0, 1): the pilot is too small (or the judge unrelated) to plan from; "
                         "state judge_r instead.")
    gen = as_generator(rng)
    n = s.size
    draws = []
    for _ in range(n_boot):
        idx = gen.integers(0, n, n)
        draws.append(_r_from(s[idx], q[idx], k[idx], g[idx], g_u))
    r = np.clip(np.nan_to_num(np.array(draws), nan=0.0), 0.0, 0.999)
    powers = np.array([judge_power(design, params, judge_r=float(v), alpha=alpha).power
                       for v in r])
    at = judge_power(design, params, judge_r=r_hat, alpha=alpha).power
    return JudgeAssurance(r_hat, r, at, float(powers.mean()),
                          float(np.mean(powers >= target_power)), target_power)

