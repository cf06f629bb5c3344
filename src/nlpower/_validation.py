"""Validation helpers used once, at the public boundary.

Each raises :class:`nlpower.errors.InputError` with a message that names the
argument, shows the bad value, says what is allowed and what to do.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Iterable, Sequence
from typing import Any, get_args

from .errors import InputError

#: The largest magnitude :func:`check_real` accepts: squares and sums of a
#: million squares of such numbers stay finite in double precision, so power,
#: planning and simulation never overflow into silent NaN or 0.
LARGEST = 1e100


def check_int(name: str, value: Any, *, min: int | None = None, max: int | None = None) -> int:
    """``value`` as an int within [min, max]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be an integer; got {value!r} ({type(value).__name__}).")
    value = int(value)
    if min is not None and value < min:
        raise InputError(f"{name} must be >= {min}; got {value}.")
    if max is not None and value > max:
        raise InputError(f"{name} must be <= {max}; got {value}.")
    return value


def check_real(
    name: str,
    value: Any,
    *,
    min: float | None = None,
    max: float | None = None,
    min_open: bool = False,
    max_open: bool = False,
) -> float:
    """``value`` as a finite float within the given (open or closed) bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a real number; got {value!r} ({type(value).__name__}).")
    value = float(value)
    if not math.isfinite(value):
        raise InputError(f"{name} must be finite; got {value}.")
    if abs(value) > LARGEST:
        raise InputError(
            f"{name} = {value:g} is too large to compute with: every number nlpower works with "
            f"must be at most {LARGEST:g} in magnitude (squares and sums of squares must stay "
            "finite). Rescale the quantity (e.g. ratings to [0, 1]) or check for a typo.")
    if min is not None and (value < min or (min_open and value == min)):
        raise InputError(f"{name} must be {'>' if min_open else '>='} {min}; got {value}.")
    if max is not None and (value > max or (max_open and value == max)):
        raise InputError(f"{name} must be {'<' if max_open else '<='} {max}; got {value}.")
    return value


#: How many residual SDs a location or SD of a mixed model may span: beyond
#: this, ratings lose the precision the fit and the balanced sums of squares
#: need, and power comes out silently wrong (0, NaN) instead of 1.
MAX_SIGMAS = 1e4


def check_magnitudes(params: Any, names: Sequence[str]) -> None:
    """Each field ``names`` of ``params`` (a number or a tuple of numbers: beta0, effects,
    SDs) within :data:`MAX_SIGMAS` residual SDs (``params.sigma``) of zero."""
    sigma = params.sigma
    for name in names:
        value = getattr(params, name)
        values = value if isinstance(value, tuple) else (value,)
        for j, v in enumerate(values):
            if abs(v) <= MAX_SIGMAS * sigma:
                continue
            label = f"{name}[{j}]" if isinstance(value, tuple) else name
            raise InputError(
                f"{label} = {v:g} is {abs(v) / sigma:.3g} residual SDs (sigma = {sigma:g}): "
                "numbers this far apart lose the precision fits and power need, so the results "
                f"would be silently wrong. Keep beta0, the effect and every SD within "
                f"{MAX_SIGMAS:,.0f} x sigma: put ratings on [0, 1] (as read_ratings does), or "
                "check for a typo.")


def check_probability(name: str, value: Any, *, open: bool = True) -> float:
    """A probability strictly inside (0, 1) (or within [0, 1] when ``open=False``)."""
    return check_real(name, value, min=0.0, max=1.0, min_open=open, max_open=open)


def allowed(choices: Any) -> tuple[Any, ...]:
    """The allowed values of a ``Literal`` type (or of any iterable) as a tuple."""
    args = get_args(choices)
    return tuple(args) if args else tuple(choices)


def check_choice(name: str, value: Any, choices: Any) -> Any:
    """``value`` if it is one of ``choices`` (a ``Literal`` type or an iterable).

    Otherwise an :class:`~nlpower.errors.InputError` that names ``name``, shows
    the value, lists what is allowed and suggests the closest one (the one
    check of string options; :mod:`nlpower._choices` re-exports it).

    Examples
    --------
    >>> check_choice("alternative", "less", ("two-sided", "greater", "less"))
    'less'
    """
    allowed_ = allowed(choices)
    if value not in allowed_:
        hint = ""
        if isinstance(value, str):
            close = difflib.get_close_matches(value, [a for a in allowed_ if isinstance(a, str)], n=1)
            if close:
                hint = f" Did you mean {close[0]!r}?"
        raise InputError(
            f"{name} must be one of {', '.join(repr(a) for a in allowed_)}; got {value!r}.{hint}"
        )
    return value


#: Names that mean the same role in rating files (for 'did you mean' hints between them).
SYNONYMS: tuple[frozenset[str], ...] = (
    frozenset({"worker", "rater", "annotator", "judge", "participant", "subject", "worker_id",
               "rater_id", "annotator_id", "workerid"}),
    frozenset({"item", "input", "example", "prompt", "sentence", "document", "doc", "item_id",
               "segment", "itemid"}),
    frozenset({"system", "model", "condition", "method", "system_id", "systemid"}),
    frozenset({"rating", "score", "response", "resp", "judgment", "judgement", "value", "label",
               "answer"}),
)


def _words(column: str) -> list[str]:
    """``"Input.item_id"`` -> ``["input", "item", "id"]``; ``"WorkerId"`` -> ``["worker", "id"]``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(column))
    return [w for w in re.split(r"[^0-9a-z]+", spaced.lower()) if w]


def closest_name(name: str, candidates: Sequence[str]) -> str | None:
    """The candidate ``name`` plausibly meant (for 'did you mean' hints), or None.

    The same name in other case, a qualified export name holding it as a word
    (``Input.item_id`` for ``item``), a close spelling (difflib ratio >= 0.6), or a
    synonym of the same role (``rater`` for ``worker``, ``score`` for
    ``rating``, ...).  Names that merely share letters get no hint.
    """
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered:
        return lowered[name.lower()]
    # an export's qualified name holding the word: Input.item_id, Answer.rating, WorkerId
    words = [c for c in candidates if name.lower() in _words(c)]
    if words:
        return words[0]
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    if close:
        return close[0]
    for group in SYNONYMS:
        if name.lower() in group:
            for low, original in lowered.items():
                if low in group:
                    return original
    return None


def check_columns(name: str, columns: Iterable[str], available: Sequence[str]) -> None:
    """Raise an error naming each missing column, with the closest available name."""
    missing = [c for c in columns if c not in available]
    if not missing:
        return
    parts = []
    for col in missing:
        close = closest_name(col, available)
        parts.append(f"{col!r}" + (f" (did you mean {close!r}?)" if close else ""))
    raise InputError(
        f"{name}: column{'s' if len(missing) > 1 else ''} {', '.join(parts)} not found. "
        f"Available columns: {', '.join(map(repr, available))}."
    )
