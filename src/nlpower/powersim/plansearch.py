"""The search behind :func:`nlpower.plan`: the designs searched, what they cost, the frontier.

:class:`Space` holds the checked search range and cost model;
:func:`search` finds, for every number of workers, the fewest items whose
power reaches the target (bisection: power grows with the items), and
extends an uncapped range while the cheapest design sits on its upper edge.
A budget pays for ratings, except in a head-to-head study, where one
judgement (a comparison of the two systems' outputs) is one rating
(:func:`paid_ratings`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_int, check_real
from ..design import CrossedDesign
from ..errors import DesignError, InputError

__all__ = ["DEFAULT_MAX_WORKERS", "EXTEND_FACTOR", "Space", "bar_reporting", "describe_plan",
           "fewest_passing", "paid_ratings", "reporting", "search"]

#: Called once per number of workers searched, and with the number of worker counts about to
#: be searched (:func:`reporting`); None: nothing reported.
_TICK: ContextVar[Callable[[int], object] | None] = ContextVar("nlpower_plan_tick", default=None)
_PLANNED: ContextVar[Callable[[int], object] | None] = ContextVar("nlpower_plan_planned",
                                                                   default=None)


@contextmanager
def reporting(tick: Callable[[int], object],
              planned: Callable[[int], object] | None = None) -> Iterator[None]:
    """Call ``tick(n_workers)`` after each number of workers the searches inside have searched,
    and ``planned(count)`` before each range of ``count`` worker counts (the range, then each
    extension): a progress bar's update and total, so it can show the time left.  The numbers
    do not change."""
    token = _TICK.set(tick)
    token2 = _PLANNED.set(planned)
    try:
        yield
    finally:
        _PLANNED.reset(token2)
        _TICK.reset(token)


def bar_reporting(bar: Any) -> Any:
    """:func:`reporting` into a tqdm bar (or nothing for None): one step per worker count, the
    bar's total the worker counts of the range searched so far."""
    if bar is None:
        return reporting(lambda w: None)

    def planned(count: int) -> None:
        bar.total = (bar.total or 0) + count
        bar.refresh()

    return reporting(lambda w: bar.update(1), planned)


#: Workers searched when ``max_workers`` is not given (then extended while the optimum is on the edge).
DEFAULT_MAX_WORKERS = 50
#: The furthest that extension goes, as a multiple of :data:`DEFAULT_MAX_WORKERS`.
EXTEND_FACTOR = 20
#: Extension stops once doubling the workers lowers the cheapest cost by less than this share.
EXTEND_GAIN = 0.01


def paid_ratings(design: CrossedDesign, outcome: str = "gaussian") -> int:
    """What a budget pays for in ``design``: its ratings, or its judgements for ``"preference"``.

    A head-to-head judgement compares the two systems' outputs for one item in
    one rating, so it is paid once, although the design has a row per system.

    Examples
    --------
    >>> paid_ratings(CrossedDesign(10, 40)), paid_ratings(CrossedDesign(10, 40), "preference")
    (800, 400)
    """
    if outcome == "preference":
        return design.n_items * design.raters_per_item
    return design.n_ratings


def describe_plan(design: CrossedDesign, outcome: str = "gaussian",
                  compared: tuple[str, str] | None = None) -> str:
    """:meth:`CrossedDesign.describe` in the words of a plan: the systems compared, judgements."""
    lines = design.describe().split("\n")
    head = f"CrossedDesign: {design.n_workers} workers x {design.n_items} items"
    if compared is not None:
        lines[0] = f"{head}; systems compared: {compared[0]} vs {compared[1]}"
    if outcome == "preference":
        if compared is None:
            lines[0] = f"{head}; head-to-head judgements of B vs A"
        k = design.raters_per_item
        lines[1] = lines[1].split(";")[0]
        lines[2] = (f"  {paid_ratings(design, outcome)} judgements (each compares the two systems' "
                    f"outputs for one item); {k} per item")
    return "\n".join(lines)


@dataclass(frozen=True)
class Space:
    """The designs a plan searches and what they cost (checked once)."""

    cost_per_rating: float
    cost_per_worker: float
    min_workers: int
    max_workers: int
    max_items: int
    workers_per_item: int | None
    capped: bool           # max_workers given by the user: a cap, never extended
    outcome: str

    @classmethod
    def check(cls, cost_per_rating: Any, cost_per_worker: Any, min_workers: Any,
              max_workers: Any, max_items: Any, workers_per_item: Any, *, outcome: str
              ) -> Space:
        cpr = check_real("cost_per_rating", cost_per_rating, min=0.0)
        cpw = check_real("cost_per_worker", cost_per_worker, min=0.0)
        if cpr == 0 and cpw == 0:
            raise InputError("cost_per_rating and cost_per_worker are both 0; every design would "
                             "be free. Give at least one positive cost.")
        lo = check_int("min_workers", min_workers, min=2)
        capped = max_workers is not None
        hi = (check_int("max_workers", max_workers, min=lo) if capped
              else max(DEFAULT_MAX_WORKERS, lo))
        n_items = check_int("max_items", max_items, min=2)
        k = None
        if workers_per_item is not None:
            k = check_int("workers_per_item", workers_per_item, min=1)
            if k > hi:
                raise DesignError(f"workers_per_item={k} exceeds max_workers={hi}; raise "
                                  "max_workers.")
            lo = max(lo, k)
        return cls(cpr, cpw, lo, hi, n_items, k, capped, outcome)

    def design(self, w: int, i: int) -> CrossedDesign:
        k = self.workers_per_item
        return CrossedDesign(w, i, workers_per_item=None if k is None or k >= w else k)

    def cost(self, d: CrossedDesign) -> float:
        return self.cost_per_rating * paid_ratings(d, self.outcome) + self.cost_per_worker * \
            d.n_workers

    def fewest_items(self, w: int) -> int:
        k = self.workers_per_item if self.workers_per_item is not None and \
            self.workers_per_item < w else w
        return max(2, -(-w // k))          # every worker needs an item

    def item_grid(self, w: int, i: int, *, simulated: bool) -> list[int]:
        """Item counts of the chosen workers' power curve (one either side when simulated)."""
        lo = self.fewest_items(w)
        if simulated:
            return sorted({max(lo, i - 1), i, i + 1})
        return sorted({max(lo, int(round(i * f)))
                       for f in (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0)})

    def notes(self, w: int, top: int, items: int | None = None) -> list[str]:
        out = []
        if items is not None and self.cost_per_worker == 0 and w >= 3:
            per = self.design(w, items).raters_per_item * items / w
            if per < 2:
                out.append(f"each worker rates about {per:.1f} items: with no cost per worker the "
                           "cheapest design recruits many workers for a few items each; if "
                           "recruiting or training a worker costs something, set "
                           "cost_per_worker (--cost-per-worker) and plan again.")
        if w < 3:
            out.append(f"the plan has {w} workers: with fewer than 3 the worker variances (and "
                       "the test's degrees of freedom) rest on 2 people, and one unusual worker "
                       "moves the result; consider min_workers=3.")
        if self.capped and w == self.max_workers > self.min_workers:   # not fixed by the user
            out.append(f"the cheapest design uses {w} workers, the cap "
                       f"(max_workers={self.max_workers}): more workers (and fewer items) may "
                       f"be cheaper; try max_workers={2 * self.max_workers}.")
        elif not self.capped and top > self.max_workers:
            out.append(f"the search went past {self.max_workers} workers (to {top}) because the "
                       f"cheapest design was at the edge of the range; set max_workers={top} (or "
                       "lower) to cap the number of workers.")
            if w == top:
                out.append(f"the cheapest design uses {w} workers, the most searched: more "
                           "workers (and fewer items) may be cheaper.")
        return out


def fewest_passing(pw: Callable[[int], float], target: float, lo: int, hi: int,
                   start: int) -> int | None:
    """The fewest ``i`` in ``[lo, hi]`` with ``pw(i) >= target`` (power grows with ``i``), or None.

    A galloping search from ``start`` (the answer for a neighbouring number
    of workers): steps that double away from it bracket the answer, then
    bisection finds it.  Only item counts near the answer are evaluated, which
    matters when the power of a large design is slow to compute (designs with
    ``workers_per_item``: seconds at thousands of items).
    """
    i = min(max(start, lo), hi)
    step = 1
    if pw(i) >= target:
        good = i
        while good > lo:                      # down until one fails
            j = max(lo, good - step)
            if pw(j) < target:
                bad = j
                break
            good, step = j, 2 * step
        else:
            return good
    else:
        bad = i
        while True:                            # up until one passes
            if bad >= hi:
                return None
            j = min(hi, bad + step)
            if pw(j) >= target:
                good = j
                break
            bad, step = j, 2 * step
    return _bisect(pw, target, bad, good)


def _bisect(pw: Callable[[int], float], target: float, lo: int, hi: int) -> int:
    """Bisection for the crossing of ``target`` in ``(lo, hi]`` (``pw(hi) >= target``)."""
    if pw(lo) >= target:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pw(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def frontier_row(space: Space, pw: Callable[[int, int], float], w: int, target: float,
                  simulated: bool, start: int | None = None) -> dict[str, Any]:
    """Fewest items reaching ``target`` with ``w`` workers, its power and cost.

    ``start`` is where the search begins (:func:`fewest_passing`; default the
    fewest items ``w`` workers can rate).
    """
    none = {"n_workers": w, "n_items": np.nan, "n_ratings": np.nan, "power": np.nan,
            "cost": np.inf}
    k = space.workers_per_item
    lo, hi = space.fewest_items(w), space.max_items
    if (k is not None and w > k * space.max_items) or lo > hi:
        return none
    if (k is None or k >= w) and not simulated:
        # fully crossed, analytic: the largest design's power is cheap, and the answer is the
        # crossing below it (with 2-3 workers the Satterthwaite power can fall again at many
        # items, so a design that only passes in a dip of the curve is not taken)
        if pw(w, hi) < target:
            return none
        found: int | None = _bisect(lambda i: pw(w, i), target, lo, hi)
    else:
        # k workers per item, or simulated power: a design of thousands of items takes
        # seconds (its replicates), so search near the neighbouring number of workers' answer
        found = fewest_passing(lambda i: pw(w, i), target, lo, hi,
                               lo if start is None else start)
    if found is None:
        return none
    d = space.design(w, found)
    row = {"n_workers": w, "n_items": found, "n_ratings": paid_ratings(d, space.outcome),
           "power": pw(w, found), "cost": space.cost(d)}
    if simulated:
        row["power_one_item_fewer"] = pw(w, found - 1) if found > lo else np.nan
    return row


def search(space: Space, pw: Callable[[int, int], float], target: float, *, extend: bool
            ) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """The frontier over the worker range; extended (uncapped, analytic) past an edge optimum.

    ``pw`` is called once per design: the searches ask again for designs they have bracketed.
    """
    known: dict[tuple[int, int], float] = {}

    def once(w: int, i: int) -> float:
        if (w, i) not in known:
            known[(w, i)] = pw(w, i)
        return known[(w, i)]

    def rows_for(workers: Sequence[int], start: int | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        tick, planned = _TICK.get(), _PLANNED.get()
        if planned is not None:
            planned(len(workers))
        for w in workers:         # a neighbour's answer is where the next search starts
            out.append(frontier_row(space, once, w, target, not extend, start))
            if tick is not None:
                tick(w)
            if np.isfinite(out[-1]["cost"]):
                start = int(out[-1]["n_items"])
        return out

    def cheapest(ok: pd.DataFrame) -> int:
        return int(ok.sort_values(["cost", "n_ratings", "n_workers"], kind="stable")
                   .iloc[0]["n_workers"])

    rows = rows_for(range(space.min_workers, space.max_workers + 1))
    frontier = pd.DataFrame(rows)
    ok = frontier[np.isfinite(frontier["cost"])]
    top, cap = space.max_workers, EXTEND_FACTOR * space.max_workers
    # the range is the default one (not a cap) and the cheapest design sits on its edge, or
    # nothing is feasible yet: search on (doubling) so the optimum found is interior
    # (past the range, about 25 worker counts per doubling; the search stops once a doubling
    # lowers the cheapest cost by less than EXTEND_GAIN, as with k workers per item and no cost
    # per worker, where more workers always help a little and never cost anything)
    while extend and not space.capped and (ok.empty or cheapest(ok) == top) and top < cap:
        before = float(ok["cost"].min()) if not ok.empty else np.inf
        new_top = min(2 * top, cap)
        step = max(1, top // 25)
        last = rows[-1]
        rows += rows_for(sorted(set(range(top + step, new_top, step)) | {new_top}),
                         int(last["n_items"]) if np.isfinite(last["cost"]) else None)
        top = new_top
        frontier = pd.DataFrame(rows)
        ok = frontier[np.isfinite(frontier["cost"])]
        if np.isfinite(before) and float(ok["cost"].min()) > before * (1.0 - EXTEND_GAIN):
            break
    if top > space.max_workers and not ok.empty:   # past the range the search stepped: the
        best, step = cheapest(ok), max(1, top // 50)  # best one's skipped neighbours too
        near = [w for w in range(best - step + 1, best + step) if w not in set(frontier["n_workers"])]
        if near:
            rows += rows_for(near, int(ok.loc[ok["n_workers"] == best, "n_items"].iloc[0]))
            frontier = pd.DataFrame(rows).sort_values("n_workers", kind="stable").reset_index(drop=True)
            ok = frontier[np.isfinite(frontier["cost"])]
    return frontier, ok, top
