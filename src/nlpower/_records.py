"""NaN <-> None for JSON records (strict JSON has no NaN): one rule for every result type."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["nan_to_none", "none_to_nan"]


def nan_to_none(x: Any) -> Any:
    """``None`` for ``None`` or a float NaN; other values unchanged.

    >>> nan_to_none(float("nan")) is None, nan_to_none(0.5)
    (True, 0.5)
    """
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def none_to_nan(x: Any) -> float:
    """``nan`` for ``None``, else ``float(x)`` (reading a record back).

    >>> none_to_nan(None), none_to_nan(2)
    (nan, 2.0)
    """
    return math.nan if x is None else float(x)
