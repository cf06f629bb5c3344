"""All pairwise comparisons of K systems with a family-wise adjustment.

NLPStatTest's Figure 4 compares 16 WMT-2017 systems pairwise (120 pairs,
Wilcoxon signed-rank, Bonferroni) and shows a heatmap of significance.  Here
every pair runs :func:`~nlpower.paired.compare` on evaluation units formed
once for all systems (one shuffle of the instances, shared by every system,
so all pairs see the same units), and the p-values are adjusted by Holm
(default; uniformly more powerful, same guarantee) or Bonferroni.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import __version__
from .._choices import Alternative, EUStat, PairedTest, PairwiseAdjust, check_choice
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int, check_probability
from ..errors import InputError
from ..partial_conjunction import holm_adjust
from . import plots
from .compare import CompareResult, compare_units
from .units import EvaluationUnits, as_scores, group_units

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["PairwiseResult", "adjust_pvalues", "pairwise"]


def adjust_pvalues(pvalues: Any, method: PairwiseAdjust = "holm") -> np.ndarray:
    """Family-wise adjusted p-values (input order): Holm, Bonferroni or none.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.02, 0.04], "bonferroni").round(2).tolist()
    [0.03, 0.06, 0.12]
    """
    check_choice("adjust", method, PairwiseAdjust)
    p = np.asarray(pvalues, dtype=float)
    if method == "holm":
        return holm_adjust(p)
    if method == "bonferroni":
        return np.minimum(1.0, p * p.size)
    return p.copy()


@dataclass(frozen=True)
class PairwiseResult:
    """Pairwise comparisons of K systems (NLPStatTest Figure 4).

    Attributes
    ----------
    systems : tuple of str
    comparisons : tuple of CompareResult
        One per pair (i < j in ``systems`` order), A = systems[i].
    pvalue_adjusted : numpy.ndarray
        Adjusted p-values, one per comparison.
    adjust, alpha, test_label, seed, version
    """

    systems: tuple[str, ...]
    comparisons: tuple[CompareResult, ...]
    pvalue_adjusted: np.ndarray
    adjust: PairwiseAdjust
    alpha: float
    test_label: str
    seed: dict[str, Any]
    version: str = field(default=__version__)

    def __repr__(self) -> str:
        n_sig = int(np.sum(self.pvalue_adjusted < self.alpha))
        return (f"PairwiseResult(systems={len(self.systems)}, pairs={len(self.comparisons)}, "
                f"adjust={self.adjust!r}, significant={n_sig})")

    def to_frame(self) -> pd.DataFrame:
        """One row per pair: the comparison's columns, ``p_adjusted`` and ``significant``."""
        frame = pd.concat([c.to_frame() for c in self.comparisons], ignore_index=True)
        pos = int(list(frame.columns).index("pvalue")) + 1
        frame.insert(pos, "p_adjusted", self.pvalue_adjusted)
        frame.insert(pos + 1, "significant", self.pvalue_adjusted < self.alpha)
        return frame.drop(columns="reject")

    def matrix(self) -> pd.DataFrame:
        """K x K adjusted p-values (symmetric, NaN on the diagonal)."""
        k = len(self.systems)
        index = {s: i for i, s in enumerate(self.systems)}
        mat = np.full((k, k), np.nan)
        for c, p in zip(self.comparisons, self.pvalue_adjusted, strict=True):
            i, j = index[c.names[0]], index[c.names[1]]
            mat[i, j] = mat[j, i] = p
        return pd.DataFrame(mat, index=list(self.systems), columns=list(self.systems))

    def summary(self) -> str:
        cols = ["a", "b", "test", "statistic", "pvalue", "p_adjusted", "significant", "estimate",
                "cohens_d"]
        return (f"Pairwise comparisons of {len(self.systems)} systems ({self.test_label}, "
                f"{self.adjust} adjustment over {len(self.comparisons)} pairs, alpha = "
                f"{self.alpha:g})\n"
                + self.to_frame()[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))

    def plot(self, *, ax: Any = None, annotate: bool = True) -> Figure:
        """Heatmap like NLPStatTest's Figure 4."""
        return plots.plot_pairwise(self, ax=ax, annotate=annotate)


def _systems(scores: Any) -> dict[str, np.ndarray]:
    if isinstance(scores, pd.DataFrame):
        scores = {str(c): scores[c].to_numpy() for c in scores.columns}
    if not isinstance(scores, Mapping):
        raise InputError(f"scores must be a mapping from system name to scores, or a DataFrame "
                         f"with one column per system; got {type(scores).__name__}.")
    out = {str(k): as_scores(f"scores[{k!r}]", v) for k, v in scores.items()}
    if len(out) < 2:
        raise InputError(f"scores must hold at least 2 systems; got {len(out)} ({list(out)}).")
    sizes = {k: v.size for k, v in out.items()}
    if len(set(sizes.values())) > 1:
        raise InputError(f"every system needs one score per test instance (paired); got "
                         f"lengths {sizes}.")
    return out


def pairwise(scores: Any, *, test: PairedTest | None = None, adjust: PairwiseAdjust = "holm",
             alternative: Alternative = "two-sided", alpha: float = 0.05, eu_size: int = 1,
             eu_stat: EUStat = "mean", shuffle: bool = False, n_resamples: int = 10_000,
             rng: RNGLike = None) -> PairwiseResult:
    """Compare every pair of systems and adjust for the number of pairs.

    Parameters
    ----------
    scores : mapping or DataFrame
        System name -> per-instance scores (equal lengths, paired by position).
    test : str, optional
        One test for every pair (NLPStatTest's Figure 4 uses "wilcoxon");
        None runs each pair's recommended test (the ``test`` column says which).
    adjust : {"holm", "bonferroni", "none"}
        Family-wise adjustment over the K(K-1)/2 pairs.
    alternative, alpha, eu_size, eu_stat, shuffle, n_resamples
        As in :func:`compare`.
    rng : seed or Generator
        The shuffle and each pair's resampling get their own child stream.

    Examples
    --------
    >>> import numpy as np
    >>> gen = np.random.default_rng(0)
    >>> base = gen.uniform(0, 1, 200)
    >>> res = pairwise({"A": base + 0.1, "B": base + gen.normal(0, 0.05, 200), "C": base},
    ...                test="wilcoxon", rng=1)
    >>> res.matrix().round(3).loc["A", "C"] < 0.05
    np.True_
    """
    systems = _systems(scores)
    if test is not None:
        check_choice("test", test, PairedTest)
    check_choice("adjust", adjust, PairwiseAdjust)
    check_choice("alternative", alternative, Alternative)
    alpha = check_probability("alpha", alpha)
    n_resamples = check_int("n_resamples", n_resamples, min=1)
    m = check_int("eu_size", eu_size, min=1)
    check_choice("eu_stat", eu_stat, EUStat)
    names = list(systems)
    pairs = list(combinations(range(len(names)), 2))
    seq = root_seed(rng)
    shuffle_seq, *pair_seqs = seq.spawn(1 + len(pairs))
    n = next(iter(systems.values())).size
    if n // m < 3:
        raise InputError(f"{n} instances with eu_size={m} give {n // m} evaluation unit(s); "
                         "at least 3 are needed. "
                         + ("Use a smaller eu_size=." if m > 1
                            else "Give scores of at least 3 test instances."))
    order = np.random.Generator(np.random.PCG64(shuffle_seq)).permutation(n) if shuffle else None
    shuffle_seed = seed_record(shuffle_seq) if shuffle else None
    results = []
    for (i, j), child in zip(pairs, pair_seqs, strict=True):
        ua, ub = group_units(systems[names[i]], systems[names[j]], m, eu_stat, order)
        units = EvaluationUnits(a=ua, b=ub, n_instances=n, eu_size=m, eu_stat=eu_stat,
                                shuffle=bool(shuffle), n_dropped=n - ua.size * m,
                                seed=shuffle_seed)
        results.append(compare_units(
            units, test=test, alternative=alternative, alpha=alpha, n_resamples=n_resamples,
            delta=0.0, center=None, normality_alpha=0.05, names=(names[i], names[j]),
            resample_seq=child, seed=seed_record(child)))
    adjusted = adjust_pvalues(np.array([r.pvalue for r in results]), adjust)
    label = test if test is not None else "recommended test per pair"
    return PairwiseResult(systems=tuple(names), comparisons=tuple(results), pvalue_adjusted=adjusted,
                          adjust=adjust, alpha=alpha, test_label=label, seed=seed_record(seq))
