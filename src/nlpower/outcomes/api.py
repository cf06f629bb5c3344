"""``outcome=`` / ``analysis=`` of the package's front ends: one call for every outcome.

:func:`nlpower.power` takes ``outcome="gaussian"`` (default: the paper's
continuous ratings) or ``outcome="likert"`` (``levels``-point ratings from the
latent threshold model, :mod:`nlpower.outcomes.likert`) and ``analysis=``
(``"lmm"``, the paper's LMM on [0, 1], or ``"clmm"``), or
``outcome="preference"`` (repeated head-to-head judgements,
:class:`~nlpower.outcomes.headtohead.HeadToHeadParams`, ``analysis="glmer"``);
this module turns those arguments into a :func:`~nlpower.outcomes.likert_power`
or :func:`~nlpower.outcomes.headtohead.headtohead_power` call.  One-judgement
head-to-head studies have no worker x item design and live in
:mod:`nlpower.preference` (CLI: ``nlpower power --outcome preference``).
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from ..errors import InputError
from ..params import LMMParams
from ..powersim.result import PowerResult
from ..presets import DatasetPreset
from .headtohead import HeadToHeadParams, headtohead_power
from .likert import LikertParams, check_levels
from .power import likert_power

__all__ = ["OUTCOMES", "Outcome", "as_likert_params", "outcome_power"]

#: What is rated: continuous ratings (the paper's model), K-point Likert ratings, or
#: head-to-head preferences with repeated judgements.
Outcome: TypeAlias = Literal["gaussian", "likert", "preference"]
OUTCOMES: tuple[str, ...] = ("gaussian", "likert", "preference")


def as_likert_params(params: Any, levels: int | None) -> LikertParams:
    """``params`` as :class:`LikertParams`: as given, or a preset mapped to ``levels`` points."""
    if isinstance(params, LikertParams):
        if levels is not None and check_levels(levels) != params.levels:
            raise InputError(f"levels={levels} disagrees with the parameters' "
                             f"{params.levels} levels (len(thresholds) + 1); drop levels=.")
        return params
    if isinstance(params, (LMMParams, DatasetPreset)):
        if levels is None:
            raise InputError("outcome='likert' with parameters on the [0, 1] scale needs "
                             "levels=K, the number of Likert points (e.g. levels=5).")
        return LikertParams.from_preset(params, check_levels(levels))
    raise InputError(f"outcome='likert' needs LikertParams or LMMParams (a preset) and levels=; "
                     f"got {type(params).__name__}.")


def outcome_power(design: Any, params: Any, *, outcome: str, levels: int | None,
                  analysis: Any, test: str | None, **kwargs: Any) -> PowerResult:
    """The non-Gaussian branch of :func:`nlpower.power` (module docstring)."""
    if not isinstance(analysis, str) or analysis == "both":
        raise InputError(f"nlpower.power takes one analysis; got analysis={analysis!r}. To compare "
                         "analyses on the same replicates use nlpower.outcomes.likert_power("
                         "..., analysis=[...]).")
    if outcome not in OUTCOMES:
        raise InputError(f"outcome must be one of {list(OUTCOMES)}; got {outcome!r}. One-judgement "
                         "head-to-head studies: nlpower.preference.power(n, p_win).")
    if outcome == "preference":
        if not isinstance(params, HeadToHeadParams):
            raise InputError(f"outcome='preference' needs HeadToHeadParams (the logistic crossed "
                             f"model of repeated judgements); got {type(params).__name__}. One "
                             "judgement per person: nlpower.preference.power(n, p_win).")
        if analysis not in ("glmer", "lmm") or levels is not None or test not in (None, "z"):
            raise InputError("outcome='preference' is analysed by glmer with the Wald z test: "
                             "pass analysis='glmer' and no levels= or other test=.")
        kwargs.pop("engine", None)
        return headtohead_power(design, params, **kwargs)
    lp = as_likert_params(params, levels)
    res = likert_power(design, lp, analysis=analysis, test=test, **kwargs)
    assert isinstance(res, PowerResult)      # one analysis named: one result
    return res
