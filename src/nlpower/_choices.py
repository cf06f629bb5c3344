"""Every allowed value of a string option, as ``Literal`` types, and one check.

One place lists what ``coding=``, ``test=``, ``alternative=``, ``method=``,
``engine=``, ``backend=`` and ``on_error=`` accept, so the API, the CLI and
the error messages never disagree.  :func:`check_choice` validates a value
against a ``Literal`` (or any iterable of allowed values) at the public
boundary.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, get_args

from ._validation import check_choice as _check_values

__all__ = [
    "Alternative",
    "AnalyticMethod",
    "Backend",
    "Coding",
    "Duplicates",
    "EngineName",
    "FailurePolicy",
    "ItemScheme",
    "MDEMethod",
    "OnError",
    "PowerMethod",
    "RatingsModel",
    "RatingsTest",
    "UnequalSDs",
    "allowed",
    "check_choice",
]

# --- shared by every power calculation -------------------------------------------------

#: scipy's ``alternative``.  Power counts only sign-correct rejections.
Alternative: TypeAlias = Literal["two-sided", "greater", "less"]
#: What a grid does with a cell that raises: keep it as a failed cell, also warn, or stop.
OnError: TypeAlias = Literal["record", "warn", "raise"]
#: Where grid cells run: joblib/loky processes or a Dask cluster.
Backend: TypeAlias = Literal["loky", "dask"]

# --- human ratings (designs, mixed models, power) ---------------------------------------

#: How the system indicator is coded: x = +-1 (the paper's), +-0.5, or 0/1.
Coding: TypeAlias = Literal["sum", "half", "treatment"]
#: How items relate to systems: each item rendered by every system, or one system's output.
ItemScheme: TypeAlias = Literal["paired", "nested"]
#: What read_ratings does with repeated (worker, item, system) ratings.
Duplicates: TypeAlias = Literal["error", "keep", "mean"]
#: Mixed-model fitters: the embedded native engine, or lme4 through rpy2.
EngineName: TypeAlias = Literal["native", "lme4"]
#: How power is computed: balanced fast path when exact, else simulate; or forced.
PowerMethod: TypeAlias = Literal["auto", "balanced", "simulate", "analytic"]
#: Tests of the system effect in a mixed model.
RatingsTest: TypeAlias = Literal["satterthwaite", "z", "lrt"]
#: What power() does when replicate fits fail: count them as non-detections (recorded in the
#: result), also warn, or stop with an error naming the replicate (STYLE 6).
FailurePolicy: TypeAlias = Literal["ignore", "warn", "raise"]
#: How analytic_power() gets the estimate's variance and df: expected mean squares of the
#: balanced design, expected information of any design, or the first when it applies.
AnalyticMethod: TypeAlias = Literal["auto", "balanced", "information"]
#: How mde() answers: the analytic power curve alone, or also a simulation at the MDE.
MDEMethod: TypeAlias = Literal["analytic", "simulation"]
#: What a conversion to +-1 parameters does when the two systems' SDs differ
#: (``nlpower.params.pm1_random_effects``): stop, warn when material, or drop silently.
UnequalSDs: TypeAlias = Literal["raise", "warn", "ignore"]
#: Which model ``fit_ratings`` fits: identified per-system variances for nested factors, or always the paper's.
RatingsModel: TypeAlias = Literal["auto", "paper"]

# --- accuracy (McNemar) -----------------------------------------------------------------

# --- BLEU (randomization test) ----------------------------------------------------------

# --- paired score comparison and replicability -------------------------------------------


def allowed(choices: Any) -> tuple[Any, ...]:
    """The allowed values of a ``Literal`` type (or of any iterable) as a tuple."""
    args = get_args(choices)
    return tuple(args) if args else tuple(choices)


def check_choice(name: str, value: Any, choices: Any) -> Any:
    """``value`` if it is one of ``choices`` (a ``Literal`` type or an iterable).

    Otherwise an :class:`~nlpower.errors.InputError` that names ``name``, shows
    the value, lists what is allowed and suggests the closest one.
    """
    return _check_values(name, value, allowed(choices))
