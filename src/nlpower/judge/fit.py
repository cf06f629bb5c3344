"""The public estimator: :func:`fit` (human ratings + judge scores -> :class:`JudgeFit`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .._choices import Alternative, check_choice
from .._validation import check_probability, check_real
from ..errors import InputError
from .data import JudgeData, prepare
from .estimate import (
    contrasts,
    default_random,
    human_only,
    item_lambda,
    judge_only,
    judge_r,
    mixed_contrasts,
    ppi_crossed,
    ppi_items,
)
from .iid import MeanEstimate, interval_test
from .result import JudgeFit

Outcome = Literal["gaussian", "binary"]
Rectifier = Literal["crossed", "iid"]


def _check_binary(data: JudgeData) -> None:
    y = data.labelled["y"].to_numpy()
    if np.any((y < 0) | (y > 1)):
        raise InputError("outcome='binary' needs human ratings in [0, 1] (0/1 labels, or 0.5 "
                         f"for a tie); got values from {y.min():g} to {y.max():g}.")


def fit(human: Any, judge: Any, *, worker: str = "worker", item: str = "item",
        system: str | None = "system", rating: str = "rating", score: str = "score",
        baseline: Any = None, outcome: Outcome = "gaussian", rectifier: Rectifier = "crossed",
        random: str | None = None, lam: float | None = None, clip: bool = True,
        null: float | None = None, confidence_level: float = 0.95,
        alternative: Alternative = "two-sided", compare: bool = True) -> JudgeFit:
    """Estimate system differences on the human scale with an LLM judge (PPI++).

    Parameters
    ----------
    human : DataFrame or path
        One row per human rating (columns ``worker, item, system, rating``)
        on a subset of the items.
    judge : DataFrame or path
        Judge scores (``item, system, score``) on all items; several rows
        per item and system (samples or judges) are averaged.
    worker, item, system, rating, score : str
        Column names.  ``system=None``: no system column (one quantity, e.g.
        the share of pairwise comparisons won, tested against ``null``).
    baseline : optional
        The system the others are compared with (default: the first in
        sorted order).
    outcome : {"gaussian", "binary"}
        ``"binary"``: 0/1 human labels (preferences; 0.5 for a tie), judge
        scores as probabilities or 0/1; estimates are on the probability
        scale and a ``"human-glmer"`` row gives the human-only logit test.
    rectifier : {"crossed", "iid"}
        ``"crossed"`` (default): the rectifier ``y - lambda f`` is fitted by a
        crossed mixed model (``random``); ``"iid"``: item means treated as
        i.i.d. labels, which is ``ppi-python``'s estimator.
    random : str, optional
        Random part of the rectifier and human-only models (default
        ``(1 | worker) + (1 | worker:system) + (1 | item) + (1 | item:system)``).
    lam : float, optional
        ``None``: PPI++'s tuned value; ``1``: PPI; ``0``: humans only.
    clip : bool, default True
        Clip the tuned lambda to [0, 1].
    null : float, optional
        Value under the null (default 0 for differences; 0.5 for a single
        binary quantity).
    confidence_level, alternative
        Of the intervals and tests.
    compare : bool, default True
        Also report the human-only and judge-only estimates.

    Returns
    -------
    JudgeFit

    Examples
    --------
    >>> from nlpower.judge import simulate_study
    >>> human, judge = simulate_study(n_items=300, n_labelled=40, workers_per_item=3,
    ...                               effect=0.3, judge_bias=(0.0, 0.3), rng=1)
    >>> res = fit(human, judge)
    >>> sorted(res.estimates)
    ['human', 'judge', 'ppi++']
    >>> 0 <= res.lam <= 1
    True
    """
    check_choice("outcome", outcome, ("gaussian", "binary"))
    check_choice("rectifier", rectifier, ("crossed", "iid"))
    check_choice("alternative", alternative, ("two-sided", "greater", "less"))
    check_probability("confidence_level", confidence_level)
    data = prepare(human, judge, worker=worker, item=item, system=system, rating=rating,
                   score=score, baseline=baseline)
    if outcome == "binary":
        _check_binary(data)
    single = len(data.systems) == 1
    null_ = (0.5 if single and outcome == "binary" else 0.0) if null is None else check_real(
        "null", null)
    mat, names = contrasts(data.systems)
    test = {"null": null_, "confidence_level": confidence_level, "alternative": alternative}
    random_ = default_random(data.systems) if random is None else random
    tuned = lam is None
    lam_ = item_lambda(data, mat, clip=clip) if tuned else check_real("lam", lam)
    method = "ppi++" if tuned else "ppi"
    estimates, lam_, rect_fit, human_fit = _estimates(
        data, mat, names, lam_, method=method, rectifier=rectifier, random=random_,
        compare=compare, test=test)
    if compare and outcome == "binary":
        estimates["human-glmer"] = dict(zip(names, _glmer_rows(data, mat, random_, test),
                                            strict=True))
    r_hat = judge_r(data, mat, human_fit)
    return JudgeFit(estimates, float(lam_), rectifier,
                    f"r ~ ... + {random_}" if rectifier == "crossed" else "", data.systems,
                    data.n_labelled, data.n_unlabelled, len(data.labelled),
                    int(data.labelled["worker"].nunique()), outcome, confidence_level,
                    rect_fit, human_fit, r_hat)


def _estimates(data: JudgeData, mat: np.ndarray, names: Sequence[str], lam: float, *, method: str,
               rectifier: Rectifier, random: str, compare: bool, test: dict[str, Any]
               ) -> tuple[dict[str, dict[str, MeanEstimate]], float, Any, Any]:
    """The rectified estimates (``method``) and, with ``compare``, the human- and judge-only ones.

    Returns the estimates by method, the lambda used (``"iid"`` tunes it per
    estimand: the first one's), and the rectifier's and human-only fits
    (``None`` for ``"iid"``).
    """
    estimates: dict[str, dict[str, MeanEstimate]] = {}
    rect_fit = human_fit = None
    if rectifier == "iid":
        estimates[method] = dict(zip(names, ppi_items(data, mat, lam, **test), strict=True))
        if method == "ppi++":  # ppi-python tunes lambda per estimand
            lam = next(iter(estimates[method].values())).lam
        if compare:
            estimates["human"] = dict(zip(names, ppi_items(data, mat, 0.0, **test), strict=True))
    else:
        ppi, rect_fit = ppi_crossed(data, mat, lam, random, method, **test)
        estimates[method] = dict(zip(names, ppi, strict=True))
        if compare:
            hum, human_fit = human_only(data, mat, random, **test)
            estimates["human"] = dict(zip(names, hum, strict=True))
    if compare:
        estimates["judge"] = dict(zip(names, judge_only(data, mat, **test), strict=True))
    return estimates, lam, rect_fit, human_fit


def _glmer_rows(data: JudgeData, mat: np.ndarray, random: str, test: dict[str, Any]) -> list[
        MeanEstimate]:
    """Human-only binomial GLMM, contrasts on the log-odds scale (null mapped by the logit).

    Ties (0.5) are left out of this model.
    """
    frame = data.labelled[data.labelled["y"] != 0.5]
    est, cov, _, _ = mixed_contrasts(frame, "y", data.systems, random, mat, family="binomial")
    null = test["null"]
    logit_null = math.log(null / (1 - null)) if len(data.systems) == 1 and 0 < null < 1 else 0.0
    return [interval_test(est[c], math.sqrt(cov[c, c]), lam=0.0, method="human-glmer",
                          **{**test, "null": logit_null}) for c in range(mat.shape[0])]
