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
design, straight from the design's index arrays (:func:`design_spec`: no data
frame and no response -- ``spec.y`` is zeros), and is the structure
:func:`~nlpower.lmm.frame.model_frame` builds from the formula on the
design's layout (tested); replicates only swap the response (STYLE 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..design import CrossedDesign
from ..errors import InputError
from ..lmm import theta_layout
from ..lmm.structure import ModelSpec, ReTerm
from ..params import LMMParams, MultiSystemParams

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


def _labels(prefix: str, n: int) -> tuple[str, ...]:
    """Level labels as in :meth:`CrossedDesign.layout` (zero-padded, so sorted = code order)."""
    width = len(str(n))
    return tuple(f"{prefix}{j + 1:0{width}d}" for j in range(n))


def _check_identifiable(term: ReTerm, n: int) -> None:
    """lme4's check that a term has fewer random effects than observations."""
    n_re = term.q * term.n_levels
    if n <= n_re:
        raise InputError(
            f"number of observations (={n}) <= number of random effects (={n_re}) for term "
            f"({' + '.join(term.cnames)} | {term.group}); the random-effects parameters and the "
            f"residual variance are probably unidentifiable. Use more workers per item or "
            f"more items."
        )


def design_spec(design: CrossedDesign, params: Params) -> ModelSpec:
    """The analysis model's structure for ``design``, from its index arrays (no response).

    Equal to ``model_frame(design_formula(design, params), data)`` on the
    design's layout with the ``x`` / ``x1 ...`` columns of the module
    docstring (``tests/powersim/test_models.py``); ``y`` is zeros.
    """
    a = design.arrays()
    n = a.n_ratings
    multi = design.n_systems > 2 or isinstance(params, MultiSystemParams)
    nested = design.items == "nested"
    ones = np.ones((n, 1))
    if not multi:
        assert isinstance(params, LMMParams)
        x = np.asarray(params.x_values, dtype=float)[a.system]
        X = np.column_stack([np.ones(n), x])
        names: tuple[str, ...] = ("(Intercept)", "x")
        slope = x[:, None]
        slope_names: tuple[str, ...] = ("x",)
        contrasts: dict[str, str] = {}
        columns: tuple[str, ...] = ("rating", "x", "worker", "item")
    else:
        k = design.n_systems
        codes = a.system
        xs = [np.where(codes == j, 1.0, np.where(codes == 0, -1.0, 0.0)) for j in range(1, k)]
        X = np.column_stack([np.ones(n), *xs])
        names = ("(Intercept)", *(f"x{j}" for j in range(1, k)))
        slope = np.eye(k)[codes]
        slope_names = tuple(f"system{s}" for s in design.system_names)
        contrasts = {"system": "treatment"}
        columns = ("rating", *names[1:], "system", "worker", "item")
    wl, il = _labels("w", design.n_workers), _labels("i", design.n_items)
    terms = [ReTerm("worker", a.worker, wl, ones, ("(Intercept)",)),
             ReTerm("worker", a.worker, wl, slope, slope_names),
             ReTerm("item", a.item, il, ones, ("(Intercept)",))]
    if not nested:
        terms.append(ReTerm("item", a.item, il, slope, slope_names))
    for t in terms:
        _check_identifiable(t, n)
    return ModelSpec(formula=design_formula(design, params), response="rating", y=np.zeros(n),
                     X=X, fixef_names=names, re_terms=tuple(terms), contrasts=contrasts,
                     data_columns=columns)


@dataclass(frozen=True, eq=False)
class DesignModel:
    """Analysis model of a design: structure, tested column, true theta.

    Attributes
    ----------
    formula : str
    spec : ModelSpec
        Structure of the design (:func:`design_spec`; response: zeros).
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


def true_sds(design: CrossedDesign, params: Params, group: str, cnames: tuple[str, ...]) -> np.ndarray:
    """True SD of each column of a random term (warm start, analytic information)."""
    nested = design.items == "nested"
    if isinstance(params, LMMParams):
        x2 = float(np.mean(np.square(params.x_values)))
        if group == "worker":
            sd0, sd1 = params.sd_worker, params.sd_worker_slope
        else:
            sd0, sd1 = params.sd_item, params.sd_item_slope
            if nested:
                return np.array([math.sqrt(sd0**2 + sd1**2 * x2)])
        return np.array([sd0 if c == "(Intercept)" else sd1 for c in cnames], dtype=float)
    sd0 = params.sd_worker if group == "worker" else params.sd_item
    sds = np.asarray(params.sd_worker_systems if group == "worker" else params.sd_item_systems,
                     dtype=float)
    if group == "item" and nested:
        return np.array([math.sqrt(sd0**2 + float(np.mean(sds**2)))])
    if cnames == ("(Intercept)",):
        return np.array([sd0], dtype=float)
    return sds[: len(cnames)]


def build_model(design: CrossedDesign, params: Params) -> DesignModel:
    """Build the analysis model of ``design`` (structure once per design)."""
    spec = design_spec(design, params)
    name = "x" if "x" in spec.fixef_names else "x1"
    idx = spec.fixef_names.index(name)
    # true theta in lme4's term order (terms sorted by decreasing number of levels)
    layout = theta_layout(spec.re_terms)
    theta = []
    for t in layout.terms:
        sds = true_sds(design, params, t.group, tuple(t.cnames)) / params.sigma
        for j in range(t.q):
            for i in range(j, t.q):
                theta.append(float(sds[i]) if i == j else 0.0)
    return DesignModel(spec.formula, spec, idx, name, params.coding, np.asarray(theta))


def effect_of(params: Params) -> float:
    """The tested effect in the parameters' coding."""
    return float(params.effect) if isinstance(params, LMMParams) else float(params.effects[0])


def mean_difference_of(params: Params) -> float:
    """The tested effect as a difference of system means (system 2 minus 1; K: minus the grand mean)."""
    return float(params.mean_difference if isinstance(params, LMMParams)
                 else params.mean_differences[0])


def with_effect(params: Params, effect: float) -> Params:
    """``params`` with the tested effect replaced (the other systems' effects kept)."""
    if isinstance(params, LMMParams):
        return params.with_effect(effect)
    return params.with_effects((effect,) + tuple(params.effects[1:]))


__all__ = ["DesignModel", "Params", "build_model", "design_formula", "design_spec", "effect_of",
           "mean_difference_of", "true_sds", "with_effect"]
