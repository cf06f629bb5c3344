"""Power for F1, macro-F1 and MCC by a paired randomization test (Card et al. 2020, App. F).

The data-generating process of App. F: a label ``c ~ p(c)``, then the two
models' predictions from a per-class joint table ``P(old = i, new = j | c)``
(Table 11 for two classes).  A simulated test set is summarised, without loss,
by its counts ``N[c, i, j]``; the randomization test swaps the two models'
predictions on each item with probability 1/2, which moves ``Binomial(N, 1/2)``
items from cell ``(c, i, j)`` to ``(c, j, i)``.  So every randomization of
every simulated test set is one vectorised binomial draw over the cells, and
both models' confusion matrices are sums over that array (STYLE 11).

p-values are two-sided, ``(1 + #{|d_perm| >= |d_obs|}) / (1 + n_resamples)``;
power counts sign-correct rejections (Card et al. 2020, Fig. 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from .._choices import ClassMetric, check_choice
from .._records import RecordCodec, RecordLayout
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int, check_real
from ..errors import InputError
from ..intervals import ConfidenceInterval, mc_se, wilson_ci
from ..montecarlo import MonteCarloSummary

__all__ = ["MetricPowerResult", "confusion_metric", "metric_power"]

#: Largest number of cell draws held in memory at once (sims x permutations x cells).
_BLOCK = 4_000_000


def confusion_metric(conf: np.ndarray, metric: ClassMetric) -> np.ndarray:
    """A metric from confusion matrices ``conf[..., true, predicted]`` (vectorised).

    ``"f1"`` is binary F1 of class 1; ``"macro-f1"`` the unweighted mean of the
    per-class F1; ``"mcc"`` the (multiclass, Gorodkin 2004) Matthews
    correlation; ``"accuracy"`` the trace share.  0/0 gives 0.
    """
    conf = np.asarray(conf, dtype=float)
    total = conf.sum(axis=(-2, -1))
    diag = np.diagonal(conf, axis1=-2, axis2=-1)
    true, pred = conf.sum(axis=-1), conf.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric == "accuracy":
            out = diag.sum(axis=-1) / total
        elif metric == "f1":
            out = 2 * diag[..., 1] / (true[..., 1] + pred[..., 1])
        elif metric == "macro-f1":
            out = np.nan_to_num(2 * diag / (true + pred)).mean(axis=-1)
        elif metric == "mcc":
            c = diag.sum(axis=-1)
            num = c * total - np.sum(pred * true, axis=-1)
            den = np.sqrt((total**2 - np.sum(pred**2, axis=-1)) * (total**2 - np.sum(true**2, axis=-1)))
            out = num / den
        else:  # pragma: no cover - validated at the boundary
            raise ValueError(metric)
    return np.nan_to_num(out)


@dataclass(frozen=True)
class MetricPowerResult(RecordCodec):
    """Power of a paired randomization test on a classification metric (App. F)."""

    power: float
    se: float
    ci: ConfidenceInterval
    type_m: float
    type_s: float
    rejection_rate: float
    true_difference: float
    metric: str
    n: int
    alpha: float
    n_sims: int
    n_resamples: int
    n_rejected: int
    method: str = "simulate"
    seed: dict[str, Any] = field(default_factory=dict)
    version: str = __version__
    mc: MonteCarloSummary | None = field(default=None, repr=False, compare=False)

    #: the record's layout (``to_record``/``from_record``: ``nlpower._records.RecordCodec``)
    _record_layout = RecordLayout(
        first=("power", "se", "type_m", "type_s", "rejection_rate", "true_difference", "metric",
               "n", "alpha", "n_sims", "n_resamples", "n_rejected", "method", "version",
               "ci_low", "ci_high", "seed_entropy", "seed_spawn_key"),
        summary="true_difference")

    def summary(self) -> str:
        return "\n".join([
            f"Randomization-test power for {self.metric} ({self.n} items, alpha {self.alpha:g}, "
            f"{self.n_sims} test sets x {self.n_resamples} randomizations)",
            f"  true difference new - old {self.true_difference:+.4f}",
            f"  power   {self.power:.3f}  (MC SE {self.se:.3f}; 95% CI {self.ci.low:.3f}-"
            f"{self.ci.high:.3f})",
            f"  Type-M  {self.type_m:.3f}    Type-S  {self.type_s:.3g}" if self.mc is None
            else f"  {self.mc.describe()}",
        ])


    def to_frame(self) -> pd.DataFrame:
        rec = self.to_record()
        rec.pop("seed_spawn_key")
        return pd.DataFrame([rec])

    def __repr__(self) -> str:
        return (f"MetricPowerResult(power={self.power:.3f} [{self.ci.low:.3f}, {self.ci.high:.3f}], "
                f"metric={self.metric!r}, true_difference={self.true_difference:+.4f}, n={self.n})")


def _check_tables(class_probs: Any, tables: Any) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(class_probs, dtype=float)
    t = np.asarray(tables, dtype=float)
    if p.ndim != 1 or p.size < 2:
        raise InputError(f"class_probs must list p(c) for at least two classes; got {class_probs!r}.")
    k = p.size
    if t.shape != (k, k, k):
        raise InputError(
            f"tables must have shape (classes, classes, classes) = {(k, k, k)}: tables[c, i, j] = "
            f"P(old predicts i, new predicts j | label c); got shape {t.shape}.")
    if np.any(p < 0) or not math.isclose(p.sum(), 1.0, abs_tol=1e-9):
        raise InputError(f"class_probs must be non-negative and sum to 1; got {p.tolist()} "
                         f"(sum {p.sum():.6g}).")
    sums = t.sum(axis=(1, 2))
    if np.any(t < 0) or not np.allclose(sums, 1.0, atol=1e-9):
        raise InputError(f"each tables[c] must be non-negative and sum to 1 (Card et al. 2020, "
                         f"Table 11); got sums {np.round(sums, 6).tolist()}.")
    return p, t


def metric_power(
    n: int,
    class_probs: Any,
    tables: Any,
    *,
    metric: ClassMetric = "f1",
    alpha: float = 0.05,
    n_sims: int = 1000,
    n_resamples: int = 1000,
    rng: RNGLike = None,
) -> MetricPowerResult:
    """Power of a paired randomization test comparing two classifiers on F1, macro-F1 or MCC.

    Parameters
    ----------
    n : int
        Test-set size.
    class_probs : array-like, shape (C,)
        Label distribution p(c).
    tables : array-like, shape (C, C, C)
        ``tables[c, i, j] = P(old predicts i, new predicts j | label c)``; for two
        classes, Card et al. (2020) Table 11 per class.
    metric : {"f1", "macro-f1", "mcc", "accuracy"}
    n_sims, n_resamples : int
        Simulated test sets and randomizations of each.

    Examples
    --------
    Two classes, 20% positives; the new model finds 10 more points of positives:

    >>> neg = [[0.90, 0.02], [0.02, 0.06]]          # label 0: (old, new) predictions
    >>> pos = [[0.10, 0.15], [0.05, 0.70]]          # label 1
    >>> r = metric_power(2000, [0.8, 0.2], [neg, pos], n_sims=200, n_resamples=200, rng=1)
    >>> r.true_difference > 0 and 0 < r.power <= 1
    True
    """
    n = check_int("n", n, min=1)
    metric = check_choice("metric", metric, ClassMetric)
    alpha = check_real("alpha", alpha, min=0.0, max=1.0, min_open=True, max_open=True)
    n_sims = check_int("n_sims", n_sims, min=1)
    n_resamples = check_int("n_resamples", n_resamples, min=1)
    p, t = _check_tables(class_probs, tables)
    if metric == "f1" and p.size != 2:
        raise InputError(f"metric='f1' is binary F1 of class 1; with {p.size} classes use "
                         "metric='macro-f1' or 'mcc'.")
    k = p.size
    cells = (p[:, None, None] * t).reshape(-1)            # P(c, i, j), C^3 cells
    cells = np.clip(cells, 0.0, None) / cells.sum()
    src = np.arange(k**3).reshape(k, k, k)
    swap_to = np.transpose(src, (0, 2, 1)).reshape(-1)     # (c, i, j) -> (c, j, i)
    joint = cells.reshape(k, k, k)
    true_diff = float(confusion_metric(joint.sum(axis=1), metric)
                      - confusion_metric(joint.sum(axis=2), metric))
    if true_diff == 0:
        raise InputError("the tables give both models the same expected metric: power is "
                         "undefined (use them to check the test's size instead).")

    seq = root_seed(rng)
    gen = np.random.Generator(np.random.PCG64(seq))
    counts = gen.multinomial(n, cells, size=n_sims)         # (n_sims, C^3)
    obs = _difference(counts, k, metric)
    exceed = np.zeros(n_sims, dtype=np.int64)
    block = max(1, _BLOCK // (n_resamples * k**3))
    for start in range(0, n_sims, block):
        part = counts[start:start + block]
        moved = gen.binomial(part[:, None, :], 0.5, size=(part.shape[0], n_resamples, k**3))
        perm = part[:, None, :] - moved + moved[..., np.argsort(swap_to)]
        d = _difference(perm, k, metric)
        exceed[start:start + block] = np.sum(np.abs(d) >= np.abs(obs[start:start + block, None])
                                             - 1e-12, axis=1)
    pvalue = (1 + exceed) / (1 + n_resamples)
    sig = pvalue <= alpha
    right = sig & (np.sign(obs) == np.sign(true_diff))
    n_sig, n_right = int(sig.sum()), int(right.sum())
    pw = n_right / n_sims
    type_m = float(np.abs(obs[sig]).mean() / abs(true_diff)) if n_sig else math.nan
    type_s = float(np.sum(sig & (np.sign(obs) != np.sign(true_diff))) / n_sig) if n_sig else math.nan
    mc = MonteCarloSummary(n_sims, n_right, n_sig,
                           int(np.sum(sig & (np.sign(obs) != np.sign(true_diff)))), true_diff,
                           type_m, MonteCarloSummary.spread(np.abs(obs[sig]) / abs(true_diff)))
    return MetricPowerResult(
        mc=mc,
        power=pw, se=mc_se(pw, n_sims), ci=ConfidenceInterval(*wilson_ci(n_right, n_sims)),
        type_m=type_m, type_s=type_s, rejection_rate=n_sig / n_sims, true_difference=true_diff,
        metric=metric, n=n, alpha=alpha, n_sims=n_sims, n_resamples=n_resamples,
        n_rejected=n_right, seed=seed_record(seq),
    )


def _difference(counts: np.ndarray, k: int, metric: str) -> np.ndarray:
    """Metric of the new model minus the old from cell counts ``(..., C^3)``."""
    joint = counts.reshape(*counts.shape[:-1], k, k, k)
    old = joint.sum(axis=-1)      # (..., c, i)
    new = joint.sum(axis=-2)      # (..., c, j)
    return confusion_metric(new, metric) - confusion_metric(old, metric)  # type: ignore[arg-type]
