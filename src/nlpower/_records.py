"""Records of results: NaN <-> None (strict JSON has no NaN) and one codec for every result type."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["RecordCodec", "RecordLayout", "from_record", "nan_to_none", "none_to_nan",
           "to_record"]

T = TypeVar("T")


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


# ----------------------------------------------------------------------------------------
# the generic record codec of frozen result dataclasses
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordLayout:
    """How a frozen result dataclass is laid out as a flat JSON-able record.

    The codec (:func:`to_record`, :func:`from_record`) walks the dataclass's
    fields in order and converts each by its type hint: ``float`` (NaN <->
    ``None``; with ``nonfinite=True`` every non-finite float is written as
    ``None``), ``int``, ``str``, ``bool``, tuples (lists in the record),
    dicts, an optional value (``None`` kept), a
    :class:`~nlpower.intervals.ConfidenceInterval` (two keys, ``<name>_low``
    and ``<name>_high``, or the pair in ``intervals``) and ``seed`` (the
    :func:`nlpower._rng.seed_record` dict, as ``seed_entropy`` and
    ``seed_spawn_key``).  Fields with ``compare=False`` (per-replicate
    arrays, nested summaries) and those in ``skip`` are left out.

    ``first``: record keys that come before the others, in this order (the
    rest follow in field order), so a record keeps the column order of the
    tables built from it.  A key missing from a record read back takes the
    field's default.
    """

    intervals: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    skip: frozenset[str] = frozenset()
    first: tuple[str, ...] = ()
    nonfinite: bool = False


def _hints(cls: type) -> dict[str, Any]:
    from .intervals import ConfidenceInterval    # resolvable in any class's hints
    return typing.get_type_hints(cls, localns={"ConfidenceInterval": ConfidenceInterval})


def _interval_keys(name: str, layout: RecordLayout) -> tuple[str, str]:
    return layout.intervals.get(name, (f"{name}_low", f"{name}_high"))


def _kept(cls: type, layout: RecordLayout) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.compare and f.name not in layout.skip]


def _write_float(x: Any, layout: RecordLayout) -> Any:
    if x is None:
        return None
    if layout.nonfinite and isinstance(x, float) and not math.isfinite(x):
        return None
    return nan_to_none(x)


def to_record(obj: Any, layout: RecordLayout) -> dict[str, Any]:
    """The flat record of the frozen dataclass ``obj`` (:class:`RecordLayout`).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from nlpower.intervals import ConfidenceInterval
    >>> @dataclass(frozen=True)
    ... class R:
    ...     power: float
    ...     ci: ConfidenceInterval
    ...     notes: tuple[str, ...] = ()
    >>> to_record(R(float("nan"), ConfidenceInterval(0.1, 0.3), ("a",)), RecordLayout())
    {'power': None, 'ci_low': 0.1, 'ci_high': 0.3, 'notes': ['a']}
    """
    from .intervals import ConfidenceInterval

    hints = _hints(type(obj))
    out: dict[str, Any] = {}
    for f in _kept(type(obj), layout):
        v, kind = getattr(obj, f.name), _kind(hints[f.name])
        if kind is ConfidenceInterval:
            lo, hi = _interval_keys(f.name, layout)
            out[lo], out[hi] = _write_float(v.low, layout), _write_float(v.high, layout)
        elif f.name == "seed":
            out["seed_entropy"] = v.get("entropy")
            out["seed_spawn_key"] = list(v.get("spawn_key", ()))
        elif kind is float:
            out[f.name] = _write_float(v, layout)
        elif kind is tuple:
            out[f.name] = list(v)
        elif kind is dict:
            out[f.name] = dict(v)
        else:
            out[f.name] = v
    ordered = {k: out.pop(k) for k in layout.first if k in out}
    ordered.update(out)
    return ordered


def from_record(cls: type[T], record: Mapping[str, Any], layout: RecordLayout) -> T:
    """The ``cls`` instance back from :func:`to_record`'s record (missing keys: defaults)."""
    from .intervals import ConfidenceInterval

    hints = _hints(cls)
    r = dict(record)
    kw: dict[str, Any] = {}
    for f in _kept(cls, layout):
        kind = _kind(hints[f.name])
        if kind is ConfidenceInterval:
            lo, hi = _interval_keys(f.name, layout)
            kw[f.name] = ConfidenceInterval(none_to_nan(r.get(lo)), none_to_nan(r.get(hi)))
            continue
        if f.name == "seed":
            kw["seed"] = {} if r.get("seed_entropy") is None else {
                "entropy": r["seed_entropy"], "spawn_key": tuple(r.get("seed_spawn_key", ()))}
            continue
        if f.name not in r:
            continue                                  # the field's default
        v = r[f.name]
        if v is None and _optional(hints[f.name]):
            kw[f.name] = None
        elif kind is float:
            kw[f.name] = none_to_nan(v)
        elif kind in (int, str, bool):
            kw[f.name] = kind(v)
        elif kind is tuple:
            kw[f.name] = tuple(v)
        elif kind is dict:
            kw[f.name] = dict(v)
        else:
            kw[f.name] = v
    return cls(**kw)


def _optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def _kind(hint: Any) -> Any:
    """The base type of a hint: ``float | None`` -> float, ``tuple[str, ...]`` -> tuple."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _kind(args[0])
    return origin if origin is not None else hint


class RecordCodec:
    """``to_record()`` / ``from_record(record)`` of a frozen result dataclass, by its fields.

    A result class sets ``_record_layout`` (:class:`RecordLayout`) and
    inherits both methods.
    """

    _record_layout: typing.ClassVar[RecordLayout] = RecordLayout()

    def to_record(self) -> dict[str, Any]:
        """Flat JSON-able record (a grid cell, a checkpoint line): the fields by type."""
        return to_record(self, self._record_layout)

    @classmethod
    def from_record(cls: type[T], record: Mapping[str, Any]) -> T:
        """The result back from :meth:`to_record`."""
        return from_record(cls, record, cls._record_layout)  # type: ignore[attr-defined]
