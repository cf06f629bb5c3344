"""``calibrate_boundaries``: efficacy boundaries that hold alpha for the study's own statistic.

The spending-function boundaries assume each look's z statistic is standard
normal under the null.  A Wald z of a GLMM fitted to few workers is not: its
standard error ignores the uncertainty of the variance components (and the
maximum-likelihood variances are biased down), so its null spread is above 1
and the test is liberal -- the sequential test as much as the single look.
Calibration simulates the study under the null (effect 0) at the planned
looks, and lowers (or raises) the nominal alpha fed to the spending function
until the Type I error of the sequential test equals the target: the
boundaries keep the spending function's shape, and a :class:`Monitor` uses
them as any other design.  The Type I error at a nominal alpha is taken

``method="t"`` (default)
    from a model of the null statistics: each look's z is distributed as a
    Student t whose variance ``df / (df - 2)`` is the simulated variance of
    the z statistics (pooled over looks; a variance below 1 -- a
    conservative statistic -- as a normal with that variance), and the
    looks' statistics, mapped to the normal scale, follow the canonical joint
    distribution; the rejection probability is then computed by the
    recursion.  Only one smooth quantity is estimated, so the Monte Carlo
    error of the calibrated alpha is small.
``method="empirical"``
    from the share of simulated null studies that cross an efficacy
    boundary: no model, but the calibrated alpha inherits the binomial
    error of that share (at 2000 replicates, SE 0.0035 at alpha 0.025).

Check the calibrated boundaries on fresh null replicates
(:func:`sequential_power` with another seed), as ``docs/sequential.md`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._rng import RNGLike, root_seed
from .._validation import check_choice, check_int
from ..design import CrossedDesign
from ..errors import InputError
from .boundaries import efficacy_bounds
from .design import _NAMES, GroupSequentialDesign, group_sequential
from .outcomes import check_outcome, outcome_of
from .simulate import look_items, statistics_at, with_effect

__all__ = ["CalibratedBoundaries", "calibrate_boundaries", "calibrated_alpha", "null_rate", "rebuild"]


@dataclass(frozen=True, eq=False)
class CalibratedBoundaries:
    """Boundaries whose simulated Type I error is the target (:func:`calibrate_boundaries`).

    Attributes
    ----------
    boundaries : GroupSequentialDesign
        The calibrated design: the spending function at nominal alpha
        :attr:`alpha_used`; pass it to :func:`sequential_power` or :class:`Monitor`.
    nominal : GroupSequentialDesign
        The design calibrated (its ``alpha`` is the target).
    alpha_used : float
        The nominal alpha of the spending function after calibration.
    rejection_nominal, rejection_calibrated : float
        Simulated null rejection rates of the sequential test (on the
        calibration replicates) with the nominal and the calibrated boundaries.
    z_sd : ndarray
        Standard deviation of each look's null z statistic (1 for an exact test).
    method : str
        ``"t"`` or ``"empirical"`` (:func:`calibrate_boundaries`).
    z_variance : float
        Variance of the null z statistics pooled over looks (the t model's).
    n_sims, n_failed : int
        Null replicates simulated; replicates with a failed fit at some look.
    """

    boundaries: GroupSequentialDesign
    nominal: GroupSequentialDesign
    alpha_used: float
    rejection_nominal: float
    rejection_calibrated: float
    z_sd: np.ndarray
    n_sims: int
    n_failed: int
    design: CrossedDesign
    params: Any
    method: str = "t"
    z_variance: float = 1.0

    @property
    def mc_se(self) -> float:
        """Monte Carlo SE of a rejection rate at the target alpha on these replicates."""
        a = self.nominal.alpha
        return math.sqrt(a * (1 - a) / self.n_sims)

    def to_frame(self) -> pd.DataFrame:
        """One row per look: information fraction, nominal and calibrated efficacy z, null z SD."""
        return pd.DataFrame({"look": np.arange(1, self.nominal.looks + 1),
                             "information": self.nominal.information_rates,
                             "efficacy_nominal": self.nominal.efficacy,
                             "efficacy_calibrated": self.boundaries.efficacy,
                             "null_z_sd": self.z_sd})

    def summary(self) -> str:
        how = (f"t model of the null z (variance {self.z_variance:.3f})" if self.method == "t"
               else "share of null replicates rejected")
        head = (f"Calibrated boundaries ({how}): target alpha {self.nominal.alpha:g} "
                f"({self.nominal.sided}-sided), spending at nominal alpha {self.alpha_used:.5f}\n"
                f"simulated null rejection rate on {self.n_sims} replicates: nominal boundaries "
                f"{self.rejection_nominal:.4f}, calibrated {self.rejection_calibrated:.4f} "
                f"(MC SE at alpha {self.mc_se:.4f}); {self.n_failed} replicates with a failed fit")
        return head + "\n" + self.to_frame().to_string(index=False, float_format=lambda v: f"{v:.4f}")

    def methods(self, format: str = "text") -> str:
        """The sentences a paper's methods section needs (``"text"`` or ``"latex"``)."""
        from ..arena.result import _latex

        check_choice("format", format, ("text", "latex"))
        b = self.boundaries
        text = (f"Because the test statistic is not exactly normal in designs this small, we "
                f"calibrated the boundaries by simulation: in {self.n_sims} studies simulated under "
                f"the null ({self.design.n_workers} workers, {self.design.n_items} items, parameters "
                f"{self.params!r}) the {_NAMES[b.spending]} boundaries at alpha = "
                f"{self.nominal.alpha:g} rejected {100 * self.rejection_nominal:.2f}% of the time; "
                f"we spent alpha = {self.alpha_used:.4f} instead (z boundaries "
                f"{', '.join(f'{c:.3f}' for c in b.efficacy)}), "
                + ("chosen so that the Type I error is alpha when each look's null z follows a "
                   f"t distribution with the simulated variance ({self.z_variance:.3f}); on the "
                   if self.method == "t" else "chosen so that the share rejected equals alpha; on the ")
                + f"same studies it rejected {100 * self.rejection_calibrated:.2f}% (Monte Carlo SE "
                f"{100 * self.mc_se:.2f}%).")
        return _latex(text) if format == "latex" else text

    def __repr__(self) -> str:
        return (f"CalibratedBoundaries(alpha={self.nominal.alpha:g}, alpha_used={self.alpha_used:.5f}, "
                f"rejection {self.rejection_nominal:.4f} -> {self.rejection_calibrated:.4f})")


def _model_rate(upper: np.ndarray, t: np.ndarray, sided: int, var: float) -> float:
    """Type I error of ``upper`` when each null z is a t (or normal) of variance ``var``."""
    from .boundaries import stage_probabilities

    if var > 1.0:
        df = 2.0 * var / (var - 1.0)
        b = stats.norm.isf(stats.t.sf(upper, df))
    else:
        b = upper / math.sqrt(var)
    probs = stage_probabilities(t, b, None, sided, 0.0)
    return float(probs.efficacy.sum() + probs.wrong_sign.sum())


def _rejects(z: np.ndarray, upper: np.ndarray, sided: int) -> np.ndarray:
    zz = np.abs(z) if sided == 2 else z
    return np.any(zz >= upper[None, :], axis=1)


def rebuild(d: GroupSequentialDesign, alpha: float) -> GroupSequentialDesign:
    fut: Any = d.futility_spending if d.futility_spending else (
        None if d.futility is None else d.futility[:-1].tolist())
    try:
        return group_sequential(information=d.information_rates.tolist(), alpha=alpha, beta=d.beta,
                                sided=d.sided, spending=d.spending,  # type: ignore[arg-type]
                                gamma=d.gamma if d.spending == "hsd" else -4.0, futility=fut,
                                futility_gamma=d.futility_gamma if d.futility_spending == "hsd" else -4.0)
    except InputError:          # z futility now above an efficacy boundary: keep efficacy only
        return group_sequential(information=d.information_rates.tolist(), alpha=alpha, beta=d.beta,
                                sided=d.sided, spending=d.spending,  # type: ignore[arg-type]
                                gamma=d.gamma if d.spending == "hsd" else -4.0)


def calibrate_boundaries(
    design: CrossedDesign,
    params: Any,
    boundaries: GroupSequentialDesign,
    *,
    analysis: str | None = None,
    method: str = "t",
    n_sims: int = 2000,
    rng: RNGLike = None,
) -> CalibratedBoundaries:
    """Efficacy boundaries whose simulated Type I error for this crossed study is ``boundaries.alpha``.

    The study (``design`` at its largest, looks at the item fractions of
    ``boundaries``) is simulated ``n_sims`` times under the null with the
    outcome of ``params`` (Gaussian, Likert or head-to-head, analysed as
    :func:`sequential_power` analyses it); the nominal alpha of the
    spending function is then found by bisection so that the share of null
    replicates crossing an efficacy boundary equals the target alpha
    (module docstring).  Futility boundaries are non-binding and kept.

    Parameters
    ----------
    design, params, boundaries, analysis
        As for :func:`sequential_power` (its ``effect`` is set to 0 here).
    method : {"t", "empirical"}
        How the Type I error at a nominal alpha is taken from the null
        replicates (module docstring): a t model of the null z statistics
        fitted by their variance, or the share of replicates rejected.
    n_sims : int
        Null replicates.
    rng : seed
        Random seed.

    Returns
    -------
    CalibratedBoundaries

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> from nlpower.sequential import group_sequential
    >>> c = calibrate_boundaries(CrossedDesign(4, 12), presets.low_variance(0.0),
    ...                          group_sequential(2), n_sims=40, rng=1)
    >>> c.boundaries.looks
    2
    """
    from ..powersim.models import design_formula
    from .power import check_sequential

    check_sequential(design, boundaries)
    method = check_choice("method", method, ("t", "empirical"))
    n_sims = check_int("n_sims", n_sims, min=20)
    analysis = check_outcome(design, params, analysis, None)
    null = with_effect(params, 0.0)
    items = look_items(design.n_items, boundaries.information_rates)
    formula = design_formula(design, null if outcome_of(null) == "gaussian" else None)
    looks = statistics_at(design, null, formula, analysis, items, n_sims, root_seed(rng)).z
    failed = ~np.all(np.isfinite(looks), axis=1)
    used, var = calibrated_alpha(looks, boundaries, method)
    calibrated = rebuild(boundaries, used)
    zsd = np.array([float(np.std(col[np.isfinite(col)])) for col in looks.T])
    z = np.nan_to_num(looks, nan=0.0)
    return CalibratedBoundaries(calibrated, boundaries, used, null_rate(z, boundaries, boundaries.alpha),
                                null_rate(z, boundaries, used), zsd, n_sims, int(failed.sum()),
                                design, params, method, var)


def null_rate(z: np.ndarray, boundaries: GroupSequentialDesign, alpha: float) -> float:
    """Share of null statistics ``z`` (replicates x looks) crossing the efficacy boundaries at ``alpha``."""
    upper, _ = efficacy_bounds(boundaries.information_rates, alpha, boundaries.sided,
                               boundaries.spending, boundaries.gamma)
    return float(_rejects(z, upper, boundaries.sided).mean())


def calibrated_alpha(looks: np.ndarray, boundaries: GroupSequentialDesign,
                     method: str = "t") -> tuple[float, float]:
    """The nominal alpha whose boundaries reject ``boundaries.alpha`` of the null statistics.

    ``looks`` holds null z statistics (replicates x looks; NaN for failed fits,
    counted as no rejection).  Returns ``(alpha, pooled variance of z)``.
    """
    z = np.nan_to_num(looks, nan=0.0)
    t, sided, target = boundaries.information_rates, boundaries.sided, boundaries.alpha
    var = float(np.mean([np.var(col[np.isfinite(col)]) for col in looks.T]))

    def model(a: float) -> float:
        upper, _ = efficacy_bounds(t, a, sided, boundaries.spending, boundaries.gamma)
        return _model_rate(upper, t, sided, var)

    def fun(a: float) -> float:
        return model(a) if method == "t" else null_rate(z, boundaries, a)

    lo, hi = math.log(target / 50), math.log(min(0.5, 8 * target))   # rate(lo) <= target < rate(hi)
    if fun(math.exp(lo)) > target or fun(math.exp(hi)) <= target:
        raise InputError(f"the simulated null rejection rate cannot be brought to alpha={target} "
                         f"by a nominal alpha between {math.exp(lo):.2g} and {math.exp(hi):.2g}; "
                         "check the design (too few replicates or items?).")
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fun(math.exp(mid)) <= target else (lo, mid)
    return math.exp(lo), var
