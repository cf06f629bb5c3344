"""Study designs: who rates which item under which system.

:class:`CrossedDesign` describes a human evaluation with ``n_workers``
workers, ``n_items`` items (inputs) and K >= 2 systems.  The default is the
design of Card et al.'s power simulations (2020, App. H.3): every worker rates
every item under every system ("fully crossed, paired").  Two generalisations
cover common crowdsourcing practice (SPEC 1.3):

``workers_per_item=k``
    each item is rated by ``k`` of the ``n_workers`` workers
    (:func:`balanced_allocation`): items take the ``k`` least-loaded workers
    in turn, so every item gets ``k`` distinct workers and worker loads
    differ by at most one item; ties favour linking separate groups of
    workers so that the worker x item graph becomes connected (a plain
    rotation ``(i*k + j) mod n_workers`` splits the workers into fixed teams
    whenever ``k`` divides ``n_workers``).
``items="nested"``
    each item is the output of one system only (unpaired outputs); the items
    are split into K equal consecutive blocks, block ``s`` belonging to system
    ``s``.  Because the allocation runs on across blocks, each system's
    ratings are also spread over the workers (within two).

With ``items="paired"`` (default) a worker who is assigned an item rates it
under every system.
"""

from __future__ import annotations

import functools
import string
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ._choices import Coding, ItemScheme, allowed
from ._validation import check_columns, check_int
from .coding import check_coding, x_values
from .errors import DesignError, InputError

#: The item schemes (:data:`nlpower._choices.ItemScheme`).
ITEM_SCHEMES: tuple[str, ...] = allowed(ItemScheme)


def default_system_names(k: int) -> tuple[str, ...]:
    """Names for ``k`` systems: ``"A", "B", ...`` (up to 26), else ``"S01", "S02", ...``.

    Both schemes sort alphabetically in system order, so a reader that sorts
    factor levels (as R does) keeps the first system as the baseline.
    """
    if k <= 26:
        return tuple(string.ascii_uppercase[:k])
    width = len(str(k))
    return tuple(f"S{j + 1:0{width}d}" for j in range(k))


def _labels(prefix: str, n: int) -> list[str]:
    width = len(str(n))
    return [f"{prefix}{j + 1:0{width}d}" for j in range(n)]


@dataclass(frozen=True, eq=False)
class LayoutArrays:
    """Integer index arrays of a design, built once and reused by the simulator.

    Attributes
    ----------
    worker, item, system : ndarray of intp, shape (n_ratings,)
        0-based worker, item and system code of each rating, in
        :meth:`CrossedDesign.layout` row order.
    n_workers, n_items, n_systems : int
        Number of levels of each factor.
    """

    worker: np.ndarray
    item: np.ndarray
    system: np.ndarray
    n_workers: int
    n_items: int
    n_systems: int

    @property
    def n_ratings(self) -> int:
        return int(self.worker.shape[0])

    @functools.cached_property
    def worker_system(self) -> np.ndarray:
        """Combined code ``worker * n_systems + system`` of each rating."""
        out = self.worker * self.n_systems + self.system
        out.setflags(write=False)
        return out

    @functools.cached_property
    def item_system(self) -> np.ndarray:
        """Combined code ``item * n_systems + system`` of each rating."""
        out = self.item * self.n_systems + self.system
        out.setflags(write=False)
        return out

    @classmethod
    def from_frame(
        cls,
        data: pd.DataFrame,
        *,
        worker: str = "worker",
        item: str = "item",
        system: str = "system",
        systems: Sequence[str] | None = None,
    ) -> LayoutArrays:
        """Index arrays of an arbitrary (e.g. unbalanced, observed) rating layout.

        Lets :func:`nlpower.simulation.simulate_y` draw ratings for any
        who-rated-what table, such as a pilot study's, with rows in ``data``'s
        order.  Worker and item codes follow the sorted unique labels; system
        codes follow ``systems`` (baseline first) if given, else the
        categories of a categorical column, else the sorted labels.

        Raises
        ------
        DesignError
            Missing columns or values, fewer than 2 workers, items or
            systems, or system labels not in ``systems``.
        """
        if not isinstance(data, pd.DataFrame):
            raise DesignError(f"data must be a pandas DataFrame; got {type(data).__name__}.")
        try:
            check_columns("data", [worker, item, system], [str(c) for c in data.columns])
        except InputError as exc:
            raise DesignError(f"{exc} Name the columns with worker=, item=, system=.") from None
        cols = {"worker": worker, "item": item, "system": system}
        for role, col in cols.items():
            n_missing = int(data[col].isna().sum())
            if n_missing:
                raise DesignError(
                    f"column {col!r} ({role}) has {n_missing} missing value(s); drop or fill those "
                    "rows first."
                )
        w_codes, w_levels = pd.factorize(data[worker], sort=True)
        i_codes, i_levels = pd.factorize(data[item], sort=True)
        sys_col = data[system]
        if systems is not None:
            names = [str(v) for v in systems]
        elif isinstance(sys_col.dtype, pd.CategoricalDtype):
            names = [str(v) for v in sys_col.cat.categories]
        else:
            names = sorted({str(v) for v in sys_col})
        labels = sys_col.astype(str).to_numpy()
        lookup = {n: j for j, n in enumerate(names)}
        unknown = sorted(set(labels) - set(lookup))
        if unknown:
            raise DesignError(
                f"column {system!r} has system(s) {', '.join(map(repr, unknown))} not in "
                f"systems={names!r}; list every system (baseline first)."
            )
        s_codes = np.fromiter((lookup[v] for v in labels), dtype=np.intp, count=len(labels))
        for role, n in (("workers", len(w_levels)), ("items", len(i_levels)), ("systems", len(names))):
            if n < 2:
                raise DesignError(
                    f"data has {n} distinct {role}; at least 2 are needed (a grouping factor with "
                    "one level cannot be fitted, and a comparison needs two systems)."
                )
        arrays = [np.ascontiguousarray(v, dtype=np.intp) for v in (w_codes, i_codes, s_codes)]
        for v in arrays:
            v.setflags(write=False)
        return cls(arrays[0], arrays[1], arrays[2], len(w_levels), len(i_levels), len(names))

    def __repr__(self) -> str:
        return (f"LayoutArrays(n_ratings={self.n_ratings}, n_workers={self.n_workers}, "
                f"n_items={self.n_items}, n_systems={self.n_systems})")


@dataclass(frozen=True)
class CrossedDesign:
    """A worker x item x system rating design.

    Parameters
    ----------
    n_workers : int
        Number of workers (>= 2: a grouping factor with one level has no
        estimable variance).
    n_items : int
        Number of items (>= 2; same reason).  With ``items="nested"`` the total
        over all systems, a multiple of the number of systems.
    systems : int or sequence of str, default 2
        Number of systems (>= 2), named ``"A", "B", ...``
        (:func:`default_system_names`), or their names.  The first system is
        the baseline.
    workers_per_item : int, optional
        Workers rating each item (1 .. n_workers), balanced and connected
        (:func:`balanced_allocation`).  ``None`` (default): every worker rates
        every item.
    items : {"paired", "nested"}, default "paired"
        ``"paired"``: every item is rendered by every system and a worker rates
        all renderings of the items assigned to them (Card et al.).
        ``"nested"``: each item belongs to one system.

    Examples
    --------
    >>> d = CrossedDesign(3, 100)            # the paper's "3 workers, 100 items"
    >>> d.n_ratings
    600
    >>> CrossedDesign(20, 100, workers_per_item=3).n_ratings
    600
    """

    n_workers: int
    n_items: int
    systems: Any = 2
    workers_per_item: int | None = None
    items: str = "paired"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("n_workers", "n_items"):
            value = getattr(self, name)
            try:
                v = check_int(name, value)
            except InputError as exc:
                raise DesignError(f"{exc} Pass a whole number of {name[2:]}.") from None
            if v < 2:
                raise DesignError(
                    f"{name} must be >= 2; got {v}. A grouping factor with a single level cannot be "
                    f"fitted (its variance is not identifiable from one {name[2:-1]}); use at least 2."
                )
            set_(self, name, v)
        set_(self, "systems", _check_systems(self.systems))
        if not isinstance(self.items, str) or self.items not in ITEM_SCHEMES:
            raise DesignError(
                f"items must be 'paired' (every item rendered by every system) or 'nested' "
                f"(each item is one system's output); got {self.items!r}."
            )
        k = self.workers_per_item
        if k is not None:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                raise DesignError(
                    f"workers_per_item must be an integer between 1 and n_workers={self.n_workers}, "
                    f"or None for every worker on every item; got {k!r}."
                )
            k = int(k)
            if not 1 <= k <= self.n_workers:
                raise DesignError(
                    f"workers_per_item must be between 1 and n_workers={self.n_workers}; got {k}. "
                    "An item cannot be rated by more distinct workers than there are; raise "
                    "n_workers or lower workers_per_item (None = every worker rates every item)."
                )
            if self.n_items * k < self.n_workers:
                raise DesignError(
                    f"n_items * workers_per_item = {self.n_items} * {k} = {self.n_items * k} rating "
                    f"slots cannot give each of the n_workers={self.n_workers} workers an item; "
                    f"some workers would rate nothing. Use n_workers <= {self.n_items * k}, or "
                    f"more items or workers_per_item."
                )
            set_(self, "workers_per_item", k)
        n_sys = len(self.systems)
        if self.items == "nested" and self.n_items % n_sys != 0:
            lo = (self.n_items // n_sys) * n_sys
            options = " or ".join(str(v) for v in sorted({max(lo, 2 * n_sys), max(lo + n_sys, 2 * n_sys)}))
            raise DesignError(
                f"with items='nested' the {self.n_items} items are split evenly across the "
                f"{n_sys} systems, so n_items must be a multiple of {n_sys}; got {self.n_items}. "
                f"Use e.g. n_items={options}."
            )
        if self.items == "nested" and self.n_items // n_sys < 2:
            raise DesignError(
                f"with items='nested' each system needs at least 2 items; got n_items={self.n_items} "
                f"for {n_sys} systems. Use n_items >= {2 * n_sys}."
            )

    # ------------------------------------------------------------- properties
    @property
    def n_systems(self) -> int:
        """Number of systems K."""
        return len(self.systems)

    @property
    def system_names(self) -> tuple[str, ...]:
        """System names, baseline first."""
        return tuple(self.systems)

    @property
    def baseline(self) -> str:
        """The first system."""
        return str(self.systems[0])

    @property
    def raters_per_item(self) -> int:
        """Distinct workers per item (``workers_per_item`` or ``n_workers``)."""
        return self.n_workers if self.workers_per_item is None else self.workers_per_item

    @property
    def is_fully_crossed(self) -> bool:
        """Every worker rates every item."""
        return self.raters_per_item == self.n_workers

    @property
    def is_balanced_crossed(self) -> bool:
        """Fully crossed and paired: the paper's design (closed-form ANOVA applies)."""
        return self.is_fully_crossed and self.items == "paired"

    @property
    def n_ratings(self) -> int:
        """Total number of ratings."""
        per_item = self.n_systems if self.items == "paired" else 1
        return self.n_items * self.raters_per_item * per_item

    @property
    def items_per_system(self) -> int:
        """Items rated under each system (``n_items`` when paired)."""
        return self.n_items if self.items == "paired" else self.n_items // self.n_systems

    # ---------------------------------------------------------------- layout
    def item_systems(self) -> np.ndarray | None:
        """System code of each item for nested designs (``None`` when paired)."""
        if self.items == "paired":
            return None
        return np.repeat(np.arange(self.n_systems), self.n_items // self.n_systems)

    def item_workers(self) -> np.ndarray:
        """Array (n_items, raters_per_item) of the workers assigned to each item.

        See :func:`balanced_allocation` (a copy; the cached array is read-only).
        """
        return balanced_allocation(self.n_workers, self.n_items, self.raters_per_item).copy()

    def n_components(self) -> int:
        """Connected components of the worker x item graph (1 = connected).

        Workers and items are nodes, ratings are edges.  With more than one
        component, worker and item effects are confounded with differences
        between the groups.
        """
        iw = balanced_allocation(self.n_workers, self.n_items, self.raters_per_item)
        n, k = iw.shape
        size = self.n_workers + n
        rows = iw.ravel()
        cols = self.n_workers + np.repeat(np.arange(n), k)
        graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(size, size))
        return int(connected_components(graph, directed=False)[0])

    def worker_loads(self) -> np.ndarray:
        """Number of items assigned to each worker."""
        return np.bincount(self.item_workers().ravel(), minlength=self.n_workers)

    def arrays(self) -> LayoutArrays:
        """Integer index arrays of every rating (cached; :meth:`layout` row order).

        Rows are ordered by item, then worker, then system.
        """
        return _layout_arrays(self)

    def layout(self, coding: Coding = "sum") -> pd.DataFrame:
        """One row per rating: ``worker``, ``item``, ``system`` and, for 2 systems, ``x``.

        ``worker`` and ``item`` are zero-padded labels (``"w01"``, ``"i001"``)
        that sort in numeric order; ``system`` is an ordered categorical with
        the baseline first.  ``x`` codes the system in ``coding``: ``"sum"``
        (default, the paper's: -1 baseline, +1 other), ``"half"`` (-0.5/+0.5)
        or ``"treatment"`` (0/1).  For K > 2 systems there is no single ``x``
        and the column is omitted.
        """
        check_coding(coding)
        a = self.arrays()
        wl = np.asarray(_labels("w", self.n_workers), dtype=object)
        il = np.asarray(_labels("i", self.n_items), dtype=object)
        df = pd.DataFrame({
            "worker": wl[a.worker],
            "item": il[a.item],
            "system": pd.Categorical.from_codes(a.system, categories=pd.Index(list(self.system_names)),
                                                ordered=True),
        })
        if self.n_systems == 2:
            df["x"] = np.array(x_values(coding))[a.system]
        return df

    def describe(self) -> str:
        """A short text report of the size of the design (before simulating)."""
        k = self.raters_per_item
        names = ", ".join(self.system_names)
        if self.is_fully_crossed:
            alloc = "every worker rates every item"
        else:
            alloc = f"{k} of {self.n_workers} workers per item (balanced allocation)"
        paired = ("paired: each item rated under every system" if self.items == "paired"
                  else f"nested: each item is one system's output ({self.items_per_system} per system)")
        loads = self.worker_loads()
        per_sys = self.n_systems if self.items == "paired" else 1
        lo, hi = int(loads.min()) * per_sys, int(loads.max()) * per_sys
        per_worker = f"{lo}" if lo == hi else f"{lo}-{hi}"
        n_comp = self.n_components()
        graph = ("connected" if n_comp == 1 else
                 f"NOT connected ({n_comp} groups of workers and items that never meet: worker and "
                 "item effects are confounded with group differences)")
        return "\n".join([
            f"CrossedDesign: {self.n_workers} workers x {self.n_items} items x "
            f"{self.n_systems} systems ({names}; baseline {self.baseline})",
            f"  allocation: {alloc}; {paired}",
            f"  {self.n_ratings} ratings; {k * per_sys} per item "
            f"({k} workers x {per_sys} system{'s' if per_sys > 1 else ''}); "
            f"{per_worker} per worker",
            f"  worker x item graph: {graph}",
        ])

    def summary(self) -> str:
        """Same as :meth:`describe`."""
        return self.describe()

    def to_frame(self) -> pd.DataFrame:
        """A one-row data frame of the design's settings and size."""
        return pd.DataFrame([{
            "n_workers": self.n_workers,
            "n_items": self.n_items,
            "n_systems": self.n_systems,
            "systems": ",".join(self.system_names),
            "workers_per_item": self.raters_per_item,
            "items": self.items,
            "n_ratings": self.n_ratings,
        }])

    def __repr__(self) -> str:
        extra = "" if self.workers_per_item is None else f", workers_per_item={self.workers_per_item}"
        sys_ = self.n_systems if self.system_names == default_system_names(self.n_systems) \
            else self.system_names
        return (f"CrossedDesign(n_workers={self.n_workers}, n_items={self.n_items}, "
                f"systems={sys_!r}{extra}, items={self.items!r})")


def _check_systems(systems: Any) -> tuple[str, ...]:
    if isinstance(systems, bool):
        raise DesignError(f"systems must be an int >= 2 or a sequence of names; got {systems!r}.")
    if isinstance(systems, (int, np.integer)):
        k = int(systems)
        if k < 2:
            raise DesignError(
                f"systems must be >= 2 (a comparison needs a baseline and at least one other "
                f"system); got {k}."
            )
        return default_system_names(k)
    if isinstance(systems, str) or not isinstance(systems, (Sequence, np.ndarray, pd.Index)):
        raise DesignError(
            f"systems must be an int >= 2 or a sequence of at least two names "
            f"(e.g. ['baseline', 'ours']); got {systems!r}."
        )
    names = tuple(str(s) for s in systems)
    if len(names) < 2:
        raise DesignError(
            f"systems needs at least two names (baseline first); got {list(names)!r}."
        )
    if any(n == "" for n in names):
        raise DesignError(f"system names must be non-empty; got {list(names)!r}.")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DesignError(
            f"system names must be unique; {', '.join(map(repr, dup))} appear more than once in "
            f"{list(names)!r}."
        )
    return names


@functools.lru_cache(maxsize=32)
def balanced_allocation(n_workers: int, n_items: int, k: int) -> np.ndarray:
    """Assign ``k`` distinct workers to each item, balanced and connected.

    Items are processed in order; each takes the ``k`` least-loaded workers
    (ties: the longest idle, then the lowest index), which keeps worker
    loads within one of each other.  While the worker x item graph is still
    disconnected, ties among equally loaded workers are broken in favour of
    workers from components not yet represented on the item, so that items
    link separate groups of workers; once the graph is connected the rule
    reduces to a plain rotation through the queue of workers.

    The first ``floor(n_workers / k)`` items necessarily get disjoint teams
    (balance forbids reusing a worker early), so a connected graph needs a
    second pass over the workers; with ``n_items * k >= 2 * n_workers`` and
    ``k >= 2`` the result was connected for every case checked (all
    ``n_workers < 30``, ``n_items < 60``).  A plain rotation
    ``(i * k + j) mod n_workers`` would split the workers into
    ``n_workers / k`` fixed teams whenever ``k`` divides ``n_workers``,
    confounding worker effects with item groups.

    No item's workers depend on later items, so the allocation of ``n_items``
    is the first rows of any longer one: the items assigned while the graph
    is disconnected are kept per ``(n_workers, k)`` and extended on demand.

    Returns a read-only array of shape ``(n_items, k)`` (sorted rows).

    Examples
    --------
    >>> balanced_allocation(4, 4, 2)
    array([[0, 1],
           [2, 3],
           [0, 2],
           [1, 3]])
    """
    alloc = _allocator(n_workers, k)
    with alloc.lock:
        out = alloc.rows(n_items)
    out.sort(axis=1)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=64)
def _allocator(n_workers: int, k: int) -> _Allocator:
    return _Allocator(n_workers, k)


class _Allocator:
    """The items of :func:`balanced_allocation` for ``(n_workers, k)``, assigned as far as asked."""

    def __init__(self, n_workers: int, k: int) -> None:
        w = n_workers
        self.w, self.k = w, k
        self.load = np.zeros(w, dtype=np.intp)
        self.last = np.full(w, -1, dtype=np.intp)
        self.comp = np.arange(w)
        self.idx = np.arange(w)
        self.n_comp = w
        self.teams: list[np.ndarray] = []   # the items assigned while disconnected, in order
        self.lock = threading.Lock()

    def _more(self, n: int) -> None:
        """Assign items while the graph is disconnected, up to ``n`` items in all."""
        w, k = self.w, self.k
        load, last, comp, idx = self.load, self.last, self.comp, self.idx
        it = len(self.teams)
        while it < n and self.n_comp > 1 and 2 <= k < w:
            order = np.lexsort((idx, last, load))
            lo = load[order[0]]
            at_lo = order[load[order] == lo]
            if len(at_lo) >= k:
                chosen: list[int] = []
                pool = at_lo
            else:
                chosen = [int(v) for v in at_lo]
                pool = order[load[order] == lo + 1]
            seen = {int(comp[v]) for v in chosen}
            for v in pool:
                if len(chosen) == k:
                    break
                if int(comp[v]) not in seen:
                    chosen.append(int(v))
                    seen.add(int(comp[v]))
            for v in pool:
                if len(chosen) == k:
                    break
                if int(v) not in chosen:
                    chosen.append(int(v))
            picked = np.asarray(chosen, dtype=np.intp)
            self.teams.append(picked)
            load[picked] += 1
            last[picked] = it
            labels = np.unique(comp[picked])
            if len(labels) > 1:
                comp[np.isin(comp, labels)] = labels[0]
                self.n_comp -= len(labels) - 1
            it += 1

    def rows(self, n: int) -> np.ndarray:
        """A new ``(n, k)`` array of the first ``n`` items' workers (unsorted rows)."""
        self._more(n)
        w, k = self.w, self.k
        out = np.empty((n, k), dtype=np.intp)
        it = min(n, len(self.teams))
        if it:
            out[:it] = np.stack(self.teams[:it])
        if it < n:
            # connected (or k in {1, w}): least loaded, longest idle first = a rotation of the queue
            queue = np.lexsort((self.idx, self.last, self.load))
            slots = np.arange(n - it)[:, None] * k + np.arange(k)[None, :]
            out[it:] = queue[slots % w]
        return out


@functools.lru_cache(maxsize=32)
def _layout_arrays(design: CrossedDesign) -> LayoutArrays:
    iw = balanced_allocation(design.n_workers, design.n_items, design.raters_per_item)
    n_items, k = iw.shape
    if design.items == "paired":
        n_sys = design.n_systems
        item = np.repeat(np.arange(n_items), k * n_sys)
        worker = np.repeat(iw.ravel(), n_sys)
        system = np.tile(np.arange(n_sys), n_items * k)
    else:
        item = np.repeat(np.arange(n_items), k)
        worker = iw.ravel().copy()
        system = np.repeat(np.arange(design.n_systems), n_items // design.n_systems)[item]
    arrays = [np.ascontiguousarray(v, dtype=np.intp) for v in (worker, item, system)]
    for v in arrays:
        v.setflags(write=False)
    return LayoutArrays(arrays[0], arrays[1], arrays[2], design.n_workers, design.n_items,
                        design.n_systems)


__all__ = ["ITEM_SCHEMES", "CrossedDesign", "LayoutArrays", "balanced_allocation",
           "default_system_names"]
