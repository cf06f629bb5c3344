"""P0 and b0 from two systems' outputs, and their real paired randomization test.

Card et al. (2020), §4 and App. G.1: compute the effect of swapping each
sentence alone (from sacrebleu's sufficient statistics, O(n) in all), check
that sums of single effects approximate the effect of swapping whole
random subsets (Fig. 15), and fit the Delta–Laplace mixture by maximum
likelihood (Fig. 16, Table 3).  The same swap masks give the paired
approximate-randomization test of the two systems, as sacrebleu runs it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from .._choices import BleuSmooth, check_choice
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int
from ..errors import InputError
from .process import DeltaLaplaceFit, fit_delta_laplace
from .score import subset_differences, swap_effects
from .text import Lines, References, check_tokenize, read_lines, read_references, segment_statistics

__all__ = ["BleuEstimateResult", "SubsetCheck", "estimate"]

#: Differences within this many BLEU points of the observed one count as ties.
_TIE = 1e-9


@dataclass(frozen=True)
class SubsetCheck:
    """How well sums of single-swap effects predict swapping whole subsets (App. G.1, Fig. 15).

    Over the test's random subsets ``S`` (each sentence swapped with
    probability 1/2): ``actual = BLEU diff after swapping S - BLEU diff``,
    ``predicted = sum_{i in S} delta_i``.  ``correlation``, the OLS ``slope``
    of actual on predicted, the ``rmse`` of ``actual - predicted`` and the
    ``relative_rmse`` (rmse / SD of actual).
    """

    n_subsets: int
    correlation: float
    slope: float
    rmse: float
    relative_rmse: float
    max_abs_error: float

    def __repr__(self) -> str:
        return (f"SubsetCheck(n_subsets={self.n_subsets}, correlation={self.correlation:.4f}, "
                f"slope={self.slope:.3f}, relative_rmse={self.relative_rmse:.3g})")


@dataclass(frozen=True)
class BleuEstimateResult:
    """Delta–Laplace parameters and the paired randomization test of two MT systems.

    Attributes
    ----------
    n : int
        Sentences.
    bleu_a, bleu_b, delta_bleu : float
        sacrebleu corpus BLEU of each system and ``delta_bleu = bleu_a - bleu_b``.
    effects : ndarray
        Single-swap effects ``delta_i`` (BLEU points); ``-effects.sum() / 2``
        approximates ``delta_bleu``.
    fit : DeltaLaplaceFit
        ML fit: ``p0``, ``b0`` (also as attributes here), ``mu``, ``b``, SEs.
    pvalue : float
        Two-sided paired approximate-randomization p-value,
        ``(1 + #{|d_S| >= |d|}) / (1 + n_resamples)`` (differences within
        1e-9 BLEU of ``|d|`` count as ties).
    subset_check : SubsetCheck
        Sum of single effects vs the effect of swapping whole subsets.
    n_resamples, tokenize, smooth_method, n_refs, seed, version : settings.
    """

    n: int
    bleu_a: float
    bleu_b: float
    delta_bleu: float
    fit: DeltaLaplaceFit
    pvalue: float
    n_resamples: int
    subset_check: SubsetCheck
    tokenize: str
    smooth_method: str
    n_refs: int
    seed: dict[str, Any]
    version: str
    effects: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.empty(0))

    @property
    def p0(self) -> float:
        """ML share of sentences whose swap changes nothing."""
        return self.fit.p0

    @property
    def b0(self) -> float:
        """ML Laplace scale of the non-zero effects times n."""
        return self.fit.b0

    def __repr__(self) -> str:
        return (f"BleuEstimateResult(n={self.n}, delta_bleu={self.delta_bleu:.3f}, "
                f"p0={self.p0:.4f}, b0={self.b0:.3f}, pvalue={self.pvalue:.4g})")

    def summary(self) -> str:
        """A short text report."""
        f, c = self.fit, self.subset_check
        return "\n".join([
            f"BLEU comparison: {self.n} sentences, {self.n_refs} reference(s), tokenize "
            f"{self.tokenize!r}, smoothing {self.smooth_method!r}",
            f"  BLEU A {self.bleu_a:.2f}, B {self.bleu_b:.2f}; difference {self.delta_bleu:.3f} BLEU "
            f"points (half the summed per-sentence swap effects: "
            f"{-0.5 * float(self.effects.sum()):.3f})",
            f"  paired randomization test: p = {self.pvalue:.4g} ({self.n_resamples} swap sets)",
            f"  Delta-Laplace ML fit: P0 = {f.p0:.4f} (SE {f.p0_se:.4f}; {f.n_zero} zero effects), "
            f"b0 = {f.b0:.3f} (SE {f.b0_se:.3f}); mu = {f.mu:.3g}, b = {f.b:.3g}",
            f"  sum of single effects vs swapping subsets ({c.n_subsets}): correlation "
            f"{c.correlation:.4f}, slope {c.slope:.3f}, relative RMSE {c.relative_rmse:.3g}",
        ])

    def to_frame(self) -> pd.DataFrame:
        """One row per sentence: its swap effect and whether it is a structural zero."""
        return pd.DataFrame({"sentence": np.arange(1, self.n + 1), "effect": self.effects,
                             "zero": self.effects == 0})

    def to_record(self) -> dict[str, Any]:
        """Flat JSON-able summary (no per-sentence effects)."""
        c = self.subset_check
        return {
            "n": self.n, "bleu_a": self.bleu_a, "bleu_b": self.bleu_b,
            "delta_bleu": self.delta_bleu, "p0": self.p0, "b0": self.b0, "mu": self.fit.mu,
            "b": self.fit.b, "p0_se": self.fit.p0_se, "b0_se": self.fit.b0_se,
            "n_zero": self.fit.n_zero, "pvalue": self.pvalue, "n_resamples": self.n_resamples,
            "subset_correlation": c.correlation, "subset_slope": c.slope,
            "subset_relative_rmse": c.relative_rmse, "tokenize": self.tokenize,
            "smooth_method": self.smooth_method, "n_refs": self.n_refs,
            "seed": {"entropy": self.seed.get("entropy"),
                     "spawn_key": list(self.seed.get("spawn_key", ()))},
            "version": self.version,
        }


def _subset_check(actual: np.ndarray, predicted: np.ndarray) -> SubsetCheck:
    err = actual - predicted
    sd = float(np.std(actual))
    var_p = float(np.var(predicted))
    corr = float(np.corrcoef(actual, predicted)[0, 1]) if sd > 0 and var_p > 0 else math.nan
    slope = float(np.cov(actual, predicted)[0, 1] / var_p) if var_p > 0 else math.nan
    rmse = float(np.sqrt(np.mean(err**2)))
    return SubsetCheck(n_subsets=actual.size, correlation=corr, slope=slope, rmse=rmse,
                       relative_rmse=rmse / sd if sd > 0 else math.nan,
                       max_abs_error=float(np.max(np.abs(err))))


def estimate(hyps_a: Lines, hyps_b: Lines, refs: References, *, tokenize: str = "13a",
             lowercase: bool = False, smooth_method: BleuSmooth = "exp",
             n_resamples: int = 10000, rng: RNGLike = 12345) -> BleuEstimateResult:
    """Fit P0 and b0 to two systems' outputs and run their paired randomization test.

    Parameters
    ----------
    hyps_a, hyps_b : path or list of str
        The two systems' outputs, one sentence per line, aligned.
    refs : path, list of str, or list of those
        One reference (a file path or its lines) or several (a list of
        ``Path`` objects or of lists of lines), each aligned with the outputs.
    tokenize, lowercase, smooth_method : sacrebleu's BLEU options (defaults: sacrebleu's).
    n_resamples : int
        Random swap sets for the randomization test (sacrebleu's default: 10000).
    rng : seed or Generator
        Default 12345, sacrebleu's default seed: with an int seed the swap
        sets are sacrebleu's own, so the p-value matches ``sacrebleu
        --paired-ar`` (which counts only strictly larger differences).

    Returns
    -------
    BleuEstimateResult
        BLEU of each system, the single-swap effects, the ML ``p0`` and
        ``b0`` (pass them to :func:`nlpower.bleu.power`), the p-value and
        the subset check.

    Examples
    --------
    >>> refs = ["the cat sat on the mat today", "a dog ran in the park at noon",
    ...         "it was a very sunny day here", "we went to the market by bus"]
    >>> a = ["the cat sat on the mat today", "a dog ran in a park at noon",
    ...      "it was a sunny day here", "we went to the market by car"]
    >>> b = ["the cat sat on a mat", "a dog ran in the park at noon",
    ...      "it was a very sunny day", "we went to the market by car"]
    >>> res = estimate(a, b, refs, n_resamples=999)
    >>> res.fit.n_zero  # sentence 4 is the same in both systems
    1
    """
    a = read_lines("hyps_a", hyps_a, empty_lines=True)  # an empty output is valid MT output
    b = read_lines("hyps_b", hyps_b, empty_lines=True)
    if len(a) != len(b):
        raise InputError(
            f"hyps_a and hyps_b must have one line per test sentence each; got {len(a)} and "
            f"{len(b)} lines. The two systems must translate the same, aligned test set.")
    streams = read_references(refs, len(a))
    tokenize = check_tokenize(tokenize)
    smooth_method = check_choice("smooth_method", smooth_method, BleuSmooth)
    n_resamples = check_int("n_resamples", n_resamples, min=1)
    if not isinstance(lowercase, bool):
        raise InputError(f"lowercase must be True or False; got {lowercase!r}.")
    stats_a = segment_statistics(a, streams, tokenize=tokenize, lowercase=lowercase)
    stats_b = segment_statistics(b, streams, tokenize=tokenize, lowercase=lowercase)
    bleu_a, bleu_b, effects = swap_effects(stats_a, stats_b, smooth_method=smooth_method)
    if np.count_nonzero(effects) < 2:
        raise InputError(
            "hyps_a and hyps_b: fewer than 2 sentences differ in their BLEU statistics, so there is "
            "no Laplace part to fit. Compare two different systems.")
    fit = fit_delta_laplace(effects)
    observed = bleu_a - bleu_b
    seq = root_seed(rng)
    gen = np.random.Generator(np.random.PCG64(seq))
    keep = gen.integers(2, size=(n_resamples, len(a)), dtype=bool)  # sacrebleu's draw, one call
    swaps = ~keep
    null = np.concatenate(list(subset_differences(stats_a, stats_b, swaps,
                                                  smooth_method=smooth_method)))
    exceed = int(np.count_nonzero(np.abs(null) >= abs(observed) - _TIE))
    predicted = np.concatenate([swaps[i:i + 4096].astype(np.float64) @ effects
                                for i in range(0, n_resamples, 4096)])
    return BleuEstimateResult(
        n=len(a), bleu_a=bleu_a, bleu_b=bleu_b, delta_bleu=observed, fit=fit,
        pvalue=(1.0 + exceed) / (1.0 + n_resamples), n_resamples=n_resamples,
        subset_check=_subset_check(null - observed, predicted), tokenize=tokenize,
        smooth_method=smooth_method, n_refs=len(streams), seed=seed_record(seq),
        version=__version__, effects=effects)
