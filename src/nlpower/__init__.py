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

# public name -> module that defines it
_LAZY = {
    "CrossedDesign": "nlpower.design",
    "LMMParams": "nlpower.params",
    "MultiSystemParams": "nlpower.params",
    "presets": "nlpower.presets",
    "simulate": "nlpower.simulation",
    "lmer": "nlpower.lmm",
    "LmmFit": "nlpower.lmm.result",
    "read_ratings": "nlpower.ratings",
    "fit_ratings": "nlpower.ratings",
    "power": "nlpower.powersim",
    "analytic_power": "nlpower.powersim",
    "power_grid": "nlpower.powersim",
    "mde": "nlpower.powersim",
    "plan": "nlpower.powersim",
    "PowerResult": "nlpower.powersim",
    "GridResult": "nlpower.powersim",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nlpower' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
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
