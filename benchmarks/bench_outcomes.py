"""Speed of power for Likert and binary outcomes: 10 workers x 100 items, 1,000 replicates.

nlpower: ``power(outcome="likert")`` (5-point ratings from the latent
threshold model of the high-variance scenario, effect 0.1) with the paper's
LMM on [0, 1] through the balanced fast path (all replicates fitted at once,
measured at 1,000) and through engine refits (``--general`` replicates,
scaled); the clmm analysis of the same kind of data (``--ordinal``
replicates, default 1,000, in ``--ordinal-jobs`` processes) and the glmer
analysis of 1,000 head-to-head judgements (10 workers x 100 item pairs;
``--binary`` replicates, 1,000 by default, measured) -- structure built once,
each replicate started at the truth.  R, simr-style (simulate, then refit each
replicate): ``lme4::lmer`` on the LMM, ``ordinal::clmm`` (cumulative logit;
correlated ``(1 + x | g)`` because ``ordinal`` has no ``||``) and
``lme4::glmer`` on the judgements, timed inside R on ``--r-reps`` /
``--clmm-reps`` / ``--glmer-reps`` replicates and scaled.  Wall and CPU seconds
are both printed: on a shared machine the CPU time is the comparable one.

Run:  PYTHONPATH=src python benchmarks/bench_outcomes.py [--general 30] [--ordinal 1000]
      [--ordinal-jobs 2] [--binary 1000] [--r-reps 10] [--clmm-reps 1] [--glmer-reps 20]
      [--skip-r]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any

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


def _r_seconds(script: str, *args: str) -> tuple[float, float] | str:
    """(wall, CPU) seconds per replicate that ``script`` prints inside R, or why not."""
    if shutil.which("Rscript") is None:
        return "no Rscript"
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(script)
    try:
        out = subprocess.run(["Rscript", fh.name, *args], capture_output=True, text=True,
                             timeout=3600, env={**os.environ, "OMP_NUM_THREADS": "1",
                                                "OPENBLAS_NUM_THREADS": "1"})
        if out.returncode != 0:
            return f"R failed: {out.stderr.strip().splitlines()[-1:]}"
        wall, cpu = (float(v) for v in out.stdout.split()[-2:])
        return wall, cpu
    finally:
        os.unlink(fh.name)


def r_seconds_per_rep(which: str, reps: int, tau: str) -> tuple[float, float] | str:
    """(wall, CPU) seconds per replicate of lmer or clmm inside R, or why not."""
    return _r_seconds(R_SCRIPT, str(reps), which, tau)


R_GLMER = r"""
suppressMessages(library(lme4))
args <- commandArgs(TRUE); reps <- as.integer(args[1])
set.seed(4)
W <- 10; I <- 100
d <- expand.grid(worker = factor(1:W), item = factor(1:I))
wi <- as.integer(d$worker); ii <- as.integer(d$item)
d$pos <- ifelse((wi + ii) %% 2 == 0, 0.5, -0.5)
t <- system.time(for (r in seq_len(reps)) {
  # simr-style: simulate the judgements, refit glmer with its defaults
  eta <- log(0.6 / 0.4) + rnorm(W, 0, 0.5)[wi] + rnorm(I, 0, 0.5)[ii]
  draw <- runif(nrow(d)) < 0.2
  d$win <- as.numeric(runif(nrow(d)) < plogis(eta) & !draw)
  d$w <- as.numeric(!draw)
  m <- glmer(win ~ 1 + pos + (1 | worker) + (1 | item), data = d, weights = w,
             family = binomial)
  z <- coef(summary(m))[1, "z value"]
})
cat(t[["elapsed"]] / reps, (t[["user.self"]] + t[["sys.self"]]) / reps, "\n")
"""


def r_glmer_seconds_per_rep(reps: int) -> tuple[float, float] | str:
    """(wall, CPU) seconds per head-to-head replicate of lme4's glmer inside R, or why not."""
    return _r_seconds(R_GLMER, str(reps))


def binary_lines(n_binary: int, glmer_reps: int, skip_r: bool) -> list[str]:
    """The head-to-head (binary) lines: nlpower's replicates measured, lme4's scaled."""
    from nlpower.outcomes import HeadToHeadParams, headtohead_power
    design = CrossedDesign(10, 100)
    hp = HeadToHeadParams.from_share(0.6, sd_worker=0.5, sd_item=0.5, p_draw=0.2)
    headtohead_power(design, hp, n_sims=2, rng=4, keep_replicates=False)      # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    res = headtohead_power(design, hp, n_sims=n_binary, rng=4, keep_replicates=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    how = "measured" if n_binary == 1000 else f"{n_binary} replicates, scaled"
    k = 1000 / n_binary
    lines = [f"  nlpower glmer, head-to-head (1,000 binary judgements, 10 x 100, 20% draws "
             f"excluded; power {res.power:.3f}) {wall * k:8.1f} s wall, {cpu * k:8.1f} s CPU "
             f"({how}; one process)"]
    t0 = time.perf_counter()
    two = headtohead_power(design, hp, n_sims=n_binary, rng=4, keep_replicates=False, n_jobs=2)
    wall2 = time.perf_counter() - t0
    lines.append(f"  ... the same with n_jobs=2 (2 loky processes; same power {two.power:.3f})"
                 f"     {wall2 * k:8.1f} s wall ({how})")
    r: tuple[float, float] | str = "skipped (--skip-r)"
    if not skip_r:
        r = r_glmer_seconds_per_rep(glmer_reps)
    shown = r if isinstance(r, str) else (f"{r[0] * 1000:8.1f} s wall, {r[1] * 1000:8.1f} s CPU "
                                          f"({glmer_reps} replicates, scaled to 1,000)")
    lines.append(f"  R lme4::glmer simulate + refit (same model, defaults)  {shown}")
    if not isinstance(r, str):
        lines.append(f"    lme4 / nlpower per replicate: {r[0] * n_binary / wall:.1f}x wall, "
                     f"{r[1] * n_binary / cpu:.1f}x CPU")
    return lines


def _clmm_chunk(design: CrossedDesign, y: Any, lp: LikertParams) -> tuple[Any, float]:
    from nlpower.outcomes.analyses import clmm_replicates
    from nlpower.powersim.options import power_options
    c0 = time.process_time()
    reps = clmm_replicates(design, y, lp, power_options(n_sims=len(y), test="z",
                                                        method="simulate"))
    return reps, time.process_time() - c0


def clmm_timed(design: CrossedDesign, y: Any, lp: LikertParams,
               n_jobs: int) -> tuple[tuple[float, float], float]:
    """(wall, CPU) seconds per 1,000 clmm replicates over ``n_jobs`` processes, and the power.

    Each replicate starts from the truth, so the chunks give the replicates'
    results exactly as one run would (``tests/ordinal/test_replicates.py``).
    """
    import numpy as np
    from joblib import Parallel, delayed
    chunks = np.array_split(np.arange(len(y)), n_jobs)
    t0 = time.perf_counter()
    out = Parallel(n_jobs=n_jobs)(delayed(_clmm_chunk)(design, y[c], lp) for c in chunks)
    wall = time.perf_counter() - t0
    cpu = sum(o[1] for o in out)
    rej = np.concatenate([o[0].pvalue <= 0.05 for o in out])
    scale = 1000 / len(y)
    return (wall * scale, cpu * scale), float(np.mean(rej))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--general", type=int, default=50)
    ap.add_argument("--r-reps", type=int, default=20)
    ap.add_argument("--clmm-reps", type=int, default=1)
    ap.add_argument("--ordinal", type=int, default=1000, help="nlpower clmm replicates timed")
    ap.add_argument("--ordinal-jobs", type=int, default=2,
                    help="processes for the clmm replicates (chunks; same results)")
    ap.add_argument("--binary", type=int, default=1000, help="nlpower glmer replicates timed")
    ap.add_argument("--glmer-reps", type=int, default=20, help="R lme4::glmer replicates timed")
    ap.add_argument("--skip-r", action="store_true")
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
    lpl = LikertParams.from_preset(presets.high_variance(0.1), 5, link="logit")
    yl = _simulate(design, lpl, np.random.SeedSequence(3), args.ordinal)
    ours_clmm, clmm_power = clmm_timed(design, yl, lpl, args.ordinal_jobs)
    tau = ",".join(f"{t:.6f}" for t in lp.thresholds)
    r_lmer: tuple[float, float] | str = "skipped (--skip-r)"
    r_clmm: tuple[float, float] | str = "skipped (--skip-r)"
    if not args.skip_r:
        r_lmer = r_seconds_per_rep("lmer", args.r_reps, tau)
        r_clmm = r_seconds_per_rep("clmm", args.clmm_reps, tau)

    def fmt(s: tuple[float, float] | str, scale: float = 1000.0) -> str:
        return s if isinstance(s, str) else f"{s[0] * scale:8.1f} s wall, {s[1] * scale:8.1f} s CPU"

    print(f"10 workers x 100 items x 2 systems (2,000 5-point ratings), 1,000 replicates "
          f"(power {res.power:.3f}):")
    print(f"  nlpower LMM, balanced fast path      {fmt(fast, 1.0)} (measured)")
    print(f"  nlpower LMM, general path (refits)   {fmt(general, 1.0)} "
          f"({args.general} replicates, scaled)")
    print(f"  nlpower clmm (ordinal), refits       {fmt(ours_clmm, 1.0)} ({args.ordinal} "
          f"replicates{', scaled' if args.ordinal != 1000 else ''}, {args.ordinal_jobs} "
          f"processes; wall includes their start; power {clmm_power:.3f})")
    print(f"  R lme4::lmer simulate + refit        {fmt(r_lmer)} ({args.r_reps} replicates, scaled)")
    print(f"  R ordinal::clmm simulate + refit     {fmt(r_clmm)} ({args.clmm_reps} replicate(s), "
          "scaled; (1 + x | g): ordinal has no ||)")
    print("Binary head-to-head judgements, 1,000 replicates:")
    for line in binary_lines(args.binary, args.glmer_reps, args.skip_r):
        print(line)


if __name__ == "__main__":
    main()
