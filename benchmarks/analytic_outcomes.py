"""Accuracy of the analytic power of Likert (clmm) and head-to-head (glmer) designs.

For each cell: the analytic power of :func:`nlpower.outcomes.analytic.analytic_outcome_power`
(the default -- ``weights="shrunk"``, noncentral t reference -- and the
``"normal"`` reference, ``weights="mode"`` and ``"marginal"`` variants), and
the simulated power of the same analysis,
``nlpower.power(design, params, outcome=..., n_sims=...)`` with its Monte
Carlo SE ``sqrt(p (1 - p) / n_sims)``; also the analytic SE of the tested
coefficient against the replicates' SD of the estimates and their mean
reported SE.  Prints a markdown table (the one in ``docs/power.md``,
"Analytic approximations for Likert and head-to-head designs").

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/analytic_outcomes.py [--n-sims 300]
      [--n-sims-likert 200] [--only preference|likert] [--cells 0,3] [--cache sims.json]
      [--seed 1000]

``--cache``: simulated results are read from / written to this JSON file
(keyed by cell, n_sims and seed), so the analytic columns can be recomputed
without re-simulating.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np

from nlpower import CrossedDesign, power, presets
from nlpower.outcomes import HeadToHeadParams, LikertParams
from nlpower.outcomes.analytic import analytic_outcome_power

H2H = HeadToHeadParams
LIK = LikertParams.from_preset

#: (outcome, label, design, params)
CELLS: list[tuple[str, str, CrossedDesign, object]] = [
    ("preference", "share 0.6, SDs 0.5/0.5", CrossedDesign(10, 50),
     H2H.from_share(0.6, sd_worker=0.5, sd_item=0.5)),
    ("preference", "share 0.6, SDs 0.5/0.5", CrossedDesign(20, 50),
     H2H.from_share(0.6, sd_worker=0.5, sd_item=0.5)),
    ("preference", "share 0.6, SDs 0.5/0.5", CrossedDesign(5, 100),
     H2H.from_share(0.6, sd_worker=0.5, sd_item=0.5)),
    ("preference", "share 0.65, SDs 1/1, pos 0.3 (SD 0.5), draws 0.1", CrossedDesign(10, 50),
     H2H.from_share(0.65, sd_worker=1.0, sd_item=1.0, position=0.3, sd_worker_position=0.5,
                    p_draw=0.1)),
    ("preference", "share 0.7, SDs 1.5/0.5", CrossedDesign(20, 200, workers_per_item=3),
     H2H.from_share(0.7, sd_worker=1.5, sd_item=0.5)),
    ("likert", "high_variance(0.1), 5 levels", CrossedDesign(10, 50),
     LIK(presets.high_variance(0.1), 5)),
    ("likert", "high_variance(0.07), 5 levels", CrossedDesign(20, 50),
     LIK(presets.high_variance(0.07), 5)),
    ("likert", "high_variance(0.1), 5 levels", CrossedDesign(5, 100),
     LIK(presets.high_variance(0.1), 5)),
    ("likert", "low_variance(0.05), 7 levels, logit", CrossedDesign(10, 50),
     LIK(presets.low_variance(0.05), 7, link="logit")),
    ("likert", "high_variance(0.05), 5 levels", CrossedDesign(20, 200, workers_per_item=3),
     LIK(presets.high_variance(0.05), 5)),
]


def analytic_columns(design: CrossedDesign, params: object) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, kw in (("analytic", {}), ("normal", {"reference": "normal"}),
                    ("mode", {"weights": "mode"}), ("marginal", {"weights": "marginal"})):
        r = analytic_outcome_power(design, params, **kw)  # type: ignore[arg-type]
        out[key] = r.power
        if key == "analytic":
            out["se_analytic"], out["df"], out["effect"] = r.se, r.df, r.effect
    return out


def simulate_cell(outcome: str, design: CrossedDesign, params: object, n_sims: int, seed: int
                  ) -> dict[str, float]:
    t = time.process_time()
    kw = {"analysis": "glmer"} if outcome == "preference" else {"analysis": "clmm"}
    res = power(design, params, outcome=outcome, n_sims=n_sims, rng=seed, **kw)  # type: ignore[arg-type]
    reps = res.replicates
    ok = ~reps.failed
    return {"cpu": time.process_time() - t, "sim": res.power,
            "mcse": math.sqrt(res.power * (1 - res.power) / n_sims),
            "sd_est": float(np.std(reps.estimate[ok], ddof=1)),
            "mean_est": float(np.mean(reps.estimate[ok])),
            "mean_se": float(np.mean(reps.se[ok])), "n_failed": int(reps.failed.sum())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-sims", type=int, default=300)
    ap.add_argument("--n-sims-likert", type=int, help="n_sims of the Likert cells (default --n-sims)")
    ap.add_argument("--only", choices=("preference", "likert"))
    ap.add_argument("--cells", help="comma-separated cell indices")
    ap.add_argument("--cache", help="JSON file of simulated results (read and updated)")
    ap.add_argument("--seed", type=int, default=1000, help="cell k simulates with seed + k")
    a = ap.parse_args()
    which = range(len(CELLS)) if a.cells is None else [int(c) for c in a.cells.split(",")]
    print("analytic = default (weights 'shrunk', noncentral t reference); "
          "normal / mode / marginal: variants; simulated = power +/- MC SE; z = (analytic - "
          "simulated) / MC SE")
    print("| # | outcome | design | parameters | n_sims | analytic | normal | mode | marginal | simulated | "
          "z | df | effect | mean est | SE analytic | SD(est) | mean SE | failed | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in which:
        outcome, label, design, params = CELLS[k]
        if a.only and outcome != a.only:
            continue
        n_sims = a.n_sims_likert if (outcome == "likert" and a.n_sims_likert) else a.n_sims
        key = f"{k}/{n_sims}/{a.seed + k}"
        cache = {}
        if a.cache and os.path.exists(a.cache):
            with open(a.cache) as fh:
                cache = json.load(fh)
        if key in cache:
            sim = cache[key]
        else:
            sim = simulate_cell(outcome, design, params, n_sims, seed=a.seed + k)
            if a.cache:       # re-read: another process may have added cells meanwhile
                if os.path.exists(a.cache):
                    with open(a.cache) as fh:
                        cache = json.load(fh)
                cache[key] = sim
                with open(a.cache, "w") as fh:
                    json.dump(cache, fh, indent=1)
        r = {**analytic_columns(design, params), **sim}
        z = (r["analytic"] - r["sim"]) / r["mcse"] if r["mcse"] > 0 else math.nan
        mean_est = f"{r['mean_est']:.3f}" if "mean_est" in r else "-"
        wpi = "" if design.workers_per_item is None else f", {design.workers_per_item} per item"
        tag = f"{k}" if a.seed == 1000 else f"{k} (seed {a.seed + k})"
        print(f"| {tag} | {outcome} | {design.n_workers} x {design.n_items}{wpi} | {label} | {n_sims} | "
              f"{r['analytic']:.3f} | {r['normal']:.3f} | {r['mode']:.3f} | {r['marginal']:.3f} | "
              f"{r['sim']:.3f} +/- {r['mcse']:.3f} | {z:+.1f} | {r['df']:.1f} | "
              f"{r['effect']:.3f} | {mean_est} | "
              f"{r['se_analytic']:.4f} | {r['sd_est']:.4f} | {r['mean_se']:.4f} | "
              f"{r['n_failed']} | {r['cpu']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
