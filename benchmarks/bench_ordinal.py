"""Ordinal cases of the engine benchmark: ``nlpower.clmm`` vs ``ordinal::clmm`` in one run.

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ordinal.py --repeats 3
    .venv/bin/python benchmarks/bench_engine.py --cases none --ordinal   # the same, from there

Cases (logit link, flexible thresholds, Laplace):

- ``wine``: ``rating ~ temp + contact + (1|judge)`` (72 ratings, 9 judges);
- ``wine_agq10``: the same by adaptive Gauss-Hermite quadrature, ``nAGQ=10``;
- ``soup``: ``SURENESS ~ PROD + (1|RESP)`` (1,847 ratings, 185 respondents);
- ``sim1``: ``rating ~ system + x + (1|worker)`` (600 ratings, worker SD 2);
- ``sim2``: ``rating ~ x + (1 + x|worker)`` (600 ratings, correlated slopes);
- ``crowd20k``: 20,000 crossed crowd ratings (200 workers, 1,000 items, 2 systems,
  each item x system rated by 10 workers), ``rating ~ x + (1|worker) + (1|item)`` --
  native only (``ordinal::clmm`` on crossed crowd files: see docs/ordinal.md).

Power replicates (``--replicates N``, native only): ``N`` replicates of
``nlpower.power(model, term="system")`` for a 5-category ``clmm`` (logit) on a
crossed 10 workers x 100 items design, ``y ~ system + (1 | worker) + (1 |
item)`` (each replicate simulated, refitted and its Wald test taken), in one
process; wall and CPU time per replicate and the power::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ordinal.py --cases none --replicates 1000

Which of the fitter's paths run on that work and on the ``crowd20k`` fit, and the
replicates with and without one reference Hessian scaling their optimiser
(``--paths N``: ``N`` replicates each way, docs/engine.md)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ordinal.py --cases none --paths 200

The small one-scalar-term fits (``wine``, ``soup``) with and without the batched
Newton steps, alternating fit by fit in one process (``--newton N``: ``N`` fits
each way)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ordinal.py --cases none --newton 300

Timing: wall-clock of the fit call, median of ``--repeats``; ``system.time()``
around ``clmm()`` inside one R process (start-up and data loading excluded);
BLAS single-threaded.  Both sides first make one call (warm-up; its time sets
the batch size), then each repeat times back-to-back calls for at least
``--min-time`` seconds (default 0.2) and divides by their number, so that a
fit of a few milliseconds is not timed by one scheduler slice on a shared
machine; ``--min-time 0`` times one call per repeat.  The engines take turns:
one native repeat, then one R repeat (a fresh R process, warm-up included),
and so on, so that a change of the machine's load falls on both
(``--no-interleave``: all native repeats, then all R repeats in one process).  The CPU-time ratio
(process time in Python, user + system time in R) is printed too: on a loaded
machine it moves less than the wall-clock one.  Data: ``tests/reference/data`` (exported by
``tests/reference/clmm_reference.R``) and a fixed-seed simulation for ``crowd20k``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "reference" / "data"
CASES = {
    "wine": ("wine.csv", "rating ~ temp + contact + (1|judge)"),
    "wine_agq10": ("wine.csv", "rating ~ temp + contact + (1|judge)"),
    "soup": ("soup.csv", "SURENESS ~ PROD + (1|RESP)"),
    "sim1": ("clmm_sim1.csv", "rating ~ system + x + (1|worker)"),
    "sim2": ("clmm_sim2.csv", "rating ~ x + (1 + x|worker)"),
    "crowd20k": (None, "rating ~ x + (1|worker) + (1|item)"),
}
#: nAGQ of a case (default 1: Laplace)
NAGQ = {"wine_agq10": 10}
R_TIMER = r"""
suppressMessages(library(ordinal)); library(jsonlite)
args <- commandArgs(TRUE); d <- read.csv(args[1]); f <- as.formula(args[2]); reps <- as.integer(args[3])
nagq <- as.integer(args[4])
resp <- all.vars(f)[1]; d[[resp]] <- factor(d[[resp]], ordered = TRUE)
min_time <- as.numeric(args[5])
fit1 <- function() tryCatch(clmm(f, data = d, nAGQ = nagq), error = function(e) e)
t1 <- system.time(fm <- fit1())[["elapsed"]]     # first call: warm-up, sets the batch size
if (inherits(fm, "error")) { cat(toJSON(list(error = conditionMessage(fm)), auto_unbox = TRUE)); quit() }
ll <- as.numeric(logLik(fm)); calls <- max(1L, as.integer(ceiling(min_time / max(t1, 1e-3))))
times <- c(); cpu <- c()
for (r in seq_len(reps)) {
  st <- system.time(for (j in seq_len(calls)) fm <- fit1())
  times <- c(times, st[["elapsed"]] / calls)
  cpu <- c(cpu, (st[["user.self"]] + st[["sys.self"]]) / calls)
}
cat(toJSON(list(times = times, cpu = cpu, loglik = ll, calls = calls), digits = NA))
"""


def crowd20k(path: Path) -> None:
    rng = np.random.default_rng(20000)
    rows = [(w, i, x) for i in range(1000) for x in (-0.5, 0.5)
            for w in rng.choice(200, 10, replace=False)]
    d = pd.DataFrame(rows, columns=["worker", "item", "x"])
    lat = (0.3 * d.x + rng.normal(0, 1.5, 200)[d.worker] + rng.normal(0, 0.7, 1000)[d.item]
           + rng.logistic(size=len(d)))
    d["rating"] = np.digitize(lat, [-2.0, -0.7, 0.7, 2.0]) + 1
    d["worker"] = "w" + d.worker.astype(str)
    d["item"] = "i" + d.item.astype(str)
    d.to_csv(path, index=False)


def likert_replicates(n_sims: int, seed: int = 1) -> dict[str, Any]:
    """Time per replicate of power for the system term of a 10 x 100 crossed clmm."""
    import nlpower
    rng = np.random.default_rng(11)
    w, i = np.tile(np.arange(10), 100), np.repeat(np.arange(100), 10)
    system = ((w + i) % 2 == 0).astype(float)
    lat = (0.3 * system + rng.normal(0, 0.5, 10)[w] + rng.normal(0, 0.8, 100)[i]
           + rng.logistic(size=w.size))
    d = pd.DataFrame({"worker": [f"w{k:02d}" for k in w], "item": [f"i{k:03d}" for k in i],
                      "system": system,
                      "y": pd.Categorical(np.digitize(lat, [-1.5, -0.5, 0.5, 1.5]) + 1,
                                          ordered=True)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = nlpower.clmm("y ~ system + (1 | worker) + (1 | item)", d).with_params(
            fixef={"system": 0.3})
        nlpower.power(m, term="system", n_sims=4, rng=seed + 1)          # warm-up
        t, c = time.perf_counter(), time.process_time()
        res = nlpower.power(m, term="system", n_sims=n_sims, rng=seed)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    return {"n_sims": n_sims, "elapsed_s": wall, "cpu_s": cpu, "s_per_replicate": wall / n_sims,
            "cpu_s_per_replicate": cpu / n_sims, "power": float(res.power)}


def fast_paths(n_sims: int, rounds: int = 2) -> dict[str, Any]:
    """Which fit paths run on the users' work, and what the replicates' reference Hessian saves.

    The 10 x 100 Likert power replicates (:func:`likert_replicates`) with and
    without the reference Hessian that scales every replicate's optimiser
    (off: each replicate refitted from the truth in the fitter's own
    coordinates), CPU per replicate (min of ``rounds``), and the
    20,000-rating crowd fit; counted by wrapping them: the batched Newton
    steps (``newton_steps``), the refits given a reference Hessian
    (``refit_with_curvature``) and the others (``refit``).
    """
    import nlpower
    import nlpower.ordinal.model as om
    import nlpower.ordinal.newton as newton
    import nlpower.study.analysis as sa
    counts: dict[str, int] = {}
    steps, refit = newton.newton_steps, om.ClmmModel.refit

    def counted_steps(*a: Any, **k: Any) -> Any:
        counts["newton_steps"] = counts.get("newton_steps", 0) + 1
        return steps(*a, **k)

    def counted_refit(self: Any, *a: Any, **k: Any) -> Any:
        key = "refit" if k.get("curvature") is None else "refit_with_curvature"
        counts[key] = counts.get(key, 0) + 1
        return refit(self, *a, **k)

    out: dict[str, Any] = {}
    refits = sa.ordinal_refits
    try:
        newton.newton_steps = counted_steps
        om.ClmmModel.refit = counted_refit          # type: ignore[method-assign]
        for _ in range(rounds):
            for mode in ("on", "off"):
                counts.clear()
                if mode == "off":
                    sa.ordinal_refits = lambda *a, **k: None      # type: ignore[assignment]
                row = likert_replicates(n_sims)
                sa.ordinal_refits = refits
                key = f"likert_reference_hessian_{mode}"
                if key not in out or row["cpu_s_per_replicate"] < out[key]["cpu_s_per_replicate"]:
                    out[key] = {"cpu_s_per_replicate": row["cpu_s_per_replicate"],
                                "power": row["power"], "calls": dict(counts)}
        path = Path(tempfile.mkdtemp()) / "crowd20k.csv"
        crowd20k(path)
        counts.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = time.process_time()
            fit = nlpower.clmm(CASES["crowd20k"][1], pd.read_csv(path))
        out["crowd20k"] = {"cpu_s": time.process_time() - c, "loglik": fit.loglik,
                           "calls": dict(counts)}
    finally:
        sa.ordinal_refits = refits
        newton.newton_steps = steps
        om.ClmmModel.refit = refit                  # type: ignore[method-assign]
    on, off = out["likert_reference_hessian_on"], out["likert_reference_hessian_off"]
    out["reference_hessian_speedup"] = off["cpu_s_per_replicate"] / on["cpu_s_per_replicate"]
    return out


def newton_or_general(pairs: int, cases: tuple[str, ...] = ("wine", "soup")) -> dict[str, Any]:
    """The small one-scalar-term fits with and without the batched Newton steps, in one process.

    ``clmm(...)`` of each case alternately with :data:`nlpower.ordinal.newton.BATCH_LIMIT`
    as shipped (``newton``) and 0 (``general``: L-BFGS-B in the start's scaled
    coordinates, then the finish's Newton steps), fit by fit, ``pairs`` each (CPU);
    minima, medians, the median of the paired ratios, the log-likelihoods and the
    work (evaluations) of each.
    """
    import nlpower.ordinal.newton as newton
    from nlpower.ordinal import clmm
    limit = newton.BATCH_LIMIT
    out: dict[str, Any] = {}
    try:
        for name in cases:
            file, formula = CASES[name]
            d = pd.read_csv(DATA / file)
            times: dict[str, list[float]] = {"newton": [], "general": []}
            fits: dict[str, Any] = {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for i in range(pairs + 2):          # (the first two: warm-up)
                    for path in (("newton", "general") if i % 2 else ("general", "newton")):
                        newton.BATCH_LIMIT = limit if path == "newton" else 0
                        c = time.process_time()
                        fits[path] = clmm(formula, d)
                        if i >= 2:
                            times[path].append(time.process_time() - c)
            row: dict[str, Any] = {}
            for path, t in times.items():
                row[path] = {"min_ms": 1e3 * min(t), "median_ms": 1e3 * statistics.median(t),
                             "loglik": fits[path].loglik, "n_evals": fits[path].core.n_evals,
                             "message": fits[path].core.message}
            row["paired_median_general_over_newton"] = statistics.median(
                g / n for g, n in zip(times["general"], times["newton"], strict=True))
            out[name] = row
    finally:
        newton.BATCH_LIMIT = limit
    return out


def run_native(path: Path, formula: str, repeats: int, nAGQ: int = 1,
               min_time: float = 0.0) -> dict[str, Any]:
    from nlpower.ordinal import clmm
    d = pd.read_csv(path)

    def fit1() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return clmm(formula, d, nAGQ=nAGQ)

    t = time.perf_counter()
    fit = fit1()                        # first call: warm-up, sets the batch size
    calls = max(1, math.ceil(min_time / max(time.perf_counter() - t, 1e-3)))
    times, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fit = fit1()
        times.append((time.perf_counter() - t) / calls)
        cpu.append((time.process_time() - c) / calls)
    return {"times": times, "median": statistics.median(times), "cpu": cpu,
            "cpu_median": statistics.median(cpu), "loglik": fit.loglik,
            "converged": fit.converged, "calls": calls}


def run_r(path: Path, formula: str, repeats: int, nAGQ: int = 1,
          min_time: float = 0.0) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(R_TIMER)
    try:
        out = subprocess.run(["Rscript", "--vanilla", fh.name, str(path), formula, str(repeats),
                              str(nAGQ), str(min_time)],
                             capture_output=True, text=True, timeout=3600)
    finally:
        os.unlink(fh.name)
    if out.returncode != 0:
        return {"skipped": out.stderr.strip()[-300:]}
    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if "times" in res:
        res["times"] = [float(t) for t in np.ravel(res["times"])]
        res["cpu"] = [float(t) for t in np.ravel(res["cpu"])]
        res["loglik"] = float(np.ravel(res["loglik"])[0])
        res["median"] = statistics.median(res["times"])
        res["cpu_median"] = statistics.median(res["cpu"])
    return res


def _pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One engine's repeats, each from its own :func:`run_native`/:func:`run_r` call."""
    bad = [q for q in runs if "times" not in q]
    if bad:
        return bad[0]
    out = dict(runs[-1])
    out["times"] = [t for q in runs for t in q["times"]]
    out["cpu"] = [t for q in runs for t in q["cpu"]]
    out["median"] = statistics.median(out["times"])
    out["cpu_median"] = statistics.median(out["cpu"])
    return out


def run_all(repeats: int = 3, cases: list[str] | None = None, r: bool = True,
            min_time: float = 0.2, interleave: bool = True) -> dict[str, Any]:
    """Time every case with both engines; print and return the ratios."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    report: dict[str, Any] = {}
    tmp = Path(tempfile.mkdtemp())
    for name in cases or list(CASES):
        file, formula = CASES[name]
        path = DATA / file if file else tmp / f"{name}.csv"
        if file is None:
            crowd20k(path)
        nagq = NAGQ.get(name, 1)
        with_r = r and name != "crowd20k"
        if interleave and with_r:
            # one repeat of each engine in turn (a fresh R process each time), so that a
            # change of the machine's load falls on both sides alike
            runs = [(run_native(path, formula, 1, nagq, min_time),
                     run_r(path, formula, 1, nagq, min_time)) for _ in range(repeats)]
            nat, rr = _pooled([n for n, _ in runs]), _pooled([q for _, q in runs])
        else:
            nat = run_native(path, formula, repeats, nagq, min_time)
            rr = run_r(path, formula, repeats, nagq, min_time) if with_r else {
                "skipped": "not run (crossed crowd file; see docs/ordinal.md)"}
        row = {"formula": formula, "native": nat, "ordinal": rr}
        msg = f"{name:10s} native {nat['median']:7.3f} s (loglik {nat['loglik']:.4f})"
        if "median" in rr:
            row["ratio"] = rr["median"] / nat["median"]
            row["cpu_ratio"] = rr["cpu_median"] / max(nat["cpu_median"], 1e-9)
            msg += (f" | ordinal::clmm {rr['median']:7.3f} s (loglik {rr['loglik']:.4f}) | "
                    f"ratio {row['ratio']:.1f}x (CPU time {row['cpu_ratio']:.1f}x)")
        else:
            msg += f" | ordinal::clmm {rr.get('skipped') or rr.get('error')}"
        print(msg, flush=True)
        report[name] = row
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-r", action="store_true", help="native timings only")
    ap.add_argument("--no-interleave", action="store_true",
                    help="all native repeats, then all R repeats in one R process (default: "
                         "alternate, one R process per repeat)")
    ap.add_argument("--min-time", type=float, default=0.2,
                    help="each repeat times back-to-back calls for at least this many seconds "
                         "(per-call time = total / calls; 0: one call per repeat)")
    ap.add_argument("--replicates", type=int, default=0,
                    help="also time this many Likert power replicates (10 x 100 crossed clmm)")
    ap.add_argument("--paths", type=int, default=0,
                    help="count the fitter's paths on this many Likert replicates and "
                         "the crowd20k fit, and time the replicates with and without the "
                         "reference Hessian")
    ap.add_argument("--newton", type=int, default=0,
                    help="time wine and soup this many times each with and without the batched "
                         "Newton steps, alternating fit by fit")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "bench_ordinal.json"))
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c and c != "none"]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        ap.error(f"--cases: unknown {', '.join(unknown)}; choose from {', '.join(CASES)} or none")
    rep = run_all(args.repeats, cases, r=not args.no_r, min_time=args.min_time,
                  interleave=not args.no_interleave) if cases else {}
    if args.replicates > 0:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        row = likert_replicates(args.replicates)
        print(f"likert 10x100 power replicates: {row['s_per_replicate'] * 1000:.1f} ms wall, "
              f"{row['cpu_s_per_replicate'] * 1000:.1f} ms CPU per replicate "
              f"({row['n_sims']} replicates, power {row['power']:.3f})", flush=True)
        rep["likert_replicates"] = row
    if args.paths > 0:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        rep["fast_paths"] = fp = fast_paths(args.paths)
        for key, row in fp.items():
            print(f"{key}: {row}", flush=True)
    if args.newton > 0:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        rep["newton_or_general"] = ng = newton_or_general(args.newton)
        for key, row in ng.items():
            print(f"{key}: {row}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rep, indent=2, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
