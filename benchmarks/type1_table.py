"""Type I error of the system-effect tests at small worker counts (issue 13, item 4).

Usage (from the repository root)::

    PYTHONPATH=src nice -n 10 .venv/bin/python benchmarks/type1_table.py          # the doc's table
    PYTHONPATH=src .venv/bin/python benchmarks/type1_table.py --n-sims 2000 --variants 4000
    PYTHONPATH=src .venv/bin/python benchmarks/type1_table.py --general-cost   # method="simulate"
    PYTHONPATH=src .venv/bin/python benchmarks/type1_table.py --n-sims 4000 --tests satterthwaite,z,calibrated

For 3, 5, 10 workers x 50, 100 items (every worker rates every item under both
systems) and both Table 16 scenarios (``presets.high_variance(0.0)``,
``presets.low_variance(0.0)``), the rejection rate at effect 0 and alpha 0.05
of every ``power(..., test=...)`` -- ``"satterthwaite"``, ``"kenward-roger"``
(REML), ``"z"``, ``"lrt"``, ``"pblrt"`` (ML; ``n_resamples=99``), ``"calibrated"``
(REML, Satterthwaite prepivoted by 99 bootstrap draws from the REML null fit,
:mod:`nlpower.powersim.calibrated`; ``--tests`` picks a subset) -- through the
exact balanced fast path (``method="auto"``), ``--n-sims`` replicates each
(default 10,000; every test sees the same simulated data: same ``rng``), with
the Wilson 95% interval, and the wall time of each cell (the cost of the test
in a power grid).  One more row from the same sufficient statistics:

* ``t, df = W-1``: the REML t statistic referred to t with the worker:system
  stratum's df (SAS's "containment" rule).

``--variants R`` (item 2 of the issue: does a cheap variant hold alpha where
PB-LRT does not?) also runs, on the 3-worker cells with ``R`` replicates and
``B = 99``:

* ``pblrt, REML null``: PB-LRT with the bootstrap drawn from the REML fit of
  the null model (instead of its ML fit);
* ``pb-satterthwaite, ML/REML null``: the Satterthwaite p-value calibrated by
  the parametric bootstrap (prepivoting, Beran 1988): ``p = (1 + #{p*_Satt <=
  p_Satt}) / (1 + B)`` with the bootstrap from the ML or REML null fit;
* ``pb-t, REML fit``: the REML |t| calibrated by a bootstrap from the REML
  fit of the full model.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy import stats

from nlpower import CrossedDesign, presets
from nlpower.intervals import wilson_ci
from nlpower.powersim import balanced_fit as bf
from nlpower.powersim import power
from nlpower.powersim.calibrated import null_variances_reml
from nlpower.powersim.fastpath import BalancedStats, design_matrix, draw_stats, stratum_dims
from nlpower.powersim.pblrt import lr_statistic

WORKERS = (3, 5, 10)
ITEMS = (50, 100)
TESTS = ("satterthwaite", "kenward-roger", "z", "lrt", "pblrt", "calibrated")
SCENARIOS = {"high": presets.high_variance, "low": presets.low_variance}


def _variances(params) -> list[float]:
    return [params.sigma**2, params.sd_worker**2, params.sd_worker_slope**2, params.sd_item**2,
            params.sd_item_slope**2]


def _cell(k: int, n: int) -> str:
    lo, hi = wilson_ci(k, n)
    return f"{k / n:.4f} ({lo:.3f}-{hi:.3f})"


def _stats(w: int, i: int, params, n_sims: int, seed: int) -> BalancedStats:
    gens = [np.random.default_rng([seed, k]) for k in range(n_sims)]
    return draw_stats(w, i, params.beta0, 0.0, _variances(params), gens)


def containment(w: int, i: int, params, n_sims: int, seed: int) -> tuple[int, float]:
    t0 = time.perf_counter()
    t = bf.fit_balanced(_stats(w, i, params, n_sims, seed), REML=True, with_df=False).t
    return int(np.sum(2.0 * stats.t.sf(np.abs(t), w - 1) <= 0.05)), time.perf_counter() - t0


# ----------------------------------------------------------------------------------------
# --variants: bootstrap variants at 3 workers
# ----------------------------------------------------------------------------------------


def null_fit(st: BalancedStats, REML: bool) -> np.ndarray:
    """Variances of the null model (beta1 = 0) fitted by ML or REML (REML drops the mean stratum)."""
    return null_variances_reml(st) if REML else lr_statistic(st)[1]


def _boot(st: BalancedStats, v: np.ndarray, B: int, rng: np.random.Generator) -> BalancedStats:
    w, i = st.n_workers, st.n_items
    n = 2.0 * w * i
    lam = v @ design_matrix(w, i).T
    r = lam.shape[0]
    chi = rng.chisquare(np.broadcast_to(stratum_dims(w, i), (r, B, 5)))
    b1 = rng.standard_normal((r, B)) * np.sqrt(lam[:, 1] / n)[:, None]
    return BalancedStats(w, i, np.zeros(r * B), b1.ravel(), (chi * lam[:, None, 2:]).reshape(-1, 5))


def _satt_p(st: BalancedStats) -> np.ndarray:
    f = bf.fit_balanced(st, REML=True, with_df=True)
    return 2.0 * stats.t.sf(np.abs(f.t), f.df)


def variants(w: int, i: int, params, n_sims: int, seed: int, B: int = 99) -> dict[str, tuple[int, float]]:
    """Rejections and seconds of the bootstrap variants (module docstring)."""
    st = _stats(w, i, params, n_sims, seed)
    rng = np.random.default_rng(seed)
    out: dict[str, tuple[int, float]] = {}

    def rank_p(obs: np.ndarray, boot: np.ndarray, larger: bool) -> int:
        boot = boot.reshape(n_sims, B)
        hit = boot >= obs[:, None] * (1 - 1e-12) if larger else boot <= obs[:, None] * (1 + 1e-12)
        return int(np.sum((1.0 + hit.sum(axis=1)) / (1.0 + B) <= 0.05))

    t0 = time.perf_counter()
    lr, _ = lr_statistic(st)
    sb = _boot(st, null_fit(st, REML=True), B, rng)
    lr_b = bf.null_deviance(sb) - bf.fit_balanced(sb, REML=False, with_df=False).deviance
    out["pblrt, REML null"] = rank_p(lr, np.maximum(lr_b, 0.0), True), time.perf_counter() - t0
    p0 = _satt_p(st)
    for name, reml in (("pb-satterthwaite, ML null", False), ("pb-satterthwaite, REML null", True)):
        t0 = time.perf_counter()
        sb = _boot(st, null_fit(st, REML=reml), B, rng)
        out[name] = rank_p(p0, _satt_p(sb), False), time.perf_counter() - t0
    t0 = time.perf_counter()
    fr = bf.fit_balanced(st, REML=True, with_df=False)
    sb = _boot(st, fr.variances, B, rng)
    t_b = np.abs(bf.fit_balanced(sb, REML=True, with_df=False).t)
    out["pb-t, REML fit"] = rank_p(np.abs(fr.t), t_b, True), time.perf_counter() - t0
    return out


def general_cost() -> list[str]:
    """Milliseconds per replicate of each test with ``method="simulate"`` (native engine)."""
    tests = (("satterthwaite", 20), ("kenward-roger", 20), ("lrt", 20), ("pblrt", 10))
    rows = ["| design | " + " | ".join(t for t, _ in tests) + " |", "|---|" + "---|" * len(tests)]
    for design in (CrossedDesign(3, 50), CrossedDesign(6, 50, workers_per_item=3)):
        cells = []
        for test, n in tests:
            kw = {"test": test, "method": "simulate"}
            power(design, presets.high_variance(0.0), n_sims=1, rng=0, n_resamples=19, **kw)  # warm-up
            t0 = time.perf_counter()
            power(design, presets.high_variance(0.0), n_sims=n, rng=1, **kw)
            cells.append(f"{(time.perf_counter() - t0) / n * 1e3:.0f} ms")
        rows.append(f"| {design!r} | " + " | ".join(cells) + " |")
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-sims", type=int, default=10_000)
    ap.add_argument("--variants", type=int, default=0, metavar="R",
                    help="also the bootstrap variants at 3 workers, R replicates each")
    ap.add_argument("--tests", default=",".join(TESTS),
                    help="comma-separated subset of the tests (default: all)")
    ap.add_argument("--general-cost", action="store_true",
                    help="only the per-replicate cost of each test on the general path")
    args = ap.parse_args(argv)
    if args.general_cost:
        print("\n".join(general_cost()))
        return 0
    start = time.perf_counter()
    tests = tuple(t for t in args.tests.split(",") if t)
    unknown = sorted(set(tests) - set(TESTS))
    if unknown:
        ap.error(f"--tests: unknown {unknown}; choose from {', '.join(TESTS)}")
    names = [*tests, "t, df = W-1"]
    rows = [f"| scenario | workers | items | {' | '.join(names)} |",
            "|---|---|---|" + "---|" * len(names)]
    cost: dict[str, list[float]] = {k: [] for k in names}
    for scen, preset in SCENARIOS.items():
        params = preset(0.0)
        for w in WORKERS:
            for i in ITEMS:
                cells = []
                for test in tests:
                    t0 = time.perf_counter()
                    r = power(CrossedDesign(w, i), params, n_sims=args.n_sims, rng=2026, test=test,
                              keep_replicates=False)
                    sec = time.perf_counter() - t0
                    assert r.n_type1 is not None
                    cells.append(_cell(r.n_type1, args.n_sims))
                    cost[test].append(sec)
                    print(f"{scen} {w}x{i} {test}: {cells[-1]} [{r.method}, {sec:.1f} s]",
                          file=sys.stderr, flush=True)
                k, sec = containment(w, i, params, args.n_sims, 100 * w + i)
                cells.append(_cell(k, args.n_sims))
                cost["t, df = W-1"].append(sec)
                rows.append(f"| {scen} | {w} | {i} | {' | '.join(cells)} |")
    print("\n".join(rows))
    print("\nseconds per cell of", args.n_sims, "replicates (min / median / max over the 12 cells):")
    for name, secs in cost.items():
        print(f"  {name}: {min(secs):.2f} / {float(np.median(secs)):.2f} / {max(secs):.2f}")
    if args.variants:
        vrows = []
        for scen, preset in SCENARIOS.items():
            for i in ITEMS:
                out = variants(3, i, preset(0.0), args.variants, 7000 + i)
                vrows.append(f"| {scen} | 3 | {i} | "
                             + " | ".join(f"{_cell(k, args.variants)} [{s:.0f} s]"
                                          for k, s in out.values()) + " |")
                print(vrows[-1], file=sys.stderr, flush=True)
        print(f"\nvariants, {args.variants} replicates, B = 99:")
        print("| scenario | workers | items | " + " | ".join(out) + " |")
        print("|---|---|---|" + "---|" * len(out))
        print("\n".join(vrows))
    print(f"\nwall time {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
