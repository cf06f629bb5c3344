"""Link functions of the outcome families: ``g``, ``g^-1`` and the derivatives the fitters need.

A :class:`Link` holds ``g`` (``linkfun``), ``g^-1`` (``linkinv``) and the
derivatives the fitters need.  For the cumulative links ``linkinv`` is the
latent distribution's CDF ``F``, ``mu_eta`` its density ``f`` and
``dmu_eta`` the density's derivative ``f'``.

When the link is a family's canonical one (logit for the binomial, log for
the Poisson), ``-log p(y | eta) = wt (b(eta) - y eta)`` up to terms in ``y``
alone, with ``b' = g^-1`` and ``b'' = d mu / d eta`` (the variance):
:meth:`Link.cumulant` gives ``b``, ``mu`` and ``b''`` in one stable pass,
:meth:`Link.cumulant_rows` the same summed over the rows of a batch of
responses, and :meth:`Link.dlog_mu_eta` the relative slope of the working
weight.  The GLMM fitters call these through the family and never test a
link's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np

from .. import _dist as stats
from .._lazy import special
from .._validation import check_choice

__all__ = ["Link", "LinkName", "get_link"]

#: observations whose factors in [0.5, 1] are multiplied before one log (0.5^64 ~ 5e-20)
LOG_CHUNK = 64

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

    def mu_eta(self, eta: Any, mu: np.ndarray | None = None) -> np.ndarray:
        """``d mu / d eta`` (for a cumulative link: the latent density ``f``).

        ``mu``: ``g^-1(eta)`` when the caller has it (logit and log then
        need no second exponential: ``mu (1 - mu)``, ``mu``).
        """
        if mu is not None and self.name in ("logit", "log"):
            return mu * (1.0 - mu) if self.name == "logit" else mu
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

    def cumulant(self, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(b, mu, b'')`` at ``eta``: the cumulant ``b`` with ``b' = g^-1``, ``mu = g^-1(eta)``
        and ``b'' = d mu / d eta`` (logit: ``log(1 + e^eta)``; log: ``e^eta``; identity:
        ``eta^2 / 2``).

        Probit and cloglog are no family's canonical link: ``NotImplementedError``.

        Examples
        --------
        >>> b, mu, v = get_link("logit").cumulant(np.array([0.0]))
        >>> round(float(b[0]), 6), float(mu[0]), float(v[0])   # log 2
        (0.693147, 0.5, 0.25)
        """
        if self.name == "logit":
            e = np.exp(-np.abs(eta))                  # one exp for mu and log(1 + e^eta)
            inv = 1.0 / (1.0 + e)
            mu = np.where(eta >= 0.0, inv, e * inv)
            return np.maximum(eta, 0.0) + np.log1p(e), mu, e * inv * inv
        if self.name == "log":
            mu = np.exp(np.minimum(eta, 700.0))
            return mu, mu, mu
        if self.name == "identity":
            return 0.5 * eta * eta, eta, np.ones_like(eta)
        raise NotImplementedError(f"the {self.name} link is no family's canonical link")

    def cumulant_rows(self, eta: np.ndarray, wt: np.ndarray, unit_wt: bool
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`cumulant` for a batch ``eta`` of shape ``(R, n)``, ``b`` summed per row with
        the prior weights ``wt`` (``unit_wt``: they are all 1): ``((R,), (R, n), (R, n))``.

        The logit's ``log(1 + e^eta) = max(eta, 0) - log(max(mu, 1 - mu))`` takes one log
        per :data:`LOG_CHUNK` observations (the factors are in ``[0.5, 1]``); ``b''`` is kept
        above ``1e-300``.
        """
        if self.name == "logit":
            mu = special.expit(eta)
            om = 1.0 - mu
            v = mu * om
            np.maximum(v, 1e-300, out=v)
            a = np.maximum(mu, om, out=om)
            if unit_wt:
                chunks = np.arange(0, eta.shape[1], LOG_CHUNK)
                loga = np.log(np.multiply.reduceat(a, chunks, axis=1)).sum(axis=1)
                return np.maximum(eta, 0.0).sum(axis=1) - loga, mu, v
            return (np.maximum(eta, 0.0) - np.log(a)) @ wt, mu, v
        b, mu, v = self.cumulant(eta)
        return b @ wt, mu, v

    def dlog_mu_eta(self, mu: np.ndarray, eta: np.ndarray | None = None) -> Any:
        """``d log(d mu / d eta) / d eta`` at ``mu = g^-1(eta)`` (``eta``: ``g(mu)`` when not
        given): with a canonical link, the working weight's slope over the weight (logit
        ``1 - 2 mu``, log ``1``).

        Examples
        --------
        >>> float(get_link("logit").dlog_mu_eta(np.array(0.25)))
        0.5
        """
        if self.name == "logit":
            return 1.0 - 2.0 * mu
        if self.name == "log":
            return 1.0
        if self.name == "identity":
            return 0.0
        if eta is None:
            eta = self.linkfun(mu)
        if self.name == "probit":
            return -eta
        return 1.0 - np.exp(np.minimum(eta, 700.0))  # cloglog


def get_link(link: str | Link) -> Link:
    """The :class:`Link` called ``link`` (did-you-mean on a misspelling)."""
    if isinstance(link, Link):
        return link
    return Link(check_choice("link", link, ("identity", "log", "logit", "probit", "cloglog")))
