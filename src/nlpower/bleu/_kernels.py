"""Vectorised randomization tests on swap effects: the hot loops of BLEU power.

Given one vector of swap effects ``delta`` (length n), the observed
difference is ``dB_hat = -sum(delta) / 2`` and swapping the subset ``S``
gives ``dB_hat + sum_{i in S} delta_i`` (Card et al. 2020, §4).  With swap
indicators ``s_i ~ Bernoulli(1/2)`` and signs ``e_i = 2 s_i - 1``, that null
value is ``T = sum_i e_i delta_i / 2``: a Rademacher sum, so a batch of
permutations applied to a batch of replicates is one matrix product
``E @ D.T`` (STYLE 11, as in sacrebleu's ``_paired_ar_test``).

Memory stays bounded: replicates are drawn in batches of ``REPLICATE_BATCH``
and tested in blocks of ``block_size(n)`` columns, permutations in chunks of
at most ``MAX_ELEMENTS // n`` rows.  All replicates of one call share their
swap sets (:class:`SharedSigns`, as sacrebleu shares them across the systems
it compares); each replicate's test is still an exact Monte Carlo
randomization test, and the dependence this induces between replicates is of
order ``(d_j . d_k)^2 / (|d_j|^2 |d_k|^2) ~ 1/n``, far below Monte Carlo error
(``tests/bleu/test_bleu_power.py`` checks the vectorised power against
independent per-replicate swap sets, and the p-value distribution against
the float64 kernel).

Speed: the swap signs are +-1, exact in float32, so the null sums
are one float32 GEMM per block -- half the time and memory traffic of
float64.  A null sum differs from its float64 value by a relative ~1e-7,
which could flip ``|T| >= |dB_hat|`` only for a swap set whose sum ties the
observed one to 7 digits: a probability far below the Monte Carlo error of a
p-value (the distributional test checks this).  The signs are drawn once per
call (and kept while they fit in ``SIGN_CACHE`` elements) instead of once per
replicate batch.

The ``"normal"`` shortcut replaces the permutation null of ``T`` given
``delta`` by its normal limit: ``E[T] = 0`` and ``Var[T] = sum(delta^2) / 4``
exactly, so the two-sided p-value is ``2 Phi(-|sum delta| / sqrt(sum delta^2))``,
the limit of the randomization p-value as the number of permutations grows.
Its error is bounded by Berry–Esseen for Rademacher sums,
``sup |F - Phi| <= 0.56 sum|delta|^3 / (sum delta^2)^(3/2)``, which is reported.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: Replicates whose effects are drawn together and share one set of swap signs.
REPLICATE_BATCH = 100
#: Largest permutation-sign block (rows x n), in elements: 2**21 float64 = 16 MiB.
MAX_ELEMENTS = 2**21
#: Largest shared sign block kept in memory, in float32 elements (2**24 = 64 MiB).
SIGN_CACHE = 2**24
#: Berry–Esseen constant for sums of independent, non-identical terms (Shevtsova 2010).
BERRY_ESSEEN_C = 0.56


def sign_chunks(rng: np.random.Generator, n_resamples: int, n: int) -> Iterator[np.ndarray]:
    """Blocks of random swap signs ``e = 2 s - 1`` (float, +-1), ``n_resamples`` rows in total."""
    rows = max(1, MAX_ELEMENTS // max(n, 1))
    done = 0
    while done < n_resamples:
        k = min(rows, n_resamples - done)
        swaps = rng.integers(0, 2, size=(k, n), dtype=np.int8)
        yield swaps.astype(np.float64) * 2.0 - 1.0
        done += k


def block_size(n: int) -> int:
    """Replicates tested per GEMM: a (replicates x n) float32 block of at most ``MAX_ELEMENTS``."""
    return max(REPLICATE_BATCH, MAX_ELEMENTS // max(n, 1))


class SharedSigns:
    """The swap signs shared by every replicate of a call, as float32 chunks.

    Drawn from ``seed`` (its own stream, so the effects' draws do not depend
    on the number of permutations); kept in memory when ``n_resamples x n``
    fits in ``SIGN_CACHE``, else drawn again -- identically -- for every block.
    """

    def __init__(self, seed: np.random.SeedSequence, n_resamples: int, n: int):
        self.seed, self.n_resamples, self.n = seed, n_resamples, n
        self._cache: list[np.ndarray] | None = None
        if n_resamples * n <= SIGN_CACHE:
            self._cache = list(self._draw(rows=n_resamples))

    def _draw(self, rows: int) -> Iterator[np.ndarray]:
        gen = np.random.Generator(np.random.PCG64(self.seed))
        done = 0
        while done < self.n_resamples:
            k = min(rows, self.n_resamples - done)
            signs = gen.integers(0, 2, size=(k, self.n), dtype=np.int8).astype(np.float32)
            signs *= 2.0
            signs -= 1.0
            yield signs
            done += k

    def chunks(self) -> Iterator[np.ndarray]:
        """The sign chunks, ``n_resamples`` rows in total (the same on every call)."""
        if self._cache is not None:
            yield from self._cache
        else:
            yield from self._draw(rows=max(1, MAX_ELEMENTS // max(self.n, 1)))

    def pvalues(self, deltas: np.ndarray) -> np.ndarray:
        """Randomization p-values of the replicates in the rows of ``deltas``.

        ``p = (1 + #{r: |T_r| >= |dB_hat|}) / (1 + n_resamples)``, as
        :func:`randomization_pvalues`, with ``2 T = E @ delta`` in float32.
        """
        threshold = np.abs(deltas.sum(axis=1)).astype(np.float32)  # |2 dB_hat|
        dt = np.ascontiguousarray(deltas.T, dtype=np.float32)
        exceed = np.zeros(deltas.shape[0], dtype=np.int64)
        for signs in self.chunks():
            null = signs @ dt
            np.abs(null, out=null)
            exceed += np.count_nonzero(null >= threshold, axis=0)
        return (1.0 + exceed) / (1.0 + self.n_resamples)


def randomization_pvalues(rng: np.random.Generator, deltas: np.ndarray,
                          n_resamples: int) -> np.ndarray:
    """Monte Carlo randomization p-values, one per row of ``deltas`` (shape (k, n)).

    ``p = (1 + #{r: |T_r| >= |dB_hat|}) / (1 + n_resamples)`` (two-sided,
    Phipson & Smyth 2010; sacrebleu counts ``>`` instead, which differs only
    on exact ties).  The float64 reference of :meth:`SharedSigns.pvalues`.
    """
    observed = np.abs(0.5 * deltas.sum(axis=1))
    exceed = np.zeros(deltas.shape[0], dtype=np.int64)
    dt = deltas.T
    for signs in sign_chunks(rng, n_resamples, deltas.shape[1]):
        null = np.abs(0.5 * (signs @ dt))  # (rows, k): |T| for every swap set and replicate
        exceed += np.count_nonzero(null >= observed, axis=0)
    return (1.0 + exceed) / (1.0 + n_resamples)


def normal_pvalues(deltas: np.ndarray) -> tuple[np.ndarray, float]:
    """Normal-limit p-values of the randomization test, and the largest Berry–Esseen bound.

    ``p = 2 Phi(-|sum delta| / sqrt(sum delta^2))``; the bound is the worst
    case over rows of ``0.56 sum|delta|^3 / (sum delta^2)^(3/2)`` on the CDF error.
    """
    from scipy import special  # imported on first use: randomization power needs only numpy

    total = deltas.sum(axis=1)
    ss = np.einsum("ij,ij->i", deltas, deltas)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(ss > 0, np.abs(total) / np.sqrt(ss), 0.0)
        bound = np.where(ss > 0, BERRY_ESSEEN_C * np.abs(deltas**3).sum(axis=1) / ss**1.5, 1.0)
    return 2.0 * special.ndtr(-z), float(np.max(bound)) if bound.size else 0.0


class AffineNull:
    """Observed and null statistics of replicates whose effects are affine in ``mu``.

    With ``delta = nonzero * (mu + b L)`` every statistic splits as
    ``mu * part1 + b * part2``; the parts are computed once (one matrix
    product with the swap signs, kept in memory) and the p-values at any
    ``mu`` are then O(n_sims x n_resamples).  Used by :func:`nlpower.bleu.mde`
    so that every candidate ``dB`` sees the same draws (common random numbers).
    """

    def __init__(self, nonzero: np.ndarray, laplace: np.ndarray, b: float,
                 rng: np.random.Generator | None, n_resamples: int):
        z = nonzero.astype(np.float64)
        zl = z * laplace
        self.b = b
        self.obs1 = z.sum(axis=1)
        self.obs2 = zl.sum(axis=1)
        self.ss = (z.sum(axis=1), 2.0 * zl.sum(axis=1), (zl * laplace).sum(axis=1))
        self.null1: np.ndarray | None = None
        self.null2: np.ndarray | None = None
        if rng is not None:
            stacked = np.concatenate([z, zl]).T
            parts = [signs @ stacked for signs in sign_chunks(rng, n_resamples, z.shape[1])]
            both = np.concatenate(parts)
            self.null1, self.null2 = both[:, : z.shape[0]], both[:, z.shape[0]:]

    def observed(self, mu: float) -> np.ndarray:
        """``dB_hat`` of each replicate at location ``mu``."""
        return -0.5 * (mu * self.obs1 + self.b * self.obs2)

    def pvalues(self, mu: float) -> np.ndarray:
        """Randomization p-values at ``mu`` (normal-limit ones when built without ``rng``)."""
        obs = np.abs(self.observed(mu))
        if self.null1 is None or self.null2 is None:
            from scipy import special

            a, c2, c3 = self.ss
            ss = mu * mu * a + mu * self.b * c2 + self.b * self.b * c3
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(ss > 0, 2.0 * obs / np.sqrt(ss), 0.0)
            return 2.0 * special.ndtr(-z)
        null = np.abs(0.5 * (mu * self.null1 + self.b * self.null2))
        exceed = np.count_nonzero(null >= obs, axis=0)
        return (1.0 + exceed) / (1.0 + self.null1.shape[0])
