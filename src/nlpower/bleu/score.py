"""Corpus BLEU from sufficient statistics, vectorised; swap effects and swapped subsets.

Corpus BLEU depends on the text only through the summed per-sentence
statistics (lengths, matched and total n-grams).  Swapping the two systems'
outputs for sentence ``i`` moves ``b_i - a_i`` from one system's totals to
the other's, so every single-swap effect is one vectorised BLEU evaluation
on ``n`` modified totals (O(n) in all), and a batch of swapped subsets is a
matrix product of swap masks with the per-sentence differences.

:func:`bleu_from_stats` follows ``sacrebleu.BLEU.compute_bleu`` (sacrebleu
2.x, ``effective_order=False`` as in corpus BLEU) line by line; the tests
check it equals ``sacrebleu.corpus_bleu`` to 1e-9.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._choices import BleuSmooth

__all__ = ["bleu_from_stats", "subset_differences", "swap_effects"]

#: sacrebleu's ``BLEU.SMOOTH_DEFAULTS`` for the methods that take a value.
SMOOTH_DEFAULTS = {"floor": 0.1, "add-k": 1.0}
#: sacrebleu's ``my_log(0)``.
_LOG_ZERO = -9999999999.0
#: Rows of swap masks per matrix product.
_CHUNK = 4096


def bleu_from_stats(stats: np.ndarray, *, smooth_method: BleuSmooth = "exp",
                    smooth_value: float | None = None, max_ngram_order: int = 4) -> np.ndarray:
    """Corpus BLEU (0-100) of every row of summed statistics ``stats`` (shape ``(..., 2 + 2N)``)."""
    order = max_ngram_order
    s = np.asarray(stats, dtype=np.float64)
    sys_len, ref_len = s[..., 0], s[..., 1]
    correct = s[..., 2:2 + order].copy()
    total = s[..., 2 + order:2 + 2 * order].copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(sys_len < ref_len,
                      np.where(sys_len > 0, np.exp(1.0 - ref_len / np.where(sys_len > 0, sys_len, 1.0)),
                               0.0), 1.0)
        any_correct = np.any(correct != 0, axis=-1)  # sacrebleu's early stop, before add-k
        value = SMOOTH_DEFAULTS.get(smooth_method, 0.0) if smooth_value is None else smooth_value
        if smooth_method == "add-k":
            correct[..., 1:] += value
            total[..., 1:] += value
        stopped = np.cumsum(total == 0, axis=-1) > 0  # sacrebleu breaks at the first empty order
        zero = (correct == 0) & ~stopped
        safe_total = np.where(total > 0, total, 1.0)
        if smooth_method == "exp":
            zero_prec = 100.0 / (2.0 ** np.cumsum(zero, axis=-1) * safe_total)
        elif smooth_method == "floor":
            zero_prec = 100.0 * value / safe_total
        else:
            zero_prec = np.zeros_like(total)
        prec = np.where(stopped, 0.0, np.where(zero, zero_prec, 100.0 * correct / safe_total))
        logs = np.where(prec > 0, np.log(np.where(prec > 0, prec, 1.0)), _LOG_ZERO)
        acc = np.zeros_like(bp)
        for k in range(order):  # left to right, like sacrebleu's sum()
            acc = acc + logs[..., k]
        score = bp * np.exp(acc / order)
    return np.where(any_correct, score, 0.0)


def swap_effects(stats_a: np.ndarray, stats_b: np.ndarray, *, smooth_method: BleuSmooth = "exp",
                 smooth_value: float | None = None) -> tuple[float, float, np.ndarray]:
    """BLEU of A and of B, and every single-swap effect ``delta_i``, in O(n).

    ``delta_i`` is the change in ``BLEU(A) - BLEU(B)`` when only sentence
    ``i``'s outputs are exchanged; it is exactly 0 when the two outputs have
    identical statistics.  Swapping everything reverses the difference, so
    ``BLEU(A) - BLEU(B) ~ -sum(delta) / 2`` (Card et al. 2020, §4).
    """
    kw: dict[str, Any] = {"smooth_method": smooth_method, "smooth_value": smooth_value}
    ta, tb = stats_a.sum(axis=0), stats_b.sum(axis=0)
    diff = (stats_b - stats_a).astype(np.float64)
    bleu_a, bleu_b = float(bleu_from_stats(ta, **kw)), float(bleu_from_stats(tb, **kw))
    swapped = bleu_from_stats(ta + diff, **kw) - bleu_from_stats(tb - diff, **kw)
    effects = swapped - (bleu_a - bleu_b)
    effects[np.all(diff == 0, axis=1)] = 0.0
    return bleu_a, bleu_b, effects


def subset_differences(stats_a: np.ndarray, stats_b: np.ndarray, swaps: np.ndarray, *,
                       smooth_method: BleuSmooth = "exp",
                       smooth_value: float | None = None) -> Iterator[np.ndarray]:
    """``BLEU(A_S) - BLEU(B_S)`` for each row ``S`` of the boolean swap masks ``swaps`` (r, n).

    Yields one array per chunk of rows (a matrix product of the masks with
    the per-sentence differences; integer-exact in float64).
    """
    kw: dict[str, Any] = {"smooth_method": smooth_method, "smooth_value": smooth_value}
    ta, tb = stats_a.sum(axis=0).astype(np.float64), stats_b.sum(axis=0).astype(np.float64)
    diff = (stats_b - stats_a).astype(np.float64)
    for start in range(0, swaps.shape[0], _CHUNK):
        moved = swaps[start:start + _CHUNK].astype(np.float64) @ diff
        yield bleu_from_stats(ta + moved, **kw) - bleu_from_stats(tb - moved, **kw)
