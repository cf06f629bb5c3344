"""nlpower: statistical power for NLP evaluation.

Fit pilot human-rating data with crossed linear mixed models (lme4
semantics, pure-Python engine), plan how many workers and items a study
needs, and run power grids -- after Card et al. (2020), *With Little Power
Comes Great Responsibility*.

Public names are imported lazily so that ``import nlpower`` stays fast and
optional parts (plots, Dask, R) cost nothing until used.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import (
    CheckpointError,
    ConvergenceWarning,
    DesignError,
    EngineUnavailableError,
    FitError,
    FormulaError,
    InputError,
    NlpowerError,
    RatingsError,
    SingularFitWarning,
)

__version__ = "0.1.0"

# public name -> (module, attribute); attribute None: the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    "CrossedDesign": ("nlpower.design", "CrossedDesign"),
    "LMMParams": ("nlpower.params", "LMMParams"),
    "MultiSystemParams": ("nlpower.params", "MultiSystemParams"),
    "presets": ("nlpower.presets", None),
    "simulate": ("nlpower.simulation", "simulate"),
    "lmer": ("nlpower.lmm", "lmer"),
    "glmer": ("nlpower.glmm", "glmer"),
    "clmm": ("nlpower.ordinal", "clmm"),
    "LmmFit": ("nlpower.lmm.result", "LmmFit"),
    "read_ratings": ("nlpower.ratings", "read_ratings"),
    "fit_ratings": ("nlpower.ratings", "fit_ratings"),
    "power": ("nlpower.powersim", "power"),
    "analytic_power": ("nlpower.powersim", "analytic_power"),
    "power_grid": ("nlpower.powersim", "power_grid"),
    "SimOptions": ("nlpower.powersim", "SimOptions"),
    "Study": ("nlpower.study.spec", "Study"),
    "Truth": ("nlpower.study.spec", "Truth"),
    "Analysis": ("nlpower.study.spec", "Analysis"),
    "Test": ("nlpower.study.spec", "Test"),
    "PlanOptions": ("nlpower.study.spec", "PlanOptions"),
    "power_curve": ("nlpower.study", "power_curve"),
    "extend": ("nlpower.study", "extend"),
    "ModelDesign": ("nlpower.study", "ModelDesign"),
    "ModelPowerResult": ("nlpower.study", "ModelPowerResult"),
    "mde": ("nlpower.powersim", "mde"),
    "plan": ("nlpower.powersim", "plan"),
    "PowerResult": ("nlpower.powersim", "PowerResult"),
    "PowerOptions": ("nlpower.powersim", "PowerOptions"),
    "power_options": ("nlpower.powersim", "power_options"),
    "RunOptions": ("nlpower.grid", "RunOptions"),
    "GridResult": ("nlpower.grid", "GridResult"),
    "run_grid": ("nlpower.grid", "run_grid"),
    "as_params": ("nlpower.convert", "as_params"),
    "assurance": ("nlpower.pilot", "assurance"),
    "plan_with_assurance": ("nlpower.pilot", "plan_with_assurance"),
    "fit_judgements": ("nlpower.pilot.judgements", "fit_judgements"),
    "pilot": ("nlpower.pilot", None),
    "study": ("nlpower.study", None),
    "judge": ("nlpower.judge", None),
    "agreement": ("nlpower.agreement", None),
    "arena": ("nlpower.arena", None),
    "sequential": ("nlpower.sequential", None),
    "accuracy": ("nlpower.accuracy", None),
    "bleu": ("nlpower.bleu", None),
    "paired": ("nlpower.paired", None),
    "inference": ("nlpower.inference", None),
    "replicability": ("nlpower.partial_conjunction", "replicability"),
    "simulate_power": ("nlpower.simpower", "simulate_power"),
    "simulate_power_grid": ("nlpower.simpower", "simulate_power_grid"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nlpower' has no attribute {name!r}")
    module, attr = _LAZY[name]
    mod = importlib.import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CheckpointError",
    "ConvergenceWarning",
    "DesignError",
    "EngineUnavailableError",
    "FitError",
    "FormulaError",
    "InputError",
    "NlpowerError",
    "RatingsError",
    "SingularFitWarning",
    "__version__",
    *_LAZY,
]
