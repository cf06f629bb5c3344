"""Honesty of PPI++ with a crossed rectifier under a biased judge (docs/judge.md).

Two tables, by simulation with :func:`nlpower.judge.simulate_study`:

1. Type I error at effect 0 when the judge favours system B by ``--bias``
   (in units of the human rating SD): PPI++ (crossed rectifier), PPI++ with
   the i.i.d. rectifier, the human-only crossed model and the judge alone.
2. Coverage of the 95% intervals at a true difference of 0.3 for crossed
   designs with 3, 5 and 10 workers per item.

Run (about 20 minutes on one core at the defaults):

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_judge.py
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from nlpower.judge import fit, simulate_study

BASE = dict(n_items=400, n_labelled=40, sd_item=0.5, sd_item_system=0.3, sd_worker=0.3,
            sd_worker_system=0.2, sigma=0.8, judge_noise=0.5)
HUMAN_SD = math.sqrt(0.5**2 + 0.3**2 + 0.3**2 + 0.2**2 + 0.8**2)


def one(seed: np.random.SeedSequence, effect: float, k: int, n_workers: int,
        bias: float) -> dict[str, tuple[float, float, float]]:
    human, judge = simulate_study(**BASE, workers_per_item=k, n_workers=n_workers, effect=effect,
                                  judge_bias=(0.0, bias), rng=seed)
    crossed = fit(human, judge)
    iid = fit(human, judge, rectifier="iid", compare=False)
    rows = {"ppi++ crossed": crossed.ppi["B - A"], "ppi++ iid": iid.ppi["B - A"],
            "human crossed": crossed.estimates["human"]["B - A"],
            "judge only": crossed.estimates["judge"]["B - A"]}
    return {m: (e.pvalue, e.ci_low, e.ci_high) for m, e in rows.items()}


def run(n_sims: int, effect: float, k: int, n_workers: int, bias: float,
        seed: int) -> pd.DataFrame:
    seeds = np.random.SeedSequence([seed, k, int(1000 * effect)]).spawn(n_sims)
    out: dict[str, list[tuple[float, float, float]]] = {}
    for s in seeds:
        for m, v in one(s, effect, k, n_workers, bias).items():
            out.setdefault(m, []).append(v)
    rows = []
    for m, vals in out.items():
        arr = np.array(vals)
        rej = float(np.mean(arr[:, 0] < 0.05))
        cover = float(np.mean((arr[:, 1] <= effect) & (effect <= arr[:, 2])))
        rows.append({"method": m, "workers_per_item": k, "n_workers": n_workers,
                     "reject": rej, "coverage": cover,
                     "mc_se": math.sqrt(max(rej * (1 - rej), cover * (1 - cover)) / n_sims),
                     "mean_ci_width": float(np.mean(arr[:, 2] - arr[:, 1]))})
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-sims", type=int, default=500, help="replicates of the Type I table")
    ap.add_argument("--n-sims-coverage", type=int, default=200,
                    help="replicates per design of the coverage table")
    ap.add_argument("--bias", type=float, default=0.3, help="judge bias for B, in human SDs")
    ap.add_argument("--seed", type=int, default=20261128)
    args = ap.parse_args()
    t0 = time.time()
    bias = args.bias * HUMAN_SD
    print(f"Type I at effect 0, judge bias +{args.bias} SD for system B ({args.n_sims} sims, "
          "40 labelled of 400 items, 3 workers per item from a pool of 12)")
    print(run(args.n_sims, 0.0, 3, 12, bias, args.seed).to_string(index=False))
    print()
    print(f"Coverage of 95% intervals at a true difference of 0.3 (same biased judge, "
          f"{args.n_sims_coverage} sims per design, pool of 2 x k workers)")
    tabs = [run(args.n_sims_coverage, 0.3, k, 2 * k, bias, args.seed) for k in (3, 5, 10)]
    print(pd.concat(tabs).to_string(index=False))
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
