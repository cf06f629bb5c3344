"""Power, Type-M and Type-S of McNemar's test on a paired test set (Card et al. 2020, section 3).

Two ways to the same numbers:

* ``method="exact"`` enumerates the outcome: the number of discordant items
  ``D ~ Binomial(n, 1 - Pa)`` and, given ``D = d``, the items only the new model
  gets right ``B ~ Binomial(d, q)`` with ``q = p(only new) / (1 - Pa)``.  The test
  rejects iff ``min(B, d - B) <= c_d`` (the test rule's thresholds, :mod:`nlpower.accuracy.rules`),
  so power is ``sum_d P(D = d) P(reject, right sign | d)`` -- binomial CDFs,
  O(n), no Monte Carlo error.  Type-M is the exact expectation of
  ``|delta_hat| / |delta|`` over significant outcomes (``delta_hat = (B - C) / n``),
  from ``E[K 1(K <= c)] = d p F(c - 1; d - 1, p)``.
* ``method="simulate"`` is the paper's algorithm (Fig. 2): draw ``n_sims`` tables
  from the multinomial, test each (vectorised), count sign-correct rejections.

Power counts only rejections with the sign of ``delta`` (Card et al. 2020, Fig. 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from .. import __version__
from .._choices import AccuracyMethod, AgreementPrior, McNemarTest, check_choice
from .._records import RecordCodec, RecordLayout
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int, check_real
from ..errors import InputError
from ..intervals import ConfidenceInterval, mc_se, wilson_ci
from ..montecarlo import MonteCarloSummary
from .fitprior import AgreementPriorFit
from .priors import agreement_prior
from .rules import McNemarRule, describe, get_accuracy_test
from .table import PairedTable, agreement_bounds, paired_table

__all__ = ["AccuracyPowerResult", "PowerBoundsResult", "power", "power_bounds", "resolve_agreement"]

#: Discordant counts with binomial probability below this (each tail) are skipped.
_TAIL = 1e-15


@dataclass(frozen=True)
class AccuracyPowerResult(RecordCodec):
    """Power of McNemar's test for two classifiers on ``n`` paired items.

    Attributes
    ----------
    power : float
        Probability of a rejection whose sign matches ``delta`` (NaN when delta is 0).
    se, ci : float, ConfidenceInterval
        Monte Carlo SE and 95% Wilson interval; 0 and zero width when exact.
    type_m : float
        Mean ``|delta_hat| / |delta|`` over significant outcomes (Gelman & Carlin 2014).
    type_s : float
        Share of significant outcomes with the wrong sign.
    rejection_rate : float
        Probability of any rejection (the size when delta is 0).
    n, delta, agreement, baseline : design
    only_new, only_old : float
        Off-diagonal cell probabilities (Card et al. 2020, section 3.1).
    test, alpha, method : what was computed; ``n_sims`` 0 when exact.
    seed, version : provenance (``seed`` empty for exact results).
    """

    power: float
    se: float
    ci: ConfidenceInterval
    type_m: float
    type_s: float
    rejection_rate: float
    n: int
    delta: float
    agreement: float
    only_new: float
    only_old: float
    test: str
    alpha: float
    method: str
    n_sims: int = 0
    n_rejected: int | None = None
    baseline: float | None = None
    agreement_source: str = "given"
    seed: dict[str, Any] = field(default_factory=dict)
    version: str = __version__
    notes: tuple[str, ...] = ()
    mc: MonteCarloSummary | None = field(default=None, repr=False, compare=False)

    #: the record's layout (``to_record``/``from_record``: ``nlpower._records.RecordCodec``)
    _record_layout = RecordLayout(
        first=("power", "ci_low", "ci_high", "se", "type_m", "type_s", "rejection_rate",
               "n_sims", "n_rejected", "n", "delta", "agreement", "only_new", "only_old",
               "baseline", "agreement_source"),
        raw=frozenset({"rejection_rate", "delta", "agreement", "only_new", "only_old", "alpha"}),
        summary="delta")

    @property
    def exact(self) -> bool:
        return self.n_sims == 0

    def summary(self) -> str:
        """A short text report."""
        how = ("exact enumeration" if self.exact else f"{self.n_sims} simulated test sets"
               ) if self.method != "closed-form" else "closed-form approximation"
        base = "" if self.baseline is None else f", baseline accuracy {self.baseline:g}"
        src = "" if self.agreement_source == "given" else f" ({self.agreement_source} prior)"
        rule = describe(self.test)
        lines = [f"{rule.title} power ({self.test} test, alpha {self.alpha:g}; {how})"]
        if math.isnan(self.agreement):          # no agreement: unpaired or Lachenbruch bound
            lines.append(f"  n {self.n} {rule.unit}, delta {self.delta:g}{base}")
        else:
            lines.append(f"  n {self.n} paired items, delta {self.delta:g}, agreement "
                         f"{self.agreement:.4g}{src}{base}")
            lines.append(f"  p(only new correct) {self.only_new:.4g}, p(only old correct) "
                         f"{self.only_old:.4g}")
        if self.delta == 0:
            lines.append(f"  delta is 0: rejection rate (size) {self.rejection_rate:.4f}")
        else:
            unc = "closed form" if self.method == "closed-form" else "exact" if self.exact else (
                f"MC SE {self.se:.3f}; 95% CI {self.ci.low:.3f}-{self.ci.high:.3f}")
            lines.append(f"  power   {self.power:.4f}  ({unc})")
            lines.append(f"  {self.mc.describe()}" if self.mc is not None else
                         f"  Type-M  {self.type_m:.3f}    Type-S  {self.type_s:.3g}"
                         if not math.isnan(self.type_m) else
                         "  Type-M  -    Type-S  - (undefined: no outcome of the test rejects, "
                         f"so n = {self.n} cannot detect anything; raise n)")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row."""
        rec = self.to_record()
        rec.pop("seed_spawn_key")
        rec["notes"] = "; ".join(self.notes)
        return pd.DataFrame([rec])

    def __repr__(self) -> str:
        core = f"power={self.power:.4f}" if self.exact else (
            f"power={self.power:.4f} [{self.ci.low:.4f}, {self.ci.high:.4f}]")
        return (f"AccuracyPowerResult({core}, type_m={self.type_m:.3f}, type_s={self.type_s:.3g}, "
                f"n={self.n}, delta={self.delta:g}, agreement={self.agreement:.4g}, "
                f"test={self.test!r}, method={self.method!r})")




def resolve_agreement(agreement: Any, baseline: float | None,
                      delta: float) -> tuple[float, str]:
    """(agreement, source): a number as given, or a named or fitted prior
    (:func:`~nlpower.accuracy.fit_agreement_prior`) evaluated at (baseline, delta)."""
    if isinstance(agreement, AgreementPriorFit):
        if baseline is None:
            raise InputError("a fitted agreement prior needs the baseline accuracy; pass "
                             "baseline=....")
        return agreement.agreement(check_real("baseline", baseline, min=0.0, max=1.0), delta), \
            f"prior ({agreement.name})"
    if isinstance(agreement, str):
        check_choice("agreement", agreement, AgreementPrior)
        if baseline is None:
            raise InputError(
                f"agreement={agreement!r} is a regression prior and needs the baseline accuracy; "
                "pass baseline=... (e.g. the current SOTA accuracy)."
            )
        return agreement_prior(agreement, baseline, delta), agreement  # type: ignore[arg-type]
    return check_real("agreement", agreement, min=0.0, max=1.0), "given"


def power(
    n: int,
    delta: float,
    agreement: float | AgreementPrior,
    *,
    baseline: float | None = None,
    alpha: float = 0.05,
    test: McNemarTest = "exact",
    method: AccuracyMethod = "exact",
    n_sims: int = 10_000,
    rng: RNGLike = None,
) -> AccuracyPowerResult:
    """Power, Type-M and Type-S of McNemar's test on ``n`` paired test items.

    Parameters
    ----------
    n : int
        Test-set size (items scored by both models).
    delta : float
        Expected accuracy gain of the new model over the old one.
    agreement : float, {"glue", "squad"} or AgreementPriorFit
        Expected share of items with the same outcome (Pa), or a regression
        prior (Card et al. 2020, Tables 5-6, or refitted with
        :func:`~nlpower.accuracy.fit_agreement_prior`; needs ``baseline``).
    baseline : float, optional
        Accuracy of the old model; checks the whole 2x2 table exists.
    alpha : float
        Significance level of the two-sided test.
    test : {"exact", "mid-p", "chi2", "chi2-cc", "exact-unconditional"}
        McNemar variant; ``"exact"`` is statsmodels' ``mcnemar`` default (the paper's
        notebook), ``"exact-unconditional"`` Suissa & Shuster (1991), the test behind
        the paper's Table 9 regression column (MESS).
    method : {"exact", "simulate"}
        Enumerate (no Monte Carlo error) or simulate ``n_sims`` test sets.
    n_sims : int
        Simulated test sets (``method="simulate"``).
    rng : seed or Generator
        Randomness for ``method="simulate"`` (``nlpower._rng`` policy).

    Returns
    -------
    AccuracyPowerResult

    Examples
    --------
    Card et al. (2020), App. C: 500 items, 2 points gain, 90% agreement:

    >>> r = power(500, 0.02, 0.9)
    >>> round(r.power, 2), round(r.type_m, 1)
    (0.25, 1.9)
    """
    n = check_int("n", n, min=1)
    delta = check_real("delta", delta, min=-1.0, max=1.0)
    alpha = check_real("alpha", alpha, min=0.0, max=1.0, min_open=True, max_open=True)
    test = check_choice("test", test, McNemarTest)
    method = check_choice("method", method, AccuracyMethod)
    pa, source = resolve_agreement(agreement, baseline, delta)
    table = paired_table(delta, pa, baseline)
    rule = cast(McNemarRule, get_accuracy_test(test))
    if method == "exact":
        return _exact(n, table, rule, alpha, source)
    n_sims = check_int("n_sims", n_sims, min=1)
    seq = root_seed(rng)
    return _simulate(n, table, rule, alpha, n_sims, seq, source)


def _exact(n: int, table: PairedTable, rule: McNemarRule, alpha: float, source: str
           ) -> AccuracyPowerResult:
    disc = table.discordant
    if disc <= 0.0:
        p_up = p_down = m_sum = 0.0
    else:
        d_lo = int(stats.binom.ppf(_TAIL, n, disc))
        d_hi = int(stats.binom.isf(_TAIL, n, disc)) if disc < 1.0 else n
        d = np.arange(max(d_lo, 0), min(d_hi, n) + 1)
        w = stats.binom.pmf(d, n, disc)
        c = rule.thresholds_over(d, alpha, n=n)
        q = min(max(table.only_new / disc, 0.0), 1.0)
        # "up": few items only the old model gets right (C <= c_d), i.e. the new model wins
        up = stats.binom.cdf(c, d, 1.0 - q)
        down = stats.binom.cdf(c, d, q)
        dm1 = np.maximum(d - 1, 0)
        with np.errstate(invalid="ignore"):
            tail_up = np.where(d > 0, stats.binom.cdf(c - 1, dm1, 1.0 - q), 0.0)
            tail_down = np.where(d > 0, stats.binom.cdf(c - 1, dm1, q), 0.0)
        # E[|B - C| 1(reject)] per d: E[(d - 2L) 1(L <= c)] with L the smaller side's count
        e_up = d * up - 2.0 * d * (1.0 - q) * tail_up
        e_down = d * down - 2.0 * d * q * tail_down
        p_up, p_down = float(w @ up), float(w @ down)
        m_sum = float(w @ (e_up + e_down))
    reject = p_up + p_down
    right, wrong = (p_up, p_down) if table.delta >= 0 else (p_down, p_up)
    pw, tm, ts = _summaries(table.delta, right, reject, wrong, m_sum / n)
    return AccuracyPowerResult(
        power=pw, se=0.0 if table.delta != 0 else math.nan,
        ci=ConfidenceInterval(pw, pw), type_m=tm, type_s=ts, rejection_rate=reject, n=n,
        delta=table.delta, agreement=table.agreement, only_new=table.only_new,
        only_old=table.only_old, test=rule.name, alpha=alpha, method="exact",
        baseline=table.baseline, agreement_source=source,
    )


def _summaries(delta: float, right: float, reject: float, wrong: float,
               mean_abs_sig: float) -> tuple[float, float, float]:
    """(power, Type-M, Type-S) from probabilities (or shares) of the outcomes."""
    if delta == 0:
        return math.nan, math.nan, math.nan
    if reject <= 0:
        return right, math.nan, math.nan
    return right, mean_abs_sig / (abs(delta) * reject), wrong / reject


def _simulate(n: int, table: PairedTable, rule: McNemarRule, alpha: float, n_sims: int,
              seq: np.random.SeedSequence, source: str) -> AccuracyPowerResult:
    gen = np.random.Generator(np.random.PCG64(seq))
    probs = [table.only_new, table.only_old, max(1.0 - table.discordant, 0.0)]
    counts = gen.multinomial(n, probs, size=n_sims)
    b, c = counts[:, 0], counts[:, 1]
    sig = rule.significant(b, c, alpha, n=n)
    est = (b - c) / n
    mc = MonteCarloSummary.from_draws(est, sig, effect=table.delta)   # b == c never rejects
    k = mc.n_rejected if table.delta != 0 else mc.n_significant
    return AccuracyPowerResult(
        power=mc.power, se=mc_se(k / n_sims, n_sims), ci=ConfidenceInterval(*wilson_ci(k, n_sims)),
        type_m=mc.type_m, type_s=mc.type_s, rejection_rate=mc.rejection_rate, n=n,
        delta=table.delta, agreement=table.agreement, only_new=table.only_new,
        only_old=table.only_old, test=rule.name, alpha=alpha, method="simulate", n_sims=n_sims,
        n_rejected=mc.n_rejected, baseline=table.baseline, agreement_source=source,
        seed=seed_record(seq), mc=mc,
    )


@dataclass(frozen=True)
class PowerBoundsResult:
    """Power at the smallest and the largest agreement two accuracies allow."""

    low: AccuracyPowerResult    # minimal agreement: the least power
    high: AccuracyPowerResult   # maximal agreement: the most power

    def summary(self) -> str:
        return (f"Power bounds when only the accuracies are known (n {self.low.n}, baseline "
                f"{self.low.baseline:g}, delta {self.low.delta:g}, {self.low.test} test):\n"
                f"  minimal agreement {self.low.agreement:.4g}: power {self.low.power:.4f}, "
                f"Type-M {self.low.type_m:.3f}\n"
                f"  maximal agreement {self.high.agreement:.4g}: power {self.high.power:.4f}, "
                f"Type-M {self.high.type_m:.3f}")

    def to_frame(self) -> pd.DataFrame:
        frame = pd.concat([self.low.to_frame(), self.high.to_frame()], ignore_index=True)
        frame.insert(0, "bound", ["minimal agreement", "maximal agreement"])
        return frame

    def __repr__(self) -> str:
        return (f"PowerBoundsResult(power=[{self.low.power:.4f}, {self.high.power:.4f}], "
                f"agreement=[{self.low.agreement:.4g}, {self.high.agreement:.4g}])")


def power_bounds(
    n: int,
    baseline: float,
    delta: float,
    *,
    alpha: float = 0.05,
    test: McNemarTest = "exact",
    method: AccuracyMethod = "exact",
    n_sims: int = 10_000,
    rng: RNGLike = None,
) -> PowerBoundsResult:
    """Power when only the two accuracies are known: at minimal and at maximal agreement.

    As in Card et al.'s accuracy notebook: the agreement lies in
    :func:`~nlpower.accuracy.agreement_bounds`; power is lowest at the smallest.

    Examples
    --------
    >>> b = power_bounds(500, 0.8, 0.02)
    >>> b.low.power < 0.1 < 0.9 < b.high.power
    True
    """
    bounds = agreement_bounds(baseline, delta)
    seq = root_seed(rng) if method == "simulate" else None
    rngs: list[Any] = seq.spawn(2) if seq is not None else [None, None]
    low, high = (power(n, delta, pa, baseline=baseline, alpha=alpha, test=test, method=method,
                       n_sims=n_sims, rng=r) for pa, r in zip(bounds, rngs, strict=True))
    return PowerBoundsResult(low, high)

