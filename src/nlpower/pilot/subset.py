"""Only what a plan needs: the ratings of the two systems a contrast compares.

A plan of one comparison (system ``a`` against ``b``) uses the variance
components of those two systems only.  Fitting the paper's model to every
system of a large pilot first is wasteful at best -- with 20 systems it has
two 20 x 20 covariance blocks and may not fit in memory -- so the command
line fits the rows of the two compared systems (:func:`contrast_ratings`)
and says so.  The rescaling of the whole file is kept (the subset is not
re-read, so a scale inferred from the file stays the file's).
:func:`read_contrast` reads a file keeping those rows only, so repeated
ratings of a system that is not compared do not stop the plan.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from .._validation import closest_name
from ..errors import RatingsError
from ..ratings import Ratings
from ..ratings.io import read_selected
from ..ratings.report import design_report

__all__ = ["contrast_pair", "contrast_ratings", "read_contrast"]


def contrast_pair(systems: tuple[str, ...], contrast: Any, baseline: str | None = None
                  ) -> tuple[str, str]:
    """``(a, b)`` of ``contrast`` (``a`` coded +1; one name means against the baseline).

    The baseline is ``baseline`` or the first system in sorted order, as
    :func:`~nlpower.ratings.fit_ratings` chooses it.

    Examples
    --------
    >>> contrast_pair(("A", "B", "C"), "C"), contrast_pair(("A", "B", "C"), ("C", "B"))
    (('C', 'A'), ('C', 'B'))
    """
    base = str(systems[0]) if baseline is None else str(baseline)
    pair = (contrast, base) if isinstance(contrast, str) else tuple(contrast)
    if len(pair) != 2 or pair[0] == pair[1] or any(str(s) not in systems for s in pair):
        given = contrast if isinstance(contrast, str) else ", ".join(map(str, pair))
        hints = [f"{s!r} is not a system (did you mean {close!r}?)" for s in pair
                 if str(s) not in systems
                 and (close := closest_name(str(s), [str(x) for x in systems])) is not None]
        raise RatingsError(f"contrast must name one system (compared with the baseline {base!r}) "
                           f"or two different systems of {list(systems)}; got {given!r}."
                           + "".join(f" {h}." for h in hints))
    return str(pair[0]), str(pair[1])


def contrast_ratings(ratings: Ratings, contrast: Any, baseline: str | None = None
                     ) -> tuple[Ratings, tuple[str, str]]:
    """The ratings of the two systems ``contrast`` compares, and the pair ``(a, b)``.

    Returns ``ratings`` itself when it has only those two systems.  The
    subset keeps the file's rescaling and its design report is recomputed
    (with a note saying which rows were kept).

    Examples
    --------
    >>> import pandas as pd
    >>> from nlpower.ratings import read_ratings
    >>> df = pd.DataFrame({"worker": ["w1", "w2"] * 6, "item": [1, 1, 2, 2] * 3,
    ...                    "system": ["A"] * 4 + ["B"] * 4 + ["C"] * 4, "rating": [1, 2, 3] * 4})
    >>> sub, pair = contrast_ratings(read_ratings(df, scale=(1, 5)), "C")
    >>> pair, sub.systems, sub.report.n_ratings
    (('C', 'A'), ('A', 'C'), 8)
    """
    systems = tuple(str(s) for s in ratings.systems)
    a, b = contrast_pair(systems, contrast, baseline)
    if len(systems) == 2:
        return ratings, (a, b)
    data = ratings.data
    keep = data["system"].astype(str).isin((a, b)).to_numpy()
    sub = data.loc[keep].reset_index(drop=True)
    sub["system"] = sub["system"].cat.remove_unused_categories()
    r = ratings.report
    note = (f"kept the {len(sub)} ratings of {a} and {b} (the systems compared) out of "
            f"{r.n_ratings} ratings of {r.n_systems} systems; the other systems are not fitted.")
    report = design_report(sub, n_dropped=ratings.n_dropped, scale=ratings.scale,
                           scale_inferred=ratings.scale_inferred, source=r.source,
                           extra_notes=(note,))
    return dataclasses.replace(ratings, data=pd.DataFrame(sub), report=report), (a, b)


def read_contrast(source: Any, contrast: Any, baseline: str | None = None, **read_kw: Any
                  ) -> tuple[Ratings, tuple[str, str], tuple[int, int]]:
    """Read a rating file keeping the two systems ``contrast`` compares.

    As :func:`~nlpower.ratings.read_ratings` (``read_kw``), then
    :func:`contrast_ratings`, except that repeated ratings are judged on the
    kept rows only: a duplicate of a system the contrast leaves out is not
    an error (it is never fitted).  The scale is resolved on the whole file.

    Returns
    -------
    (Ratings, (a, b), (n_rows, n_systems))
        The kept ratings, the pair (``a`` coded +1), and the file's rated
        rows and systems.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"worker": ["w1", "w2"] * 6 + ["w1"], "item": [1, 1, 2, 2] * 3 + [1],
    ...                    "system": ["A"] * 4 + ["B"] * 4 + ["C"] * 5,
    ...                    "rating": [1, 2, 3] * 4 + [5]})
    >>> sub, pair, (n, k) = read_contrast(df, ("C", "B"), scale=(1, 5), duplicates="error")
    Traceback (most recent call last):
    ...
    nlpower.errors.RatingsError: 1 (worker, item, system) combination(s) are rated more than once ...
    >>> sub, pair, (n, k) = read_contrast(df, ("B", "A"), scale=(1, 5), duplicates="error")
    >>> pair, sub.systems, sub.report.n_ratings, n, k
    (('B', 'A'), ('A', 'B'), 8, 13, 3)
    """
    chosen: list[tuple[str, str]] = []

    def pick(labels: tuple[str, ...]) -> tuple[str, ...]:
        if len(labels) <= 2:
            return labels
        chosen.append(contrast_pair(labels, contrast, baseline))
        return chosen[0]

    ratings, before = read_selected(source, pick, **read_kw)
    pair = chosen[0] if chosen else contrast_pair(tuple(map(str, ratings.systems)), contrast,
                                                  baseline)
    return ratings, pair, before
