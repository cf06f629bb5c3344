"""Speed of power for Likert ratings: 10 workers x 100 items, 1,000 replicates, beside R.

nlpower: ``likert_power`` (5-point ratings from the latent threshold model
of the high-variance scenario, effect 0.1) with the paper's LMM on [0, 1] --
the balanced fast path (all replicates fitted at once from sufficient
statistics) and the general path (one engine refit per replicate, structure
built once, warm start), the latter timed on ``--general`` replicates and
scaled to 1,000.  R, simr-style (simulate, then refit each replicate):
``lme4::lmer`` on the same model and ``ordinal::clmm`` (cumulative logit, random
intercepts and slopes, correlated: ``ordinal`` has no ``||``), each timed inside R on ``--r-reps`` replicates and
scaled to 1,000.  This build has no native ordinal or binary analysis yet
(``nlpower.ordinal`` / ``nlpower.glmer`` are other branches), so their line is
R's only.

Run:  PYTHONPATH=src python benchmarks/bench_outcomes.py [--general 50] [--r-reps 20] [--clmm-reps 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time

from nlpower import CrossedDesign, power, presets
from nlpower.outcomes import LikertParams

R_SCRIPT = r"""
suppressMessages({library(lme4); library(ordinal)})
args <- commandArgs(TRUE); reps <- as.integer(args[1]); which <- args[2]
set.seed(1)
W <- 10; I <- 100; tau <- as.numeric(strsplit(args[3], ",")[[1]])
d <- expand.grid(system = 1:2, worker = factor(1:W), item = factor(1:I))
d$x <- ifelse(d$system == 2, 1, -1)
one <- function() {
  w0 <- rnorm(W, 0, 0.01); w1 <- rnorm(W, 0, 0.11); i0 <- rnorm(I, 0, 0.04); i1 <- rnorm(I, 0, 0.14)
  lat <- 0.1 * d$x + w0[d$worker] + w1[d$worker] * d$x + i0[d$item] + i1[d$item] * d$x +
    rnorm(nrow(d), 0, 0.26)
  findInterval(lat, tau) + 1
}
t <- system.time(for (r in seq_len(reps)) {
  y <- one()
  if (which == "lmer") {
    d$r01 <- (y - 1) / 4
    m <- lmer(r01 ~ x + (1 + x || worker) + (1 + x || item), data = d, REML = TRUE)
  } else {
    d$rf <- factor(y, levels = 1:5, ordered = TRUE)
    m <- clmm(rf ~ x + (1 + x | worker) + (1 + x | item), data = d)
  }
})
cat(t[["elapsed"]] / reps, (t[["user.self"]] + t[["sys.self"]]) / reps, "\n")
"""


def r_seconds_per_rep(which: str, reps: int, tau: str) -> tuple[float, float] | str:
    """(wall, CPU) seconds per replicate inside R, or why not."""
    if shutil.which("Rscript") is None:
        return "no Rscript"
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(R_SCRIPT)
    try:
        out = subprocess.run(["Rscript", fh.name, str(reps), which, tau], capture_output=True,
                             text=True, timeout=3600, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if out.returncode != 0:
            return f"R failed: {out.stderr.strip().splitlines()[-1:]}"
        wall, cpu = (float(v) for v in out.stdout.split()[-2:])
        return wall, cpu
    finally:
        os.unlink(fh.name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--general", type=int, default=50)
    ap.add_argument("--r-reps", type=int, default=20)
    ap.add_argument("--clmm-reps", type=int, default=1)
    args = ap.parse_args()
    lp = LikertParams.from_preset(presets.high_variance(0.1), 5)
    design = CrossedDesign(10, 100)
    t0, c0 = time.perf_counter(), time.process_time()
    res = power(design, lp, outcome="likert", n_sims=1000, rng=1, keep_replicates=False)
    fast = (time.perf_counter() - t0, time.process_time() - c0)
    t0, c0 = time.perf_counter(), time.process_time()
    import numpy as np

    from nlpower.outcomes.analyses import _lmm_general
    from nlpower.outcomes.power import _simulate
    from nlpower.powersim.options import power_options
    y = _simulate(design, lp, np.random.SeedSequence(2), args.general)
    _lmm_general(design, (y - 1) / 4.0, lp.latent_params(),
                 power_options(n_sims=args.general, method="simulate"))
    general = ((time.perf_counter() - t0) / args.general * 1000,
               (time.process_time() - c0) / args.general * 1000)
    tau = ",".join(f"{t:.6f}" for t in lp.thresholds)
    r_lmer = r_seconds_per_rep("lmer", args.r_reps, tau)
    r_clmm = r_seconds_per_rep("clmm", args.clmm_reps, tau)

    def fmt(s: tuple[float, float] | str, scale: float = 1000.0) -> str:
        return s if isinstance(s, str) else f"{s[0] * scale:8.1f} s wall, {s[1] * scale:8.1f} s CPU"

    print(f"10 workers x 100 items x 2 systems (2,000 5-point ratings), 1,000 replicates "
          f"(power {res.power:.3f}):")
    print(f"  nlpower LMM, balanced fast path      {fmt(fast, 1.0)} (measured)")
    print(f"  nlpower LMM, general path (refits)   {fmt(general, 1.0)} "
          f"({args.general} replicates, scaled)")
    print(f"  R lme4::lmer simulate + refit        {fmt(r_lmer)} ({args.r_reps} replicates, scaled)")
    print(f"  R ordinal::clmm simulate + refit     {fmt(r_clmm)} ({args.clmm_reps} replicate(s), "
          "scaled; (1 + x | g): ordinal has no ||)")


if __name__ == "__main__":
    main()
