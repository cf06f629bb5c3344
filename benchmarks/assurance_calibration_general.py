"""Calibration of assurance on pilots off the balanced path (missing ratings, k-of-W).

Same question as ``assurance_calibration.py`` (does the point power, the
assurance or the safeguard power overstate the target design's true power?)
for pilots the balanced shortcut cannot take, so every assurance runs the
general parametric bootstrap through the engine (:mod:`nlpower.pilot.general`).
Truth: Table 16's high-variance scenario with beta1 = 0.1 (sum coding); target
design: the cheapest with true power 0.80 (``plan(truth, effect)``).  Pilots:

* ``5x50 -10%``: 5 workers x 50 items x 2 systems, 10% of ratings missing at random;
* ``8x50 k=4``: 8 workers, each item rated by 4 of them (balanced allocation);
* ``8x40 -1``: the bundled pilot's shape (8 workers x 40 items x 2 systems) with
  one rating deleted (the issue's "real pilots are rarely balanced" case).

``--ordinal``: the same question for ordinal pilots.  Truth: 5-point ratings
from the latent logistic threshold model (:data:`ORDINAL_TRUTH`, a latent
effect of 0.3 in sum coding); pilot ``5x50 ordinal`` (5 workers x 50 items x 2
systems) fitted by ``fit_ratings(..., family="ordinal")`` (clmm), bootstrapped
by clmm refits; planned analysis: the paper's LMM of the ratings rescaled to
[0, 1] (``analysis="lmm"``, cheap enough for a calibration); target design:
10 workers and the fewest items (in steps of 5) whose simulated true power
(4,000 replicates) reaches 0.8.

``--proxy``: how close the plan search's Gaussian stand-in
(:func:`nlpower.pilot.outcome_plan.latent_proxy`, analytic power, Wald z) comes
to simulated clmm / glmer power (300 replicates, seed 1) on a few designs.

Run:  PYTHONPATH=src python benchmarks/assurance_calibration_general.py [--n-pilots 30] [--n-boot 30]
      [--kinds "8x40 -1"] [--ordinal] [--n-sims 10] [--proxy]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from nlpower import CrossedDesign, presets, simulate
from nlpower.outcomes import (
    HeadToHeadParams,
    LikertParams,
    headtohead_power,
    likert_power,
    simulate_likert,
)
from nlpower.pilot import assurance
from nlpower.pilot.outcome_plan import latent_proxy
from nlpower.powersim import analytic_power, plan
from nlpower.ratings import fit_ratings, read_ratings

#: pilot design and share of ratings dropped at random (an int: that many ratings dropped)
PILOTS = {"5x50 -10%": (CrossedDesign(5, 50), 0.10),
          "8x50 k=4": (CrossedDesign(8, 50, workers_per_item=4), 0.0),
          "8x40 -1": (CrossedDesign(8, 40), 1)}
ORDINAL_TRUTH = LikertParams(thresholds=(-2.0, -0.7, 0.7, 2.0), effect=0.3, sd_worker=0.5,
                             sd_worker_slope=0.2, sd_item=0.8, sd_item_slope=0.3, link="logit")
ORDINAL_PILOT = CrossedDesign(5, 50)


def _keep(n: int, drop: float, gen: np.random.Generator) -> np.ndarray:
    if isinstance(drop, int):
        keep = np.ones(n, dtype=bool)
        keep[gen.choice(n, size=drop, replace=False)] = False
        return keep
    return gen.random(n) >= drop


def _table(df: pd.DataFrame, true_power: float | dict[str, float]) -> None:
    print("| pilot | point: mean err | RMSE | <= true | assurance: mean err | RMSE | <= true | "
          "safeguard: mean err | RMSE | <= true |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, g in df.groupby("pilot", sort=False):
        tp = true_power[name] if isinstance(true_power, dict) else true_power
        cells = [name]
        for col in ("point", "assurance", "safeguard"):
            err = g[col] - tp
            cells += [f"{err.mean():.3f}", f"{np.sqrt(np.mean(err**2)):.3f}",
                      f"{np.mean(g[col] <= tp + 1e-12):.3f}"]
        print("| " + " | ".join(cells) + " |")


def proxy() -> None:
    """The ``--proxy`` check (module docstring)."""
    h2h = HeadToHeadParams(effect=0.4, sd_worker=0.6, sd_item=0.5, p_draw=0.1)
    cases = [("likert (clmm)", CrossedDesign(10, 45), ORDINAL_TRUTH),
             ("likert (clmm)", CrossedDesign(5, 30), ORDINAL_TRUTH),
             ("preference (glmer)", CrossedDesign(8, 40), h2h)]
    print("| outcome | design | stand-in (analytic) | simulated (300 reps) | MC SE | seconds |")
    print("|---|---|---|---|---|---|")
    for name, design, params in cases:
        px = analytic_power(design, latent_proxy(params), test="z").power
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sim = (likert_power(design, params, analysis="clmm", n_sims=300, rng=1)
                   if isinstance(params, LikertParams)
                   else headtohead_power(design, params, n_sims=300, rng=1)).power
        print(f"| {name} | {design.n_workers}x{design.n_items} | {px:.3f} | {sim:.3f} | "
              f"{np.sqrt(sim * (1 - sim) / 300):.3f} | {time.time() - t0:.0f} |")


def ordinal(args: argparse.Namespace) -> None:
    """The ``5x50 ordinal`` row (module docstring)."""
    root = np.random.SeedSequence([args.seed, 1])
    s_target, s_pilots = root.spawn(2)
    t0 = time.time()
    target, tp = None, 0.0
    for n_items in range(20, 400, 5):
        target = CrossedDesign(10, n_items)
        tp = likert_power(target, ORDINAL_TRUTH, analysis="lmm", n_sims=4000, rng=s_target).power
        if tp >= 0.8:
            break
    assert target is not None
    rows = []
    for s in s_pilots.spawn(args.n_pilots):
        s_data, s_boot = s.spawn(2)
        df = simulate_likert(ORDINAL_PILOT, ORDINAL_TRUTH, rng=s_data).drop(columns="x")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_ratings(read_ratings(df, scale=(1, 5)), family="ordinal")
            a = assurance(fit, target, effect=ORDINAL_TRUTH.effect, analysis="lmm",
                          n_boot=args.n_boot, n_sims=args.n_sims, rng=s_boot)
        rows.append({"pilot": "5x50 ordinal", "point": a.power, "assurance": a.assurance,
                     "safeguard": a.safeguard_power, "point_sims": a.point_sims})
        print(f"  pilot {len(rows)}: {time.time() - t0:.0f} s", flush=True)
    out = pd.DataFrame(rows)
    print(f"\nordinal: target {target.n_workers} workers x {target.n_items} items, true power "
          f"{tp:.3f} (4,000 replicates, MC SE {np.sqrt(tp * (1 - tp) / 4000):.3f}); "
          f"{args.n_pilots} pilots, {args.n_boot} clmm refits each, {args.n_sims} replicates per "
          f"draw, {int(out['point_sims'].iloc[0])} for the point and safeguard powers; seed "
          f"{args.seed}, {time.time() - t0:.0f} s\n")
    _table(out, tp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-pilots", type=int, default=30)
    ap.add_argument("--n-boot", type=int, default=30)
    ap.add_argument("--seed", type=int, default=2020)
    ap.add_argument("--kinds", nargs="*", default=list(PILOTS), help="Gaussian pilot kinds to run")
    ap.add_argument("--ordinal", action="store_true", help="run the ordinal row (only)")
    ap.add_argument("--n-sims", type=int, default=10, help="ordinal: replicates per draw")
    ap.add_argument("--proxy", action="store_true", help="check the plan search's stand-in (only)")
    args = ap.parse_args()
    if args.proxy:
        proxy()
        return
    if args.ordinal:
        ordinal(args)
        return
    truth, effect = presets.high_variance(0.1), 0.1
    target = plan(truth, effect=effect).design
    true_power = analytic_power(target, truth).power
    root = np.random.SeedSequence(args.seed)
    rows = []
    t0 = time.time()
    for name, (design, drop) in PILOTS.items():
        seeds = root.spawn(args.n_pilots)     # spawned for every kind: rows keep their seeds
        if name not in args.kinds:
            continue
        for s in seeds:
            s_data, s_drop, s_boot = s.spawn(3)
            df = simulate(design, truth, rng=s_data)
            keep = _keep(len(df), drop, np.random.Generator(np.random.PCG64(s_drop)))
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
    _table(df, true_power)


if __name__ == "__main__":
    main()
