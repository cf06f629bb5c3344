"""Recovery of a crossed worker x item cumulative link mixed model (``nlpower.clmm``).

Where ``ordinal::clmm`` cannot fit (crossed worker x item designs with
slopes), simulate from known latent-scale parameters at the sizes of Card et
al. (2020) Table 12 and report the bias of the estimates and the coverage of
95% Wald intervals (estimate +- 1.96 SE from the inverse Hessian) for the
system effect, the thresholds and the random-effect SDs.

Design: ``n_items`` items, each shown under both systems (``x = -1/2, +1/2``)
to ``per_cell`` distinct random workers; model
``rating ~ x + (x || worker) + (x || item)``, logit link, Likert 1-5.
Parameters: the paper's Table 13-15 magnitudes moved to the latent scale
(SD of the [0, 1] ratings' residual ~ 0.2 = the logistic's pi/sqrt(3)).

Run::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/ordinal_recovery.py --n-sims 200

Prints a markdown table (the one in ``docs/ordinal.md``).  Monte Carlo SE
of a coverage near 0.95 with 200 replicates: 0.015.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from nlpower.ordinal import prepare_clmm

DESIGNS = {   # name: (n_workers, n_items, per_cell)  -- Card et al. Table 12 sizes
    "hashimoto-lm (124 w x 50 i)": (124, 50, 5),
    "hashimoto-summarization (96 w x 99 i)": (96, 99, 5),
    "wmt19-size (176 w x 1000 i)": (176, 1000, 3),
}
#: true latent-scale parameters: thresholds, beta (system B - A), SDs
CUTS = np.array([-2.0, -0.7, 0.7, 2.0])
BETA = 0.4
SDS = {"worker (Intercept)": 1.5, "worker x": 0.5, "item (Intercept)": 0.8, "item x": 0.4}


def design(n_workers: int, n_items: int, per_cell: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for i in range(n_items):
        for x in (-0.5, 0.5):
            for w in rng.choice(n_workers, per_cell, replace=False):
                rows.append((f"w{w:03d}", f"i{i:04d}", x))
    d = pd.DataFrame(rows, columns=["worker", "item", "x"])
    d["rating"] = rng.integers(1, 6, len(d))          # placeholder response, replaced below
    return d


def run(name: str, n_sims: int, seed: int) -> tuple[pd.DataFrame, dict[str, float]]:
    n_w, n_i, per = DESIGNS[name]
    rng = np.random.default_rng(seed)
    d = design(n_w, n_i, per, rng)
    model = prepare_clmm("rating ~ x + (x || worker) + (x || item)", d, warn=False)
    # theta in the model's term order: (1|worker), (0+x|worker), (1|item), (0+x|item)
    truth = np.concatenate([CUTS, [BETA], list(SDS.values())])
    names = [f"threshold {k}" for k in model.thr.names] + ["beta (system)"] + list(SDS)
    est, se, ok, secs = [], [], 0, []
    prev = None
    for y in (model.simulate(1, rng=r, params=truth)[0]
              for r in np.random.SeedSequence(seed).spawn(n_sims)):
        if len(np.unique(y)) < 5:       # every category used (the truth makes this near-certain)
            continue
        t0 = time.perf_counter()
        core = model.refit(y, start=prev)
        secs.append(time.perf_counter() - t0)
        prev = core
        if not core.converged:
            continue
        ok += 1
        est.append(core.params)
        se.append(np.sqrt(np.maximum(np.diag(core.vcov), 0.0)))
    E, S = np.array(est), np.array(se)
    cover = np.abs(E - truth) <= 1.96 * S
    tab = pd.DataFrame({"parameter": names, "true": truth, "mean estimate": E.mean(0),
                        "bias": E.mean(0) - truth, "MC SE of bias": E.std(0, ddof=1) / np.sqrt(len(E)),
                        "Wald 95% coverage": cover.mean(0)})
    info = {"n_ratings": len(d), "replicates": n_sims, "converged": ok,
            "median_seconds": float(np.median(secs))}
    return tab, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-sims", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2020)
    ap.add_argument("--designs", nargs="*", default=list(DESIGNS))
    args = ap.parse_args()
    for k, name in enumerate(args.designs):
        tab, info = run(name, args.n_sims, args.seed + k)
        print(f"\n### {name}: {info['n_ratings']} ratings, {info['converged']}/{info['replicates']} "
              f"converged, median fit {info['median_seconds']:.2f} s\n")
        print(tab.to_markdown(index=False, floatfmt=".3f"))


if __name__ == "__main__":
    main()
