"""The one result type of simulated power (:class:`PowerResult`) and its per-replicate records."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..errors import InputError
from ..intervals import ConfidenceInterval, wilson_ci
from ..montecarlo import MonteCarloSummary
from .records import SCHEMAS, kind_of
from .studies import STUDIES, CallbackStudy, StudyKind

__all__ = ["PowerResult", "Replicates"]

#: the default of ``type_s_ci`` and ``type_m_ci``: "the Monte Carlo summary's" (NaN without one)
_FROM_MC = ConfidenceInterval(math.nan, math.nan)


@dataclass(frozen=True, eq=False)
class Replicates:
    """Per-replicate records (arrays of length ``n_sims``; NaN for failed fits)."""

    estimate: np.ndarray
    se: np.ndarray
    statistic: np.ndarray
    df: np.ndarray
    pvalue: np.ndarray
    converged: np.ndarray
    singular: np.ndarray
    failed: np.ndarray
    #: further per-replicate float columns of a run that tests several hypotheses at once
    #: (``"estimate.2"``, ``"pvalue.2"``, ...), each of length ``n_sims``
    extra: Mapping[str, np.ndarray] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({
            "estimate": self.estimate, "se": self.se, "statistic": self.statistic,
            "df": self.df, "pvalue": self.pvalue, "converged": self.converged,
            "singular": self.singular, "failed": self.failed,
        })

    def __repr__(self) -> str:
        return f"Replicates(n_sims={self.estimate.shape[0]})"


def _same(a: Any, b: Any) -> bool:
    """``a == b``, with NaN equal to NaN in floats, intervals, studies and tuples."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (ConfidenceInterval, *STUDIES)) and type(a) is type(b):
        return _same_fields(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _same_fields(a: Any, b: Any) -> bool:
    return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a) if f.compare)


class _FromStudy:
    """An attribute of the result that is its study's (``result.design`` is ``result.study.design``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            return getattr(obj.study, self.name)
        except AttributeError:
            raise AttributeError(
                f"a power result of a {obj.study.kind!r} study has no {self.name!r} (it belongs "
                f"to another kind of study); see result.study for what this one describes"
            ) from None


@dataclass(frozen=True)
class PowerResult:
    """A power by simulation (or exactly), with what was studied: every power entry point's result.

    The numbers are the same fields for every kind of study; ``study`` says
    what was studied (:mod:`nlpower.powerresult.studies`), and its fields
    read as the result's own (``result.design`` is ``result.study.design``).

    Attributes
    ----------
    power : float
        Share of replicates that reject with the sign of the true effect
        (Card et al. 2020, Fig. 2; failed replicates count as
        non-rejections); for a model comparison, the rejection rate.  NaN
        when the effect is 0 (then see ``rejection_rate`` and ``type1``).
    se, ci : float, ConfidenceInterval
        Monte Carlo SE ``sqrt(power (1 - power) / n_sims)`` and 95% Wilson
        interval; 0 and zero width when exact (:meth:`proportion_ci` for
        other levels).
    n_sims, n_rejected : int
        Replicates (0 when exact) and sign-correct rejections (None when
        not counted: exact enumeration, or effect 0 of a head-to-head power).
    rejection_rate : float
        Share of replicates with ``p <= alpha``, any sign (the Type I error
        at effect 0).
    type_s, type_m : float
        Share of significant replicates with the wrong sign; mean
        ``|estimate| / |effect|`` over them (Gelman & Carlin 2014).
    type_s_ci, type_m_ci : ConfidenceInterval
        Their 95% intervals (Wilson; t), NaN when unknown.
    effect : float
        The true effect (its sign defines a correct rejection; NaN for a
        model comparison).
    test, alpha, alternative : str, float, str
        The test (``"user"`` for ``simulate_power``: the user's test decides
        the test and its direction).
    study : RatingsStudy, ModelStudy, PreferenceStudy or CallbackStudy
        What was studied (:attr:`kind`).
    method : str
        ``"simulate"``, ``"balanced"`` (the balanced fast path),
        ``"analytic"`` or ``"exact"`` (enumeration).
    engine : str or None
        The fitter of the replicates (None without fits).
    mean_estimate : float
        Mean estimate over successful fits (NaN when not recorded).
    n_failed, n_singular, n_nonconverged : int
        Replicates whose fit or test failed, singular fits, fits that did
        not converge (0 without fits).
    first_error : str
        The first failed replicate's error (empty if none, or not recorded).
    type1, type1_ci, n_type1, n_type1_sims : optional
        Type I error measured at effect 0 (``null=True``, or because the
        design has few workers), its Wilson interval and counts.
    seed : dict
        :func:`nlpower._rng.seed_record` of ``rng`` (empty when none was used).
    version : str
        nlpower version.
    notes : tuple of str
    elapsed : float or None
        Wall time in seconds (not compared, not in records).
    mc : MonteCarloSummary or None
        The counts the simulated numbers come from (None when exact, and
        for some records read back).
    replicates : Replicates or None
        Per-replicate estimates, p-values and flags, when kept.
    """

    power: float
    se: float
    ci: ConfidenceInterval
    n_sims: int
    n_rejected: int | None
    rejection_rate: float
    type_s: float
    type_m: float
    effect: float
    test: str
    alpha: float
    alternative: str
    study: StudyKind
    method: str = "simulate"
    engine: str | None = None
    mean_estimate: float = math.nan
    n_failed: int = 0
    n_singular: int = 0
    n_nonconverged: int = 0
    first_error: str = ""
    type1: float | None = None
    type1_ci: ConfidenceInterval | None = None
    n_type1: int | None = None
    n_type1_sims: int | None = None
    seed: dict[str, Any] = field(default_factory=dict)
    version: str = __version__
    notes: tuple[str, ...] = ()
    elapsed: float | None = field(default=None, repr=False, compare=False)
    type_s_ci: ConfidenceInterval = field(default=_FROM_MC, repr=False, compare=False)
    type_m_ci: ConfidenceInterval = field(default=_FROM_MC, repr=False, compare=False)
    mc: MonteCarloSummary | None = field(default=None, repr=False, compare=False)
    replicates: Replicates | None = field(default=None, repr=False, compare=False)

    # -- what was studied, read as the result's own -----------------------------------------
    design = _FromStudy()            # ratings: CrossedDesign
    coding = _FromStudy()
    mean_difference = _FromStudy()
    REML = _FromStudy()
    n_resamples = _FromStudy()
    params = _FromStudy()            # ratings: the true parameters; callback: generate's kwargs
    hypothesis = _FromStudy()        # model
    formula = _FromStudy()
    analysis = _FromStudy()
    family = _FromStudy()
    nobs = _FromStudy()
    parameters = _FromStudy()
    n = _FromStudy()                 # preference
    p_win = _FromStudy()
    p_draw = _FromStudy()
    p_lose = _FromStudy()
    share = _FromStudy()
    ties = _FromStudy()
    mean_significant = _FromStudy()

    def __eq__(self, other: object) -> bool:
        """Field by field (those compared), NaN equal to NaN: a result equals its copy read back."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _same_fields(self, other)

    def __post_init__(self) -> None:
        for name in ("type_s_ci", "type_m_ci"):
            if getattr(self, name) is _FROM_MC and self.mc is not None:
                object.__setattr__(self, name, getattr(self.mc, name))

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def for_model(cls, **fields: Any) -> PowerResult:
        """The result of a power for a term of a fitted model, from its Monte Carlo summary.

        ``fields``: ``mc``, ``hypothesis``, ``test``, ``alpha``,
        ``alternative``, ``formula``, ``analysis``, ``family``, ``engine``,
        ``nobs``, ``mean_estimate``, the fit counts, ``first_error``, ``seed``,
        ``version`` and optionally ``parameters`` (the former
        ``ModelPowerResult``'s fields).
        """
        return SCHEMAS["model"](**fields).to_result(cls)

    def with_study(self, **changes: Any) -> PowerResult:
        """A copy whose study has ``changes`` (e.g. ``parameters=`` of a model study)."""
        return replace(self, study=replace(self.study, **changes))  # type: ignore[arg-type]

    # -- derived numbers ----------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """``"ratings"``, ``"model"``, ``"preference"`` or ``"callback"`` (:attr:`study`)."""
        return self.study.kind

    @property
    def exact(self) -> bool:
        """Whether the power has no Monte Carlo error (exact enumeration or analytic)."""
        return self.n_sims == 0

    @property
    def n_significant(self) -> int:
        """Rejections of either sign."""
        if self.mc is not None:
            return self.mc.n_significant
        return int(round(self.rejection_rate * self.n_sims))

    @property
    def rejection_ci(self) -> ConfidenceInterval:
        """95% Wilson interval of the rejection rate (zero width when exact)."""
        if self.exact:
            return ConfidenceInterval(self.rejection_rate, self.rejection_rate)
        return ConfidenceInterval(*wilson_ci(self.n_significant, self.n_sims))

    def proportion_ci(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Wilson interval of ``power`` (of the rejection rate when the effect is 0), like scipy's."""
        from .._validation import check_probability
        if self.mc is not None:
            return self.mc.proportion_ci(confidence_level)
        confidence_level = check_probability("confidence_level", confidence_level)
        if self.effect != 0 and self.n_rejected is not None:
            k = self.n_rejected
        else:
            k = int(round((self.rejection_rate if self.effect == 0 else self.power) * self.n_sims))
        return ConfidenceInterval(*wilson_ci(k, self.n_sims, confidence_level))

    @property
    def stopped_early(self) -> bool:
        """Whether adaptive precision (``precision=``) stopped the replicates before ``n_sims``."""
        return self.mc is not None and self.mc.stopped_early

    @property
    def estimates(self) -> np.ndarray | None:
        """Per-replicate estimates (None unless kept: ``keep_draws``, ``keep_replicates``)."""
        return None if self.replicates is None else self.replicates.estimate

    @property
    def pvalues(self) -> np.ndarray | None:
        """Per-replicate p-values (None unless kept)."""
        return None if self.replicates is None else self.replicates.pvalue

    # -- display ------------------------------------------------------------------------------
    def summary(self) -> str:
        """A short text report, in the words of its kind of study."""
        return self.study.summary_of(self)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row."""
        return self.study.frame_of(self)

    def __repr__(self) -> str:
        return f"PowerResult({self.study.repr_of(self)})"

    def _repr_html_(self) -> str:
        """The summary as a notebook block (monospace, escaped)."""
        return f"<pre class=\"nlpower-power\">{html.escape(self.summary())}</pre>"

    def methods(self, format: str = "text", source: str | None = None, *,
                model: str | None = None, test: str | None = None) -> str:
        """The paragraph a paper's methods section needs (``"text"`` or ``"latex"``).

        ``source``: where the true parameters came from (e.g. "Card et al.
        2020, Table 16").  For ``simulate_power``'s results, ``model`` and
        ``test`` describe the user's simulator and test
        (:mod:`nlpower.methods`).

        Examples
        --------
        >>> from nlpower import CrossedDesign, power, presets
        >>> r = power(CrossedDesign(3, 50), presets.high_variance(0.1), n_sims=100, rng=1)
        >>> r.methods(source="Card et al. 2020, Table 16").startswith("We estimated")
        True
        """
        if isinstance(self.study, CallbackStudy):
            return self.study.methods_of(self, source=source, format=format, model=model,
                                         test=test)
        if model is not None or test is not None:
            raise InputError(f"model= and test= describe the user's simulator and test of "
                             f"simulate_power; this power of a {self.kind!r} study describes "
                             "them itself. Drop them (source= says where its parameters came "
                             "from).")
        return self.study.methods_of(self, source=source, format=format)

    def plot(self, ax: Any = None) -> Any:
        """Card et al. (2020), Fig. 1: the replicates' estimates, significant ones highlighted.

        Needs the per-replicate values (``simulate_power(..., keep_draws=True)``,
        ``power(..., keep_replicates=True)``).  Returns the matplotlib ``Figure``.
        """
        if self.replicates is None:
            keep = "keep_draws=True" if self.kind == "callback" else "keep_replicates=True"
            raise InputError(f"this result kept no per-replicate values: rerun with {keep} "
                             "to plot them.")
        from ..plots import _pyplot
        plt = _pyplot()
        if ax is None:
            fig, ax = plt.subplots(figsize=(6, 3.5))
        else:
            fig = ax.figure
        est = self.replicates.estimate
        sig = np.nan_to_num(self.replicates.pvalue, nan=1.0) <= self.alpha
        ok = np.isfinite(est)
        bins = np.histogram_bin_edges(est[ok], bins=40)
        ax.hist(est[ok & ~sig], bins=bins, color="0.75", label="not significant")
        ax.hist(est[ok & sig], bins=bins, color="C3", alpha=0.8, label=f"p <= {self.alpha:g}")
        ax.axvline(self.effect, color="k", lw=1, ls="--", label="true effect")
        ax.set_xlabel("estimate")
        ax.set_ylabel("simulations")
        ax.set_title(f"power {self.power:.2f}, Type-M {self.type_m:.2f}, Type-S {self.type_s:.3f}")
        ax.legend(frameon=False, fontsize="small")
        return fig

    # -- records ------------------------------------------------------------------------------
    def to_record(self) -> dict[str, Any]:
        """Flat JSON-able record (a grid cell, a checkpoint line), in its kind's layout.

        Each kind keeps the keys its results always had
        (:mod:`nlpower.powerresult.records`), so files written before load.
        """
        return SCHEMAS[self.kind].of(self).to_record()

    @classmethod
    def from_record(cls, record: Mapping[str, Any], *, kind: str | None = None) -> PowerResult:
        """The result back from :meth:`to_record` (``kind``: found from the keys when None)."""
        kind = kind_of(record) if kind is None else kind
        if kind not in SCHEMAS:
            raise InputError(f"kind={kind!r} is not a kind of power study; use one of "
                             f"{', '.join(map(repr, SCHEMAS))} or None (found from the keys).")
        return SCHEMAS[kind].from_record(record).to_result(cls)
