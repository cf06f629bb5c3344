"""Validation of one checkpoint record: its checksum, its cell, and its values.

A checkpoint line is trusted only if everything about it checks out: it is
UTF-8 JSON, its ``sha256`` matches the canonical text of the rest of the line
(so an edited value is caught even when it looks plausible), its cell is a
cell of this grid with that cell's index and key-derived seed, and its record
holds the fields every :class:`~nlpower.grid.CellResult` record holds, with
the right types and in range (a power is a probability, a count a
non-negative integer no larger than ``n_sims``, an interval ordered around
its estimate).  A checksum proves only that nobody edited the line *without
recomputing it*, so the record must also agree with itself and with the grid:
a power equal to ``n_rejected / n_sims``, the grid's ``n_sims``, ``alpha``,
test and alternative, the seed, design and axis values of its own cell (two
cells' records swapped under their keys are caught).  :func:`check_line` returns what is wrong in words, or
``None``; the checkpoint reader names the line and recomputes the cell.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Mapping
from typing import Any

__all__ = ["check_consistent", "check_line", "check_record", "line_digest"]

#: Fields every cell record holds (the :class:`~nlpower.grid.CellResult` contract).
REQUIRED = ("power", "ci_low", "ci_high", "se", "type_m", "type_s", "n_sims")
#: Fields that are probabilities (``None`` or NaN when undefined).
PROBABILITIES = ("power", "ci_low", "ci_high", "se", "type_s", "rejection_rate")
#: Counts that cannot exceed ``n_sims``.
COUNTS = ("n_rejected", "n_failed", "n_singular", "n_nonconverged")
#: Slack for an estimate against its interval (rounding of a stored float).
_TOL = 1e-9


def canonical(obj: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces): what the checksum covers."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def line_digest(entry: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a checkpoint entry without its ``sha256`` field."""
    body = {k: v for k, v in entry.items() if k != "sha256"}
    return hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _defined(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


#: Settings of a grid's fingerprint that a record restates (and must restate unchanged).
SETTINGS = ("n_sims", "alpha", "test", "alternative")


def _same(a: Any, b: Any) -> bool:
    if _is_real(a) and _is_real(b):
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return bool(a == b)


#: Axis names a record may restate on another scale (a Likert grid's latent effect is stored
#: as the fitted model's beta1), so only the design and params blocks are compared for them.
TRANSFORMED = ("effect",)


def _restated(record: Mapping[str, Any], name: str, want: Any) -> tuple[bool, Any]:
    """The record's own value of axis ``name`` (its design, its params, or the top level).

    The top level counts only for a number beside a numeric axis value whose name no
    outcome model transforms (:data:`TRANSFORMED`): an axis may hold a prior's name
    (``agreement="glue"``) that the record stores as the number it stands for.
    """
    for where in (record.get("design"), record.get("params")):
        if isinstance(where, Mapping) and name in where:
            return True, where[name]
    if (name in record and name not in TRANSFORMED and _is_real(record[name])
            and _is_real(want)):
        return True, record[name]
    return False, None


def check_consistent(record: Mapping[str, Any], *, settings: Mapping[str, Any] | None = None,
                     key: Mapping[str, Any] | None = None, seed: Any = None) -> str | None:
    """What contradicts itself, the grid's ``settings`` or the cell (``key``, ``seed``), or None."""
    n_sims = record["n_sims"]
    for value, count, label in ((record.get("power"), record.get("n_rejected"), "n_rejected"),
                                (record.get("rejection_rate"), record.get("n_significant"),
                                 "n_significant")):
        if (n_sims and _defined(value) and _is_count(count)
                and abs(value - count / n_sims) > _TOL):
            name = "power" if label == "n_rejected" else "rejection_rate"
            return f"{name} {value!r} is not {label} / n_sims = {count}/{n_sims}"
    for name in SETTINGS:
        want = (settings or {}).get(name)
        have = record.get(name)
        exact = name == "n_sims" and have == 0 and not record.get("n_rejected")
        if want is None or have is None or exact:  # n_sims 0: an exact calculation (analytic)
            continue
        if not _same(have, want):
            return f"its {name} is {have!r}, but this grid's is {want!r}"
    for name, want in (key or {}).items():
        found, have = _restated(record, name, want)
        if found and not _same(have, want):
            return f"it holds {name}={have!r}, but its cell has {name}={want!r}"
    stored = record.get("seed")
    spawn = stored.get("spawn_key") if isinstance(stored, Mapping) else record.get("seed_spawn_key")
    if seed is not None and spawn and list(spawn) != list(seed):
        return f"its result was computed from seed {list(spawn)!r}, not its cell's {list(seed)!r}"
    return None


def check_record(record: Any) -> str | None:
    """What is wrong with a cell record, in words, or ``None`` if it is valid."""
    if not isinstance(record, dict):
        return f"the record is {type(record).__name__}, not an object"
    missing = [k for k in REQUIRED if k not in record]
    if missing:
        return "the record lacks " + ", ".join(missing)
    n_sims = record["n_sims"]
    if not _is_count(n_sims):
        return f"n_sims is {n_sims!r}, not a non-negative integer"
    for k in PROBABILITIES:
        v = record.get(k)
        if v is None:
            continue
        if not _is_real(v):
            return f"{k} is {v!r}, not a number"
        if not math.isnan(v) and not 0.0 <= v <= 1.0:
            return f"{k} is {v!r}, outside [0, 1]"
    type_m = record["type_m"]
    if type_m is not None and (not _is_real(type_m) or type_m < 0):
        return f"type_m is {type_m!r}, not a non-negative number"
    for k in COUNTS:
        v = record.get(k)
        if v is None:
            continue
        if not _is_count(v):
            return f"{k} is {v!r}, not a non-negative integer"
        if n_sims and v > n_sims:
            return f"{k} is {v}, more than n_sims = {n_sims}"
    power, lo, hi = record["power"], record["ci_low"], record["ci_high"]
    if _defined(lo) and _defined(hi):
        if lo > hi + _TOL:
            return f"ci_low {lo!r} exceeds ci_high {hi!r}"
        if _defined(power) and not lo - _TOL <= power <= hi + _TOL:
            return f"power {power!r} lies outside its interval [{lo!r}, {hi!r}]"
    return None


def check_line(entry: Any, expected: Mapping[str, tuple[int, list[int]]] | None,
               settings: Mapping[str, Any] | None = None) -> str | None:
    """What is wrong with a parsed checkpoint line, or ``None``.

    ``expected`` maps each cell token of the grid to its index and seed spawn
    key; with ``None`` the cell is not checked against a grid.  ``settings``
    (the grid's fingerprint) gives the ``n_sims``, ``alpha``, test and
    alternative every record must restate unchanged.
    """
    if not isinstance(entry, dict):
        return "the line is not a JSON object"
    missing = [k for k in ("cell", "index", "seed", "record", "sha256") if k not in entry]
    if missing:
        return "the line lacks " + ", ".join(missing)
    if entry["sha256"] != line_digest(entry):
        return "its checksum does not match its contents (the line was edited or damaged)"
    if expected is not None:
        cell = entry["cell"]
        if not isinstance(cell, str) or cell not in expected:
            return f"cell {cell!r} is not a cell of this grid (or of this shard)"
        index, spawn_key = expected[cell]
        if entry["index"] != index:
            return f"cell {cell} has index {entry['index']!r}, but it is cell {index} of this grid"
        if entry["seed"] != spawn_key:
            return f"cell {cell} has seed {entry['seed']!r}, not its key-derived seed {spawn_key!r}"
    reason = check_record(entry["record"])
    if reason is not None:
        return reason
    try:
        key = json.loads(entry["cell"]) if isinstance(entry["cell"], str) else None
    except ValueError:
        key = None
    return check_consistent(entry["record"], settings=settings,
                            key=key if isinstance(key, dict) else None, seed=entry["seed"])
