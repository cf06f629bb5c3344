"""Scaling of a power grid: 1 and 2 processes, N shards merged, projected time on N nodes.

Workload: Card et al. (2020) Figure 6 on the general engine
(``method="simulate"``: every replicate is a full ML fit), both Table 16
scenarios x {3, 10} workers x {50, 100, 500} items x 4 effects = 48 cells,
``--n-sims`` replicates per cell (default 50), test z, seed 2020.

1. serial (``n_jobs=1``), timing every cell (its cost);
2. ``n_jobs=2`` (loky processes);
3. ``--shards`` shards run one after the other (each as one array job would)
   and merged with :func:`nlpower.grid.merge`; the merged frame must equal
   the ``n_jobs=2`` frame bit for bit;
4. the projected wall time on N nodes: the largest shard's summed cell cost
   (cells are dealt round robin, as ``--shard i/N`` does).

Prints the CPU model and load average: on a shared machine read the ratios.

Run:  .venv/bin/python benchmarks/bench_shards.py [--n-sims 50] [--shards 4]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from nlpower import power, power_grid, presets
from nlpower.grid import merge

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

SCEN = {"high variance": presets.high_variance(), "low variance": presets.low_variance()}
AXES: dict[str, Any] = {"n_workers": [3, 10], "n_items": [50, 100, 500],
                        "effect": [0.05, 0.1, 0.15, 0.2]}


class TimedPower:
    """``nlpower.power`` that records how long each cell took (serial runs only)."""

    def __init__(self) -> None:
        self.costs: list[float] = []

    def __call__(self, design: Any, params: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        out = power(design, params, **kw)
        self.costs.append(time.perf_counter() - t0)
        return out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-sims", type=int, default=50)
    ap.add_argument("--shards", type=int, default=4)
    args = ap.parse_args()
    kw: dict[str, Any] = dict(AXES, n_sims=args.n_sims, test="z", method="simulate", rng=2020,
                              progress=False)
    print(f"CPU {cpu_model()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"Figure 6 grid, general engine, 48 cells x {args.n_sims} replicates")

    timed = TimedPower()
    t0 = time.perf_counter()
    power_grid(SCEN, **kw, power_fn=timed)
    t_serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    two = power_grid(SCEN, **kw, n_jobs=2)
    t_two = time.perf_counter() - t0

    shard_times = []
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp) / f"shard{i}.ckpt" for i in range(1, args.shards + 1)]
        for i, path in enumerate(files, start=1):
            t0 = time.perf_counter()
            power_grid(SCEN, **kw, checkpoint=path, shard=f"{i}/{args.shards}")
            shard_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        merged = merge(files)
        t_merge = time.perf_counter() - t0
    pd.testing.assert_frame_equal(merged.to_frame(), two.to_frame(), check_exact=True)

    costs = timed.costs
    print(f"  1 process            {t_serial:7.1f} s  (cells: {sum(costs):.1f} s, "
          f"from {min(costs):.2f} to {max(costs):.2f} s each)")
    print(f"  2 processes (loky)   {t_two:7.1f} s  ({t_serial / t_two:.2f}x)")
    print(f"  {args.shards} shards, one after another: "
          + ", ".join(f"{t:.1f}" for t in shard_times)
          + f" s; merge {t_merge:.2f} s; merged grid == n_jobs=2 grid bit for bit: yes")
    print("  projected wall time on N nodes (largest shard's summed cell cost):")
    for n in (1, 2, 4, 8, 16, 48):
        worst = max(sum(costs[j] for j in range(i, len(costs), n)) for i in range(n))
        print(f"    N = {n:2d}: {worst:7.1f} s  ({sum(costs) / worst:.1f}x)")


if __name__ == "__main__":
    main()
