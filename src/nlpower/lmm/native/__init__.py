"""The native engine: blocked-Cholesky profiled deviance + NLopt BOBYQA (lme4 semantics)."""

from __future__ import annotations

from .model import NativeModel

__all__ = ["NativeModel"]
