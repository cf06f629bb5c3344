"""Per-observation pieces of the cumulative link likelihood.

For an observation in category ``y`` (0-based, ``K`` categories) with
linear predictor ``eta`` and thresholds ``theta`` (``theta_{-1} = -inf``,
``theta_{K-1} = +inf``)::

    p = F(theta_y - eta) - F(theta_{y-1} - eta)

``F`` is the link's inverse (the latent CDF), ``f`` its density and ``f'``
the density's derivative (:class:`nlpower.lmm.family.Link`).  With
``g1 = f(upper) - f(lower)`` and ``g2 = f'(upper) - f'(lower)``::

    d log p / d eta      = -g1 / p
    -d^2 log p / d eta^2 = (g1 / p)^2 - g2 / p   (>= 0: F log-concave)

The difference of CDFs is taken on the side where it does not cancel
(``F(u) - F(l)`` below the median, ``S(l) - S(u)`` above, ``S = 1 - F``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special

from ..lmm.family import Link

__all__ = ["CumulativeParts", "bounds_parts", "cumulative_parts", "density_d2", "logit_bounds_parts",
           "logit_gap", "survival"]

_TINY = 1e-300


def survival(link: Link, x: np.ndarray) -> np.ndarray:
    """``1 - F(x)`` without cancellation."""
    if link.name == "logit":
        return np.asarray(special.expit(-x))
    if link.name == "probit":
        return np.asarray(special.ndtr(-x))
    return np.asarray(np.exp(-np.exp(np.minimum(x, 700.0))))  # cloglog


def _density(link: Link, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``f(x)`` and ``f'(x)``, zero at +-inf."""
    with np.errstate(invalid="ignore", over="ignore"):
        f = link.mu_eta(x)
        df = link.dmu_eta(x)
    fin = np.isfinite(x)
    return np.where(fin, f, 0.0), np.where(fin, df, 0.0)


def density_d2(link: Link, x: np.ndarray) -> np.ndarray:
    """``f''(x)``, the second derivative of the latent density (zero at +-inf)."""
    fin = np.isfinite(x)
    xs = np.where(fin, x, 0.0)
    if link.name == "logit":
        s = special.expit(xs)
        out = s * (1.0 - s) * (1.0 - 6.0 * s + 6.0 * s * s)
    elif link.name == "probit":
        out = (xs * xs - 1.0) * np.exp(-0.5 * xs * xs) / np.sqrt(2.0 * np.pi)
    else:
        e = np.exp(np.minimum(xs, 700.0))
        out = np.exp(np.minimum(xs, 700.0) - e) * ((1.0 - e) ** 2 - e)
        out = np.nan_to_num(out)
    return np.where(fin, out, 0.0)


class CumulativeParts(NamedTuple):
    """Log-probabilities and their derivatives for each observation.

    A named tuple: built tens of times per fit, where a dataclass's
    construction is a noticeable share of a small fit's time.
    """

    logp: np.ndarray   # log P(Y = y)
    p: np.ndarray
    f_up: np.ndarray   # f(theta_y - eta)
    f_lo: np.ndarray   # f(theta_{y-1} - eta)
    df_up: np.ndarray
    df_lo: np.ndarray

    @property
    def d1(self) -> np.ndarray:
        """``d log p / d eta``."""
        return np.asarray(-(self.f_up - self.f_lo) / self.p)

    @property
    def w(self) -> np.ndarray:
        """``-d^2 log p / d eta^2`` (clipped at 0)."""
        r = (self.f_up - self.f_lo) / self.p
        return np.maximum(r * r - (self.df_up - self.df_lo) / self.p, 0.0)


def cumulative_parts(link: Link, upper: np.ndarray, lower: np.ndarray,
                     derivatives: bool = True) -> CumulativeParts:
    """The :class:`CumulativeParts` of ``upper = theta_y - eta``, ``lower = theta_{y-1} - eta``.

    Examples
    --------
    >>> from nlpower.lmm.family import get_link
    >>> cp = cumulative_parts(get_link("logit"), np.array([0.0, np.inf]), np.array([-np.inf, 0.0]))
    >>> cp.p.tolist(), cp.d1.tolist()
    ([0.5, 0.5], [-0.5, 0.5])
    """
    if link.name == "logit":
        return logit_bounds_parts(np.stack((upper, lower)), derivatives)
    Fu = link.linkinv(upper)
    Fl = link.linkinv(lower)
    low_side = Fu < 0.5
    p = np.where(low_side, Fu - Fl, survival(link, lower) - survival(link, upper))
    p = np.maximum(p, _TINY)
    logp = np.log(p)
    if not derivatives:
        z = np.empty(0)
        return CumulativeParts(logp, p, z, z, z, z)
    fu, dfu = _density(link, upper)
    fl, dfl = _density(link, lower)
    return CumulativeParts(logp, p, fu, fl, dfu, dfl)


def bounds_parts(link: Link, bounds: np.ndarray, derivatives: bool = True, *,
                 gap: np.ndarray | None = None) -> CumulativeParts:
    """:func:`cumulative_parts` of ``bounds = [upper, lower]`` stacked on a first axis of 2.

    ``gap``: ``-expm1(lower - upper)`` when the caller holds it (Newton steps
    for the modes shift both bounds by the same ``eta``: it does not change).
    """
    if link.name == "logit":
        return logit_bounds_parts(bounds, derivatives, gap=gap)
    return cumulative_parts(link, bounds[0], bounds[1], derivatives)


def logit_gap(bounds: np.ndarray) -> np.ndarray:
    """``1 - exp(lower - upper)`` of stacked bounds (:func:`logit_bounds_parts`' ``gap``)."""
    return -np.expm1(bounds[1] - bounds[0])


def logit_bounds_parts(bounds: np.ndarray, derivatives: bool = True, *,
                       gap: np.ndarray | None = None) -> CumulativeParts:
    """The logistic case of :func:`bounds_parts`: ``F`` and ``S`` from one exponential.

    With ``e = exp(-x)``: ``F = 1 / (1 + e)`` and ``S = e F``, both to full
    relative precision in either tail; ``f = F S`` and ``f' = f (S - F)``.
    ``p = F(u) S(l) (1 - exp(l - u))`` has no cancellation (``F(u) - F(l) =
    F(u) S(l) - F(l) S(u)`` and ``F(l) S(u) = F(u) S(l) exp(l - u)``).  The
    bounds are floored at -700 before the exponential (``exp(700)`` is
    finite): ``-inf`` gives ``F = 1e-304`` instead of 0, which moves nothing
    (``p`` itself is floored at 1e-300).  One ``exp`` of the stacked bounds
    costs a quarter of four ``expit`` calls.
    """
    e = np.exp(-np.maximum(bounds, -700.0))
    F = 1.0 / (1.0 + e)
    S = e * F
    p = F[0] * S[1] * (logit_gap(bounds) if gap is None else gap)
    p = np.maximum(p, _TINY)
    logp = np.log(p)
    if not derivatives:
        z = np.empty(0)
        return CumulativeParts(logp, p, z, z, z, z)
    f = F * S
    df = f * (S - F)
    return CumulativeParts(logp, p, f[0], f[1], df[0], df[1])
