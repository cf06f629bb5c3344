"""Speed of BLEU power: nlpower's vectorised randomization test vs the paper's notebook loop.

Workload (issue 11): n = 2000 sentences, dB = 1 BLEU, P0 and b0 at the
Table 3 averages (0.125, 25.8), 500 replicates x 1000 swap sets, alpha 0.05.

notebook loop
    The method of the paper's online notebook: for every replicate draw the
    effects, then for every permutation draw a swap mask and add up the
    swapped effects -- a Python loop over replicates and permutations.
nlpower, randomization
    ``nlpower.bleu.power(..., method="randomization")``: batches of
    replicates x swap sets as matrix products.
nlpower, normal
    ``method="normal"``: the normal limit of the same test (no permutations).

All on one BLAS thread.  Prints each time, each power with its 95% Wilson
interval, and the speed-up (target >= 50x); writes benchmarks/out/bench_bleu.json.

Run:  .venv/bin/python benchmarks/bench_bleu.py [--notebook-sims 500]
(``--notebook-sims k`` < 500 times the loop on k replicates and scales to 500.)
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: one core, as the loop
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from nlpower import bleu  # noqa: E402
from nlpower.intervals import wilson_ci  # noqa: E402

N, DELTA, SIMS, PERMS, ALPHA = 2000, 1.0, 500, 1000, 0.05


def notebook_power(n: int, delta: float, p0: float, b0: float, n_sims: int, n_resamples: int,
                   seed: int) -> int:
    """The notebook method: Python loops over replicates and permutations."""
    gen = np.random.default_rng(seed)
    mu, b = -2.0 * delta / (n * (1.0 - p0)), b0 / n
    hits = 0
    for _ in range(n_sims):
        effects = np.where(gen.random(n) >= p0, gen.laplace(mu, b, n), 0.0)
        observed = -0.5 * effects.sum()
        exceed = 0
        for _ in range(n_resamples):
            swap = gen.integers(0, 2, n)
            exceed += abs(observed + swap @ effects) >= abs(observed)
        p = (1 + exceed) / (1 + n_resamples)
        hits += bool(p <= ALPHA and observed > 0)
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notebook-sims", type=int, default=SIMS,
                        help=f"replicates for the loop (default: {SIMS}; fewer are scaled to {SIMS})")
    parser.add_argument("--seed", type=int, default=2020)
    args = parser.parse_args()
    avg = bleu.preset("average")

    bleu.power(N, DELTA, avg.p0, avg.b0, n_sims=20, n_resamples=PERMS, rng=0)  # warm-up
    t0 = time.perf_counter()
    fast = bleu.power(N, DELTA, avg.p0, avg.b0, n_sims=SIMS, n_resamples=PERMS, rng=args.seed)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    normal = bleu.power(N, DELTA, avg.p0, avg.b0, n_sims=SIMS, method="normal", rng=args.seed)
    t_normal = time.perf_counter() - t0

    k = args.notebook_sims
    t0 = time.perf_counter()
    hits = notebook_power(N, DELTA, avg.p0, avg.b0, k, PERMS, seed=args.seed + 1)
    t_loop = (time.perf_counter() - t0) * SIMS / k
    loop_power, loop_ci = hits / k, wilson_ci(hits, k)

    print(f"BLEU power, n = {N}, dB = {DELTA:g}, P0 = {avg.p0:g}, b0 = {avg.b0:g}, "
          f"{SIMS} replicates x {PERMS} swap sets, one BLAS thread, load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"  notebook loop         {t_loop:8.2f} s"
          + ("" if k == SIMS else f"  (timed on {k} replicates, scaled)")
          + f"   power {loop_power:.3f} (95% CI {loop_ci[0]:.3f}-{loop_ci[1]:.3f})")
    print(f"  nlpower randomization {t_fast:8.3f} s   power {fast.power:.3f} "
          f"(95% CI {fast.ci.low:.3f}-{fast.ci.high:.3f})")
    print(f"  nlpower normal limit  {t_normal:8.3f} s   power {normal.power:.3f} "
          f"(95% CI {normal.ci.low:.3f}-{normal.ci.high:.3f})")
    print(f"  speed-up (randomization vs loop): {t_loop / t_fast:.0f}x (target >= 50x); "
          f"normal limit vs loop: {t_loop / t_normal:.0f}x")
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_bleu.json").write_text(json.dumps({
        "n": N, "delta": DELTA, "p0": avg.p0, "b0": avg.b0, "n_sims": SIMS, "n_resamples": PERMS,
        "notebook_seconds": t_loop, "notebook_sims_timed": k, "notebook_power": loop_power,
        "randomization_seconds": t_fast, "randomization_power": fast.power,
        "normal_seconds": t_normal, "normal_power": normal.power,
        "speedup": t_loop / t_fast, "load_average": os.getloadavg()[0],
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
