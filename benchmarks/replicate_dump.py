"""Every number of a set of small power runs, replicates bit for bit (float hex), as JSON.

For refactors that must not move a number: run it on the code before and after the
change and compare the two files (Figure 6 grid on both paths, the Gaussian simulate
path with every test, nested and k-of-W designs, Likert LMM and clmm, head-to-head glmer,
a Likert grid, ``nlpower.power(outcome=...)``, and the fitted-model studies:
``nlpower.power(fit, term=...)`` with every test, ``compare=``, ``pairwise=``, GLMM,
clmm, ``extend`` and ``power_curve``).

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
    study_cases()
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    print("wrote", sys.argv[1], len(out), "runs")


_STUDY_REPS: list = []


def _recording(run_batches):
    def run(*args, **kwargs):
        reps = run_batches(*args, **kwargs)
        _STUDY_REPS.append(reps)
        return reps
    return run


def mdump(name, r):
    """A fitted-model study's result (the record, or every comparison's counts) and replicates."""
    rec = r.to_record() if hasattr(r, "to_record") else dict(vars(r))
    rep = _STUDY_REPS.pop() if _STUDY_REPS else None
    _STUDY_REPS.clear()
    if rep is not None:
        rec["reps"] = {f: hx(getattr(rep, f)) for f in ("estimate", "se", "statistic", "df",
                                                         "pvalue", "converged", "singular",
                                                         "failed")}
        rec["reps"].update({k: hx(v) for k, v in sorted(rep.extra.items())})
    out[name] = json.loads(json.dumps({k: (float(v).hex() if isinstance(v, float) else v)
                                       for k, v in rec.items() if k not in ("version",)},
                                      default=lambda v: hx(v) if hasattr(v, "__len__") else str(v)))


def study_cases() -> None:
    import pandas as pd

    from nlpower.study import power as study_power
    study_power.run_batches = _recording(study_power.run_batches)   # keep each run's replicates
    data = "tests/reference/data/"
    sleep = pd.read_csv(data + "sleepstudy.csv")
    rng = np.random.default_rng(0)
    sleep["group"] = rng.choice(["a", "b", "c"], size=len(sleep))
    m = nlpower.lmer("Reaction ~ Days + group + (1 | Subject)", sleep, REML=False)
    m = m.with_params(fixef={"Days": 2.0})
    for test in ("z", "satterthwaite", "kenward-roger", "lrt"):
        mdump(f"study_scalar_{test}", nlpower.power(m, term="Days", test=test, n_sims=30, rng=1))
    mdump("study_scalar_multidf", nlpower.power(m, term="group", n_sims=30, rng=2))
    mdump("study_scalar_compare", nlpower.power(m, compare="~ . - group", n_sims=30, rng=3))
    mdump("study_scalar_pairwise", nlpower.power(m, pairwise="group", n_sims=30, rng=4))
    mdump("study_scalar_contrast", nlpower.power(m, term="groupb - groupc", n_sims=30, rng=5))
    s = nlpower.lmer("Reaction ~ Days + group + (Days | Subject)", sleep, REML=False)
    s = s.with_params(fixef={"Days": 2.0})
    for test in ("z", "satterthwaite", "kenward-roger", "lrt"):
        mdump(f"study_slopes_{test}", nlpower.power(s, term="Days", test=test, n_sims=10, rng=6))
    mdump("study_slopes_multidf", nlpower.power(s, term="group", n_sims=10, rng=7))
    mdump("study_slopes_pairwise", nlpower.power(s, pairwise="group", test="z", n_sims=10, rng=8))
    mdump("study_slopes_pblrt", nlpower.power(s, term="Days", test="pblrt", n_resamples=9,
                                              n_sims=4, rng=9))
    sim = pd.read_csv(data + "simdata.csv")
    g = nlpower.glmer("z ~ x + (1 | g)", sim, "poisson").with_params(fixef={"x": -0.05})
    for test in ("z", "lrt"):
        mdump(f"study_poisson_{test}", nlpower.power(g, term="x", test=test, n_sims=30, rng=10))
    big = nlpower.extend(g, along="x", n=20)
    mdump("study_extend_lrt", nlpower.power(big, term="x", test="lrt", n_sims=20, rng=11))
    curve = nlpower.power_curve(big, along="x", breaks=[5, 15], term="x", test="z", n_sims=20,
                                rng=12)
    out["study_curve"] = fdump(curve.to_frame())
    wine = pd.read_csv(data + "wine.csv")
    c = nlpower.clmm("rating ~ temp + contact + (1 | judge)", wine)
    for test in ("z", "lrt"):
        mdump(f"study_clmm_{test}", nlpower.power(c, term="tempwarm", test=test, n_sims=12,
                                                  rng=13))


if __name__ == "__main__":
    main()
