"""Every number of a set of small power runs, replicates bit for bit (float hex), as JSON.

For refactors that must not move a number: run it on the code before and after the
change and compare the two files (Figure 6 grid on both paths, the Gaussian simulate
path with every test, nested and k-of-W designs, Likert LMM and clmm, head-to-head glmer,
a Likert grid, and ``nlpower.power(outcome=...)``).

Run:  PYTHONPATH=<src> .venv/bin/python benchmarks/replicate_dump.py out.json
      (then ``cmp before.json after.json``)
"""
import json
import sys
import warnings

import numpy as np

import nlpower
from nlpower import presets
from nlpower.design import CrossedDesign
from nlpower.outcomes.headtohead import HeadToHeadParams, headtohead_power
from nlpower.outcomes.likert import LikertParams
from nlpower.outcomes.power import likert_power
from nlpower.powersim import power
from nlpower.powersim.grid import power_grid

out: dict = {}

def fdump(f):
    recs = f.to_dict("records")
    return [{k: (float(v).hex() if isinstance(v, (float, np.floating)) else str(v)) for k, v in r.items()}
            for r in recs]

def hx(a):
    return [float(v).hex() for v in np.asarray(a, dtype=float).ravel()]

def dump(name, r):
    rec = {k: (v if not isinstance(v, float) else float(v).hex()) for k, v in r.to_record().items()
           if k not in ("version",)}
    if r.replicates is not None:
        rep = r.replicates
        rec["reps"] = {f: hx(getattr(rep, f)) for f in ("estimate", "se", "statistic", "df", "pvalue",
                                                         "converged", "singular", "failed")}
    out[name] = json.loads(json.dumps(rec, default=str))

def main() -> None:
    warnings.simplefilter("ignore")
    hv = presets.high_variance(0.15)
    # Figure 6 grid (balanced fast path, as benchmarks/figure6.py), small
    for meth, ns in (("auto", 40), ("simulate", 8)):
        g = power_grid({"high variance": presets.high_variance(), "low variance": presets.low_variance()},
                       n_workers=[3, 10], n_items=[50, 100], effect=[0.05, 0.2], n_sims=ns, test="z",
                       alternative="two-sided", method=meth, rng=2020, progress=False)
        f = g.to_frame()
        f = f[[c for c in f.columns if "version" not in c and "elapsed" not in c and "time" not in c]]
        out["figure6_grid_" + meth] = fdump(f)
    # Likert and preference grids (nlpower.power_grid with outcome=)
    g = power_grid(presets.high_variance(), n_workers=[3, 5], n_items=[8], effect=[0.2], n_sims=10,
                   outcome="likert", levels=5, design=CrossedDesign(3, 8, items="nested"), rng=5, progress=False)
    f = g.to_frame()
    out["likert_grid"] = fdump(f[[c for c in f.columns if "version" not in c]])
    # Gaussian simulate path, each test; crossed and nested, K=3 design
    for test in ("z", "satterthwaite", "lrt", "kenward-roger", "pblrt"):
        kw = {"n_resamples": 19} if test == "pblrt" else {}
        dump(f"gauss_sim_{test}", power(CrossedDesign(4, 12), hv, n_sims=12 if test != "pblrt" else 6,
                                        test=test, method="simulate", rng=7, null=True, **kw))
    dump("gauss_nested", power(CrossedDesign(4, 12, items="nested"), hv, n_sims=60, rng=3, null=True))
    dump("gauss_wpi", power(CrossedDesign(6, 12, workers_per_item=3), hv, n_sims=60, rng=4))
    dump("gauss_balanced", power(CrossedDesign(5, 30), hv, n_sims=200, rng=5, null=True))
    dump("gauss_balanced_pblrt", power(CrossedDesign(5, 30), hv, n_sims=50, rng=5, test="pblrt",
                                       n_resamples=19))
    # Likert
    lp = LikertParams.from_preset(presets.high_variance(0.2), 5)
    dump("likert_lmm_bal", likert_power(CrossedDesign(6, 30), lp, n_sims=80, rng=1, null=True))
    dump("likert_lmm_nested", likert_power(CrossedDesign(6, 16, items="nested"), lp, n_sims=60, rng=2,
                                           null=True))
    dump("likert_lmm_nested_lrt", likert_power(CrossedDesign(6, 16, items="nested"), lp, n_sims=30,
                                               rng=2, test="lrt"))
    dump("likert_clmm_z", likert_power(CrossedDesign(4, 12), lp, n_sims=60, rng=3, analysis="clmm",
                                       null=True))
    dump("likert_clmm_lrt", likert_power(CrossedDesign(4, 10), lp, n_sims=30, rng=3, analysis="clmm",
                                         test="lrt"))
    lp3 = LikertParams.from_preset(presets.low_variance(0.3), 3)
    dump("likert_clmm_3lev", likert_power(CrossedDesign(3, 6), lp3, n_sims=60, rng=9, analysis="clmm"))
    # head-to-head
    hp = HeadToHeadParams.from_share(0.62, sd_worker=0.5, sd_item=0.4, p_draw=0.1,
                                     sd_worker_position=0.3)
    dump("h2h", headtohead_power(CrossedDesign(5, 20), hp, n_sims=70, rng=11, null=True))
    dump("h2h_small", headtohead_power(CrossedDesign(3, 6), HeadToHeadParams.from_share(0.8), n_sims=60,
                                       rng=12))
    # through nlpower.power(outcome=...)
    dump("api_likert", nlpower.power(CrossedDesign(5, 12, items="nested"), presets.high_variance(0.2),
                                     outcome="likert", levels=5, n_sims=40, rng=21))
    dump("api_h2h", nlpower.power(CrossedDesign(5, 12), hp, outcome="preference", n_sims=40, rng=22))
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    print("wrote", sys.argv[1], len(out), "runs")


if __name__ == "__main__":
    main()
