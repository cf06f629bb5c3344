"""Draw ratings from the crossed mixed model (Card et al. 2020, App. H.3, eq. 5-10).

Two entry points:

:func:`simulate`
    the public function: a design, parameters, ``n_sims`` replicates,
    optional Likert discretisation, keyword-only ``rng``.
:func:`simulate_y`
    the vectorised core used in hot loops (power replicates): prebuilt
    :class:`~nlpower.design.LayoutArrays` in, an ``(n_sims, n_ratings)`` array
    out.  Nothing about the design is rebuilt between calls.

Order of random draws (fixed, so the same ``rng`` gives the same data and
changing only the fixed effects or the SDs reuses the same standard-normal
draws -- common random numbers across the cells of a power grid):

* :class:`~nlpower.params.LMMParams`: standard normals ``z`` of shape
  (n_sims, n_workers) for the worker intercepts, then worker slopes, then
  (n_sims, n_items) item intercepts, item slopes, then (n_sims, n_ratings)
  residuals; each scaled by its SD.
* :class:`~nlpower.params.MultiSystemParams`: worker intercepts
  (n_sims, n_workers), worker-by-system effects (n_sims, n_workers, K),
  item intercepts, item-by-system effects, residuals.

Likert ratings (``likert=K``): the latent rating, on the [0, 1] scale the
parameters are expressed in, is rounded to the nearest point of the grid
``{0, 1/(K-1), ..., 1}`` and clipped to [0, 1]; equivalently the cut points
between categories ``k`` and ``k+1`` are ``(k + 0.5)/(K - 1)``.  A rating
file in 1..K rescaled by ``(r - 1)/(K - 1)`` lands on the same grid, so
simulated and real data share one scale and the fixed effects keep their
meaning (up to the floor/ceiling effect of clipping, which is what makes
Likert data less informative than the normal model suggests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, overload

import numpy as np
import pandas as pd

from ._choices import Coding
from ._rng import RNGLike, as_generator
from ._validation import check_int
from .design import CrossedDesign, LayoutArrays
from .errors import DesignError, InputError
from .params import LMMParams, MultiSystemParams
from .presets import DatasetPreset

Params = LMMParams | MultiSystemParams


def likert_round(y: np.ndarray, k: int) -> np.ndarray:
    """Round latent ratings on [0, 1] to the ``k``-point grid ``j/(k-1)``, clipped to [0, 1].

    Cut points between categories ``j`` and ``j+1`` are ``(j + 0.5)/(k - 1)``.
    """
    steps = k - 1
    return np.clip(np.rint(np.asarray(y, dtype=float) * steps), 0, steps) / steps


def to_likert_scale(y01: np.ndarray, k: int, *, low: int = 1) -> np.ndarray:
    """Integer Likert scores ``low .. low + k - 1`` from ratings on the [0, 1] grid.

    The inverse of the rescaling ``(r - low)/(k - 1)``; ratings not on the
    grid are first rounded as in :func:`likert_round`.
    """
    return (np.rint(likert_round(y01, k) * (k - 1)) + low).astype(np.int64)


def simulate_y(
    arrays: LayoutArrays,
    params: Params,
    n_sims: int,
    rng: RNGLike = None,
    *,
    likert: int | None = None,
) -> np.ndarray:
    """Vectorised core: ``n_sims`` replicate rating vectors for one design.

    Parameters
    ----------
    arrays : LayoutArrays
        From :meth:`CrossedDesign.arrays` (built once per design).
    params : LMMParams or MultiSystemParams
        Model parameters; ``LMMParams`` needs a 2-system design and uses its
        own ``coding`` for ``x``, ``MultiSystemParams`` needs K to match.
    n_sims : int
        Number of replicates (rows of the result).
    rng : optional
        Anything :func:`numpy.random.default_rng` accepts.  A ``Generator``
        is advanced in place (so successive calls give new data).
    likert : int, optional
        Discretise to a ``likert``-point scale on [0, 1] (:func:`likert_round`).

    Returns
    -------
    ndarray, shape (n_sims, n_ratings)
        Rows are replicates, columns follow the design's layout rows.

    Notes
    -----
    Memory is ``O(n_sims * n_ratings)``; callers with very large designs
    should call it in chunks of replicates (with one ``Generator``, chunks
    give different draws than a single call, but the same distribution).
    Minimal validation only: :func:`simulate` is the checked public entry.
    """
    gen = as_generator(rng)
    nw, ni, n, k = arrays.n_workers, arrays.n_items, arrays.n_ratings, arrays.n_systems
    # Per-(level, system) effect tables of shape (n_sims, n_levels, K) are built
    # first (small), then gathered once per factor with the combined codes
    # level * K + system -- two gathers of size n_sims x n_ratings in all.
    if isinstance(params, LMMParams):
        if k != 2:
            raise DesignError(
                f"LMMParams describe two systems but the design has {k}; use "
                "MultiSystemParams (one effect per non-baseline system) for K > 2."
            )
        xv = np.asarray(params.x_values, dtype=float)
        zw0 = gen.standard_normal((n_sims, nw))
        zw1 = gen.standard_normal((n_sims, nw))
        zi0 = gen.standard_normal((n_sims, ni))
        zi1 = gen.standard_normal((n_sims, ni))
        y = gen.standard_normal((n_sims, n))
        eff_w = (params.sd_worker * zw0)[:, :, None] + (params.sd_worker_slope * zw1)[:, :, None] * xv
        eff_i = (params.sd_item * zi0)[:, :, None] + (params.sd_item_slope * zi1)[:, :, None] * xv
        means = params.beta0 + params.effect * xv
    elif isinstance(params, MultiSystemParams):
        if params.n_systems != k:
            raise DesignError(
                f"the parameters describe {params.n_systems} systems (len(effects) + 1) but the "
                f"design has {k}; give one effect per non-baseline system of the design."
            )
        sdw = np.asarray(params.sd_worker_systems, dtype=float)
        sdi = np.asarray(params.sd_item_systems, dtype=float)
        zw0 = gen.standard_normal((n_sims, nw))
        zws = gen.standard_normal((n_sims, nw, k))
        zi0 = gen.standard_normal((n_sims, ni))
        zis = gen.standard_normal((n_sims, ni, k))
        y = gen.standard_normal((n_sims, n))
        eff_w = (params.sd_worker * zw0)[:, :, None] + zws * sdw
        eff_i = (params.sd_item * zi0)[:, :, None] + zis * sdi
        means = np.asarray(params.system_means, dtype=float)
    else:
        raise InputError(
            f"params must be LMMParams or MultiSystemParams; got {type(params).__name__}. "
            "Use nlpower.presets for the paper's values."
        )
    eff_w += means  # fixed part folded into the worker table
    y *= params.sigma
    y += eff_w.reshape(n_sims, nw * k)[:, arrays.worker_system]
    y += eff_i.reshape(n_sims, ni * k)[:, arrays.item_system]
    if likert is not None:
        y = likert_round(y, likert)
    return y


@dataclass(frozen=True, eq=False)
class SimulatedRatings:
    """``n_sims`` simulated data sets of one design.

    Attributes
    ----------
    layout : DataFrame
        The design's :meth:`~nlpower.design.CrossedDesign.layout` (worker,
        item, system[, x]); shared by all replicates.
    y : ndarray, shape (n_sims, n_ratings)
        Ratings; row ``r`` is replicate ``r`` in layout order.
    likert : int or None
        Number of Likert points, if discretised.
    coding : str
        Coding of the ``x`` column of ``layout`` (that of the parameters).
    """

    layout: pd.DataFrame
    y: np.ndarray
    likert: int | None = None
    coding: Coding = "sum"

    @property
    def n_sims(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_ratings(self) -> int:
        return int(self.y.shape[1])

    def frame(self, i: int) -> pd.DataFrame:
        """Replicate ``i`` as a long data frame (layout columns + ``rating``)."""
        i = check_int("i", i, min=-self.n_sims, max=self.n_sims - 1)
        return self.layout.assign(rating=self.y[i])

    def to_frame(self) -> pd.DataFrame:
        """All replicates stacked, with a leading ``sim`` column (0-based)."""
        rep = np.repeat(np.arange(self.n_sims), self.n_ratings)
        lay = pd.concat([self.layout] * self.n_sims, ignore_index=True)
        lay.insert(0, "sim", rep)
        lay["rating"] = self.y.ravel()
        return lay

    def summary(self) -> str:
        scale = "continuous" if self.likert is None else f"{self.likert}-point Likert on [0, 1]"
        return (f"SimulatedRatings: {self.n_sims} replicates x {self.n_ratings} ratings ({scale}); "
                f"mean rating {self.y.mean():.4g}")

    def __repr__(self) -> str:
        lk = "" if self.likert is None else f", likert={self.likert}"
        return f"SimulatedRatings(n_sims={self.n_sims}, n_ratings={self.n_ratings}{lk})"


def check_design_params(design: object, params: object) -> tuple[CrossedDesign, Params]:
    """``design`` and ``params`` of the right types and describing the same systems."""
    if not isinstance(design, CrossedDesign):
        raise DesignError(
            f"design must be a CrossedDesign; got {type(design).__name__}. Build one with "
            "CrossedDesign(n_workers, n_items, systems=2, workers_per_item=None)."
        )
    if not isinstance(params, (LMMParams, MultiSystemParams)):
        # named, not imported: the outcome layer builds on this module
        kind = {"LikertParams": "likert", "HeadToHeadParams": "preference"}.get(
            type(params).__name__)
        hint = (f" {type(params).__name__} are the parameters of outcome={kind!r}: pass "
                f"outcome={kind!r}, e.g. nlpower.power(design, params, outcome={kind!r})."
                if kind is not None else
                " For a dataset preset pass its .params (and .design() for Table 12's size)."
                if isinstance(params, DatasetPreset) else
                " Build one with LMMParams(...) or take one from nlpower.presets.")
        raise InputError(
            f"params must be LMMParams or MultiSystemParams; got {type(params).__name__}.{hint}"
        )
    if isinstance(params, LMMParams) and design.n_systems != 2:
        raise DesignError(
            f"LMMParams describe two systems but the design has {design.n_systems} "
            f"({', '.join(design.system_names)}); use MultiSystemParams with "
            f"{design.n_systems - 1} effects."
        )
    if isinstance(params, MultiSystemParams) and params.n_systems != design.n_systems:
        raise DesignError(
            f"the parameters describe {params.n_systems} systems but the design has "
            f"{design.n_systems} ({', '.join(design.system_names)}); make them agree: a design "
            f"of {params.n_systems} systems (CrossedDesign(..., systems={params.n_systems})), or, "
            "for one comparison of a pilot of several systems, its two systems' parameters: "
            "nlpower.pilot.as_params(fit, effect=..., contrast=(A, B))."
        )
    return design, params


@overload
def simulate(design: CrossedDesign, params: Params, *, n_sims: Literal[1] = 1,
             likert: int | None = None, rng: RNGLike = None) -> pd.DataFrame: ...


@overload
def simulate(design: CrossedDesign, params: Params, *, n_sims: int,
             likert: int | None = None, rng: RNGLike = None) -> pd.DataFrame | SimulatedRatings: ...


def simulate(
    design: CrossedDesign,
    params: Params,
    *,
    n_sims: int = 1,
    likert: int | None = None,
    rng: RNGLike = None,
) -> pd.DataFrame | SimulatedRatings:
    """Simulate ratings of ``design`` under ``params`` (Card et al. 2020, eq. 5-10).

    ``Y = beta0 + W0w + I0i + (beta1 + W1w + I1i) * x + e`` for two systems
    (:class:`~nlpower.params.LMMParams`, ``x`` in the parameters' coding), or
    the per-system form of Tables 13-15 for K systems
    (:class:`~nlpower.params.MultiSystemParams`).

    Parameters
    ----------
    design : CrossedDesign
        Who rates what.
    params : LMMParams or MultiSystemParams
        Model parameters on the [0, 1] rating scale.
    n_sims : int, default 1
        Number of replicate data sets.
    likert : int, optional
        Discretise to a ``likert``-point scale (>= 2): round to the nearest of
        ``0, 1/(K-1), ..., 1`` and clip (module docstring).
    rng : optional
        Anything :func:`numpy.random.default_rng` accepts; the same seed gives
        the same data.

    Returns
    -------
    DataFrame or SimulatedRatings
        ``n_sims == 1``: a long data frame with columns ``worker``, ``item``,
        ``system``, ``x`` (2 systems only, in the parameters' coding:
        +-1 for ``"sum"``, +-0.5 for ``"half"``, 0/1 for ``"treatment"``) and
        ``rating``.
        ``n_sims > 1``: :class:`SimulatedRatings` with ``y`` of shape
        ``(n_sims, n_ratings)``.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> df = simulate(CrossedDesign(3, 10), presets.high_variance(0.1), rng=1)
    >>> list(df.columns)
    ['worker', 'item', 'system', 'x', 'rating']
    """
    design, params = check_design_params(design, params)
    n_sims = check_int("n_sims", n_sims, min=1)
    if likert is not None:
        if isinstance(likert, bool) or not isinstance(likert, (int, np.integer)) or likert < 2:
            raise InputError(
                f"likert must be None (continuous ratings) or the number of scale points, an "
                f"integer >= 2 (e.g. 5 for a 1-5 scale); got {likert!r}."
            )
        likert = int(likert)
    y = simulate_y(design.arrays(), params, n_sims, rng, likert=likert)
    layout = design.layout(coding=params.coding)
    if n_sims == 1:
        return layout.assign(rating=y[0])
    return SimulatedRatings(layout=layout, y=y, likert=likert, coding=params.coding)


__all__ = ["SimulatedRatings", "likert_round", "simulate", "simulate_y", "to_likert_scale"]
