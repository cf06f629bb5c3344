"""Memory a native fit needs, estimated from the structure before anything large is built.

A model can need far more memory than its data: the paper's model with 20
systems, ``(system || worker) + (system || item)``, gives every item 21
random-effects columns, and the Schur products against them number in the
millions.  :func:`check_memory` refuses a structure whose estimate exceeds
``MEMORY_LIMIT`` with the estimate and a smaller model, before the
allocation (instead of an out-of-memory kill with no message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import InputError

if TYPE_CHECKING:
    from ...lmm.structure import ModelSpec
    from .blocks import GroupBlock

# a structure whose fit needs more memory than this (estimate) is refused up front
MEMORY_LIMIT = 4 * 2**30


def memory_estimate(b1: GroupBlock, N2: int, nnz: float, dense: bool) -> float:
    """Bytes a fit of this structure holds at its peak (an upper estimate).

    The Schur products (``V`` with its build, ~120 bytes per product; or the
    dense ``(N2, m1, q1)`` array twice), ~8 dense ``N2 x N2`` matrices (the
    cross-products, the factor, the inverses of the gradient) and block 1's
    per-level ``q1 x q1`` factors.  Measured peak on the 20-system paper model
    (15 million products, ``N2`` = 3,822): 1.9 GB against 2.8 GB estimated.
    """
    m1, q1 = b1.m, b1.q
    schur = 16.0 * N2 * m1 * q1 if dense else 120.0 * nnz + 8.0 * N2 * N2
    return schur + 64.0 * N2 * N2 + 64.0 * m1 * q1 * q1


def _smaller_model(spec: ModelSpec) -> str:
    """A smaller model for the message: ``(1 | g:f)`` instead of each factor term ``(0 + f | g)``.

    ``(1 | g) + (1 | g:f)`` is ``(f || g)`` with one variance for all levels
    of ``f`` within ``g`` (compound symmetry): 2 parameters per grouping
    factor instead of ``K (K + 1) / 2 + 1``, identified wherever a level of
    ``g`` is rated under several levels of ``f``.
    """
    swaps = []
    for t in spec.re_terms:
        cols = [c for c in t.cnames if c != "(Intercept)"]
        facs = [f for f in spec.data_columns if cols and all(c.startswith(f) for c in cols)]
        if len(cols) >= 2 and facs:
            f = max(facs, key=len)
            term = f"({'0 + ' if len(cols) == t.q else ''}{f} | {t.group})"
            swaps.append(f"{term} by (1 | {t.group}:{f})")
    if not swaps:
        return "random intercepts (1 | g) in place of the terms with many columns"
    return ("one variance per grouping factor for all levels of the factor: replace "
            + " and ".join(swaps))


def check_memory(spec: ModelSpec, b1: GroupBlock, N2: int, nnz: float, dense: bool) -> None:
    """Refuse, before allocating, a structure whose fit needs more than ``MEMORY_LIMIT`` bytes."""
    need = memory_estimate(b1, N2, nnz, dense)
    if need > MEMORY_LIMIT:
        raise InputError(
            f"the random-effects structure of {spec.formula!r} needs an estimated "
            f"{need / 2**30:.1f} GB of memory to fit (limit {MEMORY_LIMIT / 2**30:.0f} GB): "
            f"{b1.m} levels of {b1.group!r} with {b1.q} random-effects columns each, coupled to "
            f"{N2 - 1} other columns ({nnz:.3g} cross-products). Fit a smaller model, e.g. "
            f"{_smaller_model(spec)}; or, on a machine with more memory, raise "
            "nlpower.mixed.native.memory.MEMORY_LIMIT (bytes)."
        )
