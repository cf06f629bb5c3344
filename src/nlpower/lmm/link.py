"""Link functions of the outcome families: ``g``, ``g^-1`` and the derivatives the fitters need.

A :class:`Link` holds ``g`` (``linkfun``), ``g^-1`` (``linkinv``) and the
derivatives the fitters need.  For the cumulative links ``linkinv`` is the
latent distribution's CDF ``F``, ``mu_eta`` its density ``f`` and
``dmu_eta`` the density's derivative ``f'``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np

from .. import _dist as stats
from .._lazy import special
from .._validation import check_choice

__all__ = ["Link", "LinkName", "get_link"]

LinkName: TypeAlias = Literal["identity", "log", "logit", "probit", "cloglog"]


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
