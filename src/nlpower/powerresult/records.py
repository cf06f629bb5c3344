"""The record of a :class:`~nlpower.powerresult.PowerResult`: one schema per kind of study.

A record is what a grid cell shows and a checkpoint stores.  Before the four
power results were one type, each wrote its own record; those records are
in checkpoints and grid files, so each kind keeps its record exactly (keys,
key order, NaN policy): the classes below are those records' schemas,
written and read by :class:`nlpower._records.RecordCodec` from their fields.
:func:`kind_of` tells the kinds apart by their keys.

A schema is a flat view of a result: :meth:`_Schema.of` reads its fields
from the result's attributes (core fields and the study's alike), and
:meth:`_Schema.to_result` sends each back where it belongs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from .. import __version__
from .._records import RecordCodec, RecordLayout
from ..design import CrossedDesign
from ..intervals import ConfidenceInterval, wilson_ci
from ..montecarlo import MonteCarloSummary
from .studies import CallbackStudy, ModelStudy, PreferenceStudy, RatingsStudy

__all__ = ["SCHEMAS", "CallbackRecord", "ModelRecord", "PreferenceRecord", "RatingsRecord",
           "design_record", "kind_of"]

R = TypeVar("R")


def design_record(design: CrossedDesign) -> dict[str, Any]:
    """The design's constructor arguments, JSON-able (``CrossedDesign(**record)`` rebuilds it)."""
    return {"n_workers": design.n_workers, "n_items": design.n_items,
            "systems": list(design.system_names), "workers_per_item": design.workers_per_item,
            "items": design.items}


def _read_design(d: Any) -> CrossedDesign:
    return d if isinstance(d, CrossedDesign) else CrossedDesign(**d)


class _Schema(RecordCodec):
    """A kind's record: built from a result, turned back into one."""

    #: the study descriptor the schema's study fields go to
    study_type: ClassVar[type]

    @classmethod
    def of(cls: type[R], result: Any) -> R:
        """The schema of ``result`` (each field read from the result by name)."""
        return cls(**{f.name: getattr(result, f.name)  # type: ignore[call-arg]
                      for f in dataclasses.fields(cls)})  # type: ignore[arg-type]

    def to_result(self, cls: type[R]) -> R:
        """The result of class ``cls``: core fields from the schema, the rest into the study."""
        study_type = type(self).study_type
        study_names = {f.name for f in dataclasses.fields(study_type)}
        mine = [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]
        study = study_type(**{n: getattr(self, n) for n in mine if n in study_names})
        core = {f.name: getattr(self, f.name) for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if f.init and f.name != "study" and f.name not in study_names
                and hasattr(self, f.name)}
        return cls(**core, study=study)  # type: ignore[call-arg]


@dataclass(frozen=True)
class RatingsRecord(_Schema):
    """The record of a power of the paper's model on a crossed design (grid files, checkpoints)."""

    power: float
    se: float
    ci: ConfidenceInterval
    n_sims: int
    n_rejected: int
    rejection_rate: float
    type_s: float
    type_m: float
    mean_estimate: float
    n_failed: int
    n_singular: int
    n_nonconverged: int
    type1: float | None
    type1_ci: ConfidenceInterval | None
    effect: float
    mean_difference: float
    test: str
    alpha: float
    alternative: str
    method: str
    engine: str | None
    coding: str
    design: CrossedDesign
    seed: dict[str, Any]
    version: str
    notes: tuple[str, ...] = ()
    n_type1: int | None = None
    n_type1_sims: int | None = None
    REML: bool = False
    n_resamples: int | None = None
    mc: MonteCarloSummary | None = field(default=None, repr=False, compare=False)

    study_type = RatingsStudy
    _record_layout = RecordLayout(
        first=("power", "ci_low", "ci_high", "se", "type_m", "type_s", "mean_estimate",
               "n_failed", "n_singular", "n_sims", "n_rejected", "test", "method", "engine",
               "alternative", "alpha", "coding", "n_nonconverged", "rejection_rate", "effect",
               "mean_difference", "type1", "n_type1", "n_type1_sims", "type1_ci_low",
               "type1_ci_high", "design", "REML", "n_resamples", "notes"),
        last=("seed", "version"), nan="keep", seed="nested", summary="effect",
        custom={"design": (design_record, _read_design)})


@dataclass(frozen=True)
class ModelRecord(_Schema):
    """The record of a power for a term of a fitted model: the Monte Carlo counts, then the study.

    Its numbers are the Monte Carlo summary's (``mc``): power and the rest
    are read from it.
    """

    mc: MonteCarloSummary
    hypothesis: str
    test: str
    alpha: float
    alternative: str
    formula: str
    analysis: str
    family: str
    engine: str
    nobs: int
    mean_estimate: float
    n_failed: int
    n_singular: int
    n_nonconverged: int
    first_error: str = ""
    seed: Mapping[str, Any] = field(default_factory=dict)
    version: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    study_type = ModelStudy
    #: the effect, the grid's columns (power, its interval and SE, Type M and S) and the Monte
    #: Carlo summary's counts, then the fields; the seed and parameters are not kept
    _record_layout = RecordLayout(skip=frozenset({"seed"}), nan="keep", summary="effect",
                                  derived={"effect": "mc", "power": "mc", "ci_low": "mc",
                                           "ci_high": "mc", "se": "mc", "type_m": "mc",
                                           "type_s": "mc", "rejection_rate": "first_error"})

    # the result's numbers, from the counts
    effect = property(lambda self: self.mc.effect)
    power = property(lambda self: self.mc.power)
    se = property(lambda self: self.mc.se)
    ci = property(lambda self: self.mc.ci)
    ci_low = property(lambda self: self.mc.ci.low)
    ci_high = property(lambda self: self.mc.ci.high)
    n_sims = property(lambda self: self.mc.n_sims)
    n_rejected = property(lambda self: self.mc.n_rejected)
    rejection_rate = property(lambda self: self.mc.rejection_rate)
    type_s = property(lambda self: self.mc.type_s)
    type_m = property(lambda self: self.mc.type_m)

    # at a true value of 0 the rejection rate is the Type I error (as for the paper's model)
    @property
    def _null(self) -> bool:
        return bool(self.mc.effect == 0)

    type1 = property(lambda self: self.mc.rejection_rate if self._null else None)
    type1_ci = property(lambda self: ConfidenceInterval(
        *wilson_ci(self.mc.n_significant, self.mc.n_sims)) if self._null else None)
    n_type1 = property(lambda self: self.mc.n_significant if self._null else None)
    n_type1_sims = property(lambda self: self.mc.n_sims if self._null else None)


@dataclass(frozen=True)
class PreferenceRecord(_Schema):
    """The record of a one-judgement head-to-head power."""

    power: float
    se: float
    ci: ConfidenceInterval
    type_m: float
    type_s: float
    rejection_rate: float
    mean_significant: float
    n: int
    p_win: float
    p_draw: float
    p_lose: float
    share: float
    effect: float
    ties: str
    test: str
    alpha: float
    alternative: str
    method: str
    n_sims: int = 0
    n_rejected: int | None = None
    seed: dict[str, Any] = field(default_factory=dict)
    version: str = __version__
    notes: tuple[str, ...] = ()

    study_type = PreferenceStudy
    _record_layout = RecordLayout(first=("power", "ci_low", "ci_high", "se", "type_m", "type_s",
                                         "rejection_rate", "mean_significant", "n_sims",
                                         "n_rejected"))


@dataclass(frozen=True)
class CallbackRecord(_Schema):
    """The record of a power of the user's simulator and test (``simulate_power``)."""

    power: float
    se: float
    ci: ConfidenceInterval
    type_m: float
    type_m_ci: ConfidenceInterval
    type_s: float
    type_s_ci: ConfidenceInterval
    rejection_rate: float
    rejection_ci: ConfidenceInterval
    n_sims: int
    n_rejected: int
    n_significant: int
    n_failed: int
    effect: float
    alpha: float
    params: dict[str, Any] = field(default_factory=dict)
    seed: dict[str, Any] = field(default_factory=dict)
    version: str = ""

    study_type = CallbackStudy
    #: the user's test decides what is tested and in which direction
    test: ClassVar[str] = "user"
    alternative: ClassVar[str] = "user"
    _record_layout = RecordLayout(
        intervals={"type_m_ci": ("type_m_low", "type_m_high"),
                   "type_s_ci": ("type_s_low", "type_s_high"),
                   "rejection_ci": ("rejection_low", "rejection_high")},
        first=("power", "ci_low", "ci_high"), nan="nonfinite")


#: kind of study -> its record's schema
SCHEMAS: dict[str, type[_Schema]] = {
    "ratings": RatingsRecord, "model": ModelRecord, "preference": PreferenceRecord,
    "callback": CallbackRecord}


def kind_of(record: Mapping[str, Any]) -> str:
    """The kind of study a record was written for, from its keys (``"ratings"`` by default)."""
    if "hypothesis" in record:
        return "model"
    if "p_win" in record:
        return "preference"
    if "rejection_low" in record or "params" in record:
        return "callback"
    return "ratings"
