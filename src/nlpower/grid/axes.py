"""Grid axes: values given as lists become axes, scalars fixed columns; cell keys and seeds.

Every cell draws from its own child :class:`~numpy.random.SeedSequence`,
derived from the root seed and the cell's *key* (its axis values), never from
its position or from the order in which cells finish.  Results are therefore
identical for any ``n_jobs``, for ``backend="loky"`` or ``"dask"``, after a
resume from a checkpoint, and when axis values are added, removed or
reordered.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from itertools import product
from typing import Any

import numpy as np

from .._rng import RNGLike, root_seed
from ..errors import InputError
from .checkpoint import normalize

__all__ = ["axis_values", "cell_keys", "cell_seed", "cell_token", "is_axis", "plain"]


def is_axis(value: Any) -> bool:
    """Whether an argument is a list of values (an axis) rather than one value."""
    if isinstance(value, (str, bytes, Mapping)):
        return False
    return isinstance(value, (Sequence, np.ndarray, range)) or (
        isinstance(value, Iterable) and not isinstance(value, numbers.Number)
    )


def plain(value: Any) -> Any:
    """numpy scalars as Python scalars (so keys are JSON-able and compare equal)."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def axis_values(name: str, value: Any) -> tuple[Any, ...]:
    """The values of axis ``name``: a one-value tuple for a scalar; distinct, non-empty."""
    if not is_axis(value):
        return (plain(value),)
    raw = np.asarray(value, dtype=object).ravel() if isinstance(value, np.ndarray) else value
    values = tuple(plain(v) for v in raw)
    if not values:
        raise InputError(f"{name}: an axis needs at least one value; got an empty {type(value).__name__}. "
                         f"Pass a list such as {name}=[...] or a single value.")
    seen: list[Any] = []
    for v in values:
        if v in seen:
            raise InputError(f"{name}: axis values must be distinct; {v!r} appears more than once in {list(values)!r}.")
        close = next((u for u in seen if _near(u, v)), None)
        if close is not None:
            raise InputError(
                f"{name}: axis values {close!r} and {v!r} differ by only {abs(v - close):.3g}; "
                "they would be two cells that print with one label and mean the same design. "
                "Drop one, or round the values.")
        seen.append(v)
    return values


def _near(a: Any, b: Any) -> bool:
    """Two different real numbers that are the same for every practical purpose."""
    real = (isinstance(x, numbers.Real) and not isinstance(x, bool) for x in (a, b))
    return all(real) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def cell_keys(axes: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every cell's key, in Cartesian order (the last axis varies fastest)."""
    return [dict(zip(axes, combo, strict=True)) for combo in product(*axes.values())]


def cell_token(key: Mapping[str, Any]) -> str:
    """Canonical text of a cell key (sorted JSON): its identity in checkpoints and seeds."""
    return json.dumps(normalize(dict(key)), sort_keys=True, separators=(",", ":"))


def _key_words(key: Mapping[str, Any]) -> tuple[int, ...]:
    digest = hashlib.sha256(cell_token(key).encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))


def cell_seed(rng: RNGLike, key: Mapping[str, Any]) -> np.random.SeedSequence:
    """The child seed of the grid cell with axis values ``key`` under root ``rng``.

    ``SeedSequence(root.entropy, spawn_key=root.spawn_key + h)`` where ``h`` is
    four 32-bit words of the SHA-256 of the canonical JSON of ``key``.  So
    ``power(design, params, rng=cell_seed(2020, key), ...)`` reproduces one cell
    of ``power_grid(..., rng=2020)`` on its own.
    """
    root = root_seed(rng)
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *_key_words(key)))
