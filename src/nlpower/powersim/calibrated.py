"""A size-calibrated test for few workers, and the check that a test holds alpha on a design.

With 3 workers every asymptotic test of the system effect rejects too often
(``docs/power.md``: Satterthwaite 0.064-0.079, the paper's ``t > 1.96`` rule
0.11-0.21 at alpha 0.05).  ``test="calibrated"`` takes its critical value from
simulation under the fitted null instead of from the t distribution: the
Satterthwaite p-value is *prepivoted* (Beran 1988) by a parametric bootstrap
from the REML fit of the model without the system effect,

    p_cal = (1 + #{b : p*_b <= p}) / (1 + B),

with ``p*_b`` the Satterthwaite p-values of ``B = n_resamples`` data sets drawn
from that fit.  On the balanced fast path each bootstrap data set is its five
stratum sums of squares (chi-square draws) and its mean difference (a normal
draw), fitted in closed form, so a replicate costs about ``B`` closed-form
REML fits (benchmarks/type1_table.py measures it).  The bootstrap continues
each replicate's own stream, so results do not depend on ``n_jobs``.

It is defined on the exact balanced fast path only (fully crossed two-system
designs with Gaussian ratings); elsewhere use ``test="pblrt"``.

:func:`size_check` is what :func:`~nlpower.powersim.power` runs after the
main run: on a balanced design with fewer than :data:`FEW_WORKERS` workers it
also simulates the design at effect 0 (for the cheap tests; bootstrap tests
only with ``null=True``) and, when the Wilson interval of the rejection rate
lies above alpha, warns with that measured Type I error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import _dist as stats
from ..errors import SizeWarning
from ..intervals import wilson_ci
from . import balanced_fit as bf
from .fastpath import BalancedStats, design_matrix, stratum_dims
from .rules import TestRule

__all__ = ["CALIBRATED", "FEW_WORKERS", "CalibratedRule", "calibrated_pvalues", "check_path",
           "size_check",
           "size_message"]

#: Below this many workers ``power`` measures the Type I error of the design (balanced path).
FEW_WORKERS = 10


def null_variances_reml(st: BalancedStats) -> np.ndarray:
    """Variances (r, 5) of the REML fit of the null model (``beta1 = 0``) of every replicate.

    Under the null the system mean square ``n beta1^2`` joins the worker:system
    stratum's information; REML drops only the mean stratum.
    """
    w, i = st.n_workers, st.n_items
    n = 2.0 * w * i
    m5 = stratum_dims(w, i)
    m7 = np.concatenate([[0.0, 1.0], m5])
    A = design_matrix(w, i)
    r = st.n_sims
    ss7 = np.column_stack([np.zeros(r), n * st.beta1**2, st.ss])
    c = np.sum(ss7, axis=1) / n
    mom = bf._mom_start(st.ss / c[:, None] / m5, w, i)
    mom[:, 0] = np.maximum(mom[:, 0], 1e-3)
    reml, _, _ = bf._minimise_reml(st.ss / c[:, None], w, i)
    starts = bf.starts_ml(mom, reml, w, i, thorough=True)
    lb = np.array([1e-10, 0.0, 0.0, 0.0, 0.0])
    k = len(starts)
    v, f, _ = bf._projected_newton(np.maximum(np.vstack(starts), lb),
                                   np.tile(ss7 / c[:, None], (k, 1)), m7, A, lb)
    best = np.argmin(f.reshape(k, r), axis=0)
    return np.asarray(v[best * r + np.arange(r)] * c[:, None])


def bootstrap_stats(st: BalancedStats, variances: np.ndarray, n_resamples: int,
                    gens: Sequence[np.random.Generator]) -> BalancedStats:
    """``n_resamples`` null data sets per replicate, replicate ``k`` drawn from ``gens[k]``."""
    w, i = st.n_workers, st.n_items
    n = 2.0 * w * i
    lam = variances @ design_matrix(w, i).T            # (r, 7) stratum eigenvalues
    m5 = stratum_dims(w, i)
    r = lam.shape[0]
    chi = np.empty((r, n_resamples, 5))
    z = np.empty((r, n_resamples))
    for k, gen in enumerate(gens):
        chi[k] = gen.chisquare(np.broadcast_to(m5, (n_resamples, 5)))
        z[k] = gen.standard_normal(n_resamples)
    b1 = z * np.sqrt(lam[:, 1] / n)[:, None]
    ss = (chi * lam[:, None, 2:]).reshape(-1, 5)
    return BalancedStats(w, i, np.zeros(r * n_resamples), b1.ravel(), ss)


def _satterthwaite_p(st: BalancedStats) -> tuple[np.ndarray, bf.BalancedFit]:
    fit = bf.fit_balanced(st, REML=True, with_df=True)
    return 2.0 * stats.t.sf(np.abs(fit.t), fit.df), fit


def calibrated_pvalues(st: BalancedStats, n_resamples: int, gens: Sequence[np.random.Generator]
                       ) -> np.ndarray:
    """Prepivoted Satterthwaite p-values of every replicate (module docstring)."""
    p, _ = _satterthwaite_p(st)
    boot = bootstrap_stats(st, null_variances_reml(st), n_resamples, gens)
    p_star, _ = _satterthwaite_p(boot)
    p_star = p_star.reshape(st.n_sims, n_resamples)
    hits = np.sum(p_star <= p[:, None] * (1.0 + 1e-12), axis=1)
    out = (1.0 + hits) / (1.0 + n_resamples)
    return np.where(np.isfinite(p), out, np.nan)


@dataclass(frozen=True)
class CalibratedRule(TestRule):
    """``test="calibrated"``: the Satterthwaite test with its critical value from the fitted null."""

    def balanced(self, st: BalancedStats, fit: bf.BalancedFit,
                 gens: Sequence[np.random.Generator], n_resamples: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        return fit.t, fit.df, calibrated_pvalues(st, n_resamples, gens)


CALIBRATED = CalibratedRule(
    "calibrated", "wald", "satterthwaite", "bootstrap", default_REML=True, REML="required",
    families=("gaussian",), analytic=None, approximation="satterthwaite", two_sided_only=True,
    paths=("balanced",),
    size_advice="With so few workers no test here holds alpha exactly; plan for more workers.",
    doc="Satterthwaite p prepivoted by a parametric bootstrap from the REML null fit")


def check_path(test: str, how: str) -> None:
    """Refuse a test off the paths it runs on (``TestRule.paths``; before any replicate runs)."""
    from .rules import get_test  # rules registers CALIBRATED on import: import it lazily
    get_test(test).check_path(how)


def size_message(test: str, alpha: float, n_workers: int, n_type1: int, n_sims: int) -> str:
    """The plain warning when ``test`` rejects too often at effect 0 on a design."""
    from .rules import get_test
    rate = n_type1 / n_sims
    lo, hi = wilson_ci(n_type1, n_sims)
    return (f"test={test!r} does not hold alpha={alpha:g} on this design with {n_workers} "
            f"workers: its Type I error measured here is {rate:.3f} (95% CI {lo:.3f}-{hi:.3f}, "
            f"{n_sims} replicates at effect 0), so the power counts rejections a level-{alpha:g} "
            f"test would not make. {get_test(test).size_advice}")


def size_check(test: str, alpha: float, n_workers: int, n_type1: int | None, n_sims: int
               ) -> str | None:
    """Warn (and return the message) when the measured Type I error is above ``alpha``.

    "Above" means the Wilson 95% interval of the rejection rate at effect 0 lies
    entirely above ``alpha``.
    """
    if n_type1 is None or n_sims <= 0 or math.isnan(alpha):
        return None
    if wilson_ci(n_type1, n_sims)[0] <= alpha:
        return None
    msg = size_message(test, alpha, n_workers, n_type1, n_sims)
    warnings.warn(msg, SizeWarning, stacklevel=3)
    return msg
