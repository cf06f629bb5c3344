"""GLMM cases of the engine benchmark: nlpower.glmer vs lme4::glmer, timed in the same run.

Run through ``benchmarks/bench_engine.py`` (``--cases cbpp,grouseticks,verbagg,...``)
or alone::

    .venv/bin/python benchmarks/bench_glmm.py                    # every GLMM case, 3 repeats
    .venv/bin/python benchmarks/bench_glmm.py --cases verbagg --repeats 5

Cases are those of ``tests/reference/glmer_reference.R`` (data in
``tests/reference/data/``): lme4's cbpp (binomial with trials), grouseticks
(Poisson, three nested/crossed intercepts), VerbAgg crossed persons x items
(``(1|id) + (1|item)``) and with a correlated slope by item, and a simulated
crossed worker x item binary design with ``||`` slopes (60 x 40).

Crowd-shaped fits (``--crowd``, native only): a simulated crowd file, 4
systems, 300 workers (5-200 ratings each, heavy-tailed) x 1,000 items,
20,000 ratings (the shape of ``outside_in.crowd_file``), with a binary
(``binomial``) or count (``poisson``) response, fitted as ``y ~ system +
(1|worker) + (1|item)`` or as the paper's ``y ~ system + (system||worker) +
(system||item)`` (``*_paper``); CPU per fit, minimum of ``--repeats``.
``--trees A,B`` runs each fit under each source tree (``PYTHONPATH``) in
turn, one fresh process per fit, alternating A, B, A, B::

    .venv/bin/python benchmarks/bench_glmm.py --crowd binomial,poisson --repeats 3 \
        --trees /work/before/src,src

``--strategies`` times the two strategies of the factorisation
(:mod:`nlpower.mixed.blocked`'s blocked one and :mod:`nlpower.mixed.pairs`)
on the same fits, alternating in one process, over a range of design sizes
(binomial ``(1|worker) + (1|item)`` and the paper's model, 20 ratings per
item; ``--sizes 300x1000,600x2000``: workers x items): where pairs pay, the
measurement behind ``pairs.PAIR_WORK_PER_PAIR``::

    .venv/bin/python benchmarks/bench_glmm.py --strategies --repeats 2

Timing: wall-clock of the fit call only -- ``nlpower.glmer()`` (model frame
included) in this process after a warm-up fit, ``system.time(glmer(...))``
inside one R process (lme4's defaults: two stages, bobyqa + Nelder-Mead);
the median of ``--repeats``; also the CPU time of the fit (``process_time``;
R's ``user + sys``), which a loaded machine inflates less.  Both engines run
one after the other in the same run, so the ratio lme4/native is what to
read (the machine is shared: absolute times vary with its load).  BLAS
threads are pinned to 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "glmm"))
from glmm_cases import DATA, fit_case  # noqa: E402

_CB = "prop ~ period + (1 | herd), weights = size, data = d, family = binomial"
#: validation case (tests/glmm/glmm_cases.py) -> (R data set, lme4 call), as glmer_reference.R
R_CALLS: dict[str, tuple[str, str]] = {
    "cbpp_weights": ("cbpp", f"glmer({_CB})"),
    "cbpp_probit": ("cbpp", f"glmer({_CB}(link = 'probit'))"),
    "cbpp_cloglog": ("cbpp", f"glmer({_CB}(link = 'cloglog'))"),
    "cbpp_agq9": ("cbpp", f"glmer({_CB}, nAGQ = 9)"),
    "cbpp_agq25": ("cbpp", f"glmer({_CB}, nAGQ = 25)"),
    "cbpp_nagq0": ("cbpp", f"glmer({_CB}, nAGQ = 0)"),
    "cbpp_poisson_offset": ("cbpp", "glmer(incidence ~ period + (1 | herd), offset = log(size), "
                            "data = d, family = poisson)"),
    "grouseticks": ("grouseticks", "glmer(TICKS ~ YEAR + cHEIGHT + (1 | BROOD) + (1 | INDEX) + "
                    "(1 | LOCATION), data = d, family = poisson)"),
    "verbagg_crossed": ("VerbAgg", "glmer(r2 ~ Anger + Gender + btype + situ + (1 | id) + "
                        "(1 | item), data = d, family = binomial)"),
    "verbagg_slope": ("VerbAgg", "glmer(r2 ~ Anger + Gender + btype + situ + (1 | id) + "
                      "(1 + Gender | item), data = d, family = binomial)"),
    "crossed_sim": ("glmm_crossed", "glmer(y ~ x + (1 + x || worker) + (1 + x || item), "
                    "data = d, family = binomial)"),
}
#: benchmark name -> validation case
GLMM_CASES: dict[str, str] = {"cbpp": "cbpp_weights", "grouseticks": "grouseticks",
                              "verbagg": "verbagg_crossed", "verbagg_slope": "verbagg_slope",
                              "crossed_sim": "crossed_sim"}

_R = r"""
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
d <- read.csv(%(path)s, stringsAsFactors = TRUE)
for (v in c("herd", "period", "BROOD", "INDEX", "LOCATION", "YEAR", "id", "item", "worker"))
  if (!is.null(d[[v]])) d[[v]] <- factor(d[[v]])
times <- numeric(0); cpu <- numeric(0)
for (i in seq_len(%(repeats)d)) {
  tt <- system.time(fit <- suppressWarnings(suppressMessages(%(call)s)))
  times <- c(times, tt[["elapsed"]]); cpu <- c(cpu, tt[["user.self"]] + tt[["sys.self"]])
}
cat(toJSON(list(times = times, cpu = cpu, loglik = as.numeric(logLik(fit)), fixef = unname(fixef(fit)),
                sds = as.data.frame(VarCorr(fit))$sdcor), auto_unbox = TRUE, digits = NA))
"""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown CPU"


def run_native(case: str, repeats: int) -> dict[str, Any]:
    times, cpu = [], []
    fit = None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_case(case)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    assert fit is not None
    return {"times": times, "cpu": cpu, "loglik": fit.loglik, "fixef": fit.fixef.tolist(),
            "sds": fit.varcorr()["sdcor"].tolist()}


def run_lme4(case: str, repeats: int) -> dict[str, Any]:
    data, call = R_CALLS[case]
    code = _R % {"path": json.dumps(str(DATA / f"{data}.csv")), "repeats": repeats, "call": call}
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(code)
        script = fh.name
    try:
        proc = subprocess.run(["Rscript", "--vanilla", script], capture_output=True, text=True,
                              timeout=3600)
    finally:
        os.unlink(script)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-500:])
    r = json.loads(proc.stdout)
    for key in ("times", "cpu", "fixef", "sds"):        # toJSON unboxes length-1 vectors
        r[key] = r[key] if isinstance(r[key], list) else [r[key]]
    return r  # type: ignore[no-any-return]


def run(cases: list[str], repeats: int, engines: list[str]) -> dict[str, Any]:
    """Time every case on both engines; print and return the medians and the ratio."""
    print(f"CPU: {cpu_model()}; cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}",
          flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_case("cbpp_weights")                      # warm-up: imports, first calls
    out: dict[str, Any] = {}
    for c in cases:
        res: dict[str, Any] = {}
        v = GLMM_CASES.get(c, c)
        print(f"\n== GLMM case {c}: {R_CALLS[v][1]}", flush=True)
        for e in engines:
            try:
                res[e] = run_native(v, repeats) if e == "native" else run_lme4(v, repeats)
            except Exception as exc:  # report and go on
                res[e] = {"skipped": f"{type(exc).__name__}: {exc}"}
                print(f"  {e:8s} skipped: {res[e]['skipped']}", flush=True)
                continue
            res[e]["median"] = statistics.median(res[e]["times"])
            res[e]["median_cpu"] = statistics.median(res[e]["cpu"])
            print(f"  {e:8s} {res[e]['median']:8.2f} s  (median of {len(res[e]['times'])}: "
                  f"{', '.join(f'{t:.2f}' for t in res[e]['times'])}; CPU "
                  f"{res[e]['median_cpu']:.2f} s)  logLik {res[e]['loglik']:.5f}", flush=True)
        nat, lme = res.get("native", {}), res.get("lme4", {})
        if "median" in nat and "median" in lme:
            ratio = lme["median"] / nat["median"]
            cpu_ratio = lme["median_cpu"] / nat["median_cpu"]
            dfix = max(abs(a - b) for a, b in zip(nat["fixef"], lme["fixef"], strict=True))
            dsd = max(abs(a - b) for a, b in zip(nat["sds"], lme["sds"], strict=True))
            res["summary"] = {"lme4/native": ratio, "lme4/native_cpu": cpu_ratio,
                              "loglik_native_minus_lme4":
                              nat["loglik"] - lme["loglik"], "max_dfixef": dfix, "max_dsd": dsd}
            print(f"  lme4/native time ratio {ratio:.1f} (CPU time {cpu_ratio:.1f}); "
                  "logLik native - lme4 "
                  f"{nat['loglik'] - lme['loglik']:+.2e}; max |diff| fixef {dfix:.1e}, SD {dsd:.1e}",
                  flush=True)
        out[c] = res
    return out


_PAPER = "y ~ system + (system||worker) + (system||item)"
#: crowd-shaped fit -> (family, formula, workers, items, ratings)
CROWD: dict[str, tuple[str, str, int, int, int]] = {
    "binomial": ("binomial", "y ~ system + (1|worker) + (1|item)", 300, 1000, 20_000),
    "poisson": ("poisson", "y ~ system + (1|worker) + (1|item)", 300, 1000, 20_000),
    "binomial_paper": ("binomial", _PAPER, 300, 1000, 20_000),
    "poisson_paper": ("poisson", _PAPER, 300, 1000, 20_000),
    "binomial_10k": ("binomial", "y ~ system + (1|worker) + (1|item)", 150, 500, 10_000),
    "binomial_30k": ("binomial", "y ~ system + (1|worker) + (1|item)", 450, 1500, 30_000),
    "binomial_paper_10k": ("binomial", _PAPER, 150, 500, 10_000),
    "binomial_paper_2k": ("binomial", _PAPER, 50, 100, 2_000),
    "poisson_paper_10k": ("poisson", _PAPER, 150, 500, 10_000),
}


def crowd_glmm(family: str, n_workers: int = 300, n_items: int = 1000, n_ratings: int = 20_000,
               seed: int = 2020) -> Any:
    """A crowd file: 4 systems, heavy-tailed worker activity, a binary or count response."""
    import numpy as np
    import pandas as pd
    g = np.random.default_rng(seed)
    counts = np.clip(np.round(5 * (g.pareto(1.2, n_workers) + 1.0)), 5, 200).astype(int)
    while counts.sum() != n_ratings:                     # rescale within [5, 200]
        diff = n_ratings - counts.sum()
        np.add.at(counts, g.integers(0, n_workers, abs(diff)), np.sign(diff))
        counts = np.clip(counts, 5, 200)
    beta = np.array([-0.3, 0.0, 0.2, 0.5])
    sd = np.array([1.0, 0.3, 0.3, 0.3])
    u, v = g.normal(0, 1.0, (n_workers, 4)) * sd, g.normal(0, 0.7, (n_items, 4)) * sd
    rows = []
    for w in range(n_workers):
        cells = g.choice(n_items * 4, counts[w], replace=False)
        it, s = cells // 4, cells % 4
        eta = beta[s] + u[w, 0] + v[it, 0] + (u[w, s] + v[it, s]) * (s > 0)
        y = (g.random(s.size) < 1 / (1 + np.exp(-eta)) if family == "binomial"
             else g.poisson(np.exp(eta)))
        rows.append(pd.DataFrame({"worker": f"w{w:03d}", "item": [f"i{k:04d}" for k in it],
                                  "system": np.array(list("ABCD"))[s], "y": y.astype(float)}))
    return pd.concat(rows, ignore_index=True)


def _fit_cpu(formula: str, data: Any, family: str) -> tuple[float, Any]:
    import nlpower
    c = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nlpower.glmer(formula, data, family)
    return time.process_time() - c, fit


def run_crowd(cases: list[str], repeats: int, trees: list[str]) -> dict[str, Any]:
    """CPU per crowd-shaped fit: in this process, or under each tree in turn (fresh processes)."""
    out: dict[str, Any] = {}
    for c in cases:
        fam, formula, n_w, n_i, n = CROWD[c]
        print(f"\n== crowd {c}: {formula} ({fam}, {n_w} x {n_i}, {n} ratings); load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        if not trees:
            data = crowd_glmm(fam, n_w, n_i, n)
            _fit_cpu("y ~ system + (1|worker)", data.iloc[:2000], fam)          # warm-up
            cpu, fit = [], None
            for _ in range(repeats):
                sec, fit = _fit_cpu(formula, data, fam)
                cpu.append(sec)
            assert fit is not None
            out[c] = {"cpu": cpu, "loglik": fit.loglik, "fixef": fit.fixef.tolist(),
                      "sds": fit.varcorr()["sdcor"].tolist()}
            print(f"  CPU min {min(cpu):.2f} s ({', '.join(f'{t:.2f}' for t in cpu)}); "
                  f"logLik {fit.loglik!r}", flush=True)
            continue
        res: dict[str, Any] = {tree: {"cpu": []} for tree in trees}
        for _ in range(repeats):
            for tree in trees:                                  # alternating, one fit per process
                env = {**os.environ, "PYTHONPATH": tree}
                proc = subprocess.run([sys.executable, __file__, "--crowd", c, "--repeats", "1",
                                       "--out", os.devnull, "--json"], env=env,
                                      capture_output=True, text=True, timeout=7200)
                if proc.returncode != 0:
                    raise RuntimeError(proc.stderr.strip()[-500:])
                r = json.loads(proc.stdout.strip().splitlines()[-1])[c]
                res[tree]["cpu"] += r["cpu"]
                res[tree].update(loglik=r["loglik"], fixef=r["fixef"], sds=r["sds"])
                print(f"  {tree}: CPU {r['cpu'][0]:.2f} s, logLik {r['loglik']!r}", flush=True)
        for tree in trees:
            print(f"  {tree}: CPU min {min(res[tree]['cpu']):.2f} s", flush=True)
        out[c] = res
    return out


def run_cases_trees(cases: list[str], repeats: int, trees: list[str]) -> dict[str, Any]:
    """CPU minima of the native fits under each source tree in turn (``--repeats`` fits per
    process after its warm-up, the trees alternating ``--rounds`` = 3 times)."""
    out: dict[str, Any] = {}
    for c in cases:
        print(f"\n== case {c}; load average {os.getloadavg()[0]:.1f}", flush=True)
        res: dict[str, Any] = {tree: {"cpu": []} for tree in trees}
        for _ in range(3):
            for tree in trees:
                env = {**os.environ, "PYTHONPATH": tree}
                proc = subprocess.run([sys.executable, __file__, "--cases", c, "--engines",
                                       "native", "--repeats", str(repeats), "--out", os.devnull,
                                       "--json"], env=env, capture_output=True, text=True,
                                      timeout=7200)
                if proc.returncode != 0:
                    raise RuntimeError(proc.stderr.strip()[-500:])
                r = json.loads(proc.stdout.strip().splitlines()[-1])[c]
                res[tree]["cpu"] += r["cpu"]
                res[tree]["loglik"] = r["loglik"]
        for tree in trees:
            print(f"  {tree}: CPU min {1e3 * min(res[tree]['cpu']):.1f} ms, logLik "
                  f"{res[tree]['loglik']!r}", flush=True)
        out[c] = res
    return out


#: design sizes of --strategies (workers, items); about 20 ratings per item
SIZES = [(30, 100), (60, 200), (100, 330), (150, 500), (300, 1000), (450, 1500), (600, 2000)]


def run_strategies(repeats: int, sizes: list[tuple[int, int]] = SIZES) -> list[dict[str, Any]]:
    """Each crowd fit with the blocked factorisation and with pairs, alternating; CPU minima."""
    import nlpower.mixed.pairs as pm
    rows = []
    for fam, formula, *_ in [CROWD["binomial"], CROWD["binomial_paper"]]:
        for n_w, n_i in sizes:
            q = 5 if "system||" in formula else 1       # (system||g): 1 + 4 columns
            work = n_i * q * float(n_w * q) ** 2
            if work > 2e9:
                continue                                      # minutes per blocked fit
            data = crowd_glmm(fam, n_w, n_i, 20 * n_i)
            cpu: dict[str, list[float]] = {"blocked": [], "pairs": []}
            ll = {}
            for _ in range(repeats):
                for how, thr in (("blocked", math.inf), ("pairs", 0.0)):
                    pm.PAIR_MIN_WORK = pm.PAIR_WORK_PER_PAIR = thr
                    t, fit = _fit_cpu(formula, data, fam)
                    cpu[how].append(t)
                    ll[how] = fit.loglik
            row = {"family": fam, "formula": formula, "workers": n_w, "items": n_i,
                   "n1_qr2": work, "blocked": min(cpu["blocked"]), "pairs": min(cpu["pairs"]),
                   "dloglik": ll["pairs"] - ll["blocked"]}
            rows.append(row)
            print(f"{fam:8s} {'paper' if q > 1 else 'scalar':6s} {n_w:4d} x {n_i:5d}  "
                  f"n1 qr^2 {work:9.2e}  blocked {row['blocked']:7.2f} s  pairs "
                  f"{row['pairs']:7.2f} s  ({row['blocked'] / row['pairs']:.2f}x)  "
                  f"dlogLik {row['dloglik']:+.1e}  load {os.getloadavg()[0]:.1f}", flush=True)
    return rows


def validation_table(repeats: int = 1) -> tuple[list[str], bool]:
    """The GLMM rows of the validation corpus: every case of glmer_reference.R, both engines.

    A case passes when the native log-likelihood is at most ``1e-4`` below lme4's
    and, where lme4 converged cleanly (its own checks), fixed effects and
    SDs/correlations agree within ``1e-3``.
    """
    from glmm_cases import LME4_UNCONVERGED
    res = run(list(R_CALLS), repeats, ["native", "lme4"])
    rows = ["| case | native logLik | lme4 logLik | native - lme4 | max abs dfixef | "
            "max abs dSD | native s | lme4 s | speed-up | ok |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    all_ok = True
    for c, r in res.items():
        if "summary" not in r:
            rows.append(f"| {c} | skipped | | | | | | | | |")
            continue
        sm, nat, lme = r["summary"], r["native"], r["lme4"]
        clean = c not in LME4_UNCONVERGED
        ok = sm["loglik_native_minus_lme4"] >= -1e-4 and (
            not clean or (sm["max_dfixef"] <= 1e-3 and sm["max_dsd"] <= 1e-3))
        all_ok &= ok
        mark = "" if clean else "*"
        rows.append(f"| {c} | {nat['loglik']:.5f} | {lme['loglik']:.5f} | "
                    f"{sm['loglik_native_minus_lme4']:+.2e} | {sm['max_dfixef']:.1e}{mark} | "
                    f"{sm['max_dsd']:.1e}{mark} | {nat['median']:.2f} | {lme['median']:.2f} | "
                    f"{sm['lme4/native']:.1f}x | {'yes' if ok else 'NO'} |")
    return rows, all_ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(GLMM_CASES))
    ap.add_argument("--engines", default="native,lme4")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "bench_glmm.json"))
    ap.add_argument("--crowd", default="", help=f"crowd-shaped fits: {', '.join(CROWD)}")
    ap.add_argument("--trees", default="", help="source trees (PYTHONPATH) to alternate")
    ap.add_argument("--strategies", action="store_true", help="blocked vs pairs by size")
    ap.add_argument("--sizes", default="", help="--strategies' designs, e.g. 300x1000,600x2000")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    if args.crowd or args.strategies:
        if args.strategies:
            sizes = [tuple(int(v) for v in z.split("x")) for z in args.sizes.split(",") if z]
            report: Any = run_strategies(args.repeats, sizes or SIZES)  # type: ignore[arg-type]
        else:
            crowd = [c for c in args.crowd.split(",") if c]
            bad = [c for c in crowd if c not in CROWD]
            if bad:
                ap.error(f"--crowd: unknown case {bad[0]!r}; choose from {', '.join(CROWD)}")
            report = run_crowd(crowd, args.repeats, [t for t in args.trees.split(",") if t])
        if args.json:
            print(json.dumps(report))
        elif args.out != os.devnull:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).with_name("bench_glmm_crowd.json").write_text(
                json.dumps(report, indent=2, default=str))
        return 0
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in GLMM_CASES and c not in R_CALLS:
            ap.error(f"--cases: unknown GLMM case {c!r}; choose from {', '.join(GLMM_CASES)} "
                     f"or the validation cases {', '.join(R_CALLS)}")
    trees = [t for t in args.trees.split(",") if t]
    if trees:                                  # native only, one process per tree, alternating
        report = run_cases_trees(cases, args.repeats, trees)
        if args.json:
            print(json.dumps(report))
        return 0
    report = run(cases, args.repeats, [e for e in args.engines.split(",") if e])
    if args.json:
        print(json.dumps({c: r["native"] for c, r in report.items()}))
        return 0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"cpu": cpu_model(), "cases": report}, indent=2,
                                         default=str))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
