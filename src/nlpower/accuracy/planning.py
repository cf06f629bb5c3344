"""Minimum detectable effect and sample size for accuracy comparisons (Card et al. 2020, App. E).

One power function per planning test, each solved for delta (:func:`mde`) or
for n (:func:`sample_size`):

* the McNemar tests (``"exact"``, ``"mid-p"``, ``"chi2"``, ``"chi2-cc"``): exact
  power by enumeration (:func:`nlpower.accuracy.power`) at an agreement that
  is a number or a regression prior evaluated at each candidate delta;
* ``"mcnemar-normal"``: Connor's (1987) normal approximation,
  ``Phi((sqrt(n) |delta| - z_{1-alpha/2} sqrt(psi)) / sqrt(psi - delta^2))`` with
  ``psi = 1 - agreement`` the discordant share (Connor 1987, eq. 3; Chow, Shao &
  Wang 2008, section 4.5);
* ``"lachenbruch"``: the no-prior bounds of Lachenbruch (1992) that Card et al.
  took from biostatUZH's ``sampleSizeMcNemar`` (App. E.3): ``psi`` at the lower,
  middle or upper end of what the two accuracies allow -- ``|delta|`` (maximal
  agreement), ``min(a2, 1 - a1) + min(a1, 1 - a2)`` (minimal agreement) or the
  middle.  ``formula="biostatuzh"`` (default, what Table 9 used) is that
  function: ``n = (z_{1-alpha/2} + z_{power})^2 psi / delta^2``, with the
  both-correct cell ``p11`` on biostatUZH's grid of step 1e-4 (so ``psi`` of the
  middle and upper bounds moves in steps of 2e-4) and the middle taken as the
  grid's median element; ``formula="connor"`` is Connor's formula above at the
  exact ``psi`` (the package's default before 0.x);
* ``"two-proportion"``: unpaired samples, R's ``power.prop.test`` (n per group,
  ``strict = FALSE``), App. E.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
from scipy import optimize

from .._choices import (
    AccuracyPlanTest,
    AgreementPrior,
    LachenbruchBound,
    LachenbruchFormula,
    check_choice,
)
from .._validation import check_int, check_real
from ..errors import InputError
from ..intervals import ConfidenceInterval
from .closedform import lachenbruch_discordance, normal_model
from .fitprior import AgreementPriorFit
from .power import AccuracyPowerResult, resolve_agreement
from .power import power as mcnemar_power
from .priors import AGREEMENT_PRIORS, TABLE9, Table9Row, glue_effect, squad_effect
from .rules import ACCURACY_TESTS, AccuracyTest, ClosedFormRule, get_accuracy_test
from .table import paired_table

__all__ = [
    "AccuracyMDEResult",
    "AccuracySampleSizeResult",
    "closed_form_power",
    "lachenbruch_discordance",
    "mde",
    "sample_size",
    "table9",
]

@dataclass(frozen=True)
class _Plan:
    """A validated planning problem: power as a function of (n, delta)."""

    test: str
    baseline: float | None
    agreement: float | str | AgreementPriorFit | None
    bound: str | None
    alpha: float
    formula: str = "biostatuzh"

    def agreement_at(self, delta: float) -> float | None:
        if self.agreement is None:
            return None
        return resolve_agreement(self.agreement, self.baseline, delta)[0]

    @property
    def rule(self) -> AccuracyTest:
        return get_accuracy_test(self.test)

    def normal_model(self, n: float, delta: float) -> tuple[float, float, float, float]:
        """(power, rejection rate, Type-M, Type-S) of a closed-form test."""
        rule = self.rule
        assert isinstance(rule, ClosedFormRule)
        var0, var1 = rule.variances(self, delta)
        return normal_model(n, delta, var0, var1, self.alpha)

    def power(self, n: float, delta: float) -> float:
        if self.rule.closed_form:
            return self.normal_model(n, delta)[0]
        pa = self.agreement_at(delta)
        assert pa is not None
        return mcnemar_power(int(n), delta, pa, alpha=self.alpha, test=self.test).power  # type: ignore[arg-type]

    def max_delta(self) -> float:
        """Largest delta whose off-diagonal cells (or new accuracy) exist."""
        if self.agreement is None:
            assert self.baseline is not None
            return 1.0 - self.baseline
        if isinstance(self.agreement, (str, AgreementPriorFit)):
            b0, b1, b2 = (self.agreement.coefficients if isinstance(self.agreement, AgreementPriorFit)
                          else AGREEMENT_PRIORS[self.agreement])
            assert self.baseline is not None
            a0, k = b0 + b1 * self.baseline, -b2       # disc(delta) = 1 - a0 + k delta
            cap = (1.0 - a0) / (1.0 - k) if k < 1.0 else 1.0
            cap = min(cap, (a0 - 0.0) / k if k > 0 else 1.0, 1.0)  # agreement stays >= 0
            return cap * (1.0 - 1e-12)
        return 1.0 - float(self.agreement)


def _validate(n_or_none: Any, baseline: Any, agreement: Any, test: Any, bound: Any, alpha: Any,
              target: Any, formula: Any = None) -> _Plan:
    test = check_choice("test", test, AccuracyPlanTest)
    rule = get_accuracy_test(test)
    alpha = check_real("alpha", alpha, min=0.0, max=1.0, min_open=True, max_open=True)
    check_real("target_power", target, min=0.0, max=1.0, min_open=True, max_open=True)
    with_bounds = " or ".join(repr(r.name) for r in ACCURACY_TESTS.values() if r.bounds)
    if formula is None:
        formula = "biostatuzh"
    elif not rule.bounds:
        raise InputError(f"formula={formula!r} applies only to test={with_bounds}; got "
                         f"test={test!r}. Drop formula=.")
    else:
        formula = check_choice("formula", formula, LachenbruchFormula)
    if baseline is not None:
        baseline = check_real("baseline", baseline, min=0.0, max=1.0, min_open=True, max_open=True)
    if rule.no_agreement:
        if baseline is None:
            raise InputError(f"test={test!r} needs the baseline accuracy: pass baseline=....")
        if agreement is not None:
            raise InputError(
                f"agreement={agreement!r} is not used by test={test!r}, which assumes "
                f"{rule.no_agreement}; "
                "drop agreement or use a McNemar test (test='exact', 'mid-p', 'mcnemar-normal', ...)."
            )
    elif agreement is None:
        raise InputError(
            f"test={test!r} needs the agreement rate: pass agreement=<number in [0, 1]> or a prior "
            "name ('glue', 'squad'); with no prior use test='lachenbruch' and a bound."
        )
    elif isinstance(agreement, (str, AgreementPriorFit)):
        if isinstance(agreement, str):
            check_choice("agreement", agreement, AgreementPrior)
        if baseline is None:
            raise InputError(f"agreement={agreement!r} is a regression prior and needs baseline=....")
    else:
        agreement = check_real("agreement", agreement, min=0.0, max=1.0, max_open=True)
    if rule.bounds:
        if bound is None:
            raise InputError(f"test={test!r} needs bound='lower', 'mid' or 'upper'.")
        bound = check_choice("bound", bound, LachenbruchBound)
    elif bound is not None:
        raise InputError(f"bound={bound!r} applies only to test={with_bounds}; got test={test!r}.")
    return _Plan(test, baseline, agreement, bound, alpha, formula)


# --- results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AccuracyMDEResult:
    """Smallest accuracy gain reaching the target power on ``n`` items."""

    delta: float
    n: int
    baseline: float | None
    agreement: float | None
    agreement_source: str
    target_power: float
    achieved_power: float
    test: str
    bound: str | None
    alpha: float
    feasible: bool = True
    notes: tuple[str, ...] = ()

    @property
    def new_accuracy(self) -> float | None:
        return None if self.baseline is None else self.baseline + self.delta

    def summary(self) -> str:
        test = self.test + ("" if self.bound is None else f" ({self.bound} bound)")
        lines = [f"Minimum detectable accuracy gain ({test} test, alpha {self.alpha:g}, "
                 f"power {self.target_power:g})",
                 f"  n {self.n}" + ("" if self.baseline is None else f", baseline {self.baseline:g}")]
        lines.append(f"  MDE {self.delta:.5f} ({100 * self.delta:.3f} points)"
                     + ("" if self.agreement is None else
                        f" at agreement {self.agreement:.4g} ({self.agreement_source})"))
        lines.append(f"  power at the MDE {self.achieved_power:.4f}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{
            "delta": self.delta, "n": self.n, "baseline": self.baseline,
            "new_accuracy": self.new_accuracy, "agreement": self.agreement,
            "agreement_source": self.agreement_source, "target_power": self.target_power,
            "achieved_power": self.achieved_power, "test": self.test, "bound": self.bound,
            "alpha": self.alpha, "feasible": self.feasible, "notes": "; ".join(self.notes)}])

    def __repr__(self) -> str:
        return (f"AccuracyMDEResult(delta={self.delta:.5f}, n={self.n}, test={self.test!r}"
                + ("" if self.bound is None else f", bound={self.bound!r}") + ")")


@dataclass(frozen=True)
class AccuracySampleSizeResult:
    """Test-set size reaching the target power (``n`` per group for two-proportion)."""

    n: float
    n_required: int
    delta: float
    baseline: float | None
    agreement: float | None
    target_power: float
    achieved_power: float
    test: str
    bound: str | None
    alpha: float

    def summary(self) -> str:
        test = self.test + ("" if self.bound is None else f" ({self.bound} bound)")
        per = " " + get_accuracy_test(self.test).per_n
        return (f"Sample size ({test} test, alpha {self.alpha:g}, power {self.target_power:g})\n"
                f"  delta {self.delta:g}" + ("" if self.agreement is None else
                                              f", agreement {self.agreement:.4g}")
                + f"\n  n = {self.n:.2f} -> {self.n_required}{per} "
                  f"(power {self.achieved_power:.4f})")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{k: getattr(self, k) for k in (
            "n", "n_required", "delta", "baseline", "agreement", "target_power",
            "achieved_power", "test", "bound", "alpha")}])

    def __repr__(self) -> str:
        return f"AccuracySampleSizeResult(n_required={self.n_required}, test={self.test!r})"


# --- solvers ----------------------------------------------------------------------------


def mde(
    n: int,
    baseline: float | None = None,
    *,
    agreement: float | AgreementPrior | None = None,
    test: AccuracyPlanTest = "exact",
    target_power: float = 0.8,
    bound: LachenbruchBound | None = None,
    formula: LachenbruchFormula | None = None,
    alpha: float = 0.05,
) -> AccuracyMDEResult:
    """Smallest accuracy gain delta > 0 whose power reaches ``target_power`` on ``n`` items.

    Parameters
    ----------
    n : int
        Test-set size (per group for ``test="two-proportion"``).
    baseline : float
        Accuracy of the current model (SOTA).  Needed by the priors,
        ``"two-proportion"`` and ``"lachenbruch"``.
    agreement : float or {"glue", "squad"}, optional
        For the McNemar tests: a fixed agreement, or a regression prior
        re-evaluated at each candidate delta (Card et al. 2020, Tables 5-6).
    test : str
        ``"exact"``, ``"mid-p"``, ``"chi2"``, ``"chi2-cc"``, ``"exact-unconditional"``,
        ``"mcnemar-normal"``, ``"two-proportion"`` or ``"lachenbruch"`` (module docstring).
    target_power : float
        Target power.
    bound : {"lower", "mid", "upper"}
        Lachenbruch bound (``test="lachenbruch"`` only).
    formula : {"biostatuzh", "connor"}, optional
        Lachenbruch sample-size formula (``test="lachenbruch"`` only; default
        ``"biostatuzh"``, the one behind Card et al.'s Table 9).

    Examples
    --------
    Card et al. (2020), Table 9, MRPC (1,725 items, SOTA 92.0%), binomial column:

    >>> round(100 * mde(1725, 0.92, test="two-proportion").delta, 2)
    2.4
    """
    n = check_int("n", n, min=1)
    plan = _validate(n, baseline, agreement, test, bound, alpha, target_power, formula)
    hi = plan.max_delta()
    if hi <= 0:
        raise InputError(f"no positive delta is possible with agreement={agreement!r}.")
    top = plan.power(n, hi)
    if top < target_power:
        raise InputError(
            f"no delta up to {hi:.4g} (the largest the table allows) reaches "
            f"target_power={target_power:g} with "
            f"n={n} and test={plan.test!r}: the power there is {top:.4f}. Increase n."
        )
    lo = min(1e-9, hi / 2)
    if plan.power(n, lo) >= target_power:  # reached with no effect: alpha/2 sign-correct rejections
        raise InputError(
            f"target_power={target_power:g} is reached with no difference at all (power at delta 0 is "
            f"{plan.power(n, lo):.3g}), so there is no smallest detectable delta. Choose a target "
            "power above alpha, e.g. 0.8.")
    delta = float(optimize.brentq(lambda x: plan.power(n, x) - target_power, lo, hi, xtol=1e-12))
    pa = plan.agreement_at(delta)
    feasible, notes = True, []
    if pa is not None and baseline is not None:
        try:
            paired_table(delta, pa, baseline)
        except InputError as exc:
            feasible = False
            notes.append(f"the 2x2 table at the MDE does not exist ({exc}); McNemar's test "
                         "uses only the discordant cells, so the MDE is reported as the paper does")
    source = (agreement if isinstance(agreement, str) else "none" if agreement is None
              else f"prior ({agreement.name})" if isinstance(agreement, AgreementPriorFit)
              else "given")
    return AccuracyMDEResult(delta, n, plan.baseline, pa, source, target_power, plan.power(n, delta),
                             plan.test, plan.bound, plan.alpha, feasible, tuple(notes))


def sample_size(
    delta: float,
    baseline: float | None = None,
    *,
    agreement: float | AgreementPrior | None = None,
    test: AccuracyPlanTest = "exact",
    target_power: float = 0.8,
    bound: LachenbruchBound | None = None,
    formula: LachenbruchFormula | None = None,
    alpha: float = 0.05,
    n_max: int = 10_000_000,
) -> AccuracySampleSizeResult:
    """Test-set size at which a gain ``delta`` reaches ``target_power``.

    Closed-form tests return the continuous solution ``n`` (as R does) and
    ``n_required = ceil(n)``; the exact McNemar tests bisect on integer n (their
    power saw-tooths in n, so ``achieved_power`` is reported at ``n_required``).

    Examples
    --------
    Chow, Shao & Wang (2008), section 4.5: p10 = 0.5, p01 = 0.2 (agreement 0.3) -> 59 pairs:

    >>> sample_size(0.3, agreement=0.3, test="mcnemar-normal").n_required
    59
    """
    delta = check_real("delta", delta, min=-1.0, max=1.0)
    if delta == 0:
        raise InputError("delta must be non-zero: no sample size detects a zero difference.")
    plan = _validate(None, baseline, agreement, test, bound, alpha, target_power, formula)
    n_max = check_int("n_max", n_max, min=1)
    pa = plan.agreement_at(delta)
    if pa is not None:
        paired_table(delta, pa, None)
    rule = plan.rule
    if isinstance(rule, ClosedFormRule):
        n = rule.sample_n(plan, delta, target_power)
    else:
        n = float(_bisect_n(plan, delta, target_power, n_max))
    n_required = max(int(math.ceil(n - 1e-9)), 1)
    return AccuracySampleSizeResult(n, n_required, delta, plan.baseline, pa, target_power,
                                    plan.power(n_required, delta), plan.test, plan.bound, alpha)


def _bisect_n(plan: _Plan, delta: float, target: float, n_max: int) -> int:
    hi = 16
    while plan.power(hi, delta) < target:
        if hi >= n_max:
            raise InputError(f"no n up to n_max={n_max} reaches target_power={target:g}; "
                             "raise n_max.")
        hi = min(hi * 2, n_max)
    lo = hi // 2 if hi > 16 else 0
    while hi - lo > 1:                      # power(lo) < target <= power(hi)
        mid = (lo + hi) // 2
        if plan.power(mid, delta) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def closed_form_power(
    n: int,
    delta: float,
    *,
    baseline: float | None = None,
    agreement: float | AgreementPrior | None = None,
    test: AccuracyPlanTest = "two-proportion",
    bound: LachenbruchBound | None = None,
    formula: LachenbruchFormula | None = None,
    alpha: float = 0.05,
) -> AccuracyPowerResult:
    """Power from a closed-form test (``"two-proportion"``, ``"lachenbruch"``, ``"mcnemar-normal"``).

    The tests' normal model (``delta_hat ~ N(delta, var1 / n)``, rejection when
    ``|delta_hat| > z sqrt(var0 / n)``) also gives Type-M and Type-S in closed form.

    Examples
    --------
    >>> round(closed_form_power(1725, 0.024, baseline=0.92).power, 3)   # power.prop.test
    0.8
    """
    n = check_int("n", n, min=1)
    delta = check_real("delta", delta, min=-1.0, max=1.0)
    plan = _validate(n, baseline, agreement, test, bound, alpha, 0.5, formula)
    if not plan.rule.closed_form:
        raise InputError(f"test={test!r} is a McNemar test: use nlpower.accuracy.power(...).")
    pa = plan.agreement_at(delta)
    cells = (math.nan, math.nan) if pa is None else (
        (1 - pa + delta) / 2, (1 - pa - delta) / 2)
    if pa is not None:
        paired_table(delta, pa, baseline)
    pw, reject, type_m, type_s = plan.normal_model(n, delta)
    if delta == 0:
        pw = math.nan
    return AccuracyPowerResult(
        power=pw, se=0.0, ci=ConfidenceInterval(pw, pw), type_m=type_m, type_s=type_s,
        rejection_rate=reject, n=n, delta=delta, agreement=math.nan if pa is None else pa,
        only_new=cells[0], only_old=cells[1], test=plan.test if plan.bound is None
        else f"lachenbruch-{plan.bound}", alpha=plan.alpha, method="closed-form",
        baseline=plan.baseline,
        agreement_source="given" if not isinstance(agreement, str) else agreement,
        notes=("closed-form normal approximation",),
    )


#: Above this many items the exact unconditional column uses the normal approximation, as
#: the paper did for QQP (App. E.2.1); its critical value is the normal one there to 4 decimals.
TABLE9_NORMAL_ABOVE = 100_000


def table9(*, target_power: float = 0.8, alpha: float = 0.05,
           regression_test: AccuracyPlanTest = "mid-p",
           lachenbruch_formula: LachenbruchFormula = "biostatuzh") -> pd.DataFrame:
    """Card et al. (2020) Table 9 recomputed, beside the printed values (percentage points).

    Columns ``binomial`` (``test="two-proportion"``), ``lachenbruch``,
    ``lachenbruch_lower``, ``lachenbruch_upper`` (``test="lachenbruch"`` with
    ``lachenbruch_formula``), ``regression`` (``regression_test`` at the task's
    agreement prior; ``"mid-p"`` is the rejection region of MESS's
    ``power_mcnemar_test(method="exact")``, which the paper ran -- see
    ``docs/accuracy.md``), ``regression_unconditional`` (Suissa & Shuster's exact
    unconditional test; the normal approximation above
    :data:`TABLE9_NORMAL_ABOVE` items, i.e. for QQP, as the paper did),
    ``regression_normal`` (``test="mcnemar-normal"``) and ``delta_hat``
    (Tables 7-8), each printed column with ``*_printed``.
    """
    rows: list[dict[str, Any]] = []
    for t in TABLE9:
        def m(row: Table9Row = t, **kw: Any) -> float:
            return 100.0 * mde(row.n, row.sota, target_power=target_power, alpha=alpha,
                               **kw).delta
        dh = squad_effect(t.sota) if t.prior == "squad" else glue_effect(t.task, t.sota)
        unc = "exact-unconditional" if t.n <= TABLE9_NORMAL_ABOVE else "mcnemar-normal"
        lach: dict[str, Any] = {"test": "lachenbruch", "formula": lachenbruch_formula}
        rows.append({
            "task": t.task, "n": t.n, "sota": 100 * t.sota,
            "binomial": m(test="two-proportion"), "binomial_printed": t.mde_binomial,
            "lachenbruch": m(bound="mid", **lach),
            "lachenbruch_printed": t.mde_lachenbruch,
            "lachenbruch_lower": m(bound="lower", **lach),
            "lachenbruch_lower_printed": t.mde_lachenbruch_lower,
            "lachenbruch_upper": m(bound="upper", **lach),
            "lachenbruch_upper_printed": t.mde_lachenbruch_upper,
            "regression": m(test=regression_test, agreement=t.prior),
            "regression_unconditional": m(test=unc, agreement=t.prior),
            "regression_normal": m(test="mcnemar-normal", agreement=t.prior),
            "regression_printed": t.mde_regression,
            "delta_hat": 100 * dh, "delta_hat_printed": t.delta_hat,
        })
    return pd.DataFrame(rows)
