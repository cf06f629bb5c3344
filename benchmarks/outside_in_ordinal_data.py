"""The Likert files of ``outside_in_ordinal.py``: new seeds and shapes, truth attached.

(a) 7,000 ratings, 1-7 with 3 unused, 2 systems, 150 workers (3-150 each), 350 items;
(b) ~18,000 ratings, 4 paired systems, 400 workers, 1,200 items (60 rated once or twice),
    four workers forced to one category; (c) 6,000 probit-generated ratings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Truth", "make_file"]


@dataclass
class Truth:
    K: int                    # scale 1..K (declared)
    effects: np.ndarray       # latent effect per system (system order s0, s1, ...)
    cuts: np.ndarray          # cut points of the *used* categories (in the latent scale)
    sd_w: float
    sd_i: float
    link: str
    unused: tuple[int, ...]


def _counts(g: np.random.Generator, n: int, lo: int, hi: int, target: int, shape: float) -> np.ndarray:
    """Ratings per worker: ``lo`` each plus a heavy-tailed (Pareto) share of the rest, <= ``hi``."""
    w = g.pareto(shape, n) + 0.05
    c = np.full(n, lo)
    while c.sum() < target:
        room = c < hi
        p = np.where(room, w, 0.0)
        add = g.multinomial(target - c.sum(), p / p.sum())
        c = np.minimum(c + add, hi)
    return c


def _latent_noise(g: np.random.Generator, link: str, n: int) -> np.ndarray:
    return g.logistic(size=n) if link == "logit" else g.normal(size=n)


def make_file(name: str) -> tuple[pd.DataFrame, Truth]:
    if name == "a":
        g = np.random.default_rng(91_731)
        n_w, n_i, n_s = 150, 350, 2
        counts = _counts(g, n_w, 3, 150, 7_000, 0.9)
        cells = np.array([(i, s) for i in range(n_i) for s in range(n_s)])
        rows = []
        for w in range(n_w):   # each worker rates distinct (item, system) cells
            pick = g.choice(len(cells), counts[w], replace=False)
            rows += [(w, *cells[k]) for k in pick]
        d = np.array(rows)
        truth = Truth(7, np.array([0.0, 0.45]), np.array([-3.0, -1.4, 0.0, 1.3, 2.8]),
                      2.5, 0.8, "logit", (3,))
    elif name == "b":
        g = np.random.default_rng(40_417)
        n_w, n_i, n_s = 400, 1_200, 4
        # 1,140 items under all 4 systems (~4 ratings per cell), 60 items rated once or twice
        sparse = g.choice(n_i, 60, replace=False)
        full = np.setdiff1d(np.arange(n_i), sparse)
        cells = [(i, s) for i in full for s in range(n_s) for _ in range(4)]
        cells += [(i, int(s)) for i in sparse for s in g.choice(n_s, g.integers(1, 3), replace=False)]
        cells_a = np.array(cells)
        g.shuffle(cells_a)
        counts = _counts(g, n_w, 5, 400, len(cells_a), 1.1)
        worker = np.repeat(np.arange(n_w), counts)
        g.shuffle(worker)
        d = np.column_stack([worker, cells_a])
        # a (worker, item, system) repeat is a duplicate: move it to another worker
        df0 = pd.DataFrame(d, columns=["w", "i", "s"])
        dup = df0.duplicated()
        while dup.any():
            df0.loc[dup, "w"] = g.integers(0, n_w, int(dup.sum()))
            dup = df0.duplicated()
        d = df0.to_numpy()
        truth = Truth(5, np.array([0.0, 0.3, -0.2, 0.5]), np.array([-2.2, -0.7, 0.6, 2.0]),
                      2.0, 1.0, "logit", ())
    else:
        g = np.random.default_rng(55_802)
        n_w, n_i, n_s = 120, 500, 2
        counts = _counts(g, n_w, 4, 200, 6_000, 1.0)
        cells = np.array([(i, s) for i in range(n_i) for s in range(n_s)])
        rows = []
        for w in range(n_w):
            pick = g.choice(len(cells), counts[w], replace=False)
            rows += [(w, *cells[k]) for k in pick]
        d = np.array(rows)
        truth = Truth(5, np.array([0.0, -0.3]), np.array([-1.3, -0.4, 0.5, 1.4]),
                      1.2, 0.5, "probit", ())
    w, i, s = d[:, 0], d[:, 1], d[:, 2]
    bw = g.normal(0, truth.sd_w, w.max() + 1)
    bi = g.normal(0, truth.sd_i, i.max() + 1)
    latent = truth.effects[s] + bw[w] + bi[i] + _latent_noise(g, truth.link, len(w))
    cat = np.searchsorted(truth.cuts, latent) + 1            # 1 .. len(cuts)+1 (used categories)
    for u in truth.unused:                                   # shift above an unused score
        cat = np.where(cat >= u, cat + 1, cat)
    df = pd.DataFrame({"worker": [f"w{x:03d}" for x in w], "item": [f"it{x:04d}" for x in i],
                       "system": [f"s{x}" for x in s], "rating": cat.astype(int)})
    if name == "b":   # four workers who click one category only (the top or bottom)
        nrat = df.groupby("worker").size()
        few = nrat[(nrat >= 6) & (nrat <= 15)].index[:4]
        for k, wk in enumerate(few):
            df.loc[df.worker == wk, "rating"] = 5 if k % 2 == 0 else 1
    return df.sample(frac=1.0, random_state=1).reset_index(drop=True), truth
