"""``compare_designs``: the group-sequential design with the smallest expected cost (i.i.d. case)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._validation import check_probability
from ..errors import InputError
from .design import group_sequential

__all__ = ["compare_designs"]


def compare_designs(
    looks: Sequence[int] = (2, 3, 4, 5),
    spending: Sequence[Any] = ("obf", "pocock", ("hsd", -4.0), ("hsd", -2.0), ("hsd", 1.0)),
    *,
    alpha: float = 0.025,
    power: float = 0.8,
    futility: Any = None,
    weight_null: float = 0.0,
) -> pd.DataFrame:
    """Designs of equal power ranked by expected size relative to the single-look design.

    Every combination of ``looks`` and ``spending`` (a name, or ``("hsd", gamma)``)
    is built with :func:`group_sequential` at ``power``; the cost is
    ``(1 - weight_null) * E[size | H1] + weight_null * E[size | H0]``, as a
    multiple of the one-look size (i.i.d. endpoint).  The first row is the
    cheapest; check it for a crossed design with :func:`sequential_power`.

    Examples
    --------
    >>> t = compare_designs(looks=(2, 3), spending=("obf", "pocock"))
    >>> list(t.columns[:3])
    ['looks', 'spending', 'gamma']
    """
    power = check_probability("power", power)
    weight_null = check_probability("weight_null", weight_null, open=False)
    rows = []
    for k in looks:
        for sp in spending:
            name, gamma = (sp, -4.0) if isinstance(sp, str) else sp
            fut = futility
            if fut is not None and not isinstance(fut, str):
                raise InputError("futility must be None or a beta-spending function name when "
                                 "comparing designs with different numbers of looks.")
            d = group_sequential(int(k), alpha=alpha, beta=1 - power, spending=name,  # type: ignore[arg-type]
                                 gamma=gamma,
                                 futility=fut)
            h1, h0 = d.expected_cost(1.0), d.expected_cost(0.0)
            rows.append({"looks": int(k), "spending": name, "gamma": gamma if name == "hsd" else None,
                         "max_size": d.inflation_factor, "expected_h1": h1, "expected_h0": h0,
                         "cost": (1 - weight_null) * h1 + weight_null * h0,
                         "first_boundary": float(d.efficacy[0])})
    return pd.DataFrame(rows).sort_values("cost", kind="stable").reset_index(drop=True)
