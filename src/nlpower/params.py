"""Parameters of the crossed worker x item linear mixed model.

Two parameter classes, both accepted by :func:`nlpower.simulate`:

:class:`LMMParams`
    Two systems, the paper's seven-parameter model (Card et al. 2020,
    App. H.3, eq. 5-10)::

        Y_wi = beta0 + W0w + I0i + (beta1 + W1w + I1i) * x + e_wi

    with uncorrelated random intercepts and slopes for workers and items
    (lme4: ``rating ~ x + (1 + x || worker) + (1 + x || item)``).  The
    numeric coding of the system indicator ``x`` is part of the parameters:
    ``"sum"`` (x = -1 baseline, +1 other system; the paper's), ``"half"``
    (x = -0.5 / +0.5) or ``"treatment"`` (x = 0 / 1).

:class:`MultiSystemParams`
    K >= 2 systems in the parameterisation of the paper's Tables 13-15: fixed
    effects under sum contrasts (one per non-baseline system, each the
    difference between that system's mean and the grand mean) and, per
    grouping factor, an intercept SD plus one SD per system -- lme4's
    ``(system || g)``, which expands to ``(1 | g) + (0 + system | g)``.  The
    paper reports only the SDs of the per-system indicators, so their
    correlations are taken to be zero.

Between the two (two systems): per-system effects -> +-1 coding is
:func:`pm1_random_effects`, the package's one such conversion (exact only when
the two systems' SDs are equal, its ``unequal=`` policy otherwise); the inverse
is :meth:`LMMParams.to_multi_system` (exists only when ``sd >= sd_slope``).
Algebra in ``docs/model.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ._choices import Coding
from ._validation import check_magnitudes, check_real
from .coding import CODINGS, X_VALUES, check_coding, x_values
from .errors import InputError
from .pm1 import ConversionWarning, pm1_random_effects


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _check_sd(name: str, value: Any) -> float:
    """A finite SD >= 0, with a message that says SDs (not variances) are expected."""
    v = check_real(name, value)
    if v < 0:
        raise InputError(
            f"{name} must be a standard deviation >= 0; got {v}. "
            "Pass the SD (not a variance), and 0 to leave the component out."
        )
    return v


def _check_sigma(value: Any) -> float:
    v = check_real("sigma", value)
    if v <= 0:
        raise InputError(
            f"sigma (the residual SD) must be > 0; got {v}. Ratings always carry "
            "rating-level noise; use a small positive value such as 1e-6 for (almost) none."
        )
    return v


@dataclass(frozen=True)
class LMMParams:
    """Parameters of the two-system crossed mixed model (Card et al. 2020, eq. 5-10).

    Parameters
    ----------
    beta0 : float, default 0.5
        Fixed intercept (the grand mean under ``"sum"``/``"half"`` coding, the
        baseline mean under ``"treatment"``).  The paper's simulations use 0.5
        on the [0, 1] rating scale.
    effect : float, default 0.0
        Fixed slope beta1 of the system indicator ``x``.  Under the paper's
        ``"sum"`` coding it is *half* the difference between the two system
        means (see :attr:`mean_difference`).
    sd_worker, sd_worker_slope : float, default 0.0
        SDs of the worker random intercept (sigma_0w) and slope (sigma_1w).
    sd_item, sd_item_slope : float, default 0.0
        SDs of the item random intercept (sigma_0i) and slope (sigma_1i).
    sigma : float, default 0.26
        Residual SD (sigma_wi; > 0).  The default is the paper's
        high-variance value (Table 16).
    coding : {"sum", "half", "treatment"}, default "sum"
        Numeric coding of ``x`` the parameters are expressed in.

    Notes
    -----
    Random intercepts and slopes are uncorrelated under the stated coding
    (the paper: "we do not include a correlation parameter").  Because of
    that, :meth:`to_coding` is exact between ``"sum"`` and ``"half"`` (a
    rescaling of ``x`` about the same centre) but a change to or from
    ``"treatment"`` moves the centre of ``x`` and in general creates an
    intercept-slope correlation, which this parameterisation cannot hold.

    Examples
    --------
    >>> p = LMMParams(effect=0.1, sd_item_slope=0.14, sigma=0.26)
    >>> p.mean_difference
    0.2
    >>> p.to_coding("half").effect
    0.2
    """

    beta0: float = 0.5
    effect: float = 0.0
    sd_worker: float = 0.0
    sd_worker_slope: float = 0.0
    sd_item: float = 0.0
    sd_item_slope: float = 0.0
    sigma: float = 0.26
    coding: Coding = "sum"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "beta0", check_real("beta0", self.beta0))
        set_(self, "effect", check_real("effect", self.effect))
        for name in ("sd_worker", "sd_worker_slope", "sd_item", "sd_item_slope"):
            set_(self, name, _check_sd(name, getattr(self, name)))
        set_(self, "sigma", _check_sigma(self.sigma))
        check_magnitudes(self, ("beta0", "effect", "sd_worker", "sd_worker_slope", "sd_item",
                                "sd_item_slope"))
        check_coding(self.coding)

    # ------------------------------------------------------------------ views
    @property
    def n_systems(self) -> int:
        """Always 2 (use :class:`MultiSystemParams` for more systems)."""
        return 2

    @property
    def x_values(self) -> tuple[float, float]:
        """``x`` of (baseline, other system) under this coding."""
        return X_VALUES[self.coding]

    @property
    def mean_difference(self) -> float:
        """Mean of the second system minus the baseline mean.

        ``2 * effect`` under ``"sum"`` coding, ``effect`` under ``"half"`` and
        ``"treatment"``.
        """
        lo, hi = self.x_values
        return self.effect * (hi - lo)

    @property
    def system_means(self) -> tuple[float, float]:
        """Population mean rating of (baseline, other system)."""
        lo, hi = self.x_values
        return (self.beta0 + self.effect * lo, self.beta0 + self.effect * hi)

    @property
    def sds(self) -> dict[str, float]:
        """The five SDs by name, in Table 16's order."""
        return {
            "sd_worker": self.sd_worker,
            "sd_worker_slope": self.sd_worker_slope,
            "sd_item": self.sd_item,
            "sd_item_slope": self.sd_item_slope,
            "sigma": self.sigma,
        }

    # ------------------------------------------------------------ conversions
    def with_effect(self, effect: float) -> LMMParams:
        """A copy with another fixed effect (in this coding)."""
        return replace(self, effect=effect)

    def to_coding(self, coding: Coding) -> LMMParams:
        """The same model re-expressed in another coding of ``x``.

        ``"sum"`` <-> ``"half"`` is exact: ``x_half = x_sum / 2``, so the effect
        and both slope SDs double (intercepts unchanged).  ``"treatment"``
        (``x_t = (x_sum + 1) / 2``) gives ``beta0' = beta0 - beta1``,
        ``beta1' = 2 beta1`` and random effects ``(W0 - W1) + 2 W1 x_t``, whose
        intercept and slope are correlated (covariance ``-2 sd_slope^2``)
        unless the slope SD is 0.  The conversion is therefore done only when
        it is exact: to or from ``"treatment"`` both slope SDs must be 0.

        Raises
        ------
        InputError
            Unknown coding, or a treatment conversion that is not exact.
        """
        check_coding(coding)
        if coding == self.coding:
            return self
        if "treatment" in (coding, self.coding) and (self.sd_worker_slope > 0 or self.sd_item_slope > 0):
            raise InputError(
                f"cannot convert LMMParams from coding={self.coding!r} to coding={coding!r} exactly: "
                "moving the centre of x turns uncorrelated random intercepts and slopes "
                f"(sd_worker_slope={self.sd_worker_slope}, sd_item_slope={self.sd_item_slope}) "
                "into correlated ones, which LMMParams cannot represent. Convert between "
                "'sum' and 'half' only, or simulate directly with the coding you want."
            )
        lo, hi = self.x_values
        nlo, nhi = X_VALUES[coding]
        # x_old = a + b * x_new with b = (hi - lo) / (nhi - nlo)
        b = (hi - lo) / (nhi - nlo)
        a = lo - b * nlo
        # beta0 + beta1 * x_old = (beta0 + beta1 a) + beta1 b x_new ; same for random parts
        return LMMParams(
            beta0=self.beta0 + self.effect * a,
            effect=self.effect * b,
            sd_worker=self.sd_worker,  # a != 0 only with treatment, where slopes are 0
            sd_worker_slope=self.sd_worker_slope * b,
            sd_item=self.sd_item,
            sd_item_slope=self.sd_item_slope * b,
            sigma=self.sigma,
            coding=coding,
        )

    def to_multi_system(self, system_names: Sequence[str] | None = None) -> MultiSystemParams:
        """The same model in the per-system-SD form of Tables 13-15 (K = 2).

        Under sum coding the per-rating random effect of a worker is
        ``W0 - W1`` (baseline) and ``W0 + W1`` (other), with variances
        ``sd^2 + sd_slope^2`` and covariance ``sd^2 - sd_slope^2``; the
        per-system form ``(1|g) + (0 + system|g)`` with equal indicator SDs
        gives ``s0^2 + s^2`` and ``s0^2``.  So ``s0^2 = sd^2 - sd_slope^2`` and
        ``s^2 = 2 sd_slope^2``, which exists only when ``sd >= sd_slope`` for
        both workers and items.

        Raises
        ------
        InputError
            When an intercept SD is smaller than its slope SD.
        """
        p = self if self.coding == "sum" else self.to_coding("sum")
        out: dict[str, tuple[float, float]] = {}
        for who, sd, sd_slope in (("worker", p.sd_worker, p.sd_worker_slope),
                                  ("item", p.sd_item, p.sd_item_slope)):
            v0 = sd**2 - sd_slope**2
            if v0 < -1e-15:
                raise InputError(
                    f"cannot express these LMMParams with per-system SDs: sd_{who}={sd} is smaller "
                    f"than sd_{who}_slope={sd_slope} (sum coding), which would need a negative "
                    "intercept variance. Keep using LMMParams for this model."
                )
            out[who] = (math.sqrt(max(v0, 0.0)), math.sqrt(2.0) * sd_slope)
        return MultiSystemParams(
            beta0=p.beta0,
            effects=(p.effect,),
            sd_worker=out["worker"][0],
            sd_worker_systems=(out["worker"][1],) * 2,
            sd_item=out["item"][0],
            sd_item_systems=(out["item"][1],) * 2,
            sigma=p.sigma,
            system_names=tuple(system_names) if system_names is not None else None,
        )

    # ---------------------------------------------------------------- output
    def to_frame(self) -> pd.DataFrame:
        """One row per parameter: name, symbol, value, coding."""
        rows = [
            ("beta0", "β0", self.beta0),
            ("effect", "β1", self.effect),
            ("sd_worker", "σ0w", self.sd_worker),
            ("sd_worker_slope", "σ1w", self.sd_worker_slope),
            ("sd_item", "σ0i", self.sd_item),
            ("sd_item_slope", "σ1i", self.sd_item_slope),
            ("sigma", "σ", self.sigma),
        ]
        df = pd.DataFrame(rows, columns=["parameter", "symbol", "value"])
        df["coding"] = self.coding
        return df

    def summary(self) -> str:
        """A short text table of the parameters, with the coding spelled out."""
        lo, hi = self.x_values
        lines = [
            f"LMMParams (coding={self.coding!r}: x = {lo:g} baseline, {hi:g} other system)",
            f"  fixed:  beta0 = {_fmt(self.beta0)}   beta1 (effect) = {_fmt(self.effect)}"
            f"   -> mean difference = {_fmt(self.mean_difference)}",
            f"  worker: sd(intercept) = {_fmt(self.sd_worker)}   sd(slope) = {_fmt(self.sd_worker_slope)}",
            f"  item:   sd(intercept) = {_fmt(self.sd_item)}   sd(slope) = {_fmt(self.sd_item_slope)}",
            f"  residual sd (sigma) = {_fmt(self.sigma)}",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"LMMParams(beta0={_fmt(self.beta0)}, effect={_fmt(self.effect)}, "
            f"sd_worker={_fmt(self.sd_worker)}, sd_worker_slope={_fmt(self.sd_worker_slope)}, "
            f"sd_item={_fmt(self.sd_item)}, sd_item_slope={_fmt(self.sd_item_slope)}, "
            f"sigma={_fmt(self.sigma)}, coding={self.coding!r})"
        )


def _check_sd_tuple(name: str, value: Any) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise InputError(
            f"{name} must be a sequence of standard deviations, one per system; got {value!r}."
        )
    out = [_check_sd(f"{name}[{j}]", v) for j, v in enumerate(value)]
    return tuple(out)


@dataclass(frozen=True)
class MultiSystemParams:
    """Parameters for K >= 2 systems, as in Card et al. 2020, Tables 13-15.

    Model for a rating of item ``i`` by worker ``w`` under system ``s``::

        Y = mu_s + W0w + W_{w,s} + I0i + I_{i,s} + e
        W0w ~ N(0, sd_worker^2)      W_{w,s} ~ N(0, sd_worker_systems[s]^2)
        I0i ~ N(0, sd_item^2)        I_{i,s} ~ N(0, sd_item_systems[s]^2)
        e ~ N(0, sigma^2)

    all independent -- lme4's ``(system || worker) + (system || item)``,
    i.e. ``(1|g) + (0 + system|g)``, with the correlations between the
    per-system indicators (which lme4 estimates but the paper does not
    report) set to zero.

    Parameters
    ----------
    beta0 : float
        Grand mean (mean of the K system means).
    effects : sequence of float, length K - 1
        Sum-contrast effects: ``effects[j]`` is the mean of system ``j + 1``
        (the (j+2)-th system; system 0 is the baseline) minus the grand mean.
        The baseline's mean is ``beta0 - sum(effects)``.  For K = 2,
        ``effects[0]`` equals :class:`LMMParams` ``effect`` under sum coding.
    sd_worker, sd_item : float
        SD of the worker / item random intercept.
    sd_worker_systems, sd_item_systems : sequence of float, length K
        SD of the worker / item random effect of each system indicator.
    sigma : float
        Residual SD (> 0).
    system_names : sequence of str, optional
        Names of the systems (documentation only; the design's names are used
        when simulating).

    Notes
    -----
    The paper fits ``contr.sum`` in R, where the *last* factor level is the
    one without its own coefficient.  Here the baseline (first system) is the
    omitted one, so that for K = 2 a positive effect means the second system
    is better.  Which of the paper's systems was which level is not reported.
    """

    beta0: float
    effects: tuple[float, ...]
    sd_worker: float
    sd_worker_systems: tuple[float, ...]
    sd_item: float
    sd_item_systems: tuple[float, ...]
    sigma: float
    system_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "beta0", check_real("beta0", self.beta0))
        eff = self.effects
        if isinstance(eff, (str, bytes)) or not isinstance(eff, (Sequence, np.ndarray)):
            raise InputError(
                f"effects must be a sequence of K - 1 sum-contrast effects (one per non-baseline "
                f"system); got {eff!r}. For two systems pass a 1-tuple, e.g. effects=(0.1,)."
            )
        effects = tuple(check_real(f"effects[{j}]", v) for j, v in enumerate(eff))
        if len(effects) < 1:
            raise InputError(
                "effects must hold at least one effect (K - 1 >= 1 for K >= 2 systems); got ()."
            )
        set_(self, "effects", effects)
        k = len(effects) + 1
        for name in ("sd_worker", "sd_item"):
            set_(self, name, _check_sd(name, getattr(self, name)))
        for name in ("sd_worker_systems", "sd_item_systems"):
            sds = _check_sd_tuple(name, getattr(self, name))
            if len(sds) != k:
                raise InputError(
                    f"{name} must have one SD per system, K = {k} (len(effects) + 1); got "
                    f"{len(sds)} values {sds}. Give the intercept SD separately in "
                    f"{name.removesuffix('_systems')}."
                )
            set_(self, name, sds)
        set_(self, "sigma", _check_sigma(self.sigma))
        check_magnitudes(self, ("beta0", "effects", "sd_worker", "sd_item", "sd_worker_systems",
                                "sd_item_systems"))
        if self.system_names is not None:
            names = self.system_names
            if isinstance(names, str) or not isinstance(names, Sequence):
                raise InputError(f"system_names must be a sequence of {k} names; got {names!r}.")
            names = tuple(str(n) for n in names)
            if len(names) != k or len(set(names)) != k:
                raise InputError(
                    f"system_names must be {k} unique names (one per system); got {names}."
                )
            set_(self, "system_names", names)

    @property
    def n_systems(self) -> int:
        """K, the number of systems."""
        return len(self.effects) + 1

    @property
    def coding(self) -> Coding:
        """Always ``"sum"``: effects are deviations from the grand mean."""
        return "sum"

    @property
    def system_means(self) -> tuple[float, ...]:
        """Population mean of each system (baseline first)."""
        return (self.beta0 - sum(self.effects), *(self.beta0 + e for e in self.effects))

    @property
    def mean_differences(self) -> tuple[float, ...]:
        """Mean of each non-baseline system minus the baseline mean."""
        m = self.system_means
        return tuple(v - m[0] for v in m[1:])

    def with_effects(self, effects: Sequence[float]) -> MultiSystemParams:
        """A copy with other sum-contrast effects."""
        return replace(self, effects=tuple(effects))

    def to_lmm_params(self, coding: Coding = "sum", *, exact: bool = True) -> LMMParams:
        """Two systems only: the equivalent :class:`LMMParams` (:func:`pm1_random_effects`).

        The +-1 coded model has ``var(intercept) = s_0^2 + (s_A^2 + s_B^2)/4``,
        ``var(slope) = (s_A^2 + s_B^2)/4`` and an intercept-slope covariance
        ``(s_B^2 - s_A^2)/4``, which LMMParams cannot hold: ``exact=True``
        requires ``s_A == s_B`` (to 1e-12; ``unequal="raise"``), ``exact=False``
        drops the covariance (``unequal="ignore"``; each system's variance is
        kept on average, not per system).

        Raises
        ------
        InputError
            K != 2, or unequal per-system SDs with ``exact=True``.
        """
        if self.n_systems != 2:
            raise InputError(
                f"to_lmm_params needs exactly 2 systems; these parameters have K = {self.n_systems}. "
                "Simulate with MultiSystemParams directly."
            )
        vals = {who: pm1_random_effects(s0, sa, sb, group=who,
                                        unequal="raise" if exact else "ignore")
                for who, s0, (sa, sb) in (("worker", self.sd_worker, self.sd_worker_systems),
                                          ("item", self.sd_item, self.sd_item_systems))}
        p = LMMParams(
            beta0=self.beta0,
            effect=self.effects[0],
            sd_worker=vals["worker"][0],
            sd_worker_slope=vals["worker"][1],
            sd_item=vals["item"][0],
            sd_item_slope=vals["item"][1],
            sigma=self.sigma,
            coding="sum",
        )
        return p.to_coding(coding)

    def to_frame(self) -> pd.DataFrame:
        """One row per parameter: name, group, system, value."""
        k = self.n_systems
        names = self.system_names or tuple(f"system{j + 1}" for j in range(k))
        rows: list[tuple[str, str, str, float]] = [("beta0", "fixed", "", self.beta0)]
        rows += [(f"effects[{j}]", "fixed", names[j + 1], e) for j, e in enumerate(self.effects)]
        rows.append(("sd_worker", "worker", "(Intercept)", self.sd_worker))
        rows += [(f"sd_worker_systems[{j}]", "worker", names[j], s)
                 for j, s in enumerate(self.sd_worker_systems)]
        rows.append(("sd_item", "item", "(Intercept)", self.sd_item))
        rows += [(f"sd_item_systems[{j}]", "item", names[j], s)
                 for j, s in enumerate(self.sd_item_systems)]
        rows.append(("sigma", "residual", "", self.sigma))
        df = pd.DataFrame(rows, columns=["parameter", "group", "term", "value"])
        df["coding"] = "sum"
        return df

    def summary(self) -> str:
        """A short text table of the parameters."""
        k = self.n_systems
        names = self.system_names or tuple(f"system{j + 1}" for j in range(k))
        means = ", ".join(f"{n}={_fmt(m)}" for n, m in zip(names, self.system_means, strict=True))
        return "\n".join([
            f"MultiSystemParams (K = {k}, sum contrasts; baseline {names[0]!r})",
            f"  fixed:  beta0 (grand mean) = {_fmt(self.beta0)}   effects = "
            f"({', '.join(_fmt(e) for e in self.effects)})",
            f"  system means: {means}",
            f"  worker: sd(intercept) = {_fmt(self.sd_worker)}   sd(per system) = "
            f"({', '.join(_fmt(s) for s in self.sd_worker_systems)})",
            f"  item:   sd(intercept) = {_fmt(self.sd_item)}   sd(per system) = "
            f"({', '.join(_fmt(s) for s in self.sd_item_systems)})",
            f"  residual sd (sigma) = {_fmt(self.sigma)}",
        ])

    def __repr__(self) -> str:
        return (
            f"MultiSystemParams(K={self.n_systems}, beta0={_fmt(self.beta0)}, "
            f"effects=({', '.join(_fmt(e) for e in self.effects)}{',' if len(self.effects) == 1 else ''}), "
            f"sigma={_fmt(self.sigma)})"
        )


__all__ = ["CODINGS", "ConversionWarning", "LMMParams", "MultiSystemParams", "check_coding",
           "pm1_random_effects", "x_values"]
