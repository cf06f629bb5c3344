"""Tests of an accuracy difference as objects: the one registry of accuracy test rules.

Each ``test=`` of :mod:`nlpower.accuracy` (``mcnemar``, ``power``, ``mde``,
``sample_size``, ``closed_form_power``) is an :class:`AccuracyTest` in
:data:`ACCURACY_TESTS`; :func:`get_accuracy_test` is the only place a name is
looked up, and nothing else compares test names.  Adding a test is adding one
rule.

========================  ==============  ===============  =============  ==========
rule                      power           p-value needs    agreement      title
========================  ==============  ===============  =============  ==========
``exact``                 enumeration     ``min(b,c)``, d  needed         McNemar
``mid-p``                 enumeration     ``min(b,c)``, d  needed         McNemar
``chi2``                  enumeration     ``min(b,c)``, d  needed         McNemar
``chi2-cc``               enumeration     ``min(b,c)``, d  needed         McNemar
``exact-unconditional``   enumeration     b, c and n       needed         McNemar
``mcnemar-normal``        closed form     --               needed         McNemar
``lachenbruch``           closed form     --               refused        McNemar
``two-proportion``        closed form     --               refused        Two-proportion
========================  ==============  ===============  =============  ==========

The McNemar rules (:class:`McNemarRule`) give p-values, the statistic as
statsmodels reports it, and the rejection region ``min(b, c) <= c_d``
(:mod:`nlpower.accuracy.mcnemar`; power by enumeration in
:mod:`nlpower.accuracy.power`).  The closed-form rules
(:class:`ClosedFormRule`) give the null and alternative variances of the
normal model and, where one exists, the closed-form sample size
(:mod:`nlpower.accuracy.closedform`; solved in :mod:`nlpower.accuracy.planning`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from scipy import optimize, stats

from .._validation import check_choice
from ..errors import InputError
from .closedform import connor_n, lachenbruch_discordance, prop_variances, z_crit
from .unconditional import unconditional_pvalue, unconditional_thresholds

__all__ = ["ACCURACY_TESTS", "AccuracyTest", "ClosedFormRule", "ConditionalMcNemar",
           "McNemarRule", "UnconditionalMcNemar", "get_accuracy_test"]


class PlanLike(Protocol):
    """What a closed-form rule reads of a planning problem (``planning._Plan``)."""

    @property
    def baseline(self) -> float | None: ...

    @property
    def bound(self) -> str | None: ...

    @property
    def alpha(self) -> float: ...

    @property
    def formula(self) -> str: ...

    def agreement_at(self, delta: float) -> float | None: ...

    def power(self, n: float, delta: float) -> float: ...


@dataclass(frozen=True)
class AccuracyTest:
    """One test of an accuracy difference (the attributes every path reads).

    Attributes
    ----------
    name : str
        The ``test=`` value.
    doc : str
        One line: what the test is (messages and docs).
    title : str
        How a power summary names the test family ("McNemar power").
    unit : str
        What ``n`` counts ("paired items", "items per group").
    per_n : str
        The same after a sample size ("paired items", "per group").
    no_agreement : str
        Why the agreement rate is not used (``""``: the test needs it).
    bounds : bool
        The test takes Lachenbruch's ``bound=`` and ``formula=``.
    """

    name: str
    doc: str = field(default="", repr=False)
    title: str = "McNemar"
    unit: str = "paired items"
    per_n: str = "paired items"
    no_agreement: str = ""
    bounds: bool = False

    @property
    def closed_form(self) -> bool:
        """Power comes from the normal model (``closed_form_power``), not by enumeration."""
        return False


# --- McNemar tests (exact power by enumeration) -----------------------------------------


@dataclass(frozen=True)
class McNemarRule(AccuracyTest):
    """A McNemar test: p-values, the statistic, the rejection region ``min(b, c) <= c_d``.

    ``needs_n``: the p-value depends on the number of items ``n`` too (not
    only on the discordant counts).
    """

    needs_n: bool = False

    def pvalue(self, b: np.ndarray, c: np.ndarray, *, n: int | None) -> np.ndarray:
        """Two-sided p-values of discordant counts (validated float arrays)."""
        raise NotImplementedError

    def statistic(self, b: int, c: int) -> float:
        """The statistic as statsmodels reports it."""
        raise NotImplementedError

    def thresholds(self, d_max: int, alpha: float, *, n: int | None) -> np.ndarray:
        """``c_d`` for ``d = 0..d_max`` (-1: never rejects)."""
        raise NotImplementedError

    def thresholds_over(self, d: np.ndarray, alpha: float, *, n: int) -> np.ndarray:
        """``c_d`` for the numbers discordant ``d`` (ascending) on ``n`` items."""
        raise NotImplementedError

    def significant(self, b: np.ndarray, c: np.ndarray, alpha: float, *, n: int) -> np.ndarray:
        """Which simulated tables (counts ``b``, ``c`` on ``n`` items) the test rejects."""
        raise NotImplementedError


#: conditional p-value formulas of ``m = min(b, c)`` and ``d = b + c`` (inside np.errstate)
PFormula = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _p_exact(m: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.asarray(2.0 * stats.binom.cdf(m, d, 0.5))


def _p_mid(m: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.asarray(2.0 * (stats.binom.cdf(m, d, 0.5) - 0.5 * stats.binom.pmf(m, d, 0.5)))


def _p_chi2(m: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.asarray(stats.chi2.sf((d - 2.0 * m) ** 2 / d, 1))


def _p_chi2_cc(m: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.asarray(stats.chi2.sf(np.maximum(d - 2.0 * m - 1.0, 0.0) ** 2 / d, 1))


#: above this many discordant items a conditional test's thresholds are found for the
#: window of ``d`` that matters only (no 0..d_max array)
_WINDOW_ABOVE = 1 << 14


@dataclass(frozen=True)
class ConditionalMcNemar(McNemarRule):
    """A test conditional on the number discordant: the p-value is a function of ``(m, d)``.

    ``formula(m, d)``: the two-sided p-value before ties are set to 1.
    ``correction``: ``None`` reports ``min(b, c)`` as the statistic; a number
    reports the chi-square statistic ``(|b - c| - correction)^2 / d``.
    """

    formula: PFormula = field(default=_p_exact, repr=False)
    correction: float | None = None

    def p_md(self, m: Any, d: Any) -> np.ndarray:
        """p-value from the smaller discordant count ``m`` and the number discordant ``d``.

        A tie ``2 m = d`` (and ``d = 0``) has p-value 1.
        """
        m = np.asarray(m, dtype=float)
        d = np.asarray(d, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = self.formula(m, d)
        p = np.where((d > 0) & (2.0 * m < d), p, 1.0)
        return np.minimum(p, 1.0)

    def pvalue(self, b: np.ndarray, c: np.ndarray, *, n: int | None) -> np.ndarray:
        return self.p_md(np.minimum(b, c), b + c)

    def statistic(self, b: int, c: int) -> float:
        d = b + c
        if self.correction is None:
            return float(min(b, c))
        if d == 0:
            return 0.0
        return max(abs(b - c) - self.correction, 0.0) ** 2 / d

    def thresholds(self, d_max: int, alpha: float, *, n: int | None) -> np.ndarray:
        size = 1 << max(int(d_max), 1).bit_length()      # bucket: reuse across nearby n
        return _thresholds(self.name, float(alpha), size)[: d_max + 1]

    def thresholds_at(self, d: np.ndarray, alpha: float) -> np.ndarray:
        """``c_d`` for the given ``d`` only, by vectorised bisection on the p-value itself."""
        d = np.asarray(d, dtype=np.int64)
        lo = np.full(d.shape, -1, dtype=np.int64)           # p(-1) is "0": always <= alpha
        hi = np.maximum((d - 1) // 2, -1)                   # largest m with m < d/2
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi + 1) // 2
            ok = self.p_md(mid, d) <= alpha
            lo = np.where(active & ok, mid, lo)
            hi = np.where(active & ~ok, mid - 1, hi)
        lo.setflags(write=False)
        return lo

    def thresholds_over(self, d: np.ndarray, alpha: float, *, n: int) -> np.ndarray:
        if d[-1] <= _WINDOW_ABOVE:
            return self.thresholds(int(d[-1]), alpha, n=n)[d]
        return self.thresholds_at(d, alpha)               # large n: its window only

    def significant(self, b: np.ndarray, c: np.ndarray, alpha: float, *, n: int) -> np.ndarray:
        return np.asarray(self.p_md(np.minimum(b, c), b + c) <= alpha)


@lru_cache(maxsize=32)
def _thresholds(test: str, alpha: float, size: int) -> np.ndarray:
    """``c_d`` for ``d = 0..size`` of the conditional test ``test`` (cached; read-only)."""
    rule = ACCURACY_TESTS[test]
    assert isinstance(rule, ConditionalMcNemar)
    return rule.thresholds_at(np.arange(size + 1), alpha)


@dataclass(frozen=True)
class UnconditionalMcNemar(McNemarRule):
    """Suissa & Shuster's (1991) exact unconditional test: needs ``n``, all paired items."""

    def pvalue(self, b: np.ndarray, c: np.ndarray, *, n: int | None) -> np.ndarray:
        if n is None:
            raise InputError(f"test={self.name!r} needs n, the number of paired items "
                             "(concordant ones included): pass n=....")
        flat = [unconditional_pvalue(int(x), int(y), int(n))
                for x, y in zip(b.ravel(), c.ravel(), strict=True)]
        return np.asarray(flat, dtype=float).reshape(b.shape)

    def statistic(self, b: int, c: int) -> float:
        d = b + c
        return 0.0 if d == 0 else (b - c) / d ** 0.5

    def thresholds(self, d_max: int, alpha: float, *, n: int | None) -> np.ndarray:
        if n is None:
            raise InputError(f"test={self.name!r} needs n=<number of paired items>.")
        return unconditional_thresholds(int(n), float(alpha), d_max)

    def thresholds_over(self, d: np.ndarray, alpha: float, *, n: int) -> np.ndarray:
        return self.thresholds(int(d[-1]), alpha, n=n)[d]

    def significant(self, b: np.ndarray, c: np.ndarray, alpha: float, *, n: int) -> np.ndarray:
        return np.asarray(np.minimum(b, c) <= self.thresholds(n, alpha, n=n)[b + c])


# --- closed-form tests (the normal model) -----------------------------------------------


@dataclass(frozen=True)
class ClosedFormRule(AccuracyTest):
    """A test whose power is the normal model's (:func:`~.closedform.normal_model`)."""

    @property
    def closed_form(self) -> bool:
        return True

    def variances(self, plan: PlanLike, delta: float) -> tuple[float, float]:
        """``(var0, var1)``: the null and alternative variances (times ``n``) at ``delta``."""
        raise NotImplementedError

    def sample_n(self, plan: PlanLike, delta: float, target: float) -> float:
        """The (continuous) ``n`` at which ``delta`` reaches power ``target``."""
        raise NotImplementedError


@dataclass(frozen=True)
class McNemarNormal(ClosedFormRule):
    """Connor's (1987) normal approximation to McNemar's test at a given agreement."""

    def variances(self, plan: PlanLike, delta: float) -> tuple[float, float]:
        pa = plan.agreement_at(delta)
        assert pa is not None
        psi = 1.0 - pa
        return psi, psi - delta * delta

    def sample_n(self, plan: PlanLike, delta: float, target: float) -> float:
        pa = plan.agreement_at(delta)
        assert pa is not None
        return connor_n(delta, 1.0 - pa, plan.alpha, target)


@dataclass(frozen=True)
class Lachenbruch(ClosedFormRule):
    """Lachenbruch's (1992) no-prior bounds on the discordant share (``bound=``, ``formula=``)."""

    def _psi(self, plan: PlanLike, delta: float, formula: str) -> float:
        assert plan.baseline is not None and plan.bound is not None
        return lachenbruch_discordance(plan.baseline, delta, plan.bound,  # type: ignore[arg-type]
                                       formula)  # type: ignore[arg-type]

    def variances(self, plan: PlanLike, delta: float) -> tuple[float, float]:
        psi = self._psi(plan, delta, plan.formula)
        # biostatUZH: n = (z_a + z_b)^2 psi / delta^2, i.e. the same variance under H1
        return psi, psi if plan.formula == "biostatuzh" else psi - delta * delta

    def sample_n(self, plan: PlanLike, delta: float, target: float) -> float:
        if plan.formula == "biostatuzh":
            psi = self._psi(plan, delta, "biostatuzh")
            zb = float(stats.norm.ppf(target))
            return (z_crit(plan.alpha) + zb) ** 2 * psi / (delta * delta)
        return connor_n(delta, self._psi(plan, delta, "connor"), plan.alpha, target)


@dataclass(frozen=True)
class TwoProportion(ClosedFormRule):
    """Two independent samples (R's ``power.prop.test``, ``n`` per group)."""

    def variances(self, plan: PlanLike, delta: float) -> tuple[float, float]:
        assert plan.baseline is not None
        return prop_variances(plan.baseline, plan.baseline + delta)

    def sample_n(self, plan: PlanLike, delta: float, target: float) -> float:
        assert plan.baseline is not None
        p2 = plan.baseline + delta
        if not 0.0 < p2 < 1.0:
            raise InputError(f"baseline + delta = {p2:g} must lie in (0, 1).")
        return float(optimize.brentq(lambda m: plan.power(m, delta) - target,
                                     2.0, 1e9, xtol=1e-10))


#: The registry: every ``test=`` of the accuracy functions (McNemar tests first).
ACCURACY_TESTS: dict[str, AccuracyTest] = {rule.name: rule for rule in (
    ConditionalMcNemar("exact", "exact conditional (binomial) test, statsmodels' default",
                       formula=_p_exact),
    ConditionalMcNemar("mid-p", "mid-p binomial test (Fagerland, Lydersen & Laake 2013)",
                       formula=_p_mid),
    ConditionalMcNemar("chi2", "(b - c)^2 / d against chi-square(1)", formula=_p_chi2,
                       correction=0.0),
    ConditionalMcNemar("chi2-cc", "(|b - c| - 1)^2 / d against chi-square(1) (Edwards)",
                       formula=_p_chi2_cc, correction=1.0),
    UnconditionalMcNemar("exact-unconditional",
                         "Suissa & Shuster's (1991) exact unconditional test", needs_n=True),
    McNemarNormal("mcnemar-normal", "Connor's (1987) normal approximation"),
    Lachenbruch("lachenbruch", "Lachenbruch's (1992) no-prior bounds (biostatUZH)",
                no_agreement="no prior on agreement", bounds=True),
    TwoProportion("two-proportion", "unpaired two-proportion test (R's power.prop.test)",
                  title="Two-proportion", unit="items per group", per_n="per group",
                  no_agreement="unpaired samples"),
)}

#: How results name a test that is not in the registry (e.g. ``"lachenbruch-mid"``).
_DEFAULT = AccuracyTest("")


def get_accuracy_test(name: Any) -> AccuracyTest:
    """The :class:`AccuracyTest` called ``name`` (did-you-mean on a misspelling).

    Examples
    --------
    >>> round(get_accuracy_test("chi2-cc").statistic(10, 2), 4)     # (|10 - 2| - 1)^2 / 12
    4.0833
    >>> get_accuracy_test("two-proportion").closed_form
    True
    """
    if isinstance(name, AccuracyTest):
        return name
    return ACCURACY_TESTS[check_choice("test", name, tuple(ACCURACY_TESTS))]


def describe(label: str) -> AccuracyTest:
    """The rule behind a result's ``test`` label (titles and units; a default for others)."""
    return ACCURACY_TESTS.get(label, _DEFAULT)
