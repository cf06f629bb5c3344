"""Coefficient names: the columns of a sum-coded factor are named by level; lme4's are aliases.

R names the model-matrix columns of a factor by its contrast matrix's column
names: under ``contr.treatment`` the level (``systemB``: B minus the first
level), under ``contr.sum`` only a position (``system1``, ``system2``, ...),
which does not say which system a coefficient belongs to.  nlpower keeps R's
names under treatment coding and, under sum coding (``"sum"`` and
``"half"``), names column j by the level it is +1 (or +0.5) for:
``system[A]``, the deviation of A from the unweighted mean of the level
means (twice that for ``"half"``).  Interactions join the parts with ``:``
(``system[A]:x``) as R does.

Where a user names a coefficient (``fixef=``, ``term=``, ``parm=``, a column
in ``sd=``), lme4's name is accepted as an alias: ``ModelSpec.aliases`` maps
each sum-coded part (``system1``) to its name (``system[A]``), and
:func:`canonical` rewrites a name part by part.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["canonical", "coef_aliases", "from_lme4", "level_name", "lme4_aliases", "lme4_name",
           "split_name"]


def level_name(factor: str, level: str) -> str:
    """The name of a sum-coded column: ``factor[level]``.

    >>> level_name("system", "A")
    'system[A]'
    """
    return f"{factor}[{level}]"


def lme4_aliases(levels: Mapping[str, Iterable[str]], contrasts: Mapping[str, str]
                 ) -> dict[str, str]:
    """lme4's name of each sum-coded column -> its name here (one factor's part of a name).

    ``levels``: each factor's levels in order; ``contrasts``: each factor's
    coding.  A treatment-coded factor has no aliases (the names agree).

    Examples
    --------
    >>> lme4_aliases({"system": ["A", "B", "C"], "task": ["x", "y"]},
    ...              {"system": "sum", "task": "treatment"})
    {'system1': 'system[A]', 'system2': 'system[B]'}
    """
    out: dict[str, str] = {}
    for v, lv in levels.items():
        if contrasts.get(v) in ("sum", "half"):
            for j, level in enumerate(list(lv)[:-1]):
                out[f"{v}{j + 1}"] = level_name(v, str(level))
    return out


def split_name(name: str) -> list[str]:
    """The ``:``-separated parts of a column name, a ``:`` inside ``[...]`` kept.

    >>> split_name("system[a:b]:x")
    ['system[a:b]', 'x']
    """
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(name):
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        elif ch == ":" and not depth:
            parts.append(name[start:i])
            start = i + 1
    parts.append(name[start:])
    return parts


def canonical(name: Any, names: Iterable[str], aliases: Mapping[str, str]) -> str | None:
    """``name`` as one of ``names``: itself, or its lme4 alias rewritten; None if neither.

    >>> canonical("system1:x", ["(Intercept)", "system[A]", "system[A]:x"],
    ...           {"system1": "system[A]"})
    'system[A]:x'
    """
    known = set(names)
    text = str(name)
    if text in known:
        return text
    alt = from_lme4(text, aliases)
    return alt if alt in known else None


def from_lme4(name: str, aliases: Mapping[str, str]) -> str:
    """lme4's name of a column rewritten with ``aliases`` (the name here).

    >>> from_lme4("system2:x", {"system1": "system[A]", "system2": "system[B]"})
    'system[B]:x'
    """
    return ":".join(aliases.get(p, p) for p in name.split(":"))


def lme4_name(name: str, aliases: Mapping[str, str]) -> str:
    """lme4's name of a column (the inverse of the aliases), e.g. to compare with R.

    >>> lme4_name("system[A]:x", {"system1": "system[A]"})
    'system1:x'
    """
    back = {v: k for k, v in aliases.items()}
    return ":".join(back.get(p, p) for p in split_name(name))


def coef_aliases(obj: Any) -> Mapping[str, str]:
    """The aliases of a fit, a prepared model or a model spec (empty when it has none)."""
    for o in (obj, getattr(obj, "spec", None), getattr(getattr(obj, "model", None), "spec", None)):
        al = getattr(o, "aliases", None)
        if isinstance(al, Mapping):
            return al
    return {}
