"""Design report: who rated what, in a few numbers a reader can check.

The report describes a rating data set (one row per rating) before any model
is fitted: counts, ratings per item and per worker, whether items are *paired*
across systems (the same input rendered by several systems, Card et al. 2020,
App. H.3) or *nested* in systems, whether the worker x item graph is connected
(a disconnected graph means worker and item effects are confounded between the
components), duplicates and dropped rows.  It holds no statistics beyond
counting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DesignReport", "design_report"]


@dataclass(frozen=True)
class DesignReport:
    """Counts and layout of a rating data set.

    Attributes
    ----------
    n_workers, n_items, n_systems, n_ratings : int
        Distinct workers, items and systems; number of ratings (rows kept).
    systems : tuple of str
        System labels in the order of the ``system`` categories.
    ratings_per_system : dict
        Number of ratings of each system.
    ratings_per_item, ratings_per_worker : tuple of (min, median, max)
        Distribution of the number of ratings per item and per worker.
    item_layout : {"paired", "nested", "mixed"}
        ``"paired"``: every item is rated under >= 2 systems (the paper's
        design); ``"nested"``: every item under exactly one system;
        ``"mixed"``: some of each.
    n_items_paired : int
        Items rated under >= 2 systems.
    worker_layout : {"paired", "nested", "mixed"}
        The same classification for workers (does a worker see several
        systems?).  Per-system worker effects can only be correlated across
        systems when workers are paired.
    fully_crossed : bool
        Every worker rated every item under every system (the paper's
        simulation design), possibly several times.
    connected : bool
        Whether the bipartite worker--item graph (an edge per rated pair) is
        connected.
    n_components : int
        Number of connected components of that graph.
    n_duplicate_groups, n_duplicate_rows : int
        (worker, item, system) combinations rated more than once, and the
        number of surplus rows (rows beyond the first of each combination) as
        found in the input, before the ``duplicates`` policy was applied.
    duplicates : str
        The policy applied (``"error"``, ``"keep"`` or ``"mean"``).
    n_dropped : int
        Rows dropped because the rating was missing.
    scale : tuple of float or None
        Likert range (lo, hi) used for rescaling to [0, 1]; None when the
        ratings were used as given (``scale="identity"``).
    scale_inferred : bool
        True when ``scale`` was inferred from the observed min/max.
    source : str
        Where the data came from (a path or ``"<DataFrame>"``).
    notes : tuple of str
        Warnings about the design worth reading before fitting.
    """

    n_workers: int
    n_items: int
    n_systems: int
    n_ratings: int
    systems: tuple[str, ...]
    ratings_per_system: dict[str, int]
    ratings_per_item: tuple[int, float, int]
    ratings_per_worker: tuple[int, float, int]
    item_layout: str
    n_items_paired: int
    worker_layout: str
    fully_crossed: bool
    connected: bool
    n_components: int
    n_duplicate_groups: int = 0
    n_duplicate_rows: int = 0
    duplicates: str = "error"
    n_dropped: int = 0
    scale: tuple[float, float] | None = None
    scale_inferred: bool = False
    source: str = "<DataFrame>"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __repr__(self) -> str:
        return (
            f"DesignReport(n_workers={self.n_workers}, n_items={self.n_items}, "
            f"n_systems={self.n_systems}, n_ratings={self.n_ratings}, "
            f"items={self.item_layout!r}, connected={self.connected})"
        )

    def summary(self) -> str:
        """Text rendering (also what ``str(report)`` prints)."""
        def dist(t: tuple[int, float, int]) -> str:
            return f"min {t[0]}, median {t[1]:g}, max {t[2]}"

        lines = [f"Rating data: {self.source}"]
        lines.append(
            f"  {self.n_ratings} ratings by {self.n_workers} workers of {self.n_items} items "
            f"under {self.n_systems} systems"
        )
        per_sys = ", ".join(f"{s}: {n}" for s, n in self.ratings_per_system.items())
        lines.append(f"  systems (level order): {per_sys}")
        lines.append(f"  ratings per item:   {dist(self.ratings_per_item)}")
        lines.append(f"  ratings per worker: {dist(self.ratings_per_worker)}")
        layout = {
            "paired": "paired (every item rated under >= 2 systems)",
            "nested": "nested (each item rated under exactly one system)",
            "mixed": f"mixed ({self.n_items_paired} of {self.n_items} items rated under >= 2 systems)",
        }[self.item_layout]
        lines.append(f"  items: {layout}")
        lines.append(f"  workers: {self.worker_layout} across systems")
        lines.append(f"  fully crossed (every worker x item x system): {'yes' if self.fully_crossed else 'no'}")
        if self.connected:
            lines.append("  worker x item graph: connected")
        else:
            lines.append(f"  worker x item graph: NOT connected ({self.n_components} components)")
        if self.n_duplicate_groups:
            lines.append(
                f"  duplicates: {self.n_duplicate_groups} (worker, item, system) combinations rated "
                f"more than once ({self.n_duplicate_rows} surplus rows; policy {self.duplicates!r})"
            )
        else:
            lines.append("  duplicates: none")
        lines.append(f"  rows dropped (missing rating): {self.n_dropped}")
        if self.scale is None:
            lines.append("  ratings used as given (scale='identity', not rescaled)")
        else:
            how = "inferred from the observed min/max" if self.scale_inferred else "given"
            lines.append(
                f"  Likert scale: {self.scale[0]:g}..{self.scale[1]:g} ({how}); "
                "ratings rescaled to [0, 1] as (r - lo) / (hi - lo)"
            )
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        return {
            "source": self.source,
            "n_workers": self.n_workers,
            "n_items": self.n_items,
            "n_systems": self.n_systems,
            "n_ratings": self.n_ratings,
            "systems": list(self.systems),
            "ratings_per_system": dict(self.ratings_per_system),
            "ratings_per_item": {"min": self.ratings_per_item[0], "median": self.ratings_per_item[1],
                                 "max": self.ratings_per_item[2]},
            "ratings_per_worker": {"min": self.ratings_per_worker[0],
                                   "median": self.ratings_per_worker[1],
                                   "max": self.ratings_per_worker[2]},
            "item_layout": self.item_layout,
            "n_items_paired": self.n_items_paired,
            "worker_layout": self.worker_layout,
            "fully_crossed": self.fully_crossed,
            "connected": self.connected,
            "n_components": self.n_components,
            "n_duplicate_groups": self.n_duplicate_groups,
            "n_duplicate_rows": self.n_duplicate_rows,
            "duplicates": self.duplicates,
            "n_dropped": self.n_dropped,
            "scale": None if self.scale is None else list(self.scale),
            "scale_inferred": self.scale_inferred,
            "notes": list(self.notes),
        }

    def to_frame(self) -> pd.DataFrame:
        """One-row tidy frame of the scalar counts."""
        d = self.to_dict()
        flat = {k: v for k, v in d.items() if not isinstance(v, (dict, list))}
        for key in ("ratings_per_item", "ratings_per_worker"):
            for stat, val in d[key].items():
                flat[f"{key}_{stat}"] = val
        return pd.DataFrame([flat])


def _layout(groups: pd.Series, systems: pd.Series) -> tuple[str, int]:
    """Classify how a grouping factor meets systems: (layout, n levels with >= 2 systems)."""
    n_sys = pd.DataFrame({"g": groups.to_numpy(), "s": systems.to_numpy()}).groupby(
        "g", observed=True)["s"].nunique()
    n_multi = int((n_sys >= 2).sum())
    if n_multi == len(n_sys):
        return "paired", n_multi
    if n_multi == 0:
        return "nested", n_multi
    return "mixed", n_multi


def _n_components(u: np.ndarray, v: np.ndarray, n: int) -> int:
    """Connected components of the graph on nodes ``0..n-1`` with edges ``u[k] -- v[k]``.

    Every node must lie on an edge.  Each node takes the smallest label among
    its edges' ends, then its label's label, until nothing changes; a label
    is always a node of the same component, and at the end both ends of every
    edge share one.

    Examples
    --------
    >>> _n_components(np.array([0, 1, 3]), np.array([1, 2, 4]), 5)
    2
    """
    label = np.arange(n)
    while True:
        low = np.minimum(label[u], label[v])
        new = label.copy()
        np.minimum.at(new, u, low)
        np.minimum.at(new, v, low)
        new = new[new]
        if np.array_equal(new, label):
            return int(np.unique(label).size)
        label = new


def _dist(counts: pd.Series) -> tuple[int, float, int]:
    return int(counts.min()), float(np.median(counts.to_numpy())), int(counts.max())


def design_report(
    data: pd.DataFrame,
    *,
    n_duplicate_groups: int = 0,
    n_duplicate_rows: int = 0,
    duplicates: str = "error",
    n_dropped: int = 0,
    scale: tuple[float, float] | None = None,
    scale_inferred: bool = False,
    source: str = "<DataFrame>",
    extra_notes: tuple[str, ...] = (),
) -> DesignReport:
    """Build a :class:`DesignReport` from a frame with columns worker, item, system.

    ``system`` should be categorical (its categories give the level order);
    other columns are ignored.
    """
    worker = data["worker"]
    item = data["item"]
    system = data["system"]
    if isinstance(system.dtype, pd.CategoricalDtype):
        systems = tuple(str(c) for c in system.cat.categories)
    else:
        systems = tuple(str(s) for s in pd.unique(system))
    per_sys_counts = system.astype(str).value_counts()
    ratings_per_system = {s: int(per_sys_counts.get(s, 0)) for s in systems}

    w_codes, w_levels = pd.factorize(worker, sort=False)
    i_codes, i_levels = pd.factorize(item, sort=False)
    n_w, n_i = len(w_levels), len(i_levels)
    n_s = len(systems)

    item_layout, n_items_paired = _layout(item, system)
    worker_layout, _ = _layout(worker, system)

    triples = pd.DataFrame({"w": w_codes, "i": i_codes, "s": system.astype(str).to_numpy()})
    n_unique_triples = len(triples.drop_duplicates())
    fully_crossed = n_unique_triples == n_w * n_i * n_s

    # bipartite worker -- item graph: nodes 0..n_w-1 are workers, n_w.. are items
    n_components = _n_components(w_codes, n_w + i_codes, n_w + n_i)

    notes = list(extra_notes)
    if n_components > 1:
        notes.append(
            f"the worker x item graph has {n_components} disconnected components: worker and "
            "item effects are partly confounded with differences between components"
        )
    if item_layout == "nested":
        notes.append(
            "items are nested in systems: no item links two systems, so item variance is "
            "identified per system only (the fit's notes say which SDs)"
        )
    if worker_layout == "nested":
        notes.append(
            "each worker rated only one system: worker and system effects are separated only "
            "through the items"
        )

    return DesignReport(
        n_workers=n_w,
        n_items=n_i,
        n_systems=n_s,
        n_ratings=len(data),
        systems=systems,
        ratings_per_system=ratings_per_system,
        ratings_per_item=_dist(pd.Series(i_codes).value_counts()),
        ratings_per_worker=_dist(pd.Series(w_codes).value_counts()),
        item_layout=item_layout,
        n_items_paired=n_items_paired,
        worker_layout=worker_layout,
        fully_crossed=bool(fully_crossed),
        connected=bool(n_components == 1),
        n_components=int(n_components),
        n_duplicate_groups=int(n_duplicate_groups),
        n_duplicate_rows=int(n_duplicate_rows),
        duplicates=duplicates,
        n_dropped=int(n_dropped),
        scale=scale,
        scale_inferred=scale_inferred,
        source=source,
        notes=tuple(notes),
    )
