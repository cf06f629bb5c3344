"""Calibration of assurance on pilots off the balanced path (missing ratings, k-of-W).

Same question as ``assurance_calibration.py`` (does the point power, the
assurance or the safeguard power overstate the target design's true power?)
for pilots the balanced shortcut cannot take, so every assurance runs the
general parametric bootstrap through the engine (:mod:`nlpower.pilot.general`).
Truth: Table 16's high-variance scenario with beta1 = 0.1 (sum coding); target
design: the cheapest with true power 0.80 (``plan(truth, effect)``).  Pilots:

* ``5x50 -10%``: 5 workers x 50 items x 2 systems, 10% of ratings missing at random;
* ``8x50 k=4``: 8 workers, each item rated by 4 of them (balanced allocation).

Run:  PYTHONPATH=src python benchmarks/assurance_calibration_general.py [--n-pilots 30] [--n-boot 30]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from nlpower import CrossedDesign, presets, simulate
from nlpower.pilot import assurance
from nlpower.powersim import analytic_power, plan
from nlpower.ratings import fit_ratings, read_ratings

PILOTS = {"5x50 -10%": (CrossedDesign(5, 50), 0.10), "8x50 k=4": (CrossedDesign(8, 50, workers_per_item=4), 0.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-pilots", type=int, default=30)
    ap.add_argument("--n-boot", type=int, default=30)
    ap.add_argument("--seed", type=int, default=2020)
    args = ap.parse_args()
    truth, effect = presets.high_variance(0.1), 0.1
    target = plan(truth, effect).design
    true_power = analytic_power(target, truth).power
    root = np.random.SeedSequence(args.seed)
    rows = []
    t0 = time.time()
    for name, (design, drop) in PILOTS.items():
        for s in root.spawn(args.n_pilots):
            s_data, s_drop, s_boot = s.spawn(3)
            df = simulate(design, truth, rng=s_data)
            keep = np.random.Generator(np.random.PCG64(s_drop)).random(len(df)) >= drop
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = fit_ratings(read_ratings(df[keep].drop(columns="x"), scale="identity"))
                a = assurance(fit, target, effect=effect, n_boot=args.n_boot, rng=s_boot)
            rows.append({"pilot": name, "point": a.power, "assurance": a.assurance,
                         "safeguard": a.safeguard_power})
        print(f"  {name}: {time.time() - t0:.0f} s", flush=True)
    df = pd.DataFrame(rows)
    print(f"\ntarget {target.n_workers} workers x {target.n_items} items, true power "
          f"{true_power:.3f}; {args.n_pilots} pilots per kind, {args.n_boot} bootstrap refits "
          f"each, seed {args.seed}, {time.time() - t0:.0f} s\n")
    print("| pilot | point: mean err | RMSE | <= true | assurance: mean err | RMSE | <= true | "
          "safeguard: mean err | RMSE | <= true |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, g in df.groupby("pilot", sort=False):
        cells = [name]
        for col in ("point", "assurance", "safeguard"):
            err = g[col] - true_power
            cells += [f"{err.mean():.3f}", f"{np.sqrt(np.mean(err**2)):.3f}",
                      f"{np.mean(g[col] <= true_power + 1e-12):.3f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
