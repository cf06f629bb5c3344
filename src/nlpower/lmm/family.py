"""Outcome families: the response distribution and link of a mixed model.

The *family slot* of the engine protocol.  A prepared model is a structure
(:class:`~nlpower.lmm.structure.ModelSpec`) plus a family; the engine picks
its fitter from the family, nothing else branches on it:

- :class:`Gaussian` (identity link): the linear mixed model, ``lmer``;
- :class:`Binomial` (logit, probit, cloglog) and :class:`Poisson` (log):
  generalised linear mixed models, ``glmer`` (lme4's definitions);
- :class:`Ordinal` (cumulative logit, probit, cloglog with flexible,
  equidistant or symmetric thresholds): ``clmm`` (``ordinal``'s
  parameterisation ``P(Y <= j) = F(theta_j - eta)``).

A :class:`Link` holds ``g`` (``linkfun``), ``g^-1`` (``linkinv``) and the
derivatives the fitters need.  For the cumulative links ``linkinv`` is the
latent distribution's CDF ``F``, ``mu_eta`` its density ``f`` and
``dmu_eta`` the density's derivative ``f'``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
from scipy import special

from .. import _dist as stats
from .._validation import check_choice
from ..errors import InputError

__all__ = [
    "Binomial",
    "Family",
    "Gaussian",
    "Link",
    "Ordinal",
    "Poisson",
    "get_family",
    "get_link",
]

LinkName: TypeAlias = Literal["identity", "log", "logit", "probit", "cloglog"]
FamilyName: TypeAlias = Literal["gaussian", "binomial", "poisson", "ordinal"]
ThresholdName: TypeAlias = Literal["flexible", "equidistant", "symmetric"]

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class Link:
    """A link function ``eta = g(mu)`` with its inverse and derivatives.

    Examples
    --------
    >>> lk = get_link("logit")
    >>> float(lk.linkinv(np.array(0.0)))
    0.5
    >>> float(lk.mu_eta(np.array(0.0)))
    0.25
    """

    name: LinkName

    def linkfun(self, mu: Any) -> np.ndarray:
        """``eta = g(mu)``."""
        mu = np.asarray(mu, dtype=float)
        if self.name == "identity":
            return mu
        if self.name == "log":
            return np.log(mu)
        if self.name == "logit":
            return special.logit(mu)
        if self.name == "probit":
            return special.ndtri(mu)
        return np.log(-np.log1p(-mu))  # cloglog

    def linkinv(self, eta: Any) -> np.ndarray:
        """``mu = g^-1(eta)`` (for a cumulative link: the latent CDF ``F``)."""
        eta = np.asarray(eta, dtype=float)
        if self.name == "identity":
            return eta
        if self.name == "log":
            return np.exp(eta)
        if self.name == "logit":
            return special.expit(eta)
        if self.name == "probit":
            return special.ndtr(eta)
        return -np.expm1(-np.exp(np.minimum(eta, 700.0)))  # cloglog

    def mu_eta(self, eta: Any) -> np.ndarray:
        """``d mu / d eta`` (for a cumulative link: the latent density ``f``)."""
        eta = np.asarray(eta, dtype=float)
        if self.name == "identity":
            return np.ones_like(eta)
        if self.name == "log":
            return np.exp(eta)
        if self.name == "logit":
            p = special.expit(eta)
            return p * (1.0 - p)
        if self.name == "probit":
            return stats.norm.pdf(eta)
        e = np.minimum(eta, 700.0)
        return np.exp(e - np.exp(e))  # cloglog

    def dmu_eta(self, eta: Any) -> np.ndarray:
        """``d^2 mu / d eta^2`` (for a cumulative link: ``f'``)."""
        eta = np.asarray(eta, dtype=float)
        if self.name == "identity":
            return np.zeros_like(eta)
        if self.name == "log":
            return np.exp(eta)
        if self.name == "logit":
            p = special.expit(eta)
            return p * (1.0 - p) * (1.0 - 2.0 * p)
        if self.name == "probit":
            return -eta * stats.norm.pdf(eta)
        e = np.minimum(eta, 700.0)
        return np.exp(e - np.exp(e)) * (1.0 - np.exp(e))  # cloglog


def get_link(link: str | Link) -> Link:
    """The :class:`Link` called ``link`` (did-you-mean on a misspelling)."""
    if isinstance(link, Link):
        return link
    return Link(check_choice("link", link, ("identity", "log", "logit", "probit", "cloglog")))


@dataclass(frozen=True)
class Family:
    """Base of the outcome families: a name and a link."""

    name: FamilyName
    link: Link

    #: Links this family accepts (the first is the canonical default).
    links: tuple[str, ...] = ()

    @property
    def is_gaussian(self) -> bool:
        """The identity-link Gaussian family (the linear mixed model)."""
        return self.name == "gaussian"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(link={self.link.name!r})"


def _with_link(cls: type, link: str | Link | None, allowed: tuple[str, ...]) -> Any:
    lk = get_link(allowed[0] if link is None else link)
    if lk.name not in allowed:
        raise InputError(
            f"link {lk.name!r} is not available for the {cls.__name__.lower()} family; "
            f"use one of {', '.join(repr(a) for a in allowed)}.")
    return lk


@dataclass(frozen=True, repr=False)
class Gaussian(Family):
    """Normal responses, identity link: the linear mixed model (``lmer``)."""

    def __init__(self, link: str | Link | None = None):
        object.__setattr__(self, "name", "gaussian")
        object.__setattr__(self, "links", ("identity",))
        object.__setattr__(self, "link", _with_link(Gaussian, link, self.links))


@dataclass(frozen=True, repr=False)
class Binomial(Family):
    """Binary or binomial responses (``glmer(family=binomial)``); logit, probit or cloglog.

    ``variance(mu) = mu (1 - mu)``; deviance residuals and the AIC term follow
    R's ``binomial()`` with prior weights = number of trials.
    """

    def __init__(self, link: str | Link | None = None):
        object.__setattr__(self, "name", "binomial")
        object.__setattr__(self, "links", ("logit", "probit", "cloglog"))
        object.__setattr__(self, "link", _with_link(Binomial, link, self.links))

    def variance(self, mu: np.ndarray) -> np.ndarray:
        return mu * (1.0 - mu)

    def dev_resids(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """Unit deviances ``2 wt (y log(y/mu) + (1-y) log((1-y)/(1-mu)))`` (R's ``binomial()``)."""
        mu = np.clip(mu, _EPS, 1.0 - _EPS)
        return 2.0 * wt * (special.xlogy(y, y / mu) + special.xlogy(1.0 - y, (1.0 - y) / (1.0 - mu)))


@dataclass(frozen=True, repr=False)
class Poisson(Family):
    """Count responses (``glmer(family=poisson)``), log link."""

    def __init__(self, link: str | Link | None = None):
        object.__setattr__(self, "name", "poisson")
        object.__setattr__(self, "links", ("log",))
        object.__setattr__(self, "link", _with_link(Poisson, link, self.links))

    def variance(self, mu: np.ndarray) -> np.ndarray:
        return mu

    def dev_resids(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """Unit deviances ``2 wt (y log(y/mu) - (y - mu))`` (R's ``poisson()``)."""
        return 2.0 * wt * (special.xlogy(y, y / np.maximum(mu, _EPS)) - (y - mu))


@dataclass(frozen=True, repr=False)
class Ordinal(Family):
    """Ordered categorical responses, cumulative link (``clmm``).

    ``P(Y <= j) = F(theta_j - eta)`` with ``F = link.linkinv``; thresholds
    ``"flexible"`` (K-1 free), ``"equidistant"`` (first and spacing) or
    ``"symmetric"`` (symmetric around a central one), as ``ordinal``.
    """

    threshold: ThresholdName = "flexible"

    def __init__(self, link: str | Link | None = None, threshold: ThresholdName = "flexible"):
        object.__setattr__(self, "name", "ordinal")
        object.__setattr__(self, "links", ("logit", "probit", "cloglog"))
        object.__setattr__(self, "link", _with_link(Ordinal, link, self.links))
        object.__setattr__(self, "threshold",
                           check_choice("threshold", threshold, ("flexible", "equidistant", "symmetric")))

    def __repr__(self) -> str:
        return f"Ordinal(link={self.link.name!r}, threshold={self.threshold!r})"


_FAMILIES: dict[str, type] = {"gaussian": Gaussian, "binomial": Binomial, "poisson": Poisson,
                              "ordinal": Ordinal}


def get_family(family: str | Family | None = None, link: str | Link | None = None) -> Family:
    """A :class:`Family` from a name (``"binomial"``) or an instance; ``None``: Gaussian.

    Examples
    --------
    >>> get_family("binomial", "probit")
    Binomial(link='probit')
    >>> get_family().is_gaussian
    True
    """
    if family is None:
        family = "gaussian"
    if isinstance(family, Family):
        if link is not None and get_link(link) != family.link:
            raise InputError(f"link={link!r} contradicts the family's own link "
                             f"{family.link.name!r}; give one of the two.")
        return family
    if not isinstance(family, str):
        raise InputError(f"family must be a name such as 'binomial' or a Family; got {family!r}.")
    cls = _FAMILIES[check_choice("family", family.lower(), tuple(_FAMILIES))]
    return cls(link)  # type: ignore[no-any-return]
