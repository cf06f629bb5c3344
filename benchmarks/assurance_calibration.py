"""Calibration of point-estimate power, assurance and safeguard power on simulated pilots.

Known truth: Card et al.'s Table 16 scenarios (``presets.high_variance`` /
``low_variance``).  The target design is the cheapest design with true power
0.8 for the effect (``nlpower.plan`` at the truth, cost 1 per rating).  For
each pilot size, ``--n-pilots`` Gaussian pilots (every worker rates every item
under both systems) are drawn from the truth and fitted by ML (the balanced
fast path, which gives the same estimates as ``fit_ratings``; checked in
``tests/pilot``); from each pilot we compute, for the target design:

* ``point``: power at the pilot's estimates;
* ``assurance``: mean power over the pilot's sampling distribution
  (``--method`` bootstrap and asymptotic);
* ``safeguard``: power at the upper 80% bounds of the SDs;

and compare each with the target design's true power: mean error, RMSE, and
the share of pilots in which the number is <= the true power (0.5 for an
unbiased-in-median estimate; >= 0.8 is what a safeguard at level 0.8 should
give).  ``--plans K`` also plans from K pilots per size
(:func:`nlpower.pilot.plan_with_assurance`) and reports the share of point and
safeguard plans whose true power reaches 0.8.

Run:  PYTHONPATH=src python benchmarks/assurance_calibration.py [--n-pilots 300] [--plans 40]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from nlpower import presets
from nlpower.pilot import assurance, plan_with_assurance
from nlpower.pilot.draws import params_at
from nlpower.powersim import analytic_power, plan
from nlpower.powersim.balanced_fit import fit_balanced
from nlpower.powersim.fastpath import draw_stats

SIZES = ((3, 20), (3, 50), (5, 20), (5, 50), (10, 50))
SCENARIOS = {"high variance": (presets.high_variance, 0.1), "low variance": (presets.low_variance, 0.05)}
LEVEL = 0.8


def pilot_estimates(truth, w: int, i: int, seed: np.random.SeedSequence):
    v = np.array([truth.sigma**2, truth.sd_worker**2, truth.sd_worker_slope**2,
                  truth.sd_item**2, truth.sd_item_slope**2])
    st = draw_stats(w, i, truth.beta0, truth.effect, v, [np.random.Generator(np.random.PCG64(seed))])
    return params_at(truth, fit_balanced(st, with_df=False).variances[0])


def run(n_pilots: int, n_plans: int, n_boot: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    root = np.random.SeedSequence(seed)
    rows, plan_rows = [], []
    for scen, (make, effect) in SCENARIOS.items():
        truth = make(effect)
        target = plan(truth, effect=effect).design
        true_power = analytic_power(target, truth).power
        for w, i in SIZES:
            t0 = time.time()
            seqs = root.spawn(n_pilots)
            for k, s in enumerate(seqs):
                s_pilot, s_a, s_b, s_plan = s.spawn(4)
                est = pilot_estimates(truth, w, i, s_pilot)
                for method, s_m in (("bootstrap", s_a), ("asymptotic", s_b)):
                    a = assurance(est, target, pilot=(w, i), effect=effect, method=method,
                                  n_boot=n_boot, confidence_level=LEVEL, rng=s_m)
                    rows.append({"scenario": scen, "pilot": f"{w}x{i}", "method": method,
                                 "true": true_power, "point": a.power, "assurance": a.assurance,
                                 "safeguard": a.safeguard_power})
                if k < n_plans:
                    pl = plan_with_assurance(est, pilot=(w, i), effect=effect, n_boot=n_boot,
                                             confidence_level=LEVEL, rng=s_plan)
                    row = {"scenario": scen, "pilot": f"{w}x{i}",
                           "point_true": analytic_power(pl.point.design, truth).power,
                           "point_cost": pl.point.cost}
                    if pl.safeguard is not None:
                        row.update(safeguard_true=analytic_power(pl.safeguard.design, truth).power,
                                   safeguard_cost=pl.safeguard.cost)
                    else:
                        row.update(safeguard_true=np.nan, safeguard_cost=np.nan)
                    plan_rows.append(row)
            print(f"  {scen}, pilot {w}x{i}: {time.time() - t0:.1f} s", flush=True)
    return pd.DataFrame(rows), pd.DataFrame(plan_rows)


def table(df: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (scen, pilot, method), g in df.groupby(["scenario", "pilot", "method"], sort=False):
        row = {"scenario": scen, "pilot": pilot, "method": method, "true power": g["true"].iloc[0]}
        for col in ("point", "assurance", "safeguard"):
            err = g[col] - g["true"]
            row[f"{col} mean err"] = err.mean()
            row[f"{col} RMSE"] = float(np.sqrt(np.mean(err**2)))
            row[f"{col} <= true"] = float(np.mean(g[col] <= g["true"] + 1e-12))
        out.append(row)
    return pd.DataFrame(out)


def plan_table(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby(["scenario", "pilot"], sort=False)
    return pd.DataFrame({
        "n": g.size(),
        "point plan: P(true >= 0.8)": g["point_true"].apply(lambda s: float(np.mean(s >= 0.8))),
        "point median true power": g["point_true"].median(),
        "safeguard plan: P(true >= 0.8)": g["safeguard_true"].apply(lambda s: float(np.mean(s >= 0.8))),
        "safeguard median true power": g["safeguard_true"].median(),
        "cost ratio safeguard/point (median)": (g["safeguard_cost"].median() / g["point_cost"].median()),
    }).reset_index()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-pilots", type=int, default=300)
    ap.add_argument("--plans", type=int, default=40)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2020)
    ap.add_argument("--out", default=None, help="write the per-pilot rows as CSV")
    args = ap.parse_args()
    t0 = time.time()
    df, pl = run(args.n_pilots, args.plans, args.n_boot, args.seed)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print(f"\n{args.n_pilots} pilots per size, {args.n_boot} draws each, seed {args.seed}, "
          f"{time.time() - t0:.0f} s\n")
    print(table(df).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if not pl.empty:
        print()
        print(plan_table(pl).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out:
        df.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
