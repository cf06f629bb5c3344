"""Records of results: NaN <-> None (strict JSON has no NaN) and one codec for every result type."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
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
    fields in order and converts each by its type hint: ``float``, ``int``,
    ``str``, ``bool``, tuples (lists in the record), dicts, an optional value
    (``None`` kept), a :class:`~nlpower.intervals.ConfidenceInterval` (two
    keys, ``<name>_low`` and ``<name>_high``, or the pair in ``intervals``;
    an optional one absent is two ``None``) and ``seed`` (the
    :func:`nlpower._rng.seed_record` dict: ``seed_entropy`` and
    ``seed_spawn_key`` with ``seed="flat"``, the same with the entropy as
    decimal text with ``"text"``, one ``seed`` dict with ``"nested"``; an
    optional seed absent is ``None`` values).  Fields with ``compare=False``
    (per-replicate arrays, models) and those in ``skip`` are left out, except the
    :class:`~nlpower.montecarlo.MonteCarloSummary` field ``mc`` when
    ``summary`` names the record key of the effect it is read back with: its
    own record is merged in.  ``custom`` maps a field to its own ``(write,
    read)`` pair; ``derived`` maps a property written too (for tables; not
    read back) to the field it follows.

    ``nan``: how floats are written -- ``"none"`` (NaN as ``None``),
    ``"nonfinite"`` (every non-finite float as ``None``) or ``"keep"``; a
    ``None`` read back is NaN either way; the floats in ``raw`` are written
    as they are whatever ``nan`` says.  ``first`` and ``last``: record keys
    that open and close the record, in this order (the others in field order
    between them), so a record keeps the column order of the tables built
    from it.  A key missing from a record read back takes the field's
    default.
    """

    intervals: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    skip: frozenset[str] = frozenset()
    first: tuple[str, ...] = ()
    last: tuple[str, ...] = ()
    nan: typing.Literal["none", "nonfinite", "keep"] = "none"
    seed: typing.Literal["flat", "text", "nested"] = "flat"
    summary: str | None = None
    custom: Mapping[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = field(
        default_factory=dict)
    derived: Mapping[str, str] = field(default_factory=dict)
    raw: frozenset[str] = frozenset()


def _hints(cls: type) -> dict[str, Any]:
    from .intervals import ConfidenceInterval  # resolvable in any class's hints
    return typing.get_type_hints(cls, localns={"ConfidenceInterval": ConfidenceInterval})


def _interval_keys(name: str, layout: RecordLayout) -> tuple[str, str]:
    return layout.intervals.get(name, (f"{name}_low", f"{name}_high"))


def _kept(cls: type, layout: RecordLayout) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.name not in layout.skip and (
        f.compare or (f.name == "mc" and layout.summary is not None))]


def _write_float(x: Any, layout: RecordLayout) -> Any:
    if x is None or layout.nan == "keep":
        return x
    if layout.nan == "nonfinite" and isinstance(x, float) and not math.isfinite(x):
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
    hints = _hints(type(obj))
    out: dict[str, Any] = {}
    after: dict[str, list[str]] = {}
    for prop, anchor in layout.derived.items():
        after.setdefault(anchor, []).append(prop)
    for f in _kept(type(obj), layout):
        _write(out, f.name, getattr(obj, f.name), _kind(hints[f.name]), layout)
        for prop in after.get(f.name, ()):
            out[prop] = _write_float(getattr(obj, prop), layout)
    ordered = {k: out.pop(k) for k in layout.first if k in out}
    tail = {k: out.pop(k) for k in layout.last if k in out}
    return {**ordered, **out, **tail}


def _write(out: dict[str, Any], name: str, v: Any, kind: Any, layout: RecordLayout) -> None:
    from .intervals import ConfidenceInterval

    if name in layout.custom:
        out[name] = layout.custom[name][0](v)
    elif name == "mc":
        out.update({} if v is None else v.to_record())
    elif kind is ConfidenceInterval:
        lo, hi = _interval_keys(name, layout)
        out[lo], out[hi] = ((None, None) if v is None else
                            (_write_float(v.low, layout), _write_float(v.high, layout)))
    elif name == "seed":
        _write_seed(out, v, layout)
    elif kind is float:
        out[name] = v if name in layout.raw else _write_float(v, layout)
    elif kind is tuple:
        out[name] = list(v)
    elif kind is dict:
        out[name] = dict(v)
    else:
        out[name] = v


def _write_seed(out: dict[str, Any], v: Mapping[str, Any] | None, layout: RecordLayout) -> None:
    if layout.seed == "nested":
        out["seed"] = None if v is None else {"entropy": v.get("entropy"),
                                              "spawn_key": list(v.get("spawn_key", ()))}
    elif v is None:
        out["seed_entropy"], out["seed_spawn_key"] = None, None
    else:
        entropy = v.get("entropy")
        out["seed_entropy"] = (str(entropy) if layout.seed == "text" and entropy is not None
                               else entropy)
        out["seed_spawn_key"] = list(v.get("spawn_key", ()))


def _read_seed(r: Mapping[str, Any], optional: bool, layout: RecordLayout) -> Any:
    if layout.seed == "nested":
        s = r.get("seed") or {}
        entropy, key = s.get("entropy"), s.get("spawn_key")
    else:
        entropy, key = r.get("seed_entropy"), r.get("seed_spawn_key")
    if entropy is None:
        return None if optional else {}
    if layout.seed == "text":
        entropy = int(entropy)
    return {"entropy": entropy, "spawn_key": tuple(key or ())}


def from_record(cls: type[T], record: Mapping[str, Any], layout: RecordLayout) -> T:
    """The ``cls`` instance back from :func:`to_record`'s record (missing keys: defaults)."""
    hints = _hints(cls)
    r = dict(record)
    kw: dict[str, Any] = {}
    for f in _kept(cls, layout):
        _read(kw, r, f.name, hints[f.name], layout)
    return cls(**kw)


def _read(kw: dict[str, Any], r: dict[str, Any], name: str, hint: Any,
          layout: RecordLayout) -> None:
    from .intervals import ConfidenceInterval

    kind = _kind(hint)
    if name == "mc":
        from .montecarlo import MonteCarloSummary
        assert layout.summary is not None
        kw[name] = MonteCarloSummary.from_record(r, effect=float(r[layout.summary]))
    elif kind is ConfidenceInterval:
        lo, hi = _interval_keys(name, layout)
        kw[name] = (None if _optional(hint) and r.get(lo) is None else
                    ConfidenceInterval(none_to_nan(r.get(lo)), none_to_nan(r.get(hi))))
    elif name == "seed":
        kw[name] = _read_seed(r, _optional(hint), layout)
    elif name not in r:
        return                                        # the field's default
    elif name in layout.custom:
        kw[name] = layout.custom[name][1](r[name])
    elif r[name] is None and _optional(hint):
        kw[name] = None
    elif kind is float:
        kw[name] = none_to_nan(r[name])
    elif kind in (int, str, bool):
        kw[name] = kind(r[name])
    elif kind is tuple:
        kw[name] = tuple(r[name])
    elif kind is dict:
        kw[name] = dict(r[name])
    else:
        kw[name] = r[name]


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
