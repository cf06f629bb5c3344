"""Bradley-Terry with worker or prompt random effects, as a binomial GLMM.

One row per vote, ``y = 1`` when A wins (``1/2`` for a tie with
``ties="half"``), and a design with ``+1`` in A's column and ``-1`` in B's
(system 0's column dropped)::

    y ~ 0 + s_1 + ... + s_{K-1} (+ 1 with position) + (1 | worker) + (1 | prompt)

The random intercepts are each worker's (prompt's) lean toward the system
listed first; with ``position=True`` their mean is the first-listed
advantage.  The fit is :func:`nlpower.glmer` (Laplace), so the scores' model
covariance is the GLMM's; no sandwich (NaN) and no bootstrap.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from .likelihood import A_WINS, TIE
from .newton import design_matrix, score_transform
from .result import BradleyTerryFit
from .votes import VoteData

__all__ = ["fit_random"]


def _groups(random: Any, data: VoteData) -> list[str]:
    groups = [random] if isinstance(random, str) else list(random)
    for g in groups:
        if g not in ("worker", "prompt"):
            raise InputError(f"random must name 'worker' and/or 'prompt'; got {random!r}.")
        if g not in data.groups:
            raise InputError(f"random={random!r} needs the {g}= column of the votes "
                             f"(bradley_terry(..., {g}='column name')).")
    if not groups:
        raise InputError("random is empty; name 'worker' and/or 'prompt', or pass random=None.")
    return groups


def fit_random(data: VoteData, model: str, ties: str, *, random: Any, position: bool,
               reference: int | None) -> BradleyTerryFit:
    from ..glmm import glmer

    groups = _groups(random, data)
    if model != "bt":
        raise InputError(f"random effects are fitted as a binomial GLMM, which has no tie model; "
                         f"got ties={ties!r}. Use ties='drop' or ties='half'.")
    k = len(data.systems)
    reps = np.repeat(np.arange(data.a.size), np.rint(data.count).astype(int))
    x = design_matrix(k, data.a[reps], data.b[reps], False)
    cols = [f"s{i}" for i in range(1, k)]
    frame = pd.DataFrame(x, columns=cols)
    frame["y"] = np.where(data.outcome[reps] == A_WINS, 1.0,
                          np.where(data.outcome[reps] == TIE, 0.5, 0.0))
    for g in groups:
        frame[g] = np.asarray(data.group_levels[g])[data.groups[g][reps]]
    fixed = " + ".join((["1"] if position else ["0"]) + cols)
    formula = "y ~ " + fixed + "".join(f" + (1 | {g})" for g in groups)
    fit = glmer(formula, frame, family="binomial")
    beta = fit.fixef[cols].to_numpy()
    v = fit.vcov.loc[cols, cols].to_numpy()
    t = score_transform(k, reference)
    vc = fit.varcorr()
    nan = math.nan
    pos, pos_se = ((float(fit.fixef["(Intercept)"]), float(fit.se["(Intercept)"]))
                   if position else (nan, nan))
    return BradleyTerryFit(
        systems=data.systems, model="bt", ties=ties,
        reference=None if reference is None else data.systems[reference],
        estimate=t @ beta, vcov=t @ v @ t.T, vcov_sandwich=np.full((k, k), nan),
        tie=nan, tie_se=nan, position=pos, position_se=pos_se, loglik=fit.loglik,
        n_votes=int(reps.size), n_ties=int((data.outcome[reps] == TIE).sum()),
        random_effects=pd.DataFrame({"group": vc["grp"].to_numpy(), "sd": vc["sdcor"].to_numpy()}))
