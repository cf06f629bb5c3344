"""``bradley_terry``: scores of K systems from paired votes, with ties and intervals.

Stages: validate and encode the votes (:mod:`.votes`) -> collapse identical
votes to counts -> Newton's method on the concave log-likelihood
(:mod:`.newton`) -> model-based and sandwich covariances -> optional
bootstrap over votes -> :class:`~nlpower.arena.result.BradleyTerryFit`.
Worker or prompt random effects go through :func:`nlpower.glmer`
(:mod:`.glmm`).
"""

from __future__ import annotations

import math
import os
from typing import Any, Literal

import numpy as np

from .._rng import RNGLike, as_generator
from .._validation import check_choice, check_int
from ..errors import FitError, InputError
from .likelihood import TIE
from .newton import design_matrix, newton_fit, score_transform, vote_scores
from .result import BradleyTerryFit
from .votes import VoteData, encode_votes, read_votes

__all__ = ["bradley_terry", "fit_votes"]

Ties = Literal["davidson", "rao-kupper", "half", "drop"]
_TIES = ("davidson", "rao-kupper", "half", "drop")


def _collapse(votes: VoteData, cluster: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Unique (a, b, outcome[, cluster]) rows and their vote counts."""
    cols = [votes.a, votes.b, votes.outcome]
    if cluster is not None:
        cols.append(votes.groups[cluster])
    keys = np.column_stack(cols)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=votes.count, minlength=len(uniq))
    keep = counts > 0
    return uniq[keep], counts[keep]


def fit_votes(votes: VoteData, model: str, *, position: bool = False, reference: int | None = 0,
              cluster: str | None = None, start: np.ndarray | None = None) -> dict[str, Any]:
    """Fit encoded votes; the numbers behind :class:`BradleyTerryFit` (no validation)."""
    k = len(votes.systems)
    rows, w = _collapse(votes, cluster)
    x = design_matrix(k, rows[:, 0], rows[:, 1], position)
    fit = newton_fit(model, x, rows[:, 2], w, start=start, names=votes.systems)
    info_inv = np.linalg.inv(-fit.hessian)
    g = vote_scores(model, x, fit.theta, rows[:, 2])
    if cluster is None:
        meat = (g * w[:, None]).T @ g
    else:                        # sum the scores of a cluster's votes first
        _, ids = np.unique(rows[:, 3], return_inverse=True)
        gc = np.zeros((ids.max() + 1, g.shape[1]))
        np.add.at(gc, ids, g * w[:, None])
        meat = gc.T @ gc
    sandwich = info_inv @ meat @ info_inv
    t = score_transform(k, reference)
    p = k - 1
    out = {"theta": fit.theta, "estimate": t @ fit.theta[:p], "loglik": fit.loglik,
           "vcov": t @ info_inv[:p, :p] @ t.T, "vcov_sandwich": t @ sandwich[:p, :p] @ t.T,
           "position": math.nan, "position_se": math.nan, "tie": math.nan, "tie_se": math.nan}
    if position:
        out["position"], out["position_se"] = float(fit.theta[p]), math.sqrt(info_inv[p, p])
    if model != "bt":
        out["tie"], out["tie_se"] = float(fit.theta[-1]), math.sqrt(info_inv[-1, -1])
    return out


def _bootstrap(votes: VoteData, model: str, position: bool, reference: int | None,
               n_boot: int, start: np.ndarray, rng: RNGLike) -> tuple[np.ndarray, int]:
    gen = as_generator(rng)
    rows, w = _collapse(votes, None)
    total = int(round(w.sum()))
    x = design_matrix(len(votes.systems), rows[:, 0], rows[:, 1], position)
    t = score_transform(len(votes.systems), reference)
    draws, failed = [], 0
    for counts in gen.multinomial(total, w / w.sum(), size=n_boot):
        keep = counts > 0
        try:
            fit = newton_fit(model, x[keep], rows[keep, 2], counts[keep].astype(float), start=start)
        except FitError:
            failed += 1
            continue
        draws.append(t @ fit.theta[: len(votes.systems) - 1])
    return np.array(draws).reshape(-1, len(votes.systems)), failed


def _prepare(votes: Any, a: str, b: str, outcome: str, count: str | None, worker: str | None,
             prompt: str | None, ties: Any) -> tuple[VoteData, str]:
    if isinstance(votes, (str, os.PathLike)):
        votes = read_votes(votes)
    data = encode_votes(votes, a=a, b=b, outcome=outcome, count=count,
                        groups={"worker": worker, "prompt": prompt})
    ties = check_choice("ties", ties, _TIES)
    if ties == "drop":
        data = data.subset(data.outcome != TIE)
        if data.n_votes == 0:
            raise InputError("every vote is a tie, and ties='drop' drops them all; "
                             "use ties='davidson' or 'rao-kupper'.")
    elif ties in ("davidson", "rao-kupper") and data.n_ties == 0:
        raise InputError(f"ties={ties!r} models ties, but the votes have none; "
                         "use ties='drop' (plain Bradley-Terry).")
    return data, ("bt" if ties in ("half", "drop") else ties)


def bradley_terry(
    votes: Any,
    *,
    a: str = "model_a",
    b: str = "model_b",
    outcome: str = "winner",
    count: str | None = None,
    worker: str | None = None,
    prompt: str | None = None,
    ties: Ties = "davidson",
    position: bool = False,
    reference: str | None = None,
    cluster: str | None = None,
    random: Any = None,
    n_boot: int = 0,
    rng: RNGLike = None,
) -> BradleyTerryFit:
    """Fit Bradley-Terry scores of K systems from paired votes, with ties.

    ``P(i beats j) = sigma(s_i - s_j)``; ties by Davidson (1970) or Rao and
    Kupper (1967), or dropped, or counted as half a win for each side (as
    Chatbot Arena does).  Checked against R's BradleyTerry2 1.1.2 (``BTm``),
    ``ordinal::clm`` (Rao-Kupper) and a Poisson log-linear ``glm``
    (Davidson) to 1e-6 on their example data, and against ``choix``.

    Parameters
    ----------
    votes : DataFrame or path
        One row per vote (or per group of identical votes, with ``count``).
    a, b, outcome : str
        Columns: the two systems and the outcome (``"a"``/``"b"``/``"tie"``,
        ``"model_a"``/``"model_b"``/``"tie"``, the winner's name, or
        1 / 0 / 0.5).  Defaults follow Chatbot Arena's files.
    count : str, optional
        Column with the number of identical votes a row stands for.
    worker, prompt : str, optional
        Columns naming who voted and on what (for ``cluster`` and ``random``).
    ties : {"davidson", "rao-kupper", "half", "drop"}
        The tie model.
    position : bool
        Fit an advantage of the first-listed system (A; the home side).
    reference : str, optional
        A system fixed at score 0; by default scores sum to zero.
    cluster : {"worker", "prompt"}, optional
        Sandwich covariance clustered by worker or prompt (default: by vote).
    random : str or sequence of {"worker", "prompt"}, optional
        Random intercepts of those groups (a per-worker/per-prompt lean toward
        the first-listed system), fitted as a binomial GLMM by
        :func:`nlpower.glmer`; ties must be ``"drop"`` or ``"half"``.
    n_boot : int
        Bootstrap resamples of the votes (0: none), for ``interval="bootstrap"``.
    rng : optional
        Seed of the bootstrap.

    Returns
    -------
    BradleyTerryFit

    Examples
    --------
    >>> import pandas as pd
    >>> votes = pd.DataFrame({"model_a": ["x", "x", "y", "y", "z", "z"],
    ...                       "model_b": ["y", "z", "z", "x", "x", "y"],
    ...                       "winner": ["model_a", "tie", "model_a", "model_a", "model_b", "tie"]})
    >>> fit = bradley_terry(votes)
    >>> fit.ranking()
    ('x', 'y', 'z')
    >>> fit.to_frame().columns.tolist()
    ['rank', 'system', 'score', 'se', 'ci_low', 'ci_high']
    """
    data, model = _prepare(votes, a, b, outcome, count, worker, prompt, ties)
    ref_index = None
    if reference is not None:
        if reference not in data.systems:
            raise InputError(f"reference={reference!r} is not one of the systems {list(data.systems)}; "
                             "pass one of them, or None for scores that sum to zero.")
        ref_index = data.systems.index(reference)
    if cluster is not None:
        check_choice("cluster", cluster, ("worker", "prompt"))
        if cluster not in data.groups:
            raise InputError(f"cluster={cluster!r} needs the {cluster}= column of the votes.")
    n_boot = check_int("n_boot", n_boot, min=0)
    if random is not None:
        from .glmm import fit_random
        return fit_random(data, model, ties, random=random, position=position, reference=ref_index)
    nums = fit_votes(data, model, position=position, reference=ref_index, cluster=cluster)
    boot, failed = None, 0
    if n_boot:
        boot, failed = _bootstrap(data, model, position, ref_index, n_boot, nums["theta"], rng)
    return BradleyTerryFit(
        systems=data.systems, model=model, ties=ties, reference=reference,
        estimate=nums["estimate"], vcov=nums["vcov"], vcov_sandwich=nums["vcov_sandwich"],
        tie=nums["tie"], tie_se=nums["tie_se"], position=nums["position"],
        position_se=nums["position_se"], loglik=nums["loglik"], n_votes=int(round(data.n_votes)),
        n_ties=data.n_ties if model != "bt" or ties == "half" else 0,
        bootstrap=boot, n_boot_failed=failed)
