"""Type I error and power of the LMM and ordinal analyses of Likert ratings, same replicates.

Howcroft & Rieser's comparison with our numbers: both Table 16 scenarios of
Card et al. (2020) mapped to 5-point ratings (``LikertParams.from_preset``:
equidistant latent thresholds that reproduce the scenario's mean and spread
on [0, 1]), 3, 5, 10 workers x 50, 100 items, fully crossed and paired.  Each
cell simulates ``--n-sims`` data sets at effect 0 (Type I) and at the latent
effect ``--effect`` (power, sum coding), and every analysis fits the same
data sets.  Analyses: ``lmm`` (the paper's LMM on [0, 1], Satterthwaite t,
REML) and, where this build has it, ``clmm`` (cumulative link mixed model,
Wald z).

Run:  PYTHONPATH=src python benchmarks/likert_lmm_vs_ordinal.py [--n-sims 2000] [--analyses lmm]
"""

from __future__ import annotations

import argparse
import math
import time

from nlpower import presets
from nlpower.outcomes.grid import likert_power_grid
from nlpower.outcomes.power import ANALYSES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-sims", type=int, default=2000)
    ap.add_argument("--effect", type=float, default=0.1)
    ap.add_argument("--levels", type=int, default=5)
    ap.add_argument("--analyses", default=",".join(a for a in ("lmm", "clmm") if a in ANALYSES))
    ap.add_argument("--workers", default="3,5,10")
    ap.add_argument("--items", default="50,100")
    ap.add_argument("--scenarios", default="high variance,low variance")
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=2020)
    ap.add_argument("--checkpoint", default=None,
                    help="file of finished cells (a rerun resumes from it)")
    args = ap.parse_args()
    analyses = args.analyses.split(",")
    t0 = time.time()
    table = {"high variance": presets.high_variance(), "low variance": presets.low_variance()}
    g = likert_power_grid(
        {k: table[k] for k in args.scenarios.split(",")},
        n_workers=[int(w) for w in args.workers.split(",")],
        n_items=[int(i) for i in args.items.split(",")], effect=args.effect, levels=args.levels,
        analysis=analyses, n_sims=args.n_sims, null=True, rng=args.seed, n_jobs=args.n_jobs,
        checkpoint=args.checkpoint, progress=False)
    df = g.to_frame()
    n = args.n_sims
    se = math.sqrt(0.05 * 0.95 / n)
    print(f"{args.levels}-point ratings, latent effect {args.effect} (sum coding), "
          f"{n} replicates per cell at effect 0 and at the effect (the same data sets for every "
          f"analysis), seed {args.seed}; Monte Carlo SE of a Type I error of 0.05: {se:.4f} "
          f"(3 SE: {3 * se:.3f}); {time.time() - t0:.0f} s\n")
    head = ["scenario", "workers", "items"] + [f"Type I {a}" for a in analyses] + [
        f"power {a} [95% CI]" for a in analyses]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for _, r in df.iterrows():
        cells = [str(r.get("scenario", args.scenarios)), str(int(r["n_workers"])),
                 str(int(r["n_items"]))]
        for a in analyses:
            t1 = float(r[f"type1_{a}"])
            flag = "" if abs(t1 - 0.05) <= 3 * se else " (*)"
            cells.append(f"{t1:.3f}{flag}")
        cells += [f"{r[f'power_{a}']:.3f} [{r[f'ci_low_{a}']:.3f}, {r[f'ci_high_{a}']:.3f}]"
                  for a in analyses]
        print("| " + " | ".join(cells) + " |")
    print(f"\n(*): more than 3 Monte Carlo SE ({3 * se:.3f}) from alpha = 0.05.")

if __name__ == "__main__":
    main()
