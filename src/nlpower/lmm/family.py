"""Outcome families: the response distribution and link of a mixed model.

The *family slot* of the engine protocol.  A prepared model is a structure
(:class:`~nlpower.lmm.structure.ModelSpec`) plus a family; the engine picks
its fitter from the family, nothing else branches on it:

- :class:`Gaussian` (identity link): the linear mixed model, ``lmer``;
- :class:`Binomial` (logit, probit, cloglog), :class:`Poisson` (log) and
  :class:`NegativeBinomial` (log; overdispersed counts, ``Var = mu +
  mu^2 / theta``): generalised linear mixed models, ``glmer`` (lme4's
  definitions; the negative binomial is lme4's ``glmer.nb`` and glmmTMB's
  ``nbinom2``);
- :class:`Ordinal` (cumulative logit, probit, cloglog with flexible,
  equidistant or symmetric thresholds): ``clmm`` (``ordinal``'s
  parameterisation ``P(Y <= j) = F(theta_j - eta)``).

A :class:`~nlpower.lmm.link.Link` (:mod:`nlpower.lmm.link`, re-exported
here) holds ``g``, ``g^-1`` and the derivatives the fitters need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

import numpy as np
import pandas as pd

from .._lazy import special
from .._validation import check_choice
from ..errors import InputError
from .link import Link, get_link

__all__ = [
    "Binomial",
    "Family",
    "Gaussian",
    "Link",
    "NegativeBinomial",
    "Ordinal",
    "Poisson",
    "get_family",
    "get_link",
]

FamilyName: TypeAlias = Literal["gaussian", "binomial", "poisson", "negative_binomial", "ordinal"]
ThresholdName: TypeAlias = Literal["flexible", "equidistant", "symmetric"]

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class Family:
    """Base of the outcome families: a name and a link."""

    name: FamilyName
    link: Link

    #: Links this family accepts (the first is the canonical default).
    links: tuple[str, ...] = ()

    #: Whether the model has a residual SD ``sigma`` of its own (the Gaussian family's)
    has_sigma: ClassVar[bool] = False
    #: The column of a mean on the response scale (emmeans': ``prob``, ``rate``)
    mean_name: ClassVar[str] = "response"

    @property
    def is_gaussian(self) -> bool:
        """The identity-link Gaussian family (the linear mixed model)."""
        return self.has_sigma

    @property
    def display_name(self) -> str:
        """The name in messages ("negative binomial", "Poisson")."""
        return "Poisson" if self.name == "poisson" else self.name.replace("_", " ")

    @property
    def is_glm(self) -> bool:
        """A response module of ``glmer`` (PIRLS and the Laplace deviance fit it)."""
        return False

    @property
    def has_dispersion(self) -> bool:
        """Whether the response distribution has a parameter of its own (estimated by ``glmer``)."""
        return False

    @property
    def dispersion(self) -> float | None:
        """The response distribution's own parameter (negative binomial: ``theta``); else None."""
        return None

    def with_dispersion(self, value: float | None) -> Family:
        """This family with its dispersion parameter set (``None``: unchanged)."""
        if value is None:
            return self
        raise InputError(f"dispersion={value!r}: the {self.name} family has no dispersion "
                         "parameter; leave it out.")

    def warm_start(self, theta: np.ndarray, beta: np.ndarray, alpha: np.ndarray) -> Any:
        """A refit's start at known parameters, in the form this family's fitter takes.

        GLM families: ``{"theta": ..., "beta": ...}`` (PIRLS starts at both).
        """
        return {"theta": np.array(theta, dtype=float), "beta": beta}

    def placeholder(self, n: int, levels: Any = ()) -> Any:
        """``n`` responses that every model frame of this family accepts (None: keep the data's)."""
        return None

    def fit_notes(self, eta: np.ndarray) -> dict[str, Any]:
        """Diagnostics of a fit at linear predictor ``eta`` for its ``optinfo`` (none by default)."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(link={self.link.name!r})"


class _GLMResponse(Family):
    """What PIRLS, the Laplace deviance and simulation need of a GLM family (a response module).

    ``m2loglik`` is ``-2 log p(y | mu)`` summed (R's ``family()$aic`` without
    ``2 * rank``), ``unit_m2loglik`` its per-observation terms up to what
    depends on ``y`` only; ``draw`` simulates responses with means ``mu``.
    """

    mean_name: ClassVar[str] = "rate"

    @property
    def is_glm(self) -> bool:
        return True

    @property
    def canonical(self) -> bool:
        """Whether the link is the canonical one (PIRLS is then Newton's method)."""
        return False

    def variance(self, mu: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def m2loglik(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray, axis: int | None = None
                 ) -> Any:
        """``-2 log p(y | mu)`` summed (over ``axis`` only, e.g. per replicate: an array)."""
        raise NotImplementedError

    def unit_m2loglik(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def working(self, y: np.ndarray, wt: np.ndarray, eta: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``mu``, PIRLS's working weights and the unit terms of ``-2 log p(y | mu)`` at ``eta``.

        The unit terms leave out what depends on ``y`` only (binomial
        coefficients, ``log y!``).  A canonical link: ``2 wt (b(eta) - y eta)``
        and the weights ``wt b''(eta)`` (:meth:`Link.cumulant`); any other:
        Fisher's (expected) weights ``wt (d mu / d eta)^2 / V(mu)``, as lme4,
        and :meth:`unit_m2loglik`.  Weights are kept above ``1e-300``.
        """
        if self.canonical:
            b, mu, v = self.link.cumulant(eta)
            return mu, np.maximum(wt * v, 1e-300), 2.0 * wt * (b - y * eta)
        mu = self.clip_mu(self.link.linkinv(eta))
        me = self.link.mu_eta(eta)
        w = wt * me * me / self.variance(mu)
        return mu, np.maximum(w, 1e-300), self.unit_m2loglik(y, mu, wt)

    def working_rows(self, Yw: np.ndarray, wt: np.ndarray, eta: np.ndarray, unit_wt: bool
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`working` for a batch of responses (canonical links): ``eta`` and ``Yw`` (the
        responses times ``wt``) of shape ``(R, n)``; the unit terms summed per row."""
        b, mu, v = self.link.cumulant_rows(eta, wt, unit_wt)
        return mu, (v if unit_wt else v * wt), 2.0 * (b - np.einsum("ri,ri->r", Yw, eta))

    def clip_mu(self, mu: np.ndarray) -> np.ndarray:
        """``mu`` kept inside the family's range (away from where the log-density is infinite)."""
        return np.maximum(mu, 1e-300)

    def mu_start(self, y: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """A mean near ``y`` (R's ``mustart``), where the log-density is finite."""
        return np.clip(y + 0.1, 1e-8, None)

    def draw(self, gen: np.random.Generator, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def response_column(self, col: pd.Series, name: str) -> np.ndarray:
        """The response column of the data in the family's numeric form (``nan`` kept)."""
        raise NotImplementedError

    def check_values(self, y: np.ndarray, wt: np.ndarray, name: str) -> None:
        """Refuse (``InputError``, saying what to do) responses the family cannot fit."""
        raise NotImplementedError

    def observed_weights(self, y: np.ndarray, mu: np.ndarray, eta: np.ndarray,
                         wt: np.ndarray) -> np.ndarray | None:
        """``-d^2 log p(y | eta) / d eta^2``: the observed information (None: not available).

        With a canonical link it equals PIRLS's expected weights.
        """
        return None

    def placeholder(self, n: int, levels: Any = ()) -> Any:
        """Alternating 0 and 1: valid for every GLM family."""
        return (np.arange(n) % 2).astype(float)


def _summed(terms: np.ndarray, axis: int | None) -> Any:
    return float(np.sum(terms)) if axis is None else np.sum(terms, axis=axis)


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

    has_sigma: ClassVar[bool] = True

    def warm_start(self, theta: np.ndarray, beta: np.ndarray, alpha: np.ndarray) -> Any:
        """``theta`` only (``beta`` and ``sigma`` are profiled out of lme4's deviance)."""
        return np.array(theta, dtype=float)


@dataclass(frozen=True, repr=False)
class Binomial(_GLMResponse):
    """Binary or binomial responses (``glmer(family=binomial)``); logit, probit or cloglog.

    ``variance(mu) = mu (1 - mu)``; deviance residuals and the AIC term follow
    R's ``binomial()`` with prior weights = number of trials.
    """

    def __init__(self, link: str | Link | None = None):
        object.__setattr__(self, "name", "binomial")
        object.__setattr__(self, "links", ("logit", "probit", "cloglog"))
        object.__setattr__(self, "link", _with_link(Binomial, link, self.links))

    mean_name: ClassVar[str] = "prob"

    @property
    def canonical(self) -> bool:
        return self.link.name == "logit"

    def fit_notes(self, eta: np.ndarray) -> dict[str, Any]:
        """``separation``: a fitted probability within ``1e-10`` of 0 or 1 (lme4 warns)."""
        mu = self.link.linkinv(eta)
        return {"separation": bool(np.any((mu < 1e-10) | (mu > 1.0 - 1e-10)))}

    def variance(self, mu: np.ndarray) -> np.ndarray:
        return mu * (1.0 - mu)

    def dev_resids(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """Unit deviances ``2 wt (y log(y/mu) + (1-y) log((1-y)/(1-mu)))`` (R's ``binomial()``)."""
        mu = np.clip(mu, _EPS, 1.0 - _EPS)
        return 2.0 * wt * (special.xlogy(y, y / mu) + special.xlogy(1.0 - y, (1.0 - y) / (1.0 - mu)))

    def m2loglik(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray, axis: int | None = None
                 ) -> Any:
        """``-2 sum (wt/m) log dbinom(round(m y), round(m), mu)`` with ``m = wt`` (R's ``aic``)."""
        m = np.round(wt)
        k = np.round(m * y)
        mu = np.clip(mu, 1e-300, 1.0)
        one = np.clip(1.0 - mu, 1e-300, 1.0)
        logc = special.gammaln(m + 1) - special.gammaln(k + 1) - special.gammaln(m - k + 1)
        ld = logc + special.xlogy(k, mu) + special.xlogy(m - k, one)
        scale = np.divide(wt, m, out=np.zeros_like(wt), where=m > 0)
        return _summed(-2.0 * scale * ld, axis)

    def unit_m2loglik(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        return -2.0 * wt * (special.xlogy(y, mu) + special.xlogy(1.0 - y, 1.0 - mu))

    def clip_mu(self, mu: np.ndarray) -> np.ndarray:
        return np.clip(mu, 1e-15, 1.0 - 1e-15)

    def mu_start(self, y: np.ndarray, wt: np.ndarray) -> np.ndarray:
        return np.clip((y * wt + 0.5) / (wt + 1.0), 1e-8, None)

    def response_column(self, col: pd.Series, name: str) -> np.ndarray:
        """The response column as floats: 0/1, bools, proportions or a two-level factor."""
        if isinstance(col.dtype, pd.CategoricalDtype):
            cats = [c for c in col.cat.categories if (col == c).any()]
            if len(cats) != 2:
                raise InputError(
                    f"the response {name!r} is a factor with {len(cats)} used level(s) "
                    f"({', '.join(map(repr, cats[:5]))}); a binomial response needs exactly two "
                    "(the first is failure, 0). Recode it, e.g. (data[col] == 'yes').astype(int).")
            return (col == cats[1]).to_numpy(dtype=float)
        if pd.api.types.is_bool_dtype(col.dtype):
            return col.to_numpy(dtype=float)
        if not pd.api.types.is_numeric_dtype(col.dtype):
            vals = sorted(map(str, pd.unique(col.dropna())))
            if len(vals) != 2:
                raise InputError(
                    f"the response {name!r} has {len(vals)} distinct values "
                    f"({', '.join(map(repr, vals[:5]))}{' ...' if len(vals) > 5 else ''}); a binomial "
                    "response is 0/1, a two-level factor or proportions with weights=.")
            return (col.astype(str) == vals[1]).to_numpy(dtype=float)
        return col.to_numpy(dtype=float)

    def check_values(self, y: np.ndarray, wt: np.ndarray, name: str) -> None:
        """0/1 or proportions of ``wt`` trials, not all the same."""
        if np.any((y < 0) | (y > 1)):
            bad = np.unique(y[(y < 0) | (y > 1)])[:5]
            raise InputError(
                f"a binomial response must be 0/1 (or proportions in [0, 1] with weights= the "
                f"numbers of trials); {name!r} has values {', '.join(map(repr, bad.tolist()))}. "
                "Recode it, e.g. (y > 0).astype(int), or pass successes / trials with weights=trials.")
        frac = (y > 0) & (y < 1)
        if np.any(frac) and np.all(wt == 1.0):
            raise InputError(
                f"the response {name!r} has proportions between 0 and 1 but no weights=: give the "
                "numbers of trials, glmer('p ~ ...', data, weights='trials') (R: cbind(k, n - k)).")
        k = y * wt
        if np.any(np.abs(k - np.round(k)) > 1e-7 * np.maximum(1.0, wt)):
            raise InputError(
                f"the response {name!r} times weights= is not a whole number of successes in some "
                "rows; the binomial needs successes / trials with weights = trials.")
        used = wt > 0
        if np.all(y[used] == 0) or np.all(y[used] == 1):
            v = int(y[used][0])
            raise InputError(
                f"the response {name!r} is {v} in every row: a binomial model cannot be fitted "
                "when every outcome is the same (all successes or all failures). Check the "
                "coding, or pool more data.")

    def draw(self, gen: np.random.Generator, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """Proportions of ``wt`` trials."""
        m = np.round(wt).astype(np.int64)
        k = gen.binomial(m, np.clip(mu, 0.0, 1.0))
        return np.divide(k, m, out=np.zeros(mu.shape), where=m > 0)


class _CountResponse(_GLMResponse):
    """Counts: a numeric column of non-negative whole numbers, not all 0."""

    def response_column(self, col: pd.Series, name: str) -> np.ndarray:
        if not pd.api.types.is_numeric_dtype(col.dtype):
            raise InputError(f"a {self.display_name} response must be numeric counts; {name!r} "
                             f"has dtype {col.dtype}.")
        return col.to_numpy(dtype=float)

    def check_values(self, y: np.ndarray, wt: np.ndarray, name: str) -> None:
        if np.any(y < 0) or np.any(np.abs(y - np.round(y)) > 1e-9):
            bad = y[(y < 0) | (np.abs(y - np.round(y)) > 1e-9)][:5]
            raise InputError(
                f"a {self.display_name} response must be non-negative whole counts; {name!r} has "
                f"{', '.join(map(repr, bad.tolist()))}. Use counts, or another family.")
        if np.all(y == 0):
            raise InputError(f"the response {name!r} is 0 in every row: a {self.display_name} model "
                             "cannot be fitted to all-zero counts.")


@dataclass(frozen=True, repr=False)
class Poisson(_CountResponse):
    """Count responses (``glmer(family=poisson)``), log link."""

    def __init__(self, link: str | Link | None = None):
        object.__setattr__(self, "name", "poisson")
        object.__setattr__(self, "links", ("log",))
        object.__setattr__(self, "link", _with_link(Poisson, link, self.links))

    @property
    def canonical(self) -> bool:
        return True

    def variance(self, mu: np.ndarray) -> np.ndarray:
        return mu

    def dev_resids(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """Unit deviances ``2 wt (y log(y/mu) - (y - mu))`` (R's ``poisson()``)."""
        return 2.0 * wt * (special.xlogy(y, y / np.maximum(mu, _EPS)) - (y - mu))

    def m2loglik(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray, axis: int | None = None
                 ) -> Any:
        """``-2 sum wt log dpois(y, mu)``."""
        mu = np.maximum(mu, 1e-300)
        return _summed(-2.0 * wt * (special.xlogy(y, mu) - mu - special.gammaln(y + 1.0)), axis)

    def unit_m2loglik(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        return 2.0 * wt * (mu - special.xlogy(y, mu))

    def draw(self, gen: np.random.Generator, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        return gen.poisson(mu).astype(float)


@dataclass(frozen=True, repr=False)
class NegativeBinomial(_CountResponse):
    """Overdispersed counts, log link: ``Var(y) = mu + mu^2 / theta`` (NB2).

    lme4's ``glmer.nb`` and MASS's ``negative.binomial(theta)``; glmmTMB's
    ``nbinom2`` (whose ``sigma()`` is ``theta``).  ``theta`` (the size, the
    dispersion parameter: smaller is more overdispersed, infinite is Poisson)
    is estimated by ``glmer``; given here it is where that estimation starts
    and the value :meth:`draw` simulates with.

    Examples
    --------
    >>> fam = NegativeBinomial(theta=2.0)
    >>> fam.variance(np.array([1.0, 4.0])).tolist()
    [1.5, 12.0]
    >>> round(fam.m2loglik(np.array([3.0]), np.array([2.0]), np.ones(1)), 4)  # -2 log(1/8)
    4.1589
    """

    theta: float | None = None

    def __init__(self, link: str | Link | None = None, theta: float | None = None):
        object.__setattr__(self, "name", "negative_binomial")
        object.__setattr__(self, "links", ("log",))
        object.__setattr__(self, "link", _with_link(NegativeBinomial, link, self.links))
        if theta is not None:
            if isinstance(theta, bool) or not isinstance(theta, int | float | np.number) \
                    or not (math.isfinite(float(theta)) and float(theta) > 0):
                raise InputError(f"theta (the negative binomial dispersion) must be a finite "
                                 f"number > 0; got {theta!r}.")
            theta = float(theta)
        object.__setattr__(self, "theta", theta)

    @property
    def has_dispersion(self) -> bool:
        return True

    @property
    def dispersion(self) -> float | None:
        return self.theta

    def with_dispersion(self, value: float | None) -> NegativeBinomial:
        return self if value is None else NegativeBinomial(self.link, float(value))

    def _theta(self) -> float:
        if self.theta is None:
            raise InputError("the negative binomial's theta is not set: fit the model with "
                             "glmer(..., family='negative_binomial') (which estimates it), or "
                             "give NegativeBinomial(theta=...).")
        return self.theta

    def variance(self, mu: np.ndarray) -> np.ndarray:
        return mu + mu * mu / self._theta()

    def dev_resids(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """Unit deviances ``2 wt (y log(y/mu) - (y + theta) log((y + theta)/(mu + theta)))``."""
        t = self._theta()
        mu = np.maximum(mu, _EPS)
        return 2.0 * wt * (special.xlogy(y, y / mu) - (y + t) * np.log((y + t) / (mu + t)))

    def unit_m2loglik(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """``-2 wt log dnbinom(y, size = theta, mu = mu)``, every term (R's ``negative.binomial()$aic``)."""
        t = self._theta()
        mu = np.maximum(mu, 1e-300)
        # log Gamma(y + t) - log Gamma(t) - log y! = -log B(t, y + 1) - log(t + y), and
        # t log(t / (mu + t)) = -t log1p(mu / t): no cancellation of large terms as t grows
        ld = (-special.betaln(t, y + 1.0) - np.log(t + y) - t * np.log1p(mu / t)
              + special.xlogy(y, mu) - y * np.log(mu + t))
        return -2.0 * wt * ld

    def m2loglik(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray, axis: int | None = None
                 ) -> Any:
        """``-2 sum wt log dnbinom(y, size = theta, mu = mu)``."""
        return _summed(self.unit_m2loglik(y, mu, wt), axis)

    def draw(self, gen: np.random.Generator, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """Counts with means ``mu`` and size ``theta`` (a gamma mixture of Poissons)."""
        t = self._theta()
        return gen.negative_binomial(t, t / (t + mu)).astype(float)

    def observed_weights(self, y: np.ndarray, mu: np.ndarray, eta: np.ndarray,
                         wt: np.ndarray) -> np.ndarray:
        """``wt theta (y + theta) mu / (mu + theta)^2`` (log link); its mean over ``y`` is
        the expected weight ``wt theta mu / (mu + theta)``."""
        t = self._theta()
        return wt * t * (y + t) * mu / (mu + t) ** 2

    def __repr__(self) -> str:
        return f"NegativeBinomial(link={self.link.name!r}, theta={self.theta!r})"


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

    def warm_start(self, theta: np.ndarray, beta: np.ndarray, alpha: np.ndarray) -> Any:
        """``clmm``'s parameter vector: thresholds, fixed effects, ``theta``."""
        return np.concatenate([alpha, beta, theta])

    def placeholder(self, n: int, levels: Any = ()) -> Any:
        """The ordered ``levels``, cycled over the ``n`` rows."""
        k = len(levels)
        return pd.Categorical(np.asarray(levels, dtype=object)[np.arange(n) % k],
                              categories=list(levels), ordered=True)

    def __repr__(self) -> str:
        return f"Ordinal(link={self.link.name!r}, threshold={self.threshold!r})"


_FAMILIES: dict[str, type] = {"gaussian": Gaussian, "binomial": Binomial, "poisson": Poisson,
                              "negative_binomial": NegativeBinomial, "ordinal": Ordinal}


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
