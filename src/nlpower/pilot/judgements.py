"""A head-to-head pilot from a file of judgements: A / B / tie, any column names.

One row is one judgement of one item by one worker: the two systems shown
(in display order, left/first then right/second), and which was preferred --
``"a"``/``"b"``/``"tie"`` (any case; ``"model_a"``/``"model_b"``), the
preferred system's name, or ``1`` (A) / ``0`` (B) / ``0.5`` (tie), as in
:func:`nlpower.arena.bradley_terry`'s vote files (the same reader and
encoder).  :func:`fit_judgements` turns such a file into the binomial
``glmer`` fit the planners take as a head-to-head pilot
(:func:`nlpower.pilot.plan_with_assurance`, ``nlpower.plan(fit,
outcome="preference")``):

    win ~ 1 [+ pos] + (1 | worker) + (1 | item),    ties given weight 0

``win`` is 1 when the *second* system of the pair (``pair[1]``) is
preferred, so the intercept is the logit of the share preferring it;
``pos`` (with ``position=True``) is +1/2 when that system was shown first
and -1/2 when it was shown second.  The file's own column names are mapped
onto ``worker`` and ``item`` here, once, so the planners see the names they
need.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from .._choices import EngineName
from ..arena.likelihood import A_WINS, TIE
from ..arena.votes import encode_votes, read_votes
from ..errors import InputError

__all__ = ["check_fittable", "fit_judgements", "judgement_frame"]


def _frame(judgements: Any) -> pd.DataFrame:
    if isinstance(judgements, (str, os.PathLike)):
        return read_votes(judgements)
    if isinstance(judgements, pd.DataFrame):
        return judgements
    raise InputError(f"judgements must be a file path or a pandas DataFrame (one row per "
                     f"judgement); got {type(judgements).__name__}.")


def _pair(systems: tuple[str, ...], pair: Any) -> tuple[str, str]:
    if pair is None:
        if len(systems) != 2:
            raise InputError(f"the judgements compare {len(systems)} systems {list(systems)}; "
                             f"a head-to-head pilot is one pair: pass pair=({systems[0]!r}, "
                             f"{systems[1]!r}) or two others (the second system's preference over "
                             "the first is planned; other rows are dropped).")
        return systems[0], systems[1]
    if isinstance(pair, str) or len(pair) != 2 or pair[0] == pair[1]:
        raise InputError(f"pair must be two different system names ('A', 'B'); got {pair!r}.")
    a, b = (str(s) for s in pair)
    for s in (a, b):
        if s not in systems:
            raise InputError(f"pair names {s!r}, which the judgements never show; systems are "
                             f"{list(systems)}.")
    return a, b


def judgement_frame(judgements: Any, *, a: str = "a", b: str = "b", choice: str = "choice",
                    worker: str = "worker", item: str = "item", pair: Any = None
                    ) -> tuple[pd.DataFrame, tuple[str, str]]:
    """The judgements as ``worker, item, win, pos, weight`` rows of one pair, and the pair.

    Parameters are as in :func:`fit_judgements`.  Rows of other pairs are
    dropped; ties keep their row with weight 0 (their share is the plan's
    ``p_draw``).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"left": ["x", "y"], "right": ["y", "x"], "pick": ["y", "tie"],
    ...                    "rater": ["r1", "r2"], "prompt": [1, 1]})
    >>> rows, pair = judgement_frame(df, a="left", b="right", choice="pick",
    ...                              worker="rater", item="prompt")
    >>> pair, rows["win"].tolist(), rows["weight"].tolist()
    (('x', 'y'), [1.0, 0.0], [1.0, 0.0])
    """
    frame = _frame(judgements)
    votes = encode_votes(frame, a=a, b=b, outcome=choice,
                         groups={"worker": worker, "item": item}, names={"outcome": "choice"})
    first, second = _pair(votes.systems, pair)
    i1, i2 = votes.systems.index(first), votes.systems.index(second)
    keep = ((votes.a == i1) & (votes.b == i2)) | ((votes.a == i2) & (votes.b == i1))
    if not keep.any():
        raise InputError(f"no judgement compares {first!r} with {second!r}.")
    shown_first = np.where(votes.a == i2, 0.5, -0.5)[keep]     # +1/2: the planned system first
    winner = np.where(votes.outcome == A_WINS, votes.a, votes.b)[keep]
    tie = (votes.outcome == TIE)[keep]
    rows = pd.DataFrame({
        "worker": np.asarray(votes.group_levels["worker"])[votes.groups["worker"][keep]],
        "item": np.asarray(votes.group_levels["item"])[votes.groups["item"][keep]],
        "win": np.where(tie, 0.0, (winner == i2).astype(float)),
        "pos": shown_first,
        "weight": np.where(tie, 0.0, 1.0),
    })
    if rows["weight"].sum() == 0:
        raise InputError(f"every judgement of {first!r} against {second!r} is a tie; there is "
                         "no preference to fit.")
    return rows, (first, second)


def check_fittable(rows: pd.DataFrame, pair: tuple[str, str], *, choice: str = "choice",
                   worker: str = "worker", item: str = "item") -> None:
    """Refuse :func:`judgement_frame` rows a head-to-head pilot model cannot be fitted to.

    One system preferred in every decisive judgement, or a single worker or
    item: said in the file's own column names, before ``glmer`` fails on them.
    """
    first, second = pair
    decisive = rows.loc[rows["weight"] > 0, "win"]
    if decisive.nunique() < 2:
        winner = second if decisive.iloc[0] == 1 else first
        raise InputError(
            f"every judgement of {first!r} against {second!r} that is not a tie prefers "
            f"{winner!r}: the share preferring it cannot be estimated (it would be 100%), nor "
            f"how raters and items vary. Check the coding of the column choice={choice!r}, or "
            "collect more judgements.")
    for role, name in (("worker", worker), ("item", item)):
        if rows[role].nunique() < 2:
            raise InputError(
                f"{role}={name!r}: every judgement of {first!r} against {second!r} has the same "
                f"{role} ({rows[role].iloc[0]!r}); a head-to-head pilot needs judgements from at "
                f"least 2 (better 3 or more) {role}s to tell how they vary. Collect more, or "
                f"check that {role}= names the {role} column.")


def fit_judgements(judgements: Any, *, a: str = "a", b: str = "b", choice: str = "choice",
                   worker: str = "worker", item: str = "item", pair: Any = None,
                   position: bool = False, engine: EngineName = "native") -> Any:
    """Fit a head-to-head pilot: a binomial ``glmer`` of one pair's judgements (module docstring).

    Parameters
    ----------
    judgements : path or pandas.DataFrame
        One row per judgement (CSV, TSV, JSON lines or Parquet for a path).
    a, b : str
        Columns naming the systems shown first and second.
    choice : str
        Column saying which was preferred: ``a``/``b``/``tie``, the system's
        name, or 1 / 0 / 0.5.
    worker, item : str
        Columns of the worker (annotator) and the item (prompt, document).
    pair : (str, str), optional
        The two systems compared, baseline first; default the file's two
        systems in sorted order (required when it has more).
    position : bool
        Also fit the position effect (``pos`` = +-1/2, fixed and by worker
        and item as the pilot supports); default the preference alone.
    engine : str
        Fitting engine of :func:`nlpower.glmer`.

    Returns
    -------
    GlmmFit
        Its ``data`` has columns ``worker``, ``item``, ``win``, ``pos`` and
        ``weight``; ``fit.pair`` is not stored -- the fitted intercept is the
        logit of the share preferring ``pair[1]``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> g = np.random.default_rng(0)
    >>> df = pd.DataFrame({"rater": np.repeat([f"r{i}" for i in range(6)], 20),
    ...                    "prompt": np.tile(np.arange(20), 6),
    ...                    "left": "base", "right": "new",
    ...                    "pick": g.choice(["base", "new", "tie"], 120, p=[.3, .6, .1])})
    >>> fit = fit_judgements(df, a="left", b="right", choice="pick", worker="rater",
    ...                      item="prompt")
    >>> bool(fit.fixef["(Intercept)"] > 0)       # "new" is preferred more often
    True
    """
    from ..glmm import glmer

    rows, pair = judgement_frame(judgements, a=a, b=b, choice=choice, worker=worker, item=item,
                                 pair=pair)
    check_fittable(rows, pair, choice=choice, worker=worker, item=item)
    formula = ("win ~ 1 + pos + (1 | worker) + (1 | item)" if position
               else "win ~ 1 + (1 | worker) + (1 | item)")
    if position and rows["pos"].nunique() < 2:
        raise InputError("position=True needs both display orders in the judgements; every "
                         "judgement shows the systems in the same order.")
    return glmer(formula, rows, family="binomial", weights="weight", engine=engine)
