"""Several systems: power of all pairwise (or many-to-one) comparisons with multiplicity control.

``nlpower.power(fit, pairwise="system")`` compares the levels of a factor of
a fitted model -- every pair, or each level against ``baseline=`` -- in each
replicate, from one refit: the estimated marginal mean of a level is the
model's prediction averaged over the design's rows with the factor set to
that level (emmeans' means, equal weights over the rows), and a comparison is
the difference of two means, tested by the registry's Wald rule (z, or t
with Satterthwaite df for ``lmer`` fits).  The p-values of one replicate are
adjusted together (``adjust="holm"``, ``"bonferroni"``, ``"fdr"`` for
Benjamini-Hochberg, or ``"none"``).

The definitions of power, all over the same replicates:

* **per comparison**: the comparison is rejected with the sign of its true
  difference (a comparison whose true difference is 0 has no power; its
  rejection rate is an error rate);
* **any**: at least one comparison with a true difference is detected
  (right sign);
* **all**: every comparison with a true difference is detected;
* **family-wise error**: at least one comparison is rejected that should not
  be (true difference 0, or the wrong sign);
* **correct best** (pairwise only): the truly best level (highest true mean;
  it must be unique) has the highest estimated mean and is significantly
  above every other level.

With adaptive precision (``precision=``) the run stops at the first batch
boundary where *every* reported rate is known to ``precision``: each
comparison's power (its rejection rate where the true difference is 0),
any, all, the family-wise error and, where reported, correct best
(:class:`ComparisonsPrecision`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..intervals import wilson_ci
from ..montecarlo import MonteCarloSummary
from ..powersim.batches import Precision

__all__ = ["Comparisons", "ComparisonsPrecision", "MultiplePowerResult", "adjust_pvalues",
           "comparisons"]

ADJUST = ("holm", "bonferroni", "fdr", "none")


def adjust_pvalues(p: np.ndarray, method: str) -> np.ndarray:
    """Adjusted p-values of each row of ``p`` (replicates x comparisons), as R's ``p.adjust``.

    Examples
    --------
    >>> adjust_pvalues(np.array([[0.01, 0.04, 0.03]]), "holm").round(3).tolist()
    [[0.03, 0.06, 0.06]]
    >>> adjust_pvalues(np.array([[0.01, 0.04, 0.03]]), "fdr").round(3).tolist()
    [[0.03, 0.04, 0.04]]
    """
    p = np.asarray(p, dtype=float)
    m = p.shape[1]
    if method == "none" or m == 1:
        return p.copy()
    if method == "bonferroni":
        return np.minimum(p * m, 1.0)
    order = np.argsort(np.nan_to_num(p, nan=np.inf), axis=1, kind="stable")
    ps = np.take_along_axis(p, order, axis=1)
    if method == "holm":
        adj = np.maximum.accumulate(ps * (m - np.arange(m)), axis=1)
    elif method == "fdr":
        adj = np.minimum.accumulate((ps * m / np.arange(1, m + 1))[:, ::-1], axis=1)[:, ::-1]
    else:
        raise InputError(f"adjust must be one of {', '.join(map(repr, ADJUST))}; got {method!r}.")
    out = np.empty_like(p)
    np.put_along_axis(out, order, np.minimum(adj, 1.0), axis=1)
    return out


@dataclass(frozen=True, eq=False)
class Comparisons:
    """The comparisons of the levels of ``factor`` (module docstring)."""

    factor: str
    levels: tuple[str, ...]
    labels: tuple[str, ...]
    pairs: tuple[tuple[int, int], ...]
    M: np.ndarray                 # (K, p): each level's marginal-mean row over the coefficients
    true_means: np.ndarray        # (K,)
    baseline: str | None

    @property
    def L(self) -> np.ndarray:
        return np.array([self.M[a] - self.M[b] for a, b in self.pairs])

    @property
    def truth(self) -> np.ndarray:
        """The true difference of each comparison."""
        return np.array([self.true_means[a] - self.true_means[b] for a, b in self.pairs])

    @property
    def best(self) -> int | None:
        """The truly best level, if it is unique."""
        top = np.flatnonzero(self.true_means == self.true_means.max())
        return int(top[0]) if top.size == 1 else None


def _levels(col: pd.Series) -> list[Any]:
    if isinstance(col.dtype, pd.CategoricalDtype):
        return [c for c in col.cat.categories if (col == c).any()]
    return sorted(pd.unique(col.dropna()), key=lambda v: (str(type(v)), v))


def comparisons(design: Any, formula: str, factor: str, *, baseline: Any,
                coef_names: Any) -> Comparisons:
    """The level means and comparisons of ``factor`` under ``formula`` on ``design``'s rows."""
    data = design.data
    if factor not in data.columns:
        raise InputError(f"pairwise={factor!r} is not a column of the model's data (columns: "
                         f"{', '.join(map(str, data.columns))}).")
    from ..formula import parse
    if factor not in parse(formula).fixed.variables:
        raise InputError(f"pairwise={factor!r} is not in the fixed part of {formula!r}; compare "
                         "the levels of a factor the model estimates.")
    col = data[factor]
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        raise InputError(f"pairwise={factor!r} is a numeric covariate of {formula!r} (one slope, "
                         f"not levels to compare); test it with term={factor!r}, or make it a "
                         f"factor (data[{factor!r}].astype(str)) and refit.")
    levels = _levels(col)
    if len(levels) < 2:
        raise InputError(f"pairwise={factor!r} has {len(levels)} level in the data; comparisons "
                         "need at least two.")
    rows = []
    n = len(data)
    for v in levels:
        # the rows with the factor set to v, framed beside the design's own rows so that every
        # factor keeps its levels and coding; the counterfactual half gives v's mean row
        both = pd.concat([data, data.assign(**{factor: [v] * n})], ignore_index=True)
        spec, _, _ = design.frame(formula, both)
        cols = [list(spec.fixef_names).index(c) for c in coef_names]
        rows.append(np.asarray(spec.X, dtype=float)[n:, cols].mean(axis=0))
    M = np.vstack(rows)
    beta = np.array([float(design.fixef.get(n, 0.0)) for n in coef_names])
    names = [str(v) for v in levels]
    if baseline is None:
        pairs = tuple((b, a) for a, b in combinations(range(len(levels)), 2))
    else:
        if str(baseline) not in names:
            raise InputError(f"baseline={baseline!r} is not a level of {factor!r} "
                             f"({', '.join(names)}).")
        k0 = names.index(str(baseline))
        pairs = tuple((k, k0) for k in range(len(levels)) if k != k0)
    labels = tuple(f"{names[a]} - {names[b]}" for a, b in pairs)
    return Comparisons(factor, tuple(names), labels, pairs, M, M @ beta,
                       None if baseline is None else str(baseline))


@dataclass(frozen=True)
class MultiplePowerResult:
    """Power of the comparisons of a factor's levels (module docstring for the definitions).

    Attributes
    ----------
    factor, levels, labels, adjust, test, alpha : what was compared and how.
    true_differences : tuple of float
        The true difference of each comparison (link / latent scale).
    per_comparison : tuple of MonteCarloSummary
        Each comparison's rejections over the replicates.
    n_sims, n_failed : replicates, and failed refits (non-detections).
    n_any, n_all, n_fwe, n_best : replicates with any / all true differences
        detected, with a family-wise error, with the best level declared best
        (``n_best`` is ``-1`` when there is no unique best or a baseline).
    formula, version, seed, engine : the model, the nlpower version, the root seed
        (``entropy``, ``spawn_key``: the same call with it repeats the run) and the fitter.
    n_max, precision : the most replicates and the adaptive precision (None: off).
    """

    factor: str
    levels: tuple[str, ...]
    labels: tuple[str, ...]
    adjust: str
    test: str
    alpha: float
    true_differences: tuple[float, ...]
    per_comparison: tuple[MonteCarloSummary, ...]
    n_sims: int
    n_failed: int
    n_any: int
    n_all: int
    n_fwe: int
    n_best: int
    formula: str = ""
    version: str = ""
    n_max: int | None = None
    precision: float | None = None
    seed: Mapping[str, Any] = field(default_factory=dict)
    engine: str = ""

    @property
    def stopped_early(self) -> bool:
        """Whether the adaptive-precision rule stopped the run before ``n_max`` replicates."""
        return self.n_max is not None and self.n_sims < self.n_max

    def _rate(self, k: int) -> float:
        return k / self.n_sims if k >= 0 else math.nan

    @property
    def power_any(self) -> float:
        return self._rate(self.n_any) if any(t != 0 for t in self.true_differences) else math.nan

    @property
    def power_all(self) -> float:
        return self._rate(self.n_all) if any(t != 0 for t in self.true_differences) else math.nan

    @property
    def familywise_error(self) -> float:
        return self._rate(self.n_fwe)

    @property
    def power_best(self) -> float:
        return self._rate(self.n_best)

    def to_frame(self) -> pd.DataFrame:
        """One row per comparison: true difference, power (sign-correct), its interval, rejections."""
        rows = []
        for lab, t, mc in zip(self.labels, self.true_differences, self.per_comparison,
                              strict=True):
            ci = mc.ci
            rows.append({"comparison": lab, "true_difference": t, "power": mc.power,
                         "ci_low": ci.low if t != 0 else math.nan,
                         "ci_high": ci.high if t != 0 else math.nan,
                         "rejection_rate": mc.rejection_rate, "type_s": mc.type_s,
                         "type_m": mc.type_m})
        return pd.DataFrame(rows)

    def summary(self) -> str:
        def pct(k: int) -> str:
            if k < 0:
                return "-"
            lo, hi = wilson_ci(k, self.n_sims)
            return f"{100 * k / self.n_sims:.1f}% ({100 * lo:.1f}-{100 * hi:.1f})"
        kind = "each level against " + self.labels[0].split(" - ")[1] if self.n_best < 0 and \
            len({lab.split(' - ')[1] for lab in self.labels}) == 1 else "all pairs"
        lines = [f"Power of the comparisons of {self.factor} ({kind}; {self.test} test, "
                 f"{self.adjust} adjustment, alpha = {self.alpha:g}; {self.n_sims} replicates)"]
        for lab, t, mc in zip(self.labels, self.true_differences, self.per_comparison,
                              strict=True):
            what = (f"power {100 * mc.power:.1f}%" if t != 0 else
                    f"no true difference: rejected {100 * mc.rejection_rate:.1f}%")
            lines.append(f"  {lab:<24} true {t:+.4g}  {what}")
        lines.append(f"  any true difference detected: {pct(self.n_any)}")
        lines.append(f"  all true differences detected: {pct(self.n_all)}")
        lines.append(f"  family-wise error (a false or wrong-sign rejection): {pct(self.n_fwe)}")
        if self.n_best >= 0:
            lines.append(f"  best level declared best: {pct(self.n_best)}")
        if self.n_failed:
            lines.append(f"  {self.n_failed} failed refits (counted as non-detections)")
        if self.precision is not None:
            lines.append(f"  adaptive precision {self.precision:g} (every rate above): " + (
                f"stopped after {self.n_sims} of at most {self.n_max} replicates"
                if self.stopped_early else
                f"target not met within the maximum of {self.n_max} replicates"))
        if self.seed:
            lines.append(f"  seed {self.seed.get('entropy')}; nlpower {self.version}"
                         + (f" (engine {self.engine})" if self.engine else ""))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"MultiplePowerResult({self.factor!r}, {len(self.labels)} comparisons, "
                f"adjust={self.adjust!r}: any={self.power_any:.3f}, all={self.power_all:.3f})")


def summarise(comp: Comparisons, est: np.ndarray, p: np.ndarray, means: np.ndarray,
              failed: np.ndarray, *, alpha: float, adjust: str) -> dict[str, Any]:
    """The counts of :class:`MultiplePowerResult` from per-replicate estimates and p-values."""
    truth = comp.truth
    padj = adjust_pvalues(np.where(failed[:, None], 1.0, np.nan_to_num(p, nan=1.0)), adjust)
    sig = padj <= alpha
    right = sig & (np.sign(est) == np.sign(truth)[None, :]) & (truth != 0)[None, :]
    wrong = sig & ~right
    real = truth != 0
    per = tuple(MonteCarloSummary.from_draws(est[:, c], sig[:, c], effect=float(truth[c]))
                for c in range(truth.size))
    n_best = -1
    best = comp.best
    if comp.baseline is None and best is not None:
        top = np.argmax(means, axis=1) == best
        involved = [c for c, (a, b) in enumerate(comp.pairs) if best in (a, b)]
        above = np.all([right[:, c] for c in involved], axis=0)
        n_best = int(np.sum(top & above & ~failed))
    return {"per_comparison": per,
            "n_any": int(np.sum(right[:, real].any(axis=1))) if real.any() else 0,
            "n_all": int(np.sum(right[:, real].all(axis=1))) if real.any() else 0,
            "n_fwe": int(np.sum(wrong.any(axis=1))), "n_best": n_best}


def replicate_columns(comp: Comparisons, reps: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimates and p-values (replicates x comparisons) and level means of replicates ``reps``."""
    k = len(comp.labels)
    est = np.column_stack([reps.extra[f"estimate.{c}"] for c in range(k)])
    p = np.column_stack([reps.extra[f"pvalue.{c}"] for c in range(k)])
    means = np.column_stack([reps.extra[f"mean.{j}"] for j in range(len(comp.levels))])
    return est, p, means


def watched_counts(comp: Comparisons, counts: dict[str, Any]) -> np.ndarray:
    """The count behind every rate :meth:`MultiplePowerResult.summary` reports with an interval."""
    truth = comp.truth
    per = [mc.n_rejected if t != 0 else mc.n_significant
           for mc, t in zip(counts["per_comparison"], truth, strict=True)]
    more = [counts["n_any"], counts["n_all"]] if np.any(truth != 0) else []
    best = [counts["n_best"]] if counts["n_best"] >= 0 else []
    return np.array([*per, *more, counts["n_fwe"], *best], dtype=np.int64)


@dataclass(frozen=True, eq=False)
class ComparisonsPrecision(Precision):
    """The adaptive-precision rule of a pairwise run: every reported rate to ``half_width``.

    :meth:`rejections` returns one count per rate (:func:`watched_counts`),
    each a sum over replicates, so the driver adds them batch by batch and
    checks them at the same fixed boundaries as a single power's rule: the
    run stops where it would for any ``n_jobs`` and on resume.
    """

    comparisons: Comparisons | None = None
    adjust: str = "holm"

    def rejections(self, reps: Any) -> np.ndarray:
        assert self.comparisons is not None
        est, p, means = replicate_columns(self.comparisons, reps)
        counts = summarise(self.comparisons, est, p, means, np.asarray(reps.failed, dtype=bool),
                           alpha=self.alpha, adjust=self.adjust)
        return watched_counts(self.comparisons, counts)
