"""Type I error of the system-effect tests at small worker counts (issue 13, item 4).

Usage (from the repository root)::

    PYTHONPATH=src .venv/bin/python benchmarks/type1_table.py              # 10,000 replicates
    PYTHONPATH=src .venv/bin/python benchmarks/type1_table.py --n-sims 2000 --kr-check 5

For 3, 5, 10 workers x 50, 100 items (every worker rates every item under both
systems) and both Table 16 scenarios (``presets.high_variance(0.0)``,
``presets.low_variance(0.0)``), the rejection rate at effect 0 and alpha 0.05
of ``test="satterthwaite"`` (REML, lmerTest's t test), ``"z"`` (ML, the
paper's rule) and ``"lrt"`` (ML likelihood ratio, chi^2_1), from
``nlpower.powersim.power(..., method="auto")`` (the exact balanced fast
path), with the Wilson 95% interval.

Two more tests computed here from the same sufficient statistics
(:func:`nlpower.powersim.fastpath.draw_stats`, REML/ML fits by
:func:`~nlpower.powersim.balanced_fit.fit_balanced`):

* ``t, df = W-1``: the REML t statistic referred to t with the worker:system
  stratum's df (SAS's "containment" rule: the smallest df of the random
  terms that contain the system effect);
* ``PB-LRT``: the parametric-bootstrap LRT (:mod:`nlpower.powersim.pblrt`,
  ``B = 99`` null samples per replicate), with ``--pb-sims`` replicates
  (default 2,000: 99 x that many refits per cell) for the 3-worker cells only
  unless ``--pb-all``.

Kenward-Roger: on these balanced designs pbkrtest's adjusted covariance
equals the unadjusted one and the KR df equals the Satterthwaite df, so the
KR t test *is* the Satterthwaite test (same t, same df) and has its Type I
error.  ``--kr-check R`` verifies that on R replicates per cell with the
general path: a native REML fit, :func:`nlpower.lmm.kenward_roger.kr_state`
and the engine's Satterthwaite df (max relative difference printed).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy import stats

from nlpower import CrossedDesign, presets, simulate
from nlpower.intervals import wilson_ci
from nlpower.lmm import lmer
from nlpower.lmm.frame import model_frame
from nlpower.lmm.kenward_roger import kr_state
from nlpower.powersim import power
from nlpower.powersim.balanced_fit import fit_balanced
from nlpower.powersim.fastpath import draw_stats
from nlpower.powersim.pblrt import pb_lrt_pvalues

WORKERS = (3, 5, 10)
ITEMS = (50, 100)
TESTS = ("satterthwaite", "z", "lrt")
FORMULA = "rating ~ x + (1 + x || worker) + (1 + x || item)"


def kr_vs_satterthwaite(design: CrossedDesign, params, reps: int, seed: int) -> float:
    """Max relative difference of KR (se, df) from (REML se, Satterthwaite df)."""
    worst = 0.0
    rng = np.random.default_rng(seed)
    for _ in range(reps):
        df = simulate(design, params, rng=rng)
        fit = lmer(FORMULA, df, REML=True, checkconv="ignore")
        spec = model_frame(FORMULA, df)
        covs = [next(v.cov for v in fit.var_terms
                     if v.group == t.group and tuple(v.cnames) == tuple(t.cnames))
                for t in spec.re_terms]
        st = kr_state(spec, fit.fixef.to_numpy(), covs, fit.sigma)
        _, se, kdf, _ = st.t_test([0.0, 1.0])
        row = fit.coef_table(ddf="satterthwaite").iloc[1]
        worst = max(worst, abs(se - row["std_error"]) / row["std_error"], abs(kdf - row["df"]) / row["df"])
    return worst


def _variances(params) -> list[float]:
    return [params.sigma**2, params.sd_worker**2, params.sd_worker_slope**2, params.sd_item**2,
            params.sd_item_slope**2]


def _cell(k: int, n: int) -> str:
    lo, hi = wilson_ci(k, n)
    return f"{k / n:.4f} ({lo:.3f}-{hi:.3f})"


def containment(w: int, i: int, params, n_sims: int, seed: int) -> str:
    gens = [np.random.default_rng([seed, k]) for k in range(n_sims)]
    st = draw_stats(w, i, params.beta0, 0.0, _variances(params), gens)
    t = fit_balanced(st, REML=True, with_df=False).t
    return _cell(int(np.sum(2.0 * stats.t.sf(np.abs(t), w - 1) <= 0.05)), n_sims)


def pb_cell(w: int, i: int, params, n_sims: int, seed: int) -> str:
    gens = [np.random.default_rng([seed, k]) for k in range(n_sims)]
    st = draw_stats(w, i, params.beta0, 0.0, _variances(params), gens)
    p, _ = pb_lrt_pvalues(st, 99, np.random.default_rng(seed))
    return _cell(int(np.sum(p <= 0.05)), n_sims) + f" [{n_sims}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-sims", type=int, default=10_000)
    ap.add_argument("--kr-check", type=int, default=0, help="replicates per cell for KR == Satt")
    ap.add_argument("--pb-sims", type=int, default=2000)
    ap.add_argument("--pb-all", action="store_true", help="PB-LRT for every cell, not only W=3")
    args = ap.parse_args(argv)
    lines = ["| scenario | workers | items | satterthwaite (REML) | z (ML) | lrt (ML) | "
             "t, df = W-1 (REML) | PB-LRT (ML) | KR |",
             "|---|---|---|---|---|---|---|---|---|"]
    for scen in ("high", "low"):
        params = (presets.high_variance if scen == "high" else presets.low_variance)(0.0)
        for w in WORKERS:
            for i in ITEMS:
                design = CrossedDesign(w, i)
                cells = []
                for test in TESTS:
                    t0 = time.perf_counter()
                    r = power(design, params, n_sims=args.n_sims, rng=2026, test=test)
                    lo, hi = r.type1_ci.low, r.type1_ci.high
                    cells.append(f"{r.type1:.4f} ({lo:.3f}-{hi:.3f})")
                    print(f"{scen} {w}x{i} {test}: {r.type1:.4f} [{r.method}, "
                          f"{time.perf_counter() - t0:.1f} s]", file=sys.stderr, flush=True)
                cells.append(containment(w, i, params, args.n_sims, 100 * w + i))
                print(f"{scen} {w}x{i} containment: {cells[-1]}", file=sys.stderr, flush=True)
                if w == 3 or args.pb_all:
                    cells.append(pb_cell(w, i, params, args.pb_sims, 1000 + 100 * w + i))
                    print(f"{scen} {w}x{i} pb: {cells[-1]}", file=sys.stderr, flush=True)
                else:
                    cells.append("")
                kr = "= satterthwaite"
                if args.kr_check:
                    d = kr_vs_satterthwaite(design, params, args.kr_check, 7 + w + i)
                    kr += f" (max rel diff {d:.1e})"
                lines.append(f"| {scen} | {w} | {i} | {' | '.join(cells)} | {kr} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
