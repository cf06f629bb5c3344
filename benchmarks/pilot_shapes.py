"""Generated rating files in the shapes of real pilot studies (for bench_engine.py).

Six shapes, each a named benchmark case; sizes, sparsity, nesting and rating
counts follow the real files they stand in for (those are held out):

``da2``      2 systems paired, 80 annotators, 1,000 segments, every segment
             rated under both systems once and 269 (segment, system) cells a
             second time (2,269 ratings), each rating by a random annotator;
             0-100 direct-assessment scores.  Paper model.
``nested4s`` 4 systems, 200 items nested in systems (50 each), 37 workers, 3
             ratings per item by 3 different random workers (600 ratings); a
             5-point Likert scale rescaled to [0, 1].  The package's default
             for nested items: per-system item variances
             ``(0 + is_sys1 + ... + is_sys4 || item)``.
``sys20``    20 systems, 181 annotators, 1,000 segments, every segment under
             every system once and 2,616 cells twice (22,616 ratings), random
             annotators; ``(1 | worker) + (1 | item) + (1 | item:system)``.
``expert3``  3 systems, 4 expert reviewers, 100 questions, every (question,
             system) cell rated by 3 of the 4 reviewers (900 ratings), 0-100.
``crowd2``   2 systems, 93 crowd workers, 99 articles, 4,000 ratings spread
             over the 198 (article, system) cells (20-21 each, different
             workers within a cell), 6-level Likert.
``full6``    6 systems, 3 raters, 30 documents, fully crossed (540 ratings).

"Paper model": ``rating ~ system + (system || worker) + (system || item)``,
sum contrasts, ML.  Responses come from that model with SDs of the size seen
in Card et al. (2020) Tables 13-15 (relative to the residual SD), then
rounded to the file's scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

PAPER = "rating ~ system + (system || worker) + (system || item)"
PAPER_MIXEDLM = ("rating ~ system + (1 | worker) + (0 + system | worker) + (1 | item) "
                 "+ (0 + system | item)")
NESTED4S = ("rating ~ system + (system || worker) "
            "+ (0 + is_sys1 + is_sys2 + is_sys3 + is_sys4 || item)")
NESTED4S_MIXEDLM = ("rating ~ system + (1 | worker) + (0 + system | worker) + (0 + is_sys1 | item) "
                    "+ (0 + is_sys2 | item) + (0 + is_sys3 | item) + (0 + is_sys4 | item)")
SYS20 = "rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)"

# name -> formula, mixedlm formula, extra numeric columns
SHAPES: dict[str, dict[str, Any]] = {
    "da2": {"formula": PAPER, "mixedlm": PAPER_MIXEDLM},
    "nested4s": {"formula": NESTED4S, "mixedlm": NESTED4S_MIXEDLM},
    "sys20": {"formula": SYS20, "mixedlm": SYS20},
    "expert3": {"formula": PAPER, "mixedlm": PAPER_MIXEDLM},
    "crowd2": {"formula": PAPER, "mixedlm": PAPER_MIXEDLM},
    "full6": {"formula": PAPER, "mixedlm": PAPER_MIXEDLM},
}


def _labels(prefix: str, codes: np.ndarray) -> np.ndarray:
    width = len(str(int(codes.max()) + 1))
    return np.array([f"{prefix}{c:0{width}d}" for c in codes])


def _response(rng: np.random.Generator, w: np.ndarray, i: np.ndarray, s: np.ndarray,
              nw: int, ni: int, k: int, scale: float) -> np.ndarray:
    """The paper's model on the latent scale (residual SD 1), times ``scale``."""
    mu = rng.normal(0.0, 0.3, k)
    sw = rng.normal(0, 0.3, nw)[w] + rng.normal(0, 0.25, (nw, k))[w, s]
    si = rng.normal(0, 0.5, ni)[i] + rng.normal(0, 0.4, (ni, k))[i, s]
    return scale * (mu[s] + sw + si + rng.normal(0, 1.0, w.size))


def _distinct_workers(rng: np.random.Generator, n_cells: int, per_cell: np.ndarray,
                      nw: int) -> np.ndarray:
    """For each cell, ``per_cell[c]`` different workers drawn at random."""
    return np.concatenate([rng.choice(nw, int(r), replace=False) for r in per_cell[:n_cells]])


def many_systems(k: int, seed: int = 36) -> pd.DataFrame:
    """The ``sys20`` shape with ``k`` systems: 181 annotators, 1,000 segments, every
    (segment, system) cell rated once and 13 % of the cells twice (22,616 ratings at 20)."""
    rng = np.random.default_rng([seed, 100 + k])
    ni, nw = 1000, 181
    cells = np.arange(ni * k)
    twice = rng.choice(cells, round(cells.size * 2616 / 20000), replace=False)
    cell = np.sort(np.concatenate([cells, twice]))
    i, s = cell // k, cell % k
    w = rng.integers(0, nw, cell.size)
    y = np.clip(np.round(70 + 12 * _response(rng, w, i, s, nw, ni, k, 1.0)), 0, 100)
    return pd.DataFrame({"worker": _labels("w", w), "item": _labels("i", i),
                         "system": _labels("s", s), "rating": y.astype(float)})


def make_shape(name: str, seed: int = 36) -> pd.DataFrame:
    """The generated data set of shape ``name`` (columns worker, item, system, rating, ...)."""
    rng = np.random.default_rng([seed, list(SHAPES).index(name)])
    extra: dict[str, np.ndarray] = {}
    if name in ("da2", "sys20"):
        k, ni, nw, n = (2, 1000, 80, 2269) if name == "da2" else (20, 1000, 181, 22616)
        cells = np.arange(ni * k)
        twice = rng.choice(cells, n - cells.size, replace=False)
        cell = np.sort(np.concatenate([cells, twice]))
        i, s = cell // k, cell % k
        w = rng.integers(0, nw, cell.size)
        y = np.clip(np.round(70 + 12 * _response(rng, w, i, s, nw, ni, k, 1.0)), 0, 100)
    elif name == "nested4s":
        k, ni, nw, per = 4, 200, 37, 3
        item_sys = np.repeat(np.arange(k), ni // k)
        i = np.repeat(np.arange(ni), per)
        s = item_sys[i]
        w = _distinct_workers(rng, ni, np.full(ni, per), nw)
        lik = np.clip(np.round(3 + 0.9 * _response(rng, w, i, s, nw, ni, k, 1.0)), 1, 5)
        y = (lik - 1) / 4
        for j in range(k):
            extra[f"is_sys{j + 1}"] = (s == j).astype(float)
    elif name in ("expert3", "crowd2", "full6"):
        k, ni, nw = {"expert3": (3, 100, 4), "crowd2": (2, 99, 93), "full6": (6, 30, 3)}[name]
        n_cells = ni * k
        if name == "expert3":
            per = np.full(n_cells, 3)
        elif name == "full6":
            per = np.full(n_cells, nw)
        else:
            per = np.full(n_cells, 4000 // n_cells)
            per[rng.choice(n_cells, 4000 - per.sum(), replace=False)] += 1
        cell = np.repeat(np.arange(n_cells), per)
        i, s = cell // k, cell % k
        w = _distinct_workers(rng, n_cells, per, nw)
        if name == "crowd2":
            y = np.clip(np.round(3.5 + 1.0 * _response(rng, w, i, s, nw, ni, k, 1.0)), 1, 6)
        else:
            y = np.clip(np.round(65 + 12 * _response(rng, w, i, s, nw, ni, k, 1.0)), 0, 100)
    else:
        raise ValueError(f"unknown shape {name!r}; choose from {', '.join(SHAPES)}")
    return pd.DataFrame({"worker": _labels("w", w), "item": _labels("i", i),
                         "system": _labels("s", s), **extra, "rating": y.astype(float)})
