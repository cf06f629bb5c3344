"""How a simulated power is run, as one object: :class:`SimOptions` beside the keywords.

``power``, ``power_grid``, ``mde`` and ``plan`` take ``sim=SimOptions(...)``
for the options every simulating call shares (replicates, alpha, the
alternative, the seed, processes, adaptive precision, progress, the failure
policy, the checkpoint); their keywords keep working.  A field left at
``None`` is not set (the function's own default applies); a field set in
``sim`` and given again as a different keyword is refused, as is a field
the function does not take (``mde`` runs no processes).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

__all__ = ["SimOptions", "with_sim"]

@dataclass(frozen=True)
class SimOptions:
    """Options of a simulated power run, shared by ``power``, ``power_grid``, ``mde`` and ``plan``.

    Every field defaults to ``None`` (not set: the function's default
    applies); the values are validated by the function that receives them,
    as its keywords are.

    Attributes
    ----------
    n_sims, alpha, alternative, rng, n_jobs, precision, progress, on_failure, checkpoint
        As the keywords of the same names of ``nlpower.power``.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets, power
    >>> sim = SimOptions(n_sims=200, alpha=0.05, rng=1)
    >>> a = power(CrossedDesign(5, 30), presets.high_variance(0.2), sim=sim)
    >>> b = power(CrossedDesign(5, 30), presets.high_variance(0.2), n_sims=200, rng=1)
    >>> a.power == b.power
    True
    """

    n_sims: int | None = None
    alpha: float | None = None
    alternative: str | None = None
    rng: Any = None
    n_jobs: int | None = None
    precision: float | None = None
    progress: bool | None = None
    on_failure: str | None = None
    checkpoint: Any = None

    def given(self) -> dict[str, Any]:
        """The fields that are set (not ``None``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}


def with_sim(sim: Any, func: Callable[..., Any], **values: Any) -> tuple[Any, ...]:
    """The values of ``func``'s keywords ``values`` with the fields set in ``sim`` applied.

    Called first thing in a function that takes ``sim=``: ``n_sims, alpha = with_sim(sim,
    power, n_sims=n_sims, alpha=alpha)``.  A keyword that differs from ``func``'s default
    and from the field set in ``sim`` is refused (given twice), as is a field ``func`` does
    not take.
    """
    if sim is None:
        return tuple(values.values())
    where = func.__name__
    if not isinstance(sim, SimOptions):
        raise InputError(f"sim must be a SimOptions (e.g. SimOptions(n_sims=500, rng=1)) or None; "
                         f"got {type(sim).__name__}.")
    defaults = _defaults(func)
    out = dict(values)
    for name, value in sim.given().items():
        if name not in out:
            raise InputError(f"{where}() does not take {name}; got sim=SimOptions({name}="
                             f"{value!r}). Leave it unset for {where}().")
        given = out[name]
        if not _same(given, defaults.get(name)) and not _same(given, value):
            raise InputError(f"{name} is given twice to {where}(): {name}={given!r} and "
                             f"sim=SimOptions({name}={value!r}). Give it once.")
        out[name] = value
    return tuple(out.values())


@functools.cache
def _defaults(func: Callable[..., Any]) -> dict[str, Any]:
    return {n: p.default for n, p in inspect.signature(func).parameters.items()}


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except Exception:      # arrays and other values without a plain truth value
        return False
