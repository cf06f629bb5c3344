"""Coverage of the reported power interval when a run stops by adaptive precision.

``precision=h`` stops a run at the first batch of 50 replicates after which
the 95% Wilson interval of the rejection rate has half-width <= h.  The
stopping time depends on the data, so the textbook coverage of the interval
reported at the stop is not guaranteed; this script measures it.  Each
repetition is one ``simulate_power`` run whose test rejects with a known
probability (a Bernoulli p-value: 0 with probability ``power``, else 1), so
the true power is known exactly; a repetition covers when the reported 95%
interval contains it.  With R repetitions the coverage's Monte Carlo SE is
about sqrt(0.95 * 0.05 / R).

Beside the simulation, the coverage of the same procedure is computed
exactly (``exact``): the number of rejections after each batch is a sum of
binomial(50, power) increments, so the distribution of where the rule stops,
and with what count, follows by convolution; ``fixed n`` is the exact
coverage of the Wilson interval at a fixed number of replicates equal to the
procedure's expected n (rounded to a batch), the textbook benchmark the
stopping rule is compared with.

Run:  PYTHONPATH=src python benchmarks/adaptive_precision_coverage.py [--reps 400]
(about 2 minutes on one core at the default).  The table in docs/power.md,
"Adaptive precision", is its output.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from nlpower.intervals import wilson_ci
from nlpower.powersim.batches import BATCH_SIZE, Precision
from nlpower.simpower import simulate_power


def generate(rng: np.random.Generator, power: float) -> bool:
    return bool(rng.random() < power)


def test(reject: bool) -> tuple[float, float]:
    return 1.0, 0.0 if reject else 1.0


def exact(power: float, precision: float, n_max: int) -> tuple[float, float]:
    """Exact coverage and expected n of the batch-by-batch stopping rule (module docstring)."""
    from scipy import stats

    rule = Precision(precision, alpha=0.05)
    step = stats.binom.pmf(np.arange(BATCH_SIZE + 1), BATCH_SIZE, power)
    alive = np.array([1.0])                    # P(k rejections so far, not stopped)
    cover = mean_n = 0.0
    for n in range(BATCH_SIZE, n_max + 1, BATCH_SIZE):
        alive = np.convolve(alive, step)
        k = np.arange(alive.size)
        ci = np.array([wilson_ci(int(j), n) for j in k])
        inside = (ci[:, 0] <= power) & (power <= ci[:, 1])
        stop = np.array([rule.met(int(j), n) for j in k]) | (n == n_max)
        cover += float(alive[stop & inside].sum())
        mean_n += n * float(alive[stop].sum())
        alive = np.where(stop, 0.0, alive)
        if alive.sum() < 1e-12:
            break
    return cover, mean_n


def fixed_n(power: float, n: int) -> float:
    """Exact coverage of the 95% Wilson interval at a fixed ``n``."""
    from scipy import stats

    k = np.arange(n + 1)
    ci = np.array([wilson_ci(int(j), n) for j in k])
    inside = (ci[:, 0] <= power) & (power <= ci[:, 1])
    return float(stats.binom.pmf(k, n, power)[inside].sum())


def cell(power: float, precision: float, n_max: int, reps: int, seed: int) -> dict[str, float]:
    covered, used, early, width = 0, [], 0, []
    for r in range(reps):
        res = simulate_power(generate, test, effect=1.0, params={"power": power}, n_sims=n_max,
                             rng=np.random.SeedSequence([seed, r]), precision=precision, keep_draws=False)
        covered += res.ci.low <= power <= res.ci.high
        used.append(res.n_sims)
        early += res.mc.stopped_early
        width.append((res.ci.high - res.ci.low) / 2)
    cov = covered / reps
    return {"power": power, "precision": precision, "coverage": cov,
            "mc_se": math.sqrt(0.95 * 0.05 / reps), "mean_n": float(np.mean(used)),
            "min_n": int(np.min(used)), "stopped_early": early / reps,
            "mean_half_width": float(np.mean(width))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--n-max", type=int, default=10_000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"{args.reps} runs per row, n_sims (maximum) {args.n_max}, 95% Wilson intervals\n")
    print("| true power | precision | coverage (simulated) | exact | fixed n | mean n used "
          "| smallest n | stopped early | mean half-width |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for precision in (0.05, 0.02, 0.01):
        for k, power in enumerate((0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99)):
            cov, n_bar = exact(power, precision, args.n_max)
            n_fixed = max(BATCH_SIZE, int(round(n_bar / BATCH_SIZE)) * BATCH_SIZE)
            if precision >= 0.02:       # 0.01: thousands of replicates per run, exact only
                row = cell(power, precision, args.n_max, args.reps,
                           seed=100 * k + int(precision * 1e3))
                sim = (f"{row['coverage']:.3f} | ", f"{row['mean_n']:.0f} | {row['min_n']} | "
                       f"{row['stopped_early']:.2f} | {row['mean_half_width']:.4f} |")
            else:
                sim = ("- | ", f"{n_bar:.0f} (exact) | - | - | - |")
            print(f"| {power:g} | {precision:g} | {sim[0]}{cov:.3f} | "
                  f"{fixed_n(power, n_fixed):.3f} (n={n_fixed}) | {sim[1]}", flush=True)
    print(f"\nMC SE of a coverage: {math.sqrt(0.95 * 0.05 / args.reps):.3f}; "
          f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
