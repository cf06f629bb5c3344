"""The analysis model fitted in each power replicate, for a given design.

=====================================  ==========================================================
design                                 formula (ML fit, ``REML = FALSE`` as in the paper)
=====================================  ==========================================================
2 systems, items paired (any           ``rating ~ x + (1 + x || worker) + (1 + x || item)``
``workers_per_item``)                  (``x`` numeric in the parameters' coding; Card et al.
                                       2020, App. H.3)
2 systems, items nested in systems     ``rating ~ x + (1 + x || worker) + (1 | item)``: an item
                                       is seen under one system only, so its slope is not
                                       identifiable from its intercept; the item term absorbs
                                       ``sd_item^2 + sd_item_slope^2 x^2``
K > 2 systems (or ``MultiSystemParams``)  ``rating ~ x1 + ... + x{K-1} + (system || worker) +
                                       (system || item)`` with ``x_j`` the sum contrast of
                                       system ``j`` (+1 for system ``j``, -1 for the baseline,
                                       0 otherwise), so ``x_j``'s coefficient is system ``j``'s
                                       mean minus the grand mean -- the parameterisation of
                                       :class:`~nlpower.params.MultiSystemParams` and of the
                                       paper's Tables 13-15.  ``(system || g)`` is lme4's
                                       ``(1 | g) + (0 + system | g)`` (unstructured over the K
                                       indicators).  The tested effect is ``x1``: the first
                                       non-baseline system against the grand mean.
                                       Nested items: ``(1 | item)``.
=====================================  ==========================================================

The structure (:class:`~nlpower.lmm.structure.ModelSpec`) is built once per
design; replicates only swap the response.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..design import CrossedDesign
from ..lmm.frame import model_frame
from ..lmm.structure import ModelSpec
from ..params import LMMParams, MultiSystemParams
from ..simulation import check_design_params

Params = LMMParams | MultiSystemParams


def design_formula(design: CrossedDesign, params: Params | None = None) -> str:
    """The lme4 formula fitted to each replicate of ``design`` (module docstring)."""
    multi = design.n_systems > 2 or isinstance(params, MultiSystemParams)
    nested = design.items == "nested"
    if not multi:
        item = "(1 | item)" if nested else "(1 + x || item)"
        return f"rating ~ x + (1 + x || worker) + {item}"
    fixed = " + ".join(f"x{j}" for j in range(1, design.n_systems))
    item = "(1 | item)" if nested else "(system || item)"
    return f"rating ~ {fixed} + (system || worker) + {item}"


@dataclass(frozen=True, eq=False)
class DesignModel:
    """Analysis model of a design: structure, tested column, true theta.

    Attributes
    ----------
    formula : str
    spec : ModelSpec
        Structure built on the design's layout (response: zeros).
    effect_index : int
        Column of ``spec.X`` whose coefficient is tested.
    effect_name : str
    coding : str
        Coding of the tested effect (``"sum"``, ``"half"``, ``"treatment"``).
    theta : ndarray
        True relative covariance parameters in lme4's order (warm start).
    """

    formula: str
    spec: ModelSpec
    effect_index: int
    effect_name: str
    coding: str
    theta: np.ndarray

    def null_spec(self) -> ModelSpec:
        """The same structure without the tested column (for likelihood-ratio tests)."""
        keep = [j for j in range(self.spec.p) if j != self.effect_index]
        return replace(self.spec, X=self.spec.X[:, keep],
                       fixef_names=tuple(self.spec.fixef_names[j] for j in keep))


def _data(design: CrossedDesign, params: Params) -> pd.DataFrame:
    coding = params.coding
    lay = design.layout(coding=coding)
    codes = design.arrays().system
    for j in range(1, design.n_systems):
        lay[f"x{j}"] = np.where(codes == j, 1.0, np.where(codes == 0, -1.0, 0.0))
    lay["rating"] = np.linspace(0.0, 1.0, len(lay))  # placeholder response (non-constant)
    return lay


def _true_sds(design: CrossedDesign, params: Params, group: str, cnames: tuple[str, ...]) -> np.ndarray:
    """True SD of each column of a random term (for the warm start)."""
    nested = design.items == "nested"
    if isinstance(params, LMMParams):
        x2 = float(np.mean(np.square(params.x_values)))
        if group == "worker":
            sd0, sd1 = params.sd_worker, params.sd_worker_slope
        else:
            sd0, sd1 = params.sd_item, params.sd_item_slope
            if nested:
                return np.array([math.sqrt(sd0**2 + sd1**2 * x2)])
        return np.array([sd0 if c == "(Intercept)" else sd1 for c in cnames])
    sd0 = params.sd_worker if group == "worker" else params.sd_item
    sds = np.asarray(params.sd_worker_systems if group == "worker" else params.sd_item_systems)
    if group == "item" and nested:
        return np.array([math.sqrt(sd0**2 + float(np.mean(sds**2)))])
    if cnames == ("(Intercept)",):
        return np.array([sd0])
    return sds[: len(cnames)]


def build_model(design: CrossedDesign, params: Params) -> DesignModel:
    """Build the analysis model of ``design`` (structure once per design)."""
    formula = design_formula(design, params)
    spec = model_frame(formula, _data(design, params))
    name = "x" if "x" in spec.fixef_names else "x1"
    idx = spec.fixef_names.index(name)
    # true theta in lme4's term order (terms sorted by decreasing number of levels)
    from ..lmm import theta_layout

    layout = theta_layout(spec.re_terms)
    theta = []
    for t in layout.terms:
        sds = _true_sds(design, params, t.group, tuple(t.cnames)) / params.sigma
        for j in range(t.q):
            for i in range(j, t.q):
                theta.append(float(sds[i]) if i == j else 0.0)
    return DesignModel(formula, spec, idx, name, params.coding, np.asarray(theta))


__all__ = ["ALTERNATIVES", "TESTS", "DesignModel", "build_model", "check_design_params",
           "check_test_options", "design_formula", "effect_of"]


# ----------------------------------------------------------------------------------------
# validation shared by power(), analytic_power(), mde() and plan()
# ----------------------------------------------------------------------------------------

TESTS = ("satterthwaite", "z", "lrt")
ALTERNATIVES = ("two-sided", "greater", "less")


def check_test_options(alpha: object, test: object, alternative: object) -> tuple[float, str, str]:
    """Validate ``alpha``, ``test`` and ``alternative``."""
    from .._validation import check_choice, check_real
    from ..errors import InputError

    a = check_real("alpha", alpha)
    if not 0.0 < a < 1.0:
        raise InputError(
            f"alpha must be strictly between 0 and 1 (the significance level); got {a}. "
            "The usual value is 0.05."
        )
    t = check_choice("test", test, TESTS)
    alt = check_choice("alternative", alternative, ALTERNATIVES)
    return a, t, alt


def effect_of(params: Params) -> float:
    """The tested effect in the parameters' coding."""
    return float(params.effect) if isinstance(params, LMMParams) else float(params.effects[0])
