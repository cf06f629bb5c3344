"""``Monitor``: apply a group-sequential design to ratings as they accumulate.

After each batch, :meth:`Monitor.update` fits the crossed model to all
ratings so far -- for Gaussian ratings :func:`nlpower.lmer`; for Likert
ratings the LMM of the rescaled ratings or :func:`nlpower.clmm`; for
head-to-head judgements the binomial :func:`nlpower.glmer`, as the simulated
sequential designs analyse each look (:mod:`nlpower.sequential.interim`) --
turns a Satterthwaite t statistic into the z with the same one-sided
p-value (a Wald z is used as it is), finds the look's
information fraction (items so far over the planned maximum, or the
estimate's information ``1 / SE^2`` over a planned maximum), recomputes the
boundaries from the spending functions at the fractions actually observed
(Lan-DeMets: looks need not fall where planned), and says whether to stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._records import RecordCodec, RecordLayout
from .._validation import check_choice, check_real
from ..errors import InputError
from .design import GroupSequentialDesign
from .interim import InterimAnalysis

__all__ = ["InterimLook", "Monitor", "replay_note"]


@dataclass(frozen=True)
class InterimLook(RecordCodec):
    """One interim analysis: the statistic, the boundaries and the decision.

    ``decision`` is ``"continue"``, ``"stop: efficacy"`` (reject the null),
    ``"stop: futility"`` or ``"stop: final look"`` (the last look, no rejection).
    """

    look: int
    information_fraction: float
    n_items: int
    n_ratings: int
    estimate: float
    se: float
    df: float
    statistic: float
    efficacy: float
    futility: float
    decision: str

    _record_layout = RecordLayout(nan="keep")

    @property
    def stop(self) -> bool:
        return self.decision != "continue"

    def summary(self) -> str:
        fut = "" if math.isnan(self.futility) else f", futility z <= {self.futility:.4f}"
        return (f"look {self.look}: information {self.information_fraction:.3f} ({self.n_items} items, "
                f"{self.n_ratings} ratings); estimate {self.estimate:.4f} (SE {self.se:.4f}, df "
                f"{self.df:.1f}), z = {self.statistic:.4f}; efficacy z >= {self.efficacy:.4f}{fut} "
                f"-> {self.decision}")

    def __repr__(self) -> str:
        return (f"InterimLook(look={self.look}, t={self.information_fraction:.3f}, "
                f"z={self.statistic:.3f}, bound={self.efficacy:.3f}, {self.decision!r})")


class Monitor:
    """Interim analyses of one study under a group-sequential design.

    A monitor keeps the looks made so far (it is the study's log, so it
    changes); each :meth:`update` returns a frozen :class:`InterimLook`.

    Parameters
    ----------
    design : GroupSequentialDesign
        Boundaries from :func:`group_sequential`.
    formula : str, optional
        The crossed mixed model (lme4 syntax); required except for
        ``outcome="preference"``, whose default is
        ``"win ~ 1 + (1 | worker) + (1 | item)"``.
    term : str, optional
        The fixed effect tested (default: the only one besides the intercept;
        for head-to-head judgements the intercept).
    outcome : {"gaussian", "likert", "preference"}
        What the data hold: Gaussian ratings; integer Likert ratings (the
        formula's response); head-to-head judgements as
        :func:`nlpower.pilot.judgements.judgement_frame` returns them
        (columns ``worker``, ``item``, ``win`` = 1 when the pair's second
        system is preferred, ``weight`` = 0 for ties).
    analysis : {"lmm", "clmm"}, optional
        For Likert ratings: the LMM of the ratings rescaled to [0, 1]
        (default, Satterthwaite t) or the cumulative link mixed model (Wald z).
    levels : int, optional
        Number of Likert scale points ``K``: the LMM rescales ratings by
        ``(r - 1) / (K - 1)`` (the statistic does not change, the estimate's
        scale does) and ``clmm`` keeps unused scale points.
    link : {"logit", "probit", "cloglog"}
        The link of ``analysis="clmm"`` (a design simulated from
        :class:`~nlpower.outcomes.LikertParams` analyses with the parameters' link).
    max_items : int, optional
        Planned number of items at the last look; the information fraction is
        the share of items rated so far.
    max_information : float, optional
        Planned ``1 / SE^2`` of the estimate at the last look (instead of ``max_items``).
    item : str
        Column naming the items (for ``max_items``).
    contrasts : dict, optional
        Factor codings, as for :func:`nlpower.lmer` (e.g. ``{"system": "sum"}``).
    alternative : {"greater", "less"}
        The sign of ``term``'s coefficient under the alternative (one-sided
        designs; the efficacy boundary is for it, the futility boundary against
        it).  With R's sum coding the coefficient of a two-level factor is the
        *first* level minus the mean: pass ``"less"`` when the second level is
        expected to be better.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets, simulate
    >>> from nlpower.sequential import group_sequential
    >>> ratings = simulate(CrossedDesign(4, 30), presets.high_variance(0.3), rng=3)
    >>> mon = Monitor(group_sequential(3), formula="rating ~ x + (1 | worker) + (1 | item)",
    ...               max_items=30)
    >>> first = mon.update(ratings[ratings["item"] <= "i10"])
    >>> first.look, round(first.information_fraction, 3)
    (1, 0.333)

    Head-to-head judgements (the intercept is the logit of the share
    preferring the pair's second system):

    >>> import numpy as np, pandas as pd
    >>> g = np.random.default_rng(1)
    >>> judged = pd.DataFrame({"worker": np.tile(np.arange(6), 40),
    ...                        "item": np.repeat(np.arange(40), 6),
    ...                        "win": (g.random(240) < 0.7).astype(float)})
    >>> pm = Monitor(group_sequential(2), outcome="preference", max_items=40)
    >>> pm.update(judged[judged["item"] < 20]).decision
    'stop: efficacy'
    """

    def __init__(self, design: GroupSequentialDesign, *, formula: str | None = None,
                 term: str | None = None, outcome: str = "gaussian", analysis: str | None = None,
                 levels: int | None = None, max_items: int | None = None,
                 max_information: float | None = None, item: str = "item",
                 contrasts: dict[str, str] | None = None, alternative: str = "greater",
                 link: str = "logit") -> None:
        if not isinstance(design, GroupSequentialDesign):
            raise InputError("design must be a GroupSequentialDesign from "
                             f"nlpower.sequential.group_sequential; got {type(design).__name__}.")
        if (max_items is None) == (max_information is None):
            raise InputError("give exactly one of max_items= (the planned number of items: "
                             "information = share of items) and max_information= (planned "
                             "1 / SE^2 at the last look).")
        if max_items is not None:
            max_items = int(check_real("max_items", max_items, min=1))
        if max_information is not None:
            max_information = check_real("max_information", max_information, min=0.0, min_open=True)
        self.sign = 1.0 if check_choice("alternative", alternative, ("greater", "less")) == "greater" else -1.0
        self.analysis = InterimAnalysis.make(outcome, analysis, formula, term, levels, contrasts,
                                             link)
        self.design, self.item = design, item
        self.max_items, self.max_information = max_items, max_information
        self._looks: list[InterimLook] = []

    @property
    def looks(self) -> tuple[InterimLook, ...]:
        return tuple(self._looks)

    @property
    def stopped(self) -> bool:
        return bool(self._looks) and self._looks[-1].stop

    def update(self, ratings: Any, *, final: bool = False) -> InterimLook:
        """Analyse all ratings so far; ``final=True`` makes this the last look (spends what is left)."""
        if self.stopped:
            raise InputError(f"the study stopped at look {self._looks[-1].look} "
                             f"({self._looks[-1].decision}); start a new Monitor for a new study.")
        if not isinstance(ratings, pd.DataFrame):
            raise InputError(f"ratings must be a data frame of all ratings so far; got {type(ratings).__name__}.")
        if self.max_items is not None and self.item not in ratings.columns:
            raise InputError(f"item={self.item!r} is not a column of the ratings; columns are "
                             f"{list(ratings.columns)}.")
        est, se, df = self.analysis.statistic(ratings)
        n_items = int(ratings[self.item].nunique()) if self.item in ratings.columns else -1
        frac = (n_items / self.max_items if self.max_items is not None
                else (1 / se**2) / float(self.max_information or 1.0))
        previous = [lk.information_fraction for lk in self._looks]
        if previous and frac <= previous[-1]:
            raise InputError(f"look {len(previous) + 1} has information fraction {frac:.4f}, not more "
                             f"than the previous look's {previous[-1]:.4f}; add ratings between looks.")
        last = final or frac >= 1.0 - 1e-9
        fractions = [*previous, 1.0 if last else frac]
        upper, lower = self.design.boundaries_at(fractions)
        sided = self.design.sided
        z = (self.sign * est / se if math.isinf(df)
             else float(stats.norm.isf(stats.t.sf(self.sign * est / se, df))))
        reject = abs(z) >= upper[-1] if sided == 2 else z >= upper[-1]
        fut = math.nan if lower is None else float(lower[-1])
        decision = ("stop: efficacy" if reject else "stop: futility" if (not last and z <= fut)
                    else "stop: final look" if last else "continue")
        look = InterimLook(len(previous) + 1, min(frac, 1.0), n_items, len(ratings), est, se, df, z,
                           float(upper[-1]), fut, decision)
        self._looks.append(look)
        return look

    def to_frame(self) -> pd.DataFrame:
        """One row per look so far."""
        return pd.DataFrame([lk.to_record() for lk in self._looks])

    def summary(self) -> str:
        return "\n".join(lk.summary() for lk in self._looks) or "no looks yet"

    def __repr__(self) -> str:
        state = self._looks[-1].decision if self._looks else "no looks yet"
        return f"Monitor({self.design.looks} planned looks, {len(self._looks)} made, {state})"


def replay_note(monitor: Monitor, frame: pd.DataFrame, order: Any, item: str) -> str | None:
    """What a replay of a batched file left out, in words (None: nothing).

    ``order`` is each row's batch (a key sorting in collection order); the
    monitor's looks analysed the first batches.  The design's maximum is
    binding: once a look reaches it (information fraction 1, the rest of
    alpha spent) or the study stops, later batches cannot enter this
    design's test, and the note says how many batches, ratings and new items
    that leaves out.  A look with more items than ``max_items`` is named (it
    is analysed as the last look), as is a file ending before the last look.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets, simulate
    >>> from nlpower.sequential import group_sequential
    >>> r = simulate(CrossedDesign(4, 30), presets.high_variance(0.0), rng=3)
    >>> batch = r["item"].str[1:].astype(int).sub(1).floordiv(10).to_numpy()
    >>> mon = Monitor(group_sequential(3), formula="rating ~ x + (1 | worker) + (1 | item)",
    ...               max_items=10)
    >>> mon.update(r[batch == 0]).decision
    'stop: final look'
    >>> print(replay_note(mon, r, batch, "item"))  # doctest: +NORMALIZE_WHITESPACE
    2 later batches of the file (160 ratings, 20 items not in the looks) were not analysed:
    look 1 reached the design's maximum of 10 items ...
    """
    looks = monitor.looks
    order = np.asarray(order)
    batches = np.unique(order)
    if not looks:
        return None
    last = looks[-1]
    notes = []
    if monitor.max_items is not None and last.n_items > monitor.max_items:
        notes.append(f"look {last.look} has {last.n_items} items, more than the design's "
                     f"maximum of {monitor.max_items}: it was analysed as the last look (the "
                     "rest of alpha spent)")
    rest = order > batches[len(looks) - 1]
    if rest.any():
        ids = frame[item].astype(str) if item in frame.columns else pd.Series("", frame.index)
        new = len(set(ids[rest]) - set(ids[~rest]))
        n_later = int(np.unique(order[rest]).size)
        why = (f"the study stopped at look {last.look} ({last.decision.removeprefix('stop: ')})"
               if last.decision in ("stop: efficacy", "stop: futility") else
               f"look {last.look} reached the design's maximum of "
               + (f"{monitor.max_items} items" if monitor.max_items is not None
                  else "information")
               + " (information fraction 1, all of alpha spent); a group-sequential design's "
               "maximum is binding, so later ratings cannot enter its test: to use them, plan "
               "a design with a larger maximum before collecting them")
        notes.insert(0, f"{n_later} later batch{'es' if n_later > 1 else ''} of the file "
                        f"({int(rest.sum())} ratings, {new} items not in the looks) "
                        f"{'were' if n_later > 1 else 'was'} not analysed: {why}")
    elif not last.stop:
        notes.append(f"the file ends at look {last.look}, information fraction "
                     f"{last.information_fraction:.3f} of the design's maximum: the study "
                     "continues with the next batch")
    return "; ".join(notes) + "." if notes else None
