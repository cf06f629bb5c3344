"""BLEU randomization power against the BLAS limit (issue 24, item 3).

Workload: 2,000 replicates x 1,000 swap sets at n = 2,000 (dB = 1, Table 3
averages).  Its arithmetic is that of one float64 GEMM
``(1000 x 2000) @ (2000 x 2000)``, timed in the same run on the same BLAS
threads; the target is ``power / GEMM <= 2``.  Also the first call in a fresh
interpreter (imports included), against the warm call: the target is no
import second.

Every time is the median of ``--repeat`` runs (default 3).  Prints the CPU
model and the load average (the machine may be shared: read the ratios).

Run:  .venv/bin/python benchmarks/bench_bleu_gemm.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

from nlpower import bleu

N, SIMS, PERMS, DELTA = 2000, 2000, 1000, 1.0
FIRST_CALL = (
    "import time; t0 = time.perf_counter(); from nlpower.bleu import power; t1 = time.perf_counter(); "
    f"power({N}, {DELTA}, 0.125, 25.8, n_sims={SIMS}, n_resamples={PERMS}, rng=1, "
    "keep_replicates=False); t2 = time.perf_counter(); print(t1 - t0, t2 - t0)"
)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    avg = bleu.preset("average")
    gen = np.random.default_rng(0)
    a, b = gen.standard_normal((PERMS, N)), gen.standard_normal((N, SIMS))
    first = [subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True,
                            check=True).stdout.split() for _ in range(args.repeat)]
    t_import = float(np.median([float(f[0]) for f in first]))
    t_first = float(np.median([float(f[1]) for f in first]))

    def run() -> object:
        return bleu.power(N, DELTA, avg.p0, avg.b0, n_sims=SIMS, n_resamples=PERMS, rng=1,
                          keep_replicates=False)

    run()  # warm
    t_gemm = median_time(lambda: a @ b, args.repeat)
    t_power = median_time(run, args.repeat)
    t_gemm2 = median_time(lambda: a @ b, args.repeat)  # again: the load may have changed
    gemm = min(t_gemm, t_gemm2)
    print(f"CPU {cpu_model()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
          f"median of {args.repeat}")
    print(f"BLEU power, {SIMS} replicates x {PERMS} swap sets, n = {N}")
    print(f"  float64 GEMM ({PERMS} x {N}) @ ({N} x {SIMS})  {gemm:7.3f} s")
    print(f"  nlpower.bleu.power, warm                 {t_power:7.3f} s   = {t_power / gemm:.2f}x GEMM "
          "(target <= 2)")
    print(f"  first call in a fresh interpreter        {t_first:7.3f} s   (imports {t_import:.3f} s; "
          f"first - warm = {t_first - t_power:+.3f} s)")


if __name__ == "__main__":
    main()
