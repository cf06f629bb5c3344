"""simr vs nlpower: power for a term of a fitted mixed model, time per replicate and agreement.

simr's side comes from ``tests/reference/simr_reference.json`` (written by the
committed ``tests/reference/simr_reference.R``: simr 1.0.7's powerSim, extend,
powerCurve and fcompare on its ``simdata``, lme4's ``cake`` and a 10 workers x
100 items crossed ratings design).  With ``--live`` and R with simr installed,
simr is re-timed in this run (the same script with a small ``--nsim``), so the
ratio compares two timings taken on the machine's current load::

    .venv/bin/python benchmarks/bench_simr.py                      # pinned simr times
    .venv/bin/python benchmarks/bench_simr.py --live --live-nsim 20
    .venv/bin/python benchmarks/bench_simr.py --cases a_poisson_z,f_crossed_binomial_z --n-sims 200
    .venv/bin/python benchmarks/bench_simr.py --simr-from benchmarks/out/bench_simr.json --out b.json

nlpower's side rebuilds each case with the model-based API (fit, set the
parameters, optionally extend, then simulate -> refit -> test)::

    m = nlpower.glmer("z ~ x + (1|g)", simdata, "poisson").with_params(fixef={"x": -0.05})
    nlpower.power(m, term="x", test="z", n_sims=1000, rng=1)
    nlpower.power(nlpower.extend(m, along="x", n=20), term="x", test="lrt", ...)
    nlpower.power_curve(nlpower.extend(m, along="x", n=20), term="x", along="x",
                        breaks=[5, 10, 15, 20], ...)
    nlpower.power(cake_model, compare="~ recipe + temp", test="lrt", ...)

Timing: wall clock (and CPU, ``process_time``) of the whole power call divided
by the replicates fitted, after a small warm-up call; simr's is the same ratio
for its powerSim/powerCurve call (``system.time``-style, in the JSON).  BLAS
threads are pinned to 1 on both sides.  The machine is shared: read the ratio
from one run, and prefer ``--live`` when the pinned times are from another day.
``ratio`` divides the wall times, ``CPU ratio`` the CPU times (user + system):
on a loaded machine the two sides' wall times are taken minutes apart under
different loads, the CPU times much less so.

Type I (``--type1 N``): the Wald z of a null effect on a 5 workers x 20 items
crossed binomial design, with glmer's Hessian-based SE (the default of every
GLMM refit) and with PIRLS's (``vcov="rx"``), on the same N replicates, and
the CPU time per replicate of each.

Curve points (``--points glmer,clmm``): the wall time of one point of
``nlpower.power_curve`` with ``--point-nsims`` replicates (default 1,000) and
``--point-jobs`` workers (default 2) for the ``system`` term of a binomial
``glmer`` and of a 5-category ``clmm`` (logit) on a crossed 10 workers x 100
items design (``(1 | worker) + (1 | item)``, fitted to data drawn here with
worker SD 0.5 and item SD 0.8)::

    .venv/bin/python benchmarks/bench_simr.py --cases a_poisson_z --points glmer,clmm

Agreement: simr's and nlpower's power estimates are two independent binomial
estimates of the same power; the table shows their difference in units of its
Monte Carlo standard error (|z| > 3 would be a disagreement, not chance).
Output: ``benchmarks/out/bench_simr.json``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference"
PINNED = REFERENCE / "simr_reference.json"
R_SCRIPT = REFERENCE / "simr_reference.R"
DATA = REFERENCE / "data"
OUT = ROOT / "benchmarks" / "out"

#: simr's test method -> nlpower's test rule name
TEST_NAMES = {"z": "z", "lr": "lrt", "t": "satterthwaite", "kr": "kenward-roger"}


class ApiMissing(RuntimeError):
    """nlpower does not (yet) have the model-based power API this benchmark times."""


# --- simr side ---------------------------------------------------------------------
def simr_available() -> str | None:
    """None when Rscript with simr loads, else why not."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return "Rscript not on PATH"
    proc = subprocess.run([rscript, "-e", "suppressMessages(library(simr))"],
                          capture_output=True, text=True, timeout=300)
    return None if proc.returncode == 0 else f"simr not loadable: {proc.stderr.strip()[-200:]}"


def simr_live(cases: list[str], nsim: int) -> dict[str, Any]:
    """Run the committed reference script with a small nsim; its JSON ``cases``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "simr_live.json"
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        subprocess.run(["Rscript", "--vanilla", str(R_SCRIPT), f"--nsim={nsim}",
                        f"--cases={','.join(cases)}", f"--out={out}"],
                       check=True, env=env, timeout=3600)
        return dict(json.loads(out.read_text())["cases"])


# --- nlpower side --------------------------------------------------------------------
def check_api() -> Any:
    """Import nlpower and check it has ``power(model, term=...)``; raise ApiMissing if not."""
    import nlpower
    power = getattr(nlpower, "power", None)
    params = inspect.signature(power).parameters if callable(power) else {}
    if "term" not in params or not hasattr(nlpower, "power_curve"):
        found = ", ".join(list(params)[:2]) + ", ..." if params else "absent"
        raise ApiMissing(
            f"nlpower.power does not accept a fitted model yet (found power({found}); "
            f"power_curve {'present' if hasattr(nlpower, 'power_curve') else 'absent'}). This benchmark "
            "needs nlpower.power(model, term=..., test=..., n_sims=..., rng=...), "
            "fit.with_params(fixef=...), nlpower.extend(fit, along=..., n=...) and "
            "nlpower.power_curve(model, term=..., along=..., breaks=...); run it again once they exist, "
            "or use --simr-only.")
    return nlpower


def _simdata() -> Any:
    import pandas as pd
    d = pd.read_csv(DATA / "simdata.csv")
    d["g"] = d["g"].astype(str)
    return d


def _cake() -> Any:
    import pandas as pd
    d = pd.read_csv(DATA / "cake.csv")
    d["replicate"] = d["replicate"].astype(str)
    return d


def _crossed(case: dict[str, Any]) -> Any:
    """The R script's design (10 x 100, system alternating) with a response drawn from its parameters."""
    import numpy as np
    import pandas as pd
    w = np.tile(np.arange(1, 11), 100)       # worker varies fastest, as expand.grid
    i = np.repeat(np.arange(1, 101), 10)
    d = pd.DataFrame({"worker": [f"w{k:02d}" for k in w], "item": [f"i{k:03d}" for k in i],
                      "system": ((w + i) % 2 == 0).astype(float)})
    rng = np.random.default_rng(7)
    fe, sd = case["set"]["fixef"], case["set"]["sd"]
    eta = (fe["(Intercept)"] + fe["system"] * d["system"].to_numpy()
           + rng.normal(0, sd["worker"], 10)[w - 1] + rng.normal(0, sd["item"], 100)[i - 1])
    if case["family"] == "poisson":
        d["y"] = rng.poisson(np.exp(eta))
    else:
        d["y"] = rng.binomial(1, 1 / (1 + np.exp(-eta)))
    return d


def build_model(nlpower: Any, name: str, case: dict[str, Any]) -> Any:
    """The fitted model with simr's parameters set (and extended where the case is)."""
    if name.startswith("f_crossed"):
        m = nlpower.glmer(case["formula"], _crossed(case), case["family"])
    elif case["data"] == "cake":
        m = nlpower.lmer(case["formula"], _cake(), REML=case["REML"])
    elif case["family"] == "gaussian":
        m = nlpower.lmer(case["formula"], _simdata(), REML=case.get("REML", True))
    else:
        m = nlpower.glmer(case["formula"], _simdata(), case["family"])
    # every parameter simr simulated from (its fits' values, and the ones it set)
    p = case["params"]
    sd = {k.split("|")[0]: v for k, v in p.get("sd", {}).items() if "|" in k}
    m = m.with_params(fixef=p["fixef"], sd=sd,
                      sigma=p.get("sigma") if case["family"] == "gaussian" else None)
    if "extend" in case or name.startswith("d_"):
        ext = case.get("extend", {"along": "x", "n": 20})
        m = nlpower.extend(m, along=ext["along"], n=ext["n"])
    return m


def power_call(nlpower: Any, name: str, case: dict[str, Any], model: Any) -> Callable[[int, int], Any]:
    """A function (n_sims, seed) -> nlpower's result for this case."""
    test = TEST_NAMES[case["method"]]
    if name.startswith("d_"):
        return lambda n, seed: nlpower.power_curve(model, term=case["term"], along="x",
                                                   breaks=list(case["breaks"]), test=test,
                                                   n_sims=n, rng=seed)
    if case["simr_test"].startswith("fcompare"):
        formula = case["simr_test"][len("fcompare("):-1]
        return lambda n, seed: nlpower.power(model, compare=formula, test=test, n_sims=n, rng=seed)
    return lambda n, seed: nlpower.power(model, term=case["term"], test=test, n_sims=n, rng=seed)


def powers_of(res: Any) -> list[float]:
    """The rejection rate(s) of a power or power-curve result, in break order (simr counts
    rejections of either sign)."""
    if hasattr(res, "rejection_rate"):
        return [float(res.rejection_rate)]
    return [float(v) for v in res.to_frame()["rejection_rate"]]


def run_nlpower(nlpower: Any, name: str, case: dict[str, Any], n_sims: int, seed: int) -> dict[str, Any]:
    model = build_model(nlpower, name, case)
    call = power_call(nlpower, name, case, model)
    call(5, seed + 1)                                   # warm-up: caches, first-call costs
    t0, c0 = time.perf_counter(), time.process_time()
    res = call(n_sims, seed)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    fits = n_sims * (len(case["breaks"]) if "breaks" in case else 1)
    return {"n_sims": n_sims, "power": powers_of(res), "elapsed_s": wall, "cpu_s": cpu,
            "s_per_replicate": wall / fits, "cpu_s_per_replicate": cpu / fits}


def _crossed_ratings(family: str) -> Any:
    """10 workers x 100 items, system alternating; a binary or 5-category response."""
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(11)
    w, i = np.tile(np.arange(10), 100), np.repeat(np.arange(100), 10)
    system = ((w + i) % 2 == 0).astype(float)
    eta = 0.3 * system + rng.normal(0, 0.5, 10)[w] + rng.normal(0, 0.8, 100)[i]
    d = pd.DataFrame({"worker": [f"w{k:02d}" for k in w], "item": [f"i{k:03d}" for k in i],
                      "system": system})
    if family == "glmer":
        d["y"] = rng.binomial(1, 1 / (1 + np.exp(-eta)))
    else:
        lat = eta + rng.logistic(size=w.size)
        d["y"] = pd.Categorical(np.digitize(lat, [-1.5, -0.5, 0.5, 1.5]) + 1, ordered=True)
    return d


def curve_point(nlpower: Any, family: str, n_sims: int, n_jobs: int, seed: int) -> dict[str, Any]:
    """Wall time of one 10 x 100 point of power_curve for the system term (glmer or clmm)."""
    d = _crossed_ratings(family)
    formula = "y ~ system + (1 | worker) + (1 | item)"
    m = (nlpower.glmer(formula, d, "binomial") if family == "glmer"
         else nlpower.clmm(formula, d)).with_params(fixef={"system": 0.3})
    nlpower.power(m, term="system", n_sims=4, rng=seed + 1)            # warm-up
    t0 = time.perf_counter()
    curve = nlpower.power_curve(m, along="item", breaks=[100], term="system", n_sims=n_sims,
                                n_jobs=n_jobs, rng=seed)
    wall = time.perf_counter() - t0
    power = float(curve.to_frame()["power"].iloc[0])
    return {"family": family, "n_sims": n_sims, "n_jobs": n_jobs, "elapsed_s": wall,
            "s_per_replicate": wall / n_sims, "power": power}


def type1(nlpower: Any, n_sims: int, seed: int, n_workers: int = 5, n_items: int = 20
          ) -> dict[str, Any]:
    """Simulated Type I error of the Wald z for ``system`` (true effect 0) on a small crossed
    binomial design, with each of glmer's two SEs on the same replicates, and their cost.

    ``y ~ system + (1 | worker) + (1 | item)``, every worker rates every item, ``system``
    alternating; worker SD 0.5, item SD 0.8, intercept 0.  Each replicate is refitted twice
    from the truth (``refit_many``): ``vcov="rx"`` (PIRLS's factor, lme4's ``use.hessian =
    FALSE``) and ``vcov="hessian"`` (glmer's default).
    """
    import numpy as np
    import pandas as pd
    from scipy.stats import norm
    rng = np.random.default_rng(seed)
    w, i = np.tile(np.arange(n_workers), n_items), np.repeat(np.arange(n_items), n_workers)
    system = ((w + i) % 2).astype(float)
    eta = rng.normal(0, 0.5, n_workers)[w] + rng.normal(0, 0.8, n_items)[i]
    d = pd.DataFrame({"worker": [f"w{k}" for k in w], "item": [f"i{k:02d}" for k in i],
                      "system": system, "y": rng.binomial(1, 1 / (1 + np.exp(-eta)))})
    fit = nlpower.glmer("y ~ system + (1 | worker) + (1 | item)", d, "binomial").with_params(
        fixef={"(Intercept)": 0.0, "system": 0.0}, sd={"worker": 0.5, "item": 0.8})
    m = fit.model
    Y = m.simulate(n_sims, rng=seed + 1, params=fit)
    j = list(m.spec.fixef_names).index("system")
    out: dict[str, Any] = {"design": f"{n_workers} workers x {n_items} items", "n_sims": n_sims}
    for how in ("rx", "hessian"):
        t0 = time.process_time()
        cores = m.refit_many(Y, start=fit, vcov=how)
        cpu = time.process_time() - t0
        z = np.array([c.beta[j] / c.se[j] if not isinstance(c, Exception) else np.nan
                      for c in cores])
        ok = np.isfinite(z)
        p2 = 2 * norm.sf(np.abs(z[ok]))
        out[how] = {"cpu_ms_per_replicate": 1e3 * cpu / n_sims, "n_failed": int((~ok).sum()),
                    "type1_two_sided_05": float(np.mean(p2 <= 0.05)),
                    "type1_one_sided_025": float(np.mean(norm.sf(z[ok]) <= 0.025)),
                    "median_se": float(np.median([c.se[j] for c in cores
                                                  if not isinstance(c, Exception)]))}
    return out


def print_type1(t: dict[str, Any]) -> None:
    n = t["n_sims"]
    print(f"\nType I of the Wald z, {t['design']} binomial, system effect 0, {n} replicates "
          f"(MC SE at 0.05: {math.sqrt(0.05 * 0.95 / n):.4f}, at 0.025: "
          f"{math.sqrt(0.025 * 0.975 / n):.4f})")
    print(f"{'vcov':<10} {'two-sided 5%':>12} {'one-sided 2.5%':>14} {'median SE':>10} "
          f"{'CPU ms/replicate':>16}")
    for how in ("rx", "hessian"):
        r = t[how]
        print(f"{how:<10} {r['type1_two_sided_05']:>12.4f} {r['type1_one_sided_025']:>14.4f} "
              f"{r['median_se']:>10.4f} {r['cpu_ms_per_replicate']:>16.2f}")


# --- report ----------------------------------------------------------------------------
def simr_powers(case: dict[str, Any]) -> list[tuple[float, int]]:
    if "curve" in case:
        return [(b["power"], b["nsim"]) for b in case["curve"]]
    return [(case["power"], case["nsim"])]


def z_diff(p1: float, n1: int, p2: float, n2: int) -> float:
    """Difference of two independent binomial estimates over its standard error (pooled p)."""
    p = (p1 * n1 + p2 * n2) / (n1 + n2)
    se = math.sqrt(max(p * (1 - p), 1e-12) * (1 / n1 + 1 / n2))
    return (p2 - p1) / se


def print_table(rows: list[dict[str, Any]]) -> None:
    """case, simr and nlpower seconds per replicate, their ratio, both power estimates, z of the difference."""
    head = (f"{'case':<30} {'simr s/rep':>10} {'nlpower s/rep':>13} {'ratio':>7} {'CPU ratio':>9}  "
            f"{'simr power (n)':>15} {'nlpower power (n)':>17} {'z':>5}")
    print(head)
    print("-" * len(head))
    for r in rows:
        nl = r.get("nlpower")
        times = (f"{r['simr_s_per_replicate']:.4f}", f"{nl['s_per_replicate']:.5f}" if nl else "-",
                 f"{r['ratio']:.0f}x" if nl else "-",
                 f"{r['cpu_ratio']:.0f}x" if nl and "cpu_ratio" in r else "-")
        breaks = r["breaks"] or [None]
        for k, ((ps, ns), b) in enumerate(zip(r["simr_power"], breaks, strict=True)):
            label = r["case"] if b is None else (f"{r['case']} x<={b}" if k == 0 else f"  x<={b}")
            t = times if k == 0 else ("", "", "", "")
            simr_p = f"{ps:.3f} ({ns})"
            nl_p = f"{nl['power'][k]:.3f} ({nl['n_sims']})" if nl else "-"
            z = f"{z_diff(ps, ns, nl['power'][k], nl['n_sims']):+.1f}" if nl else "-"
            print(f"{label:<30} {t[0]:>10} {t[1]:>13} {t[2]:>7} {t[3]:>9}  {simr_p:>15} {nl_p:>17} "
                  f"{z:>5}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="all", help="comma-separated case names of simr_reference.json")
    ap.add_argument("--n-sims", type=int, default=None,
                    help="nlpower replicates per case (default: the case's simr nsim)")
    ap.add_argument("--rng", type=int, default=1)
    ap.add_argument("--live", action="store_true", help="re-time simr in this run (needs R with simr)")
    ap.add_argument("--live-nsim", type=int, default=20, help="simr replicates per case with --live")
    ap.add_argument("--simr-only", action="store_true", help="only the simr side (no nlpower)")
    ap.add_argument("--simr-from", default=None, metavar="JSON",
                    help="simr's times from an earlier output of this script (e.g. a --live "
                         "run), to time another nlpower against the same simr run")
    ap.add_argument("--reference", default=str(PINNED), help="simr's pinned JSON")
    ap.add_argument("--out", default=str(OUT / "bench_simr.json"))
    ap.add_argument("--points", default="glmer,clmm",
                    help="10 x 100 power-curve points to time: glmer, clmm, both, or none")
    ap.add_argument("--point-nsims", type=int, default=1000, help="replicates of a curve point")
    ap.add_argument("--point-jobs", type=int, default=2, help="n_jobs of a curve point")
    ap.add_argument("--type1", type=int, default=0, metavar="N",
                    help="also: Type I of the Wald z with each SE on N replicates of a 5 x 20 "
                         "crossed binomial null (0: skip)")
    args = ap.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"

    pinned = json.loads(Path(args.reference).read_text())
    names = list(pinned["cases"]) if args.cases == "all" else [c.strip() for c in args.cases.split(",")]
    for n in names:
        if n not in pinned["cases"]:
            ap.error(f"--cases: unknown case {n!r}; choose from {', '.join(pinned['cases'])}")
    print(f"simr {pinned['versions']['simr']}, lme4 {pinned['versions']['lme4']}, "
          f"{pinned['versions']['R']}; pinned {pinned['date']} (load {pinned['load_average']})")

    simr_times = {n: pinned["cases"][n]["s_per_replicate"] for n in names}
    simr_cpu = {n: pinned["cases"][n].get("cpu_s_per_replicate") for n in names}
    source = "pinned"
    if args.live:
        why = simr_available()
        if why is not None:
            print(f"--live: {why}; install simr (see tests/reference/simr_README.md) or drop --live",
                  file=sys.stderr)
            return 2
        live = simr_live(names, args.live_nsim)
        simr_times = {n: live[n]["s_per_replicate"] for n in names}
        simr_cpu = {n: live[n].get("cpu_s_per_replicate") for n in names}
        source = f"live, nsim {args.live_nsim}"

    if args.simr_from:
        earlier = {r["case"]: r for r in json.loads(Path(args.simr_from).read_text())["rows"]}
        missing = [n for n in names if n not in earlier]
        if missing:
            ap.error(f"--simr-from: {args.simr_from} has no simr times for {', '.join(missing)}")
        simr_times = {n: earlier[n]["simr_s_per_replicate"] for n in names}
        simr_cpu = {n: earlier[n].get("simr_cpu_s_per_replicate") for n in names}
        source = json.loads(Path(args.simr_from).read_text())["simr_timing"] + f", from {args.simr_from}"

    nlpower = None
    if not args.simr_only:
        try:
            nlpower = check_api()
        except ApiMissing as exc:
            print(f"bench_simr: {exc}", file=sys.stderr)
            return 3
    rows = []
    for n in names:
        case = pinned["cases"][n]
        row: dict[str, Any] = {"case": n, "simr_s_per_replicate": simr_times[n], "simr_timing": source,
                               "simr_cpu_s_per_replicate": simr_cpu[n],
                               "simr_power": simr_powers(case), "breaks": case.get("breaks")}
        if nlpower is not None:
            n_sims = args.n_sims or case["nsim"]
            print(f"  {n}: nlpower, {n_sims} replicates ...", flush=True)
            row["nlpower"] = run_nlpower(nlpower, n, case, n_sims, args.rng)
            row["ratio"] = simr_times[n] / row["nlpower"]["s_per_replicate"]
            if simr_cpu[n]:
                row["cpu_ratio"] = simr_cpu[n] / row["nlpower"]["cpu_s_per_replicate"]
        rows.append(row)
    points = []
    if nlpower is not None:
        for fam in [f.strip() for f in args.points.split(",") if f.strip() not in ("", "none")]:
            if fam not in ("glmer", "clmm"):
                ap.error(f"--points: choose from glmer, clmm, none; got {fam!r}")
            print(f"  curve point, {fam} 10 x 100: {args.point_nsims} replicates, "
                  f"n_jobs={args.point_jobs} ...", flush=True)
            points.append(curve_point(nlpower, fam, args.point_nsims, args.point_jobs, args.rng))
    t1 = type1(nlpower, args.type1, args.rng) if nlpower is not None and args.type1 else None
    print(f"\nsimr timing: {source}; nlpower: this run; load average {os.getloadavg()[0]:.1f}\n")
    print_table(rows)
    for pt in points:
        print(f"power_curve point, {pt['family']} 10 workers x 100 items: {pt['n_sims']} replicates "
              f"in {pt['elapsed_s']:.1f} s with n_jobs={pt['n_jobs']} "
              f"({1e3 * pt['s_per_replicate']:.1f} ms per replicate; power {pt['power']:.3f})")
    if t1 is not None:
        print_type1(t1)
    OUT.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"simr_timing": source, "rows": rows, "curve_points": points,
                                          "type1": t1}, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
