"""Small pilot files shaped like real ones (tests write them to tmp_path).

Each is a rating file with its own column names, drawn from a simple mixed
model with a fixed seed: only the layout matters to the tests (who rated
what), never the numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def _likert(latent: np.ndarray, levels: int = 5) -> np.ndarray:
    cuts = np.linspace(-1.5, 1.5, levels - 1)
    return 1 + np.searchsorted(cuts, latent)


def twenty_systems(path: Path, *, seed: int = 0) -> Path:
    """Direct assessment: 20 systems, 0-100 scores, each segment x system by 2 of 30 annotators."""
    rng = np.random.default_rng(seed)
    systems = [f"sys{k:02d}" for k in range(1, 21)]
    rows = []
    u = rng.normal(0, 8, 30)
    v = rng.normal(0, 10, 24)
    for s_idx, s in enumerate(systems):
        for seg in range(24):
            for a in rng.choice(30, size=2, replace=False):
                score = 60 + s_idx * 0.5 + u[a] + v[seg] + rng.normal(0, 12)
                rows.append({"annotator": f"ann{a:02d}", "segment": f"seg{seg:03d}",
                             "sys": s, "score": float(np.clip(round(score), 0, 100))})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def nested_items(path: Path, *, seed: int = 0, systems: int = 4, items: int = 50) -> Path:
    """Likert 1-5, items nested in systems (each item one system's output), 3 ratings per item."""
    rng = np.random.default_rng(seed)
    rows = []
    u = rng.normal(0, 0.4, 12)
    for k in range(systems):
        for i in range(items):
            v = rng.normal(0, 0.6)
            for w in rng.choice(12, size=3, replace=False):
                lat = 0.2 * k + u[w] + v + rng.logistic(0, 0.6)
                rows.append({"rater": f"r{w:02d}", "doc": f"d{k}_{i:03d}",
                             "model": "ABCDEFGH"[k], "likert": int(_likert(np.array([lat]))[0])})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def paired(path: Path, *, seed: int = 0, workers: int = 6, items: int = 30) -> Path:
    """Likert 1-5, two systems, fully crossed (fit it without slopes with --model)."""
    rng = np.random.default_rng(seed)
    u, v = rng.normal(0, 0.4, workers), rng.normal(0, 0.6, items)
    rows = []
    for w in range(workers):
        for i in range(items):
            for k, s in enumerate(("base", "new")):
                lat = 0.15 * k + u[w] + v[i] + rng.logistic(0, 0.6)
                rows.append({"judge": f"j{w}", "prompt": f"p{i:02d}", "model": s,
                             "score": int(_likert(np.array([lat]))[0])})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def head_to_head(path: Path, *, seed: int = 0, annotators: int = 8, pairs: int = 60) -> Path:
    """Head-to-head judgements: each pair judged A, B or tie by 3 of the annotators."""
    rng = np.random.default_rng(seed)
    u, v = rng.normal(0, 0.3, annotators), rng.normal(0, 0.5, pairs)
    rows = []
    for i in range(pairs):
        for a in rng.choice(annotators, size=3, replace=False):
            if rng.random() < 0.15:
                choice = "tie"
            else:
                choice = "B" if rng.random() < 1 / (1 + np.exp(-(0.4 + u[a] + v[i]))) else "A"
            rows.append({"annotator": f"a{a}", "pair_id": f"q{i:03d}", "preferred": choice})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path
