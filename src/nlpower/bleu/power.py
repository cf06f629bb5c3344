"""Power of the BLEU randomization test under the Delta–Laplace process (Card et al. 2020, §4).

For each of ``n_sims`` replicates: draw ``n`` swap effects from the
Delta–Laplace process (:mod:`nlpower.bleu.process`), compute the observed
difference ``dB_hat = -sum(delta) / 2`` and test it with the randomization
test in which swapping a subset changes the difference by the sum of its
effects (:mod:`nlpower.bleu._kernels`).  Power counts rejections at ``alpha``
whose ``dB_hat`` has the sign of ``dB`` (Fig. 2 of the paper).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import __version__
from .._choices import BleuMethod, check_choice
from .._records import RecordCodec, RecordLayout
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int, check_probability, check_real
from ..errors import InputError
from ..intervals import ConfidenceInterval, wilson_ci
from ..montecarlo import MonteCarloSummary
from . import _kernels
from .process import draw_effects, draw_parts, laplace_location

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["BleuMDEResult", "BleuPowerResult", "mde", "power"]


@dataclass(frozen=True)
class BleuPowerResult(RecordCodec):
    """Power of a BLEU comparison by simulation (Card et al. 2020, §4, App. G.2).

    Attributes
    ----------
    power : float
        Share of replicates with ``p <= alpha`` and ``sign(dB_hat) == sign(dB)``
        (NaN when ``delta == 0``; see ``rejection_rate``).
    se, ci : float, ConfidenceInterval
        Monte Carlo SE and 95% Wilson interval of ``power``.
    n_sims, n_rejected : int
        Replicates and sign-correct rejections.
    rejection_rate : float
        Share of replicates with ``p <= alpha`` (any sign): the Type I error when ``delta == 0``.
    type_m, type_s : float
        Mean ``|dB_hat| / |dB|`` and share of wrong-sign results among significant replicates.
    mean_estimate : float
        Mean ``dB_hat`` over replicates (``dB`` in expectation).
    n, delta, p0, b0, alpha : problem settings (``delta`` is dB in BLEU points).
    n_resamples : int
        Swap sets per replicate (0 for ``method="normal"``).
    method : str
        ``"randomization"`` or ``"normal"``.
    seed, version : dict, str
        :func:`nlpower._rng.seed_record` of ``rng`` and the nlpower version.
    normal_error_bound : float or None
        For ``"normal"``: the largest Berry–Esseen bound on the CDF error over replicates.
    estimates, pvalues : arrays or None
        Per-replicate ``dB_hat`` and p-values (not kept in records).
    """

    power: float
    se: float
    ci: ConfidenceInterval
    n_sims: int
    n_rejected: int
    rejection_rate: float
    type_m: float
    type_s: float
    mean_estimate: float
    n: int
    delta: float
    p0: float
    b0: float
    alpha: float
    n_resamples: int
    method: str
    seed: dict[str, Any]
    version: str
    normal_error_bound: float | None = None
    estimates: np.ndarray | None = field(default=None, repr=False, compare=False)
    pvalues: np.ndarray | None = field(default=None, repr=False, compare=False)
    mc: MonteCarloSummary | None = field(default=None, repr=False, compare=False)

    #: the record's layout (``to_record``/``from_record``: ``nlpower._records.RecordCodec``;
    #: the per-replicate arrays are not kept)
    _record_layout = RecordLayout(
        first=("power", "ci_low", "ci_high", "se", "type_m", "type_s", "n_sims", "n_rejected",
               "rejection_rate", "mean_estimate", "n", "delta", "p0", "b0", "alpha",
               "n_resamples", "method", "normal_error_bound"),
        last=("seed", "version"), nan="keep", seed="nested", summary="delta")

    def __repr__(self) -> str:
        return (f"BleuPowerResult(power={self.power:.3f}, ci=({self.ci.low:.3f}, {self.ci.high:.3f}), "
                f"n={self.n}, delta={self.delta:g}, p0={self.p0:g}, b0={self.b0:g}, "
                f"n_sims={self.n_sims}, method={self.method!r})")

    def proportion_ci(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Wilson interval of ``power`` (of the rejection rate when ``delta == 0``)."""
        if self.mc is not None:
            return self.mc.proportion_ci(confidence_level)
        confidence_level = check_probability("confidence_level", confidence_level)
        k = self.n_rejected if self.delta != 0 else round(self.rejection_rate * self.n_sims)
        return ConfidenceInterval(*wilson_ci(k, self.n_sims, confidence_level))

    def summary(self) -> str:
        """A short text report."""
        test = (f"randomization test, {self.n_resamples} swap sets" if self.method == "randomization"
                else "normal limit of the randomization test")
        lines = [
            f"BLEU power: n = {self.n} sentences, dB = {self.delta:g} BLEU, P0 = {self.p0:g}, "
            f"b0 = {self.b0:g}",
            f"  {test}, alpha {self.alpha:g}, {self.n_sims} replicates",
        ]
        if self.delta != 0:
            lines.append(f"  power   {self.power:.3f}  (MC SE {self.se:.3f}; 95% CI {self.ci.low:.3f}-"
                         f"{self.ci.high:.3f}); {self.n_rejected} sign-correct detections")
            lines.append(f"  {self.mc.describe()}" if self.mc is not None
                         else f"  Type-S  {self.type_s:.3f}    Type-M  {self.type_m:.2f}")
        else:
            ci = self.proportion_ci()
            lines.append(f"  dB = 0: Type I error {self.rejection_rate:.3f} (95% CI {ci.low:.3f}-"
                         f"{ci.high:.3f})")
        lines.append(f"  mean estimated difference {self.mean_estimate:.4g} BLEU points "
                     "(half the summed per-sentence swap effects)")
        if self.normal_error_bound is not None:
            lines.append(f"  normal limit: Berry-Esseen bound on the null CDF error <= "
                         f"{self.normal_error_bound:.2g}")
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row."""
        import pandas as pd  # imported on first use: power itself needs only numpy

        return pd.DataFrame([self.to_record()]).drop(columns=["seed"])


def _check_problem(n: Any, delta: Any, p0: Any, b0: Any, alpha: Any) -> tuple[int, float, float, float, float]:
    n = check_int("n", n, min=2)
    delta = check_real("delta", delta)
    p0 = check_real("p0", p0, min=0.0, max=1.0, max_open=True)
    b0 = check_real("b0", b0, min=0.0, min_open=True)
    alpha = check_probability("alpha", alpha)
    return n, delta, p0, b0, alpha


def summarise(estimates: np.ndarray, pvalues: np.ndarray, delta: float, alpha: float
              ) -> dict[str, Any]:
    """Power, its Wilson CI, Type-M and Type-S from per-replicate ``dB_hat`` and p-values.

    The fields of :class:`BleuPowerResult` that come from the
    :class:`~nlpower.montecarlo.MonteCarloSummary` (``mc``) of the replicates.
    """
    mc = MonteCarloSummary.from_draws(estimates, pvalues <= alpha, effect=delta)
    return {"power": mc.power, "se": mc.se, "ci": mc.ci, "n_sims": mc.n_sims,
            "n_rejected": mc.n_rejected, "rejection_rate": mc.rejection_rate,
            "type_m": mc.type_m, "type_s": mc.type_s, "mean_estimate": float(np.mean(estimates)),
            "mc": mc}


def power(n: int, delta: float, p0: float, b0: float, *, n_sims: int = 1000,
          n_resamples: int = 1000, alpha: float = 0.05, method: BleuMethod = "randomization",
          rng: RNGLike = None, keep_replicates: bool = True) -> BleuPowerResult:
    """Power of the paired randomization test to detect a BLEU difference ``delta``.

    Card et al. (2020), §4 and App. G.2: effects ``delta_i`` are 0 with
    probability ``p0``, else Laplace(``mu``, ``b0 / n``) with
    ``mu = -2 delta / (n (1 - p0))``; the observed difference is
    ``dB_hat = -sum(delta_i) / 2`` (``delta`` > 0: system A is better).

    Parameters
    ----------
    n : int
        Test-set size (sentences).
    delta : float
        True BLEU difference dB (BLEU points, 0-100 scale).
    p0, b0 : float
        Share of zero-effect sentences and the size-free Laplace scale
        (:func:`nlpower.bleu.preset` gives Table 3's values).
    n_sims, n_resamples : int
        Replicates, and swap sets per randomization test.
    alpha : float
        Two-sided level; only rejections with the sign of ``delta`` count.
    method : {"randomization", "normal"}
        The Monte Carlo randomization test (the paper's), or its normal limit
        ``p = 2 Phi(-|sum delta| / sqrt(sum delta^2))`` (exact null mean and
        variance; the reported Berry–Esseen bound says how far off it can be).
    rng : seed or Generator
        See :mod:`nlpower._rng`.
    keep_replicates : bool
        Keep per-replicate ``dB_hat`` and p-values on the result.

    Examples
    --------
    >>> res = power(2000, 1.0, 0.125, 25.8, n_sims=200, n_resamples=500, rng=1)
    >>> 0.6 < res.power < 0.9
    True

    Provenance: the paper reports about 0.75 at n = 2000, dB = 1 with the
    Table 3 averages (Fig. 4); ``docs/bleu.md`` lists what this gives.
    """
    n, delta, p0, b0, alpha = _check_problem(n, delta, p0, b0, alpha)
    n_sims = check_int("n_sims", n_sims, min=1)
    method = check_choice("method", method, BleuMethod)
    n_resamples = _check_resamples(n_resamples, alpha, method)
    seq = root_seed(rng)
    batch = _kernels.REPLICATE_BATCH
    n_batches = -(-n_sims // batch)
    children = seq.spawn(n_batches + 1)  # one stream per batch of effects, one for the signs
    signs = (_kernels.SharedSigns(children[-1], n_resamples, n)
             if method == "randomization" else None)
    per_block = max(1, _kernels.block_size(n) // batch)  # batches tested by one GEMM
    estimates = np.empty(n_sims)
    pvalues = np.empty(n_sims)
    bound = 0.0
    for first in range(0, n_batches, per_block):
        lo, hi = first * batch, min(n_sims, (first + per_block) * batch)
        deltas = np.concatenate([
            draw_effects(np.random.Generator(np.random.PCG64(children[i])),
                         min(batch, n_sims - i * batch), n, delta, p0, b0)
            for i in range(first, min(n_batches, first + per_block))])
        estimates[lo:hi] = -0.5 * deltas.sum(axis=1)
        if signs is not None:
            pvalues[lo:hi] = signs.pvalues(deltas)
        else:
            pvalues[lo:hi], b = _kernels.normal_pvalues(deltas)
            bound = max(bound, b)
    return BleuPowerResult(
        **summarise(estimates, pvalues, delta, alpha), n=n, delta=delta, p0=p0, b0=b0,
        alpha=alpha, n_resamples=n_resamples if method == "randomization" else 0,
        method=method, seed=seed_record(seq), version=__version__,
        normal_error_bound=bound if method == "normal" else None,
        estimates=estimates if keep_replicates else None,
        pvalues=pvalues if keep_replicates else None,
    )


@dataclass(frozen=True)
class BleuMDEResult(RecordCodec):
    """Minimum detectable BLEU difference for a test-set size.

    ``mde`` is the smallest ``dB > 0`` (to ``tol``) whose simulated power
    reaches ``target_power``, every candidate evaluated on the same draws
    (common random numbers); ``power`` and ``ci`` are at ``mde``.
    ``mde_ci`` is its Monte Carlo interval: the smallest ``dB`` whose power's
    95% Wilson interval reaches ``target_power`` from above (upper end) and
    from below (lower end) -- the pointwise interval of the power curve
    inverted at the target.
    """

    mde: float
    target_power: float
    power: float
    ci: ConfidenceInterval
    mde_ci: ConfidenceInterval
    n: int
    p0: float
    b0: float
    alpha: float
    n_sims: int
    n_resamples: int
    method: str
    tol: float
    seed: dict[str, Any]
    version: str

    #: the record's layout (``to_record``/``from_record``: ``nlpower._records.RecordCodec``)
    _record_layout = RecordLayout(nan="keep", seed="nested")

    def __repr__(self) -> str:
        return (f"BleuMDEResult(mde={self.mde:.3f}, target_power={self.target_power:g}, "
                f"power={self.power:.3f}, n={self.n}, p0={self.p0:g}, b0={self.b0:g})")

    def summary(self) -> str:
        """A short text report."""
        return "\n".join([
            f"BLEU minimum detectable difference: n = {self.n}, P0 = {self.p0:g}, b0 = {self.b0:g}",
            f"  {self.method} test, alpha {self.alpha:g}, {self.n_sims} replicates"
            + (f" x {self.n_resamples} swap sets" if self.method == "randomization" else ""),
            f"  MDE {self.mde:.3f} BLEU points for power {self.target_power:g} (Monte Carlo 95% "
            f"interval {self.mde_ci.low:.3f}-{self.mde_ci.high:.3f}; tolerance {self.tol:g})",
            f"  power there {self.power:.3f} (95% CI {self.ci.low:.3f}-{self.ci.high:.3f})",
        ])

    def to_frame(self) -> pd.DataFrame:
        """One tidy row."""
        import pandas as pd

        return pd.DataFrame([self.to_record()]).drop(columns=["seed", "version"])


#: Largest n_sims x n_resamples table of null statistics mde() keeps in memory.
_MDE_MAX_NULL = 10_000_000  # two float64 tables: 160 MB at the limit


def mde(n: int, p0: float, b0: float, *, target_power: float = 0.8, alpha: float = 0.05,
        n_sims: int = 1000, n_resamples: int = 1000, method: BleuMethod = "randomization",
        tol: float = 1e-3, rng: RNGLike = None) -> BleuMDEResult:
    """Smallest BLEU difference detected with ``target_power`` on a test set of ``n`` sentences.

    The effects are ``nonzero * (mu + b L)`` with ``mu`` linear in dB, so one
    set of draws and swap signs serves every candidate dB (common random
    numbers): power(dB) is then computed in O(n_sims x n_resamples) and
    bisected to ``tol``.

    Examples
    --------
    >>> res = mde(2000, 0.125, 25.8, n_sims=300, method="normal", rng=3)
    >>> 0.8 < res.mde < 1.6
    True
    """
    n, _, p0, b0, alpha = _check_problem(n, 1.0, p0, b0, alpha)
    target_power = check_probability("target_power", target_power)
    n_sims = check_int("n_sims", n_sims, min=1)
    method = check_choice("method", method, BleuMethod)
    n_resamples = _check_resamples(n_resamples, alpha, method)
    tol = check_real("tol", tol, min=0.0, min_open=True)
    if method == "randomization" and n_sims * n_resamples > _MDE_MAX_NULL:
        raise _too_big(n_sims, n_resamples)
    seq = root_seed(rng)
    gen = np.random.Generator(np.random.PCG64(seq))
    nonzero, laplace = draw_parts(gen, n_sims, n, p0)
    null = _kernels.AffineNull(nonzero, laplace, b0 / n, gen if method == "randomization" else None,
                               n_resamples)

    def power_at(d: float) -> float:
        mu = laplace_location(n, d, p0)
        hits = (null.pvalues(mu) <= alpha) & (null.observed(mu) > 0)
        return float(np.count_nonzero(hits)) / n_sims

    def smallest(reaches: Callable[[float], bool]) -> float:
        # the smallest dB (to tol) at which reaches(power_at(dB)) holds: doubling, then bisection
        lo, hi = 0.0, 1.0
        while not reaches(power_at(hi)):
            lo, hi = hi, 2.0 * hi
            if hi > 1e4:
                return math.inf
        while hi - lo > tol:
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if reaches(power_at(mid)) else (mid, hi)
        return hi

    hi = smallest(lambda pw: pw >= target_power)
    if not math.isfinite(hi):
        raise InputError(f"mde: target_power = {target_power:g} is not reached for any dB up "
                         f"to 1e4 BLEU at n = {n}, P0 = {p0:g}, b0 = {b0:g}.")
    # Monte Carlo interval: where the Wilson interval of the power curve crosses the target
    low = smallest(lambda pw: wilson_ci(round(pw * n_sims), n_sims)[1] >= target_power)
    high = smallest(lambda pw: wilson_ci(round(pw * n_sims), n_sims)[0] >= target_power)
    k = round(power_at(hi) * n_sims)
    return BleuMDEResult(
        mde=hi, target_power=target_power, power=k / n_sims,
        ci=ConfidenceInterval(*wilson_ci(k, n_sims)), mde_ci=ConfidenceInterval(low, high),
        n=n, p0=p0, b0=b0, alpha=alpha,
        n_sims=n_sims, n_resamples=n_resamples if method == "randomization" else 0,
        method=method, tol=tol, seed=seed_record(seq), version=__version__)


def _check_resamples(n_resamples: Any, alpha: float, method: str) -> int:
    n_resamples = check_int("n_resamples", n_resamples, min=1)
    if method == "randomization" and 1.0 / (n_resamples + 1) > alpha:
        raise InputError(
            f"n_resamples = {n_resamples} is too few for alpha = {alpha:g}: the smallest "
            f"possible p-value is 1 / (n_resamples + 1) = {1 / (n_resamples + 1):.3g}, so "
            f"nothing could be rejected. Use n_resamples >= {math.ceil(1 / alpha) - 1} "
            "(the default is 1000).")
    return n_resamples


def _too_big(n_sims: int, n_resamples: int) -> InputError:
    return InputError(
        f"mde: n_sims x n_resamples = {n_sims} x {n_resamples} null statistics would be kept "
        f"in memory (limit {_MDE_MAX_NULL}). Lower n_sims or n_resamples, or use method='normal'.")
