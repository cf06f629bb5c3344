"""The native engine: blocked-Cholesky profiled deviance + NLopt BOBYQA (lme4 semantics).

Stages (each a module, testable alone): :mod:`.blocks` (lme4's term order and
``theta`` layout, cross-products once), :mod:`.block1` (the batched factor of
the largest grouping factor), :mod:`.deviance` (the profiled deviance),
:mod:`.optimize` (BOBYQA with lme4's boundary checks), :mod:`.model`
(:class:`NativeModel`, the prepared model of the engine protocol).
"""

from __future__ import annotations

from ...mixed.layout import ThetaLayout, lme4_term_order, make_unique, theta_layout
from ...mixed.native._blas import single_threaded
from .model import NativeModel

__all__ = ["NativeModel", "ThetaLayout", "lme4_term_order", "make_unique", "single_threaded",
           "theta_layout"]
