"""CPU time of the analytic power of designs with k workers per item (variance and df).

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_analytic.py
    # against an earlier version of the module (same numbers expected to ~1e-10):
    git show a8d3871:src/nlpower/powersim/analytic.py > /tmp/analytic_old.py
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_analytic.py --old /tmp/analytic_old.py
    # and the plan searches of presets.high_variance() with 3 workers per item:
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_analytic.py --plan 0.1,0.2

Per design: ``information_moments`` (the Satterthwaite df's information
matrix included), CPU seconds (``time.process_time``, minimum of
``--repeats``), so that other processes on a shared machine inflate it less
than wall-clock time: ``first`` for a design not seen before (its structure
and allocation built), ``draw`` for another parameter vector of the same
design (an assurance draw: the structure is reused).  With ``--old`` the
earlier module is loaded in place and the largest relative differences of the
variance and df are printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from dataclasses import replace
from typing import Any

DESIGNS = [(10, 1500, 3), (20, 300, 3), (50, 1500, 3), (100, 1200, 3), (200, 1000, 3),
           (400, 800, 3), (13, 101, 2), (9, 60, 4)]


def _cpu(fn: Any, repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def _load_old(path: str) -> Any:
    import nlpower.powersim  # noqa: F401  (the package the old module's relative imports use)

    spec = importlib.util.spec_from_file_location("nlpower.powersim._analytic_old", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old", help="an earlier analytic.py to compare with")
    ap.add_argument("--plan", help="effects to plan for with workers_per_item=3, e.g. 0.1,0.2")
    args = ap.parse_args()
    from nlpower import CrossedDesign, plan, presets
    from nlpower.design import _allocator, _layout_arrays, balanced_allocation
    from nlpower.powersim import analytic
    from nlpower.powersim.analytic import information_moments

    p = presets.high_variance(0.05)
    q = replace(p, sd_worker_slope=1.1 * p.sd_worker_slope)      # an assurance draw's SDs
    old = _load_old(args.old) if args.old else None
    worst = [0.0, 0.0]

    def first(d: Any) -> Any:
        analytic._STRUCTURES.clear()
        for fn in (_allocator, _layout_arrays, balanced_allocation):
            fn.cache_clear()
        return information_moments(d, p)

    print(f"{'design':>22}  {'first CPU s':>11}  {'draw CPU s':>10}  {'old CPU s':>9}  {'df':>12}")
    for w, i, k in DESIGNS:
        d = CrossedDesign(w, i, workers_per_item=k)
        t, (var, df) = _cpu(lambda d=d: first(d), args.repeats)
        t2, _ = _cpu(lambda d=d: information_moments(d, q), args.repeats)
        told = ""
        if old is not None:
            to, (vo, do) = _cpu(lambda d=d: old.information_moments(d, p), 1)
            worst = [max(worst[0], abs(var / vo - 1)), max(worst[1], abs(df / do - 1))]
            told = f"{to:.3f}"
        print(f"{f'{w} x {i}, k={k}':>22}  {t:11.4f}  {t2:10.4f}  {told:>9}  {df:12.6f}")
    if old is not None:
        print(f"largest relative difference: variance {worst[0]:.1e}, df {worst[1]:.1e}")
    for eff in ([float(e) for e in args.plan.split(",")] if args.plan else []):
        t, r = _cpu(lambda eff=eff: plan(presets.high_variance(), effect=eff, workers_per_item=3), 1)
        print(f"plan effect {eff}: {r.n_workers} workers x {r.n_items} items, power "
              f"{r.power:.4f}, cost {r.cost:.0f}; {t:.1f} CPU s")


if __name__ == "__main__":
    main()
