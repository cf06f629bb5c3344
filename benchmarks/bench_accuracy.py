"""Exact McNemar power at n = 10,000 against the paper's simulation method.

Card et al. (2020) estimate accuracy power by simulation (Fig. 2, App. C): draw
a 2x2 table from the multinomial, run statsmodels' ``mcnemar`` on it, repeat
10,000 times.  ``nlpower.accuracy.power(method="exact")`` enumerates the
outcome instead (binomial CDFs over the number of discordant items, O(n)).
This script times, on one configuration (n = 10,000, delta = 0.005,
agreement = 0.95, exact conditional test, alpha = 0.05):

paper      10,000 draws, ``statsmodels.stats.contingency_tables.mcnemar`` per draw
simulate   ``power(..., method="simulate", n_sims=10_000)`` (vectorised simulation)
exact      ``power(..., method="exact")``, cold (rejection thresholds computed) and
           warm (thresholds cached, as in a grid or an MDE search)

and checks that the paper's estimate lies within 4 Monte Carlo SEs of the
exact power.  Output: printed table and ``benchmarks/out/bench_accuracy.json``.

Run:  .venv/bin/python benchmarks/bench_accuracy.py [--n 10000] [--draws 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from nlpower.accuracy import paired_table, power
from nlpower.accuracy.rules import _thresholds


def paper_simulation(n: int, delta: float, agreement: float, draws: int, seed: int) -> float:
    """The paper's loop: one multinomial table and one statsmodels mcnemar per draw."""
    t = paired_table(delta, agreement)
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(draws):
        only_new, only_old, same = rng.multinomial(n, [t.only_new, t.only_old, 1 - t.discordant])
        table = [[same, only_old], [only_new, 0]]
        p = sm_mcnemar(table, exact=True).pvalue
        if p <= 0.05 and only_new > only_old:
            hits += 1
    return hits / draws


def timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--delta", type=float, default=0.005)
    ap.add_argument("--agreement", type=float, default=0.95)
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n, delta, pa = args.n, args.delta, args.agreement

    t_paper, p_paper = timed(lambda: paper_simulation(n, delta, pa, args.draws, 2020), 1)
    t_sim, r_sim = timed(lambda: power(n, delta, pa, method="simulate", n_sims=args.draws,
                                       rng=2020), args.repeats)

    def cold():
        _thresholds.cache_clear()
        return power(n, delta, pa)

    t_cold, r_exact = timed(cold, args.repeats)
    t_warm, _ = timed(lambda: power(n, delta, pa), args.repeats)

    exact = r_exact.power  # type: ignore[attr-defined]
    se = math.sqrt(exact * (1 - exact) / args.draws)
    rows = [("paper (statsmodels per draw)", t_paper, p_paper),
            ("simulate (vectorised)", t_sim, r_sim.power),  # type: ignore[attr-defined]
            ("exact, cold", t_cold, exact), ("exact, warm", t_warm, exact)]
    print(f"n = {n}, delta = {delta}, agreement = {pa}, exact McNemar test, alpha 0.05, "
          f"{args.draws} draws")
    print(f"{'method':32s} {'seconds':>10s} {'power':>8s} {'speed-up vs paper':>18s}")
    for name, sec, pw in rows:
        print(f"{name:32s} {sec:10.4f} {pw:8.4f} {t_paper / sec:18.0f}")
    z = (p_paper - exact) / se
    print(f"paper's estimate - exact = {p_paper - exact:+.4f} ({z:+.2f} Monte Carlo SEs)")
    if abs(z) > 4:
        raise SystemExit("the simulation disagrees with the exact power by more than 4 SEs")
    out = Path("benchmarks/out")
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_accuracy.json").write_text(json.dumps({
        "n": n, "delta": delta, "agreement": pa, "draws": args.draws,
        "seconds": {name: sec for name, sec, _ in rows},
        "power": {name: pw for name, _, pw in rows},
        "speedup_exact_cold": t_paper / t_cold, "speedup_exact_warm": t_paper / t_warm,
        "speedup_simulate": t_paper / t_sim, "z": z,
    }, indent=2) + "\n")
    print(f"wrote {out / 'bench_accuracy.json'}")


if __name__ == "__main__":
    main()
