"""Scaling of a power grid: 1 and 2 processes, N shards merged, projected time on N nodes.

Workloads (``--workload``):

``figure6`` (default)
    Card et al. (2020) Figure 6 on the general engine (``method="simulate"``:
    every replicate is a full ML fit), both Table 16 scenarios x {3, 10}
    workers x {50, 100, 500} items x 4 effects = 48 cells, ``--n-sims``
    replicates per cell (default 50), test z, seed 2020.

    1. serial (``n_jobs=1``), timing every cell (its cost);
    2. ``n_jobs=2`` (loky processes);
    3. ``--shards`` shards run one after the other (each as one array job
       would) and merged with :func:`nlpower.grid.merge`; the merged frame
       must equal the ``n_jobs=2`` frame bit for bit.

``ordinal``
    A 1,000-replicate ordinal grid: 5-point Likert ratings from the high
    variance preset, analysed by clmm (Wald z), ``--workers`` x ``--items`` x
    ``--effects`` cells (default 3 workers x {10, 20} items x {0.1, 0.2}),
    ``--n-sims`` replicates per cell (default 1000), seed 2020, through
    ``power_grid(..., outcome="likert", analysis="clmm")``.  To spend the
    shared machine's time once, the serial run *is* the shards: the
    ``--shards`` shards run one after the other in this process (timing every
    cell; each with its checkpoint, so batches of replicates are written as a
    cluster job would), then ``n_jobs=2``; the merged shards must equal the
    ``n_jobs=2`` grid bit for bit.

Both end with the projected wall time on N nodes: the largest shard's summed
cell cost (cells are dealt round robin, as ``--shard i/N`` does).

Prints the CPU model and the load average before and after: on a shared
machine read the ratios.

Run:  .venv/bin/python benchmarks/bench_shards.py [--n-sims 50] [--shards 4]
      .venv/bin/python benchmarks/bench_shards.py --workload ordinal [--n-sims 1000]
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


def project(costs: list[float], nodes: tuple[int, ...]) -> None:
    """The projected wall time on N nodes: the largest round-robin shard's summed cell cost."""
    print("  projected wall time on N nodes (largest shard's summed cell cost):")
    for n in nodes:
        worst = max(sum(costs[j] for j in range(i, len(costs), n)) for i in range(n))
        print(f"    N = {n:2d}: {worst:8.1f} s  ({sum(costs) / worst:.1f}x)")


def figure6(args: argparse.Namespace) -> None:
    kw: dict[str, Any] = dict(AXES, n_sims=args.n_sims, test="z", method="simulate", rng=2020,
                              progress=False)
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
    project(costs, (1, 2, 4, 8, 16, 48))


class TimedCells:
    """``nlpower.power`` recording each cell's cost by (workers, items, effect) (in this process)."""

    def __init__(self) -> None:
        self.costs: dict[tuple[int, int, float], float] = {}

    def __call__(self, design: Any, params: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        out = power(design, params, **kw)
        self.costs[(design.n_workers, design.n_items, float(params.effect))] = \
            time.perf_counter() - t0
        return out


def ordinal(args: argparse.Namespace) -> None:
    axes: dict[str, Any] = {"n_workers": _ints(args.workers), "n_items": _ints(args.items),
                            "effect": [float(v) for v in args.effects.split(",")]}
    kw: dict[str, Any] = dict(axes, outcome="likert", levels=5, analysis="clmm",
                              n_sims=args.n_sims, rng=2020, progress=False)
    n_cells = len(axes["n_workers"]) * len(axes["n_items"]) * len(axes["effect"])
    print(f"ordinal grid: 5-point Likert (high variance preset), clmm (Wald z), {n_cells} cells "
          f"x {args.n_sims} replicates: {axes}", flush=True)
    timed = TimedCells()
    shard_times = []
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp) / f"shard{i}.ckpt" for i in range(1, args.shards + 1)]
        for i, path in enumerate(files, start=1):
            t0 = time.perf_counter()
            power_grid(presets.high_variance(), **kw, power_fn=timed, checkpoint=path,
                       shard=f"{i}/{args.shards}")
            shard_times.append(time.perf_counter() - t0)
            print(f"  shard {i}/{args.shards}: {shard_times[-1]:.1f} s "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)
        t0 = time.perf_counter()
        merged = merge(files)
        t_merge = time.perf_counter() - t0
    t0 = time.perf_counter()
    two = power_grid(presets.high_variance(), **kw, n_jobs=2)
    t_two = time.perf_counter() - t0
    pd.testing.assert_frame_equal(merged.to_frame(), two.to_frame(), check_exact=True)

    costs = [timed.costs[(c.key["n_workers"], c.key["n_items"], float(c.key["effect"]))]
             for c in merged.cells]                                    # grid order
    t_serial = sum(shard_times)
    print(f"  1 process (the {args.shards} shards one after another) {t_serial:7.1f} s  "
          f"(cells: {sum(costs):.1f} s, from {min(costs):.1f} to {max(costs):.1f} s each; "
          f"{sum(costs) / (n_cells * args.n_sims) * 1e3:.0f} ms per replicate)")
    print(f"  2 processes (loky)   {t_two:7.1f} s  ({t_serial / t_two:.2f}x)")
    print(f"  merge {t_merge:.2f} s; merged shards == n_jobs=2 grid bit for bit: yes")
    project(costs, tuple(n for n in (1, 2, 4, 8) if n <= n_cells))


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", choices=("figure6", "ordinal"), default="figure6")
    ap.add_argument("--n-sims", type=int, default=None,
                    help="replicates per cell (default 50 for figure6, 1000 for ordinal)")
    ap.add_argument("--shards", type=int, default=None,
                    help="shards (default 4 for figure6, 2 for ordinal)")
    ap.add_argument("--workers", default="3", help="ordinal: workers axis, e.g. 3,5")
    ap.add_argument("--items", default="10,20", help="ordinal: items axis")
    ap.add_argument("--effects", default="0.1,0.2", help="ordinal: effect axis")
    args = ap.parse_args()
    ordinal_run = args.workload == "ordinal"
    if args.n_sims is None:
        args.n_sims = 1000 if ordinal_run else 50
    if args.shards is None:
        args.shards = 2 if ordinal_run else 4
    print(f"CPU {cpu_model()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    (ordinal if ordinal_run else figure6)(args)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
