"""Likert ratings from a latent crossed worker x item model with thresholds.

A rating on a ``K``-point scale is the category of a latent continuous
rating (the cumulative-link model of ``ordinal::clmm``)::

    Y*_wi = effect * x + W0w + I0i + (W1w + I1i) * x + e_wi,
    rating = 1 + #{j : Y* > tau_j},        tau_1 < ... < tau_{K-1}

with the random effects of Card et al.'s model (App. H.3, eq. 5-10) and a
residual ``e`` that is normal (``link="probit"``, SD ``scale``) or logistic
(``link="logit"``, scale ``scale``).  ``P(rating <= j) = F((tau_j - eta) /
scale)`` given the random effects, so dividing everything by ``scale`` gives
``clmm``'s parameters (:meth:`LikertParams.clmm_scale`).

Thresholds come from the user, from a fitted ``clmm`` pilot, or from the
paper's presets (Tables 13-16) through :meth:`LikertParams.from_preset`:
the preset's linear predictor, random effects and residual are kept on its
[0, 1] scale (centred at its intercept), and ``K - 1`` equidistant thresholds
are placed so that, at effect 0, the ratings rescaled to [0, 1] by ``(r -
1)/(K - 1)`` have the preset's grand mean and marginal SD (the spread of one
rating: all variance components plus the residual).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from .._choices import Coding
from .._rng import RNGLike, as_generator
from .._validation import check_int, check_real
from ..coding import check_coding, x_values
from ..design import CrossedDesign, LayoutArrays
from ..errors import DesignError, InputError
from ..params import LMMParams
from ..presets import DatasetPreset

__all__ = ["LatentLink", "LikertParams", "check_levels", "simulate_likert", "simulate_likert_y"]

#: Distribution of the latent residual: normal (probit) or logistic (logit).
LatentLink: TypeAlias = Literal["probit", "logit"]

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(60)
_GH_W = _GH_W / _GH_W.sum()


def check_levels(levels: Any) -> int:
    """A Likert level count: an integer >= 2."""
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 2:
        raise InputError(
            f"levels (the number of Likert points) must be an integer >= 2, e.g. 5 for a 1-5 "
            f"scale; got {levels!r}.")
    return int(levels)


def _check_thresholds(thresholds: Any) -> tuple[float, ...]:
    try:
        tau = np.asarray(thresholds, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError(f"thresholds must be a list of numbers; got {thresholds!r}.") from None
    if tau.size < 1:
        raise InputError("thresholds must hold K - 1 >= 1 cut points (K Likert levels); got "
                         "none. Pass e.g. thresholds=[-1, 0, 1] for 4 levels.")
    if not np.all(np.isfinite(tau)):
        raise InputError(f"thresholds must be finite; got {tau.tolist()}.")
    if np.any(np.diff(tau) <= 0):
        raise InputError(
            f"thresholds must be strictly increasing (tau_1 < ... < tau_(K-1)); got "
            f"{tau.tolist()}. Sort them, and merge categories instead of repeating a threshold.")
    return tuple(float(t) for t in tau)


@dataclass(frozen=True)
class LikertParams:
    """Latent-scale parameters of ``K``-point ratings of two systems (module docstring).

    Parameters
    ----------
    thresholds : sequence of float
        ``K - 1`` strictly increasing cut points on the latent scale.
    effect : float, default 0
        Fixed effect of ``x`` on the latent scale (in ``coding``).
    sd_worker, sd_worker_slope, sd_item, sd_item_slope : float, default 0
        Random-effect SDs on the latent scale (as :class:`~nlpower.params.LMMParams`).
    scale : float, default 1
        Residual SD (probit) or logistic scale (logit).
    link : {"probit", "logit"}
    coding : {"sum", "half", "treatment"}

    Examples
    --------
    >>> p = LikertParams(thresholds=[-1.0, 0.0, 1.0], effect=0.2)
    >>> p.levels
    4
    """

    thresholds: tuple[float, ...]
    effect: float = 0.0
    sd_worker: float = 0.0
    sd_worker_slope: float = 0.0
    sd_item: float = 0.0
    sd_item_slope: float = 0.0
    scale: float = 1.0
    link: LatentLink = "probit"
    coding: Coding = "sum"

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds", _check_thresholds(self.thresholds))
        object.__setattr__(self, "effect", check_real("effect", self.effect))
        for name in ("sd_worker", "sd_worker_slope", "sd_item", "sd_item_slope"):
            v = check_real(name, getattr(self, name))
            if v < 0:
                raise InputError(f"{name} must be a standard deviation >= 0; got {v}.")
            object.__setattr__(self, name, v)
        s = check_real("scale", self.scale)
        if s <= 0:
            raise InputError(f"scale (the latent residual SD or logistic scale) must be > 0; got "
                             f"{s}.")
        object.__setattr__(self, "scale", s)
        if self.link not in ("probit", "logit"):
            raise InputError(f"link must be 'probit' (normal latent residual) or 'logit' "
                             f"(logistic); got {self.link!r}.")
        object.__setattr__(self, "coding", check_coding(self.coding))

    @property
    def levels(self) -> int:
        """Number of Likert points ``K``."""
        return len(self.thresholds) + 1

    @property
    def x_values(self) -> tuple[float, float]:
        return x_values(self.coding)

    def with_effect(self, effect: float) -> LikertParams:
        return replace(self, effect=effect)

    def latent_params(self) -> LMMParams:
        """The latent model as :class:`~nlpower.params.LMMParams` (intercept 0, ``sigma = scale``)."""
        return LMMParams(beta0=0.0, effect=self.effect, sd_worker=self.sd_worker,
                         sd_worker_slope=self.sd_worker_slope, sd_item=self.sd_item,
                         sd_item_slope=self.sd_item_slope, sigma=self.scale, coding=self.coding)

    def clmm_scale(self) -> dict[str, Any]:
        """The parameters ``clmm`` estimates: everything divided by ``scale``."""
        s = self.scale
        return {"thresholds": tuple(t / s for t in self.thresholds), "effect": self.effect / s,
                "sd_worker": self.sd_worker / s, "sd_worker_slope": self.sd_worker_slope / s,
                "sd_item": self.sd_item / s, "sd_item_slope": self.sd_item_slope / s,
                "link": self.link}

    def category_probabilities(self, x: float) -> np.ndarray:
        """Marginal ``P(rating = k)``, ``k = 1..K``, of one rating of the system coded ``x``."""
        v_re = (self.sd_worker**2 + self.sd_item**2
                + (self.sd_worker_slope**2 + self.sd_item_slope**2) * x * x)
        eta = self.effect * x
        tau = np.asarray(self.thresholds)
        if self.link == "probit":
            cdf = stats.norm.cdf((tau - eta) / math.sqrt(v_re + self.scale**2))
        else:   # E_u[expit((tau - eta - u) / s)], u ~ N(0, v_re): Gauss-Hermite
            u = math.sqrt(v_re) * _GH_X
            cdf = special.expit((tau[:, None] - eta - u[None, :]) / self.scale) @ _GH_W
        cum = np.concatenate([[0.0], cdf, [1.0]])
        return np.diff(cum)

    def mean_rating01(self, x: float) -> float:
        """Expected rating of the system coded ``x`` rescaled to [0, 1] by ``(r - 1)/(K - 1)``."""
        k = self.levels
        return float(self.category_probabilities(x) @ (np.arange(k) / (k - 1)))

    def sd_rating01(self, x: float) -> float:
        """Marginal SD of one rescaled rating of the system coded ``x``."""
        k = self.levels
        s = np.arange(k) / (k - 1)
        p = self.category_probabilities(x)
        m = p @ s
        return math.sqrt(max(float(p @ (s - m) ** 2), 0.0))

    def lmm_effect(self, coding: Coding | None = None) -> float:
        """The slope of ``x`` a linear model of rescaled ratings estimates (the LMM's true effect).

        ``(E[r01 | B] - E[r01 | A]) / (x_B - x_A)`` in ``coding`` (default the parameters').
        """
        x0, x1 = self.x_values
        diff = self.mean_rating01(x1) - self.mean_rating01(x0)
        c0, c1 = x_values(coding or self.coding)
        return diff / (c1 - c0)

    @classmethod
    def from_preset(cls, params: LMMParams | DatasetPreset, levels: int, *,
                    link: LatentLink = "probit") -> LikertParams:
        """Equidistant thresholds reproducing a preset's mean and spread on [0, 1] (module docstring).

        Parameters
        ----------
        params : LMMParams or DatasetPreset
            A preset of the paper (``presets.high_variance(0.1)``, a Table 13-15
            dataset); its effect and SDs are kept on the latent scale, its
            residual SD becomes ``scale``.
        levels : int
            Likert points ``K >= 2``.  With ``K = 2`` only the mean can be
            matched (a binary rating's SD follows from its mean).
        link : {"probit", "logit"}
            Latent residual: normal (the preset's own model) or logistic with
            the same SD (scale ``sigma * sqrt(3) / pi``).

        Raises
        ------
        InputError
            The preset's spread is more than a ``K``-point scale can show
            (raise ``levels`` or give thresholds).

        Examples
        --------
        >>> from nlpower import presets
        >>> lp = LikertParams.from_preset(presets.high_variance(0.0), 5)
        >>> round(lp.mean_rating01(1.0), 4), round(lp.sd_rating01(1.0), 4)
        (0.5, 0.3178)
        """
        if isinstance(params, DatasetPreset):
            params = params.to_lmm_params()
        if not isinstance(params, LMMParams):
            raise InputError(f"params must be LMMParams or a DatasetPreset (two systems); got "
                             f"{type(params).__name__}.")
        k = check_levels(levels)
        x = params.x_values[1]
        v = (params.sd_worker**2 + params.sd_item**2 + params.sigma**2
             + (params.sd_worker_slope**2 + params.sd_item_slope**2) * x * x)
        mean, sd = params.beta0, math.sqrt(v)
        if not 0.0 < mean < 1.0:
            raise InputError(f"the preset's intercept (grand mean) must be inside (0, 1) to be "
                             f"matched on a Likert scale; got {mean}.")
        scale = params.sigma if link == "probit" else params.sigma * math.sqrt(3.0) / math.pi
        base: dict[str, Any] = {"sd_worker": params.sd_worker, "sd_worker_slope": params.sd_worker_slope,
                "sd_item": params.sd_item, "sd_item_slope": params.sd_item_slope,
                "scale": scale, "link": link, "coding": params.coding}
        offsets = np.arange(k - 1) - (k - 2) / 2.0

        def make(c: float, log_d: float) -> LikertParams:
            return cls(thresholds=tuple(c + math.exp(log_d) * offsets), **base)

        def resid(z: np.ndarray) -> np.ndarray:
            lp = make(float(z[0]), float(z[1]))
            r = [lp.mean_rating01(x) - mean]
            if k > 2:
                r.append(lp.sd_rating01(x) - sd)
            return np.array(r)

        if k == 2:
            c = float(optimize.brentq(lambda c: resid(np.array([c, 0.0]))[0], -50 * sd, 50 * sd))
            out = make(c, 0.0)
        else:
            sol = optimize.least_squares(resid, x0=[0.0, math.log(2.0 * sd / (k - 1))],
                                         xtol=1e-14, ftol=1e-14, gtol=1e-14)
            out = make(float(sol.x[0]), float(sol.x[1]))
            if np.max(np.abs(resid(sol.x))) > 1e-6:
                raise InputError(
                    f"a {k}-point scale cannot show the preset's spread (marginal SD {sd:.3g} "
                    f"around mean {mean:.3g} on [0, 1]); closest: SD {out.sd_rating01(x):.3g}. "
                    "Use more levels, or give thresholds directly (LikertParams(...)).")
        return out.with_effect(params.effect)

    def to_frame(self) -> pd.DataFrame:
        rows = [("effect", self.effect), ("sd_worker", self.sd_worker),
                ("sd_worker_slope", self.sd_worker_slope), ("sd_item", self.sd_item),
                ("sd_item_slope", self.sd_item_slope), ("scale", self.scale)]
        rows += [(f"tau_{j + 1}", t) for j, t in enumerate(self.thresholds)]
        return pd.DataFrame(rows, columns=["parameter", "value"])

    def summary(self) -> str:
        tau = ", ".join(f"{t:.4g}" for t in self.thresholds)
        return (f"LikertParams: {self.levels}-point ratings, latent {self.link} (scale "
                f"{self.scale:.4g}), effect {self.effect:.4g} ({self.coding} coding)\n"
                f"  SDs: worker {self.sd_worker:.4g} / slope {self.sd_worker_slope:.4g}, item "
                f"{self.sd_item:.4g} / slope {self.sd_item_slope:.4g}\n  thresholds: {tau}")

    def __repr__(self) -> str:
        return (f"LikertParams(levels={self.levels}, effect={self.effect:.4g}, link="
                f"{self.link!r}, scale={self.scale:.4g})")


def simulate_likert_y(arrays: LayoutArrays, params: LikertParams, n_sims: int,
                      rng: RNGLike = None) -> np.ndarray:
    """Vectorised core: ``(n_sims, n_ratings)`` integer ratings ``1..K`` of one design.

    Draw order (fixed): worker intercepts, worker slopes, item intercepts,
    item slopes, residuals -- as :func:`nlpower.simulation.simulate_y`, so a
    probit model's latent ratings are exactly that function's Gaussian
    ratings of :meth:`LikertParams.latent_params`.
    """
    gen = as_generator(rng)
    nw, ni, n, k = arrays.n_workers, arrays.n_items, arrays.n_ratings, arrays.n_systems
    if k != 2:
        raise DesignError(f"LikertParams describe two systems but the design has {k}.")
    xv = np.asarray(params.x_values, dtype=float)
    zw0 = gen.standard_normal((n_sims, nw))
    zw1 = gen.standard_normal((n_sims, nw))
    zi0 = gen.standard_normal((n_sims, ni))
    zi1 = gen.standard_normal((n_sims, ni))
    e = gen.standard_normal((n_sims, n)) if params.link == "probit" else \
        gen.logistic(size=(n_sims, n))
    eff_w = (params.sd_worker * zw0)[:, :, None] + (params.sd_worker_slope * zw1)[:, :, None] * xv
    eff_i = (params.sd_item * zi0)[:, :, None] + (params.sd_item_slope * zi1)[:, :, None] * xv
    eff_w += params.effect * xv
    y = params.scale * e
    y += eff_w.reshape(n_sims, nw * k)[:, arrays.worker_system]
    y += eff_i.reshape(n_sims, ni * k)[:, arrays.item_system]
    return np.searchsorted(np.asarray(params.thresholds), y, side="left").astype(np.int64) + 1


def simulate_likert(design: CrossedDesign, params: LikertParams, *, n_sims: int = 1,
                    rng: RNGLike = None) -> pd.DataFrame | np.ndarray:
    """Simulate ``K``-point ratings of ``design`` (integers ``1..K``).

    Returns the design's layout with a ``rating`` column when ``n_sims == 1``,
    else an ``(n_sims, n_ratings)`` array in layout order.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> lp = LikertParams.from_preset(presets.high_variance(0.1), 5)
    >>> df = simulate_likert(CrossedDesign(3, 10), lp, rng=1)
    >>> sorted(df["rating"].unique().tolist())[0] >= 1
    True
    """
    if not isinstance(design, CrossedDesign):
        raise DesignError(f"design must be a CrossedDesign; got {type(design).__name__}.")
    if not isinstance(params, LikertParams):
        raise InputError(f"params must be LikertParams (LikertParams.from_preset(...) for the "
                         f"paper's presets); got {type(params).__name__}.")
    if design.n_systems != 2:
        raise DesignError(f"LikertParams describe two systems but the design has "
                          f"{design.n_systems}.")
    n_sims = check_int("n_sims", n_sims, min=1)
    y = simulate_likert_y(design.arrays(), params, n_sims, rng)
    if n_sims == 1:
        return design.layout(coding=params.coding).assign(rating=y[0])
    return y


def thresholds_summary(params: Sequence[LikertParams]) -> pd.DataFrame:
    """One row per parameter set: levels, thresholds and the [0, 1] mean / SD they give."""
    rows = []
    for p in params:
        x = p.x_values[1]
        rows.append({"levels": p.levels, "thresholds": p.thresholds,
                     "mean01": p.mean_rating01(x), "sd01": p.sd_rating01(x)})
    return pd.DataFrame(rows)
