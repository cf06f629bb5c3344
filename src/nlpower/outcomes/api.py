"""The models of the ``"likert"`` and ``"preference"`` outcome kinds.

:mod:`nlpower.powersim.outcome` registers what is rated -- ``outcome=
"gaussian"`` (the paper's continuous ratings), ``"likert"`` (``levels``-point
ratings from the latent threshold model, :mod:`nlpower.outcomes.likert`,
analysed by ``"lmm"`` -- the paper's LMM on [0, 1] -- or ``"clmm"``) and
``"preference"`` (repeated head-to-head judgements,
:class:`~nlpower.outcomes.headtohead.HeadToHeadParams`, ``analysis=
"glmer"``) -- and points at the objects here for the two non-Gaussian ones:
they turn the user's parameters into the outcome's and run the simulation
with validated :class:`~nlpower.powersim.options.PowerOptions`.
:func:`nlpower.power`, :func:`nlpower.power_grid`, :func:`nlpower.mde` and
:func:`nlpower.plan` call them; nothing here branches on an outcome's name.
One-judgement head-to-head studies have no worker x item design and live in
:mod:`nlpower.preference`.
"""

from __future__ import annotations

from typing import Any

from .._validation import check_real
from ..convert_outcomes import OrdinalPilot, binary_params, is_binary_fit, is_ordinal_fit
from ..errors import InputError
from ..params import LMMParams
from ..powersim.batches import checkpointed, stopping
from ..powersim.options import PowerOptions
from ..powersim.outcome import OUTCOMES
from ..presets import DatasetPreset
from .headtohead import HeadToHeadParams, headtohead_power
from .likert import LikertParams, check_levels
from .power import AnalysisComparison, run_likert

__all__ = ["LIKERT", "OUTCOMES", "PREFERENCE", "LikertOutcome", "PreferenceOutcome",
           "as_likert_params"]


def _analytic(design: Any, params: Any, opts: PowerOptions, rng: Any) -> Any:
    """``method="analytic"``: the expected-information tier (:mod:`nlpower.outcomes.analytic`);
    ``None`` for ``"auto"``/``"simulate"``, which simulate."""
    if opts.method in ("auto", "simulate"):
        return None
    if len(opts.analyses) > 1:
        raise InputError(f"method='analytic' approximates one analysis; got analysis="
                         f"{list(opts.analyses)!r}.")
    from .analytic import analytic_outcome_result
    return analytic_outcome_result(design, params, analysis=opts.analysis, test=opts.test,
                                   alpha=opts.alpha, alternative=opts.alternative,
                                   null=opts.null, rng=rng)


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
    raise InputError(f"outcome='likert' needs LikertParams, LMMParams (a preset) and levels=, "
                     f"or an ordinal pilot fit (clmm, fit_ratings(..., family='ordinal')); got "
                     f"{type(params).__name__}.")


def _pilot_effect(effect: Any, outcome: str, scale: str) -> float:
    """The user's effect for a pilot fit: required, finite and non-zero (never the pilot's)."""
    if effect is None:
        raise InputError(f"effect is required when planning outcome={outcome!r} from a fitted "
                         f"pilot: pass effect= the smallest effect worth detecting, on the {scale}. "
                         "nlpower takes the variance components from the pilot but never plans "
                         "for its own effect estimate: it is too noisy to plan for.")
    e = check_real("effect", effect)
    if e == 0:
        raise InputError(f"effect must be non-zero; a design has no power to detect 0 (the {scale}).")
    return e


def _no_contrast(contrast: Any, outcome: str) -> None:
    if contrast is not None:
        raise InputError(f"outcome={outcome!r} does not take contrast={contrast!r} with "
                         "parameters: contrast names two systems of a pilot fit, and parameters "
                         "describe one comparison already. Drop contrast=.")


class _OutcomeModel:
    """What the two outcome models share: the effect is ``params.effect``; ``run`` is the
    analytic tier or :meth:`simulate` under the run's checkpoint."""

    def with_effect(self, params: Any, effect: float) -> Any:
        return params.with_effect(effect)

    def effect_of(self, params: Any) -> float:
        return float(params.effect)

    def run(self, design: Any, params: Any, opts: PowerOptions, *, rng: Any,
            progress: bool = False, checkpoint: Any = None) -> Any:
        analytic = _analytic(design, params, opts, rng)
        if analytic is not None:
            return analytic
        with checkpointed(checkpoint, design=design, params=params, options=opts,
                          rng=rng) as root, stopping(opts.precision, opts.alpha):
            return self.simulate(design, params, opts, root)

    def simulate(self, design: Any, params: Any, opts: PowerOptions, root: Any) -> Any:
        raise NotImplementedError


class LikertOutcome(_OutcomeModel):
    """``outcome="likert"``: K-point ratings from the latent threshold model."""

    def as_params(self, params: Any, opts: PowerOptions, *, effect: float | None = None,
                  coding: Any = "sum", contrast: Any = None) -> LikertParams:
        """:func:`as_likert_params`; ``effect`` (latent, the parameters' coding) replaces theirs.

        An ordinal pilot fit (``clmm`` or ``fit_ratings(..., family="ordinal")``)
        gives its thresholds and variance components
        (:class:`~nlpower.convert_outcomes.OrdinalPilot`, the comparison
        ``contrast``); ``effect`` is then required (latent scale, sum coding).
        """
        if is_ordinal_fit(params):
            e = _pilot_effect(effect, "likert", "latent scale, sum coding (x = +-1)")
            pilot = OrdinalPilot(params, contrast)
            return as_likert_params(pilot.to_params(pilot.clmm), opts.levels).with_effect(e)
        _no_contrast(contrast, "likert")
        lp = as_likert_params(params, opts.levels)
        return lp if effect is None else lp.with_effect(effect)

    def simulate(self, design: Any, params: LikertParams, opts: PowerOptions, root: Any) -> Any:
        """:class:`PowerResult` (one analysis) or :class:`AnalysisComparison` (several)."""
        out = run_likert(design, params, opts, rng=root)
        return AnalysisComparison(out) if len(opts.analyses) > 1 else out[opts.analysis]


class PreferenceOutcome(_OutcomeModel):
    """``outcome="preference"``: repeated head-to-head judgements, analysed by glmer."""

    def as_params(self, params: Any, opts: PowerOptions, *, effect: float | None = None,
                  coding: Any = "sum", contrast: Any = None) -> HeadToHeadParams:
        """``params`` (``effect`` replacing theirs), or a binary ``glmer`` pilot fit's.

        A pilot fit of head-to-head judgements gives the worker, item and
        position terms and the share of draws
        (:func:`~nlpower.convert_outcomes.binary_params`); ``effect`` (logit
        of the share preferring B) is then required.
        """
        _no_contrast(contrast, "preference")
        if is_binary_fit(params):
            e = _pilot_effect(effect, "preference", "logit scale of the share preferring B")
            return binary_params(params).with_effect(e)
        if not isinstance(params, HeadToHeadParams):
            raise InputError(f"outcome='preference' needs HeadToHeadParams (the logistic crossed "
                             f"model of repeated judgements) or a binomial glmer pilot fit of "
                             f"them; got {type(params).__name__}. One "
                             "judgement per person: nlpower.preference.power(n, p_win).")
        return params if effect is None else params.with_effect(effect)

    def simulate(self, design: Any, params: HeadToHeadParams, opts: PowerOptions,
                 root: Any) -> Any:
        return headtohead_power(design, params, n_sims=opts.n_sims, alpha=opts.alpha,
                                alternative=opts.alternative, null=opts.null, rng=root,
                                keep_replicates=opts.keep_replicates,
                                on_failure=opts.on_failure, precision=opts.precision)


#: The targets of ``OUTCOMES["likert"]`` and ``OUTCOMES["preference"]``.
LIKERT = LikertOutcome()
PREFERENCE = PreferenceOutcome()
