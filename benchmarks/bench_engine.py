"""Engine benchmark: nlpower's native engine vs lme4 (R) vs mixedlm (Rust).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_engine.py                  # all cases, 3 repeats
    .venv/bin/python benchmarks/bench_engine.py --cases i,iii --repeats 5
    .venv/bin/python benchmarks/bench_engine.py --engines native,lme4
    .venv/bin/python benchmarks/bench_engine.py --cases none --ordinal   # clmm vs ordinal::clmm

Cases (all fitted by maximum likelihood, REML = FALSE):

(i)   ``crossed``: 10 workers x 500 items x 2 systems, fully crossed (every
      worker rates every item under both systems; 10,000 ratings), Card et
      al. (2020) Table 16 "high variance" SDs, beta0 0.5, beta1 0.1, x = +-1:
      ``rating ~ x + (1 + x || worker) + (1 + x || item)``.
(ii)  ``insteval``: lme4's InstEval (73,421 ratings, 2,972 students ``s``,
      1,128 lecturers ``d``, 14 departments), exported by
      tests/reference/lme4_reference.R:
      ``y ~ service + (1 | s) + (1 | d) + (1 | dept)``.
(iii) ``nested4``: four systems with items nested in systems, after the
      Dathathri et al. (2020, PPLM) row of Card et al. Tables 12-15 (15
      workers, ~1358 items).  Construction: 4 systems x 340 items = 1,360
      items, each item one system's output; every item rated by 14 of the
      15 workers (balanced rotation: CrossedDesign(15, 1360, 4,
      workers_per_item=14, items="nested")), giving 19,040 ratings -- the
      ~19,000 ratings of the brief with the paper's worker and item counts.
      Parameters: presets.dataset("dathathri-pplm").  Model, sum contrasts:
      ``rating ~ system + (system || item) + (system || worker)``.
(iv)  ``sparse4``: a sparse crowd study -- 225 workers, 100 items, 4 systems
      paired (every item under every system), each item rated by 5 workers
      (2,000 ratings: CrossedDesign(225, 100, 4, workers_per_item=5)),
      presets.dataset("hashimoto-reddit"); the formula of (iii).

Pilot-file cases (``da2``, ``nested4s``, ``sys20``, ``expert3``, ``crowd2``,
``full6``): generated files in the shapes of six real pilot studies (sizes,
sparsity, nesting and rating counts of the real files), fitted with the
paper's model (the package's default for nested items; the item:system model
for 20 systems); see ``benchmarks/pilot_shapes.py``.  For the per-system
terms the per-system SDs are compared, as for (iii).

GLMM cases (``cbpp``, ``grouseticks``, ``verbagg``, ``verbagg_slope``,
``crossed_sim``): nlpower's ``glmer`` against lme4's ``glmer`` with its
defaults, timed in the same run; see ``benchmarks/bench_glmm.py``, which runs
them (the native/lme4 ratio is printed per case).

Data for (i), (iii) and (iv) come from ``nlpower.simulate`` (fixed seeds); if the
simulator cannot be imported, from a small numpy generator of the same model.
Every engine fits the same CSV (written to benchmarks/out/data/).

Timing: wall-clock of the fit call only -- ``lmer()`` for the native engine
and mixedlm (including their model-frame construction), ``system.time()``
around ``lmer()`` inside R for lme4 (R start-up, data loading and
``library(lme4)`` excluded).  Median over ``--repeats`` fits (fewer when one
engine's fits exceed ``--budget`` seconds in total for a case).  Also the CPU
time of each fit (``time.process_time`` for the Python engines, user + system
of ``system.time()`` for lme4), whose minimum is the better comparison on a
shared machine (other processes inflate wall clock far more than CPU time).  A warm-up
fit of a small model precedes the timings in Python.  BLAS/Rayon threads are
pinned to ``--threads`` (default 1) so that engines compare like for like.

Agreement between engines: max abs difference in objective (ML deviance),
fixed effects (matched by position: R and nlpower name sum contrasts
``system1..3``, mixedlm ``system.1..3``) and SDs.  For (iii) and (iv) the individual
SDs of ``(system || g)`` = ``(1|g) + (0 + system|g)`` are not identified
(``s0^2 + Sigma`` is all the likelihood sees), so the per-system SDs
``sqrt(s0^2 + Sigma[k, k])`` are compared instead.

mixedlm does not follow lme4's ``||`` expansion for factors, so it gets the
explicit ``(1|g) + (0 + f|g)`` form (for every case, for uniformity).

Results: printed, and written to ``benchmarks/out/bench_engine.json``.
Engines that are not installed (R/lme4, mixedlm) are reported as "skipped".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "RAYON_NUM_THREADS", "POLARS_MAX_THREADS")


def _threads_arg(argv: list[str]) -> str:
    """``--threads`` of the command line (default 1)."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


if __name__ == "__main__":
    # OpenBLAS reads its thread count when numpy is first imported (by the imports below):
    # set it now, not in main(), or the native engine's set-up runs on every core
    for _var in THREAD_VARS:
        os.environ[_var] = _threads_arg(sys.argv[1:])
from bench_glmm import GLMM_CASES, cpu_model  # noqa: E402
from bench_glmm import run as run_glmm  # noqa: E402
from pilot_shapes import SHAPES, make_shape  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
INSTEVAL = ROOT / "tests" / "reference" / "data" / "insteval.csv.gz"

CASES: dict[str, dict[str, Any]] = {
    "i": {
        "name": "crossed",
        "formula": "rating ~ x + (1 + x || worker) + (1 + x || item)",
        "mixedlm": "rating ~ x + (1 | worker) + (0 + x | worker) + (1 | item) + (0 + x | item)",
        "factors": ["worker", "item", "system"],
        "contrasts": None,
    },
    "ii": {
        "name": "insteval",
        "formula": "y ~ service + (1 | s) + (1 | d) + (1 | dept)",
        "mixedlm": "y ~ service + (1 | s) + (1 | d) + (1 | dept)",
        "factors": ["service", "s", "d", "dept"],
        "contrasts": None,
    },
    "iii": {
        "name": "nested4",
        "formula": "rating ~ system + (system || item) + (system || worker)",
        "mixedlm": ("rating ~ system + (1 | item) + (0 + system | item) + (1 | worker) "
                    "+ (0 + system | worker)"),
        "factors": ["worker", "item", "system"],
        "contrasts": {"system": "sum"},
    },
    "iv": {
        "name": "sparse4",
        "formula": "rating ~ system + (system || item) + (system || worker)",
        "mixedlm": ("rating ~ system + (1 | item) + (0 + system | item) + (1 | worker) "
                    "+ (0 + system | worker)"),
        "factors": ["worker", "item", "system"],
        "contrasts": {"system": "sum"},
    },
}
# the shapes of real pilot files (benchmarks/pilot_shapes.py): sum contrasts, ML
for _name, _shape in SHAPES.items():
    CASES[_name] = {"name": _name, "formula": _shape["formula"], "mixedlm": _shape["mixedlm"],
                    "factors": ["worker", "item", "system"], "contrasts": {"system": "sum"},
                    "per_system": "system ||" in _shape["formula"]}
ENGINES = ("native", "lme4", "mixedlm")


# ----------------------------------------------------------------------------- data

def make_data(case: str, path: Path) -> None:
    """Write the case's data set to ``path`` (CSV)."""
    import numpy as np
    import pandas as pd

    if case == "ii":
        pd.read_csv(INSTEVAL, dtype=str).to_csv(path, index=False)
        return
    if case in SHAPES:
        make_shape(case).to_csv(path, index=False)
        return
    try:
        from nlpower import CrossedDesign, presets, simulate

        if case == "i":
            df = simulate(CrossedDesign(10, 500, 2), presets.high_variance(effect=0.1), rng=20201116)
        elif case == "iv":
            design = CrossedDesign(225, 100, 4, workers_per_item=5)
            df = simulate(design, presets.dataset("hashimoto-reddit").params, rng=20201118)
        else:
            design = CrossedDesign(15, 1360, 4, workers_per_item=14, items="nested")
            df = simulate(design, presets.dataset("dathathri-pplm").params, rng=20201117)
        df = df[["worker", "item", "system", *(["x"] if case == "i" else []), "rating"]]
    except ImportError:                                   # simulator not available
        if case == "iv":
            raise
        df = _numpy_data(case, np.random.default_rng(20201116 if case == "i" else 20201117))
    df.to_csv(path, index=False)


def _numpy_data(case: str, rng: Any) -> Any:
    """Fallback generator (same model as nlpower.simulate) when nlpower is not importable."""
    import numpy as np
    import pandas as pd

    if case == "i":
        nw, ni = 10, 500
        w, i, s = np.meshgrid(np.arange(nw), np.arange(ni), np.arange(2), indexing="ij")
        w, i, s = w.ravel(), i.ravel(), s.ravel()
        x = np.where(s == 0, -1.0, 1.0)
        y = (0.5 + rng.normal(0, 0.01, nw)[w] + rng.normal(0, 0.04, ni)[i]
             + (0.1 + rng.normal(0, 0.11, nw)[w] + rng.normal(0, 0.14, ni)[i]) * x
             + rng.normal(0, 0.26, w.size))
        return pd.DataFrame({"worker": [f"w{k:02d}" for k in w], "item": [f"i{k:04d}" for k in i],
                             "system": np.array(["A", "B"])[s], "x": x, "rating": y})
    nw, ni, k = 15, 1360, 4
    item_sys = np.repeat(np.arange(k), ni // k)
    rows = [(w, i) for i in range(ni) for w in range(nw) if w != i % nw]
    w = np.array([r[0] for r in rows])
    i = np.array([r[1] for r in rows])
    s = item_sys[i]
    mu = 0.62 + np.array([-(0.04 - 0.05 - 0.03), 0.04, -0.05, -0.03])
    wk = rng.normal(0, 1, (nw, k)) * np.array([0.04, 0.05, 0.05, 0.05])
    ik = rng.normal(0, 1, (ni, k)) * np.array([0.16, 0.19, 0.16, 0.16])
    y = mu[s] + wk[w, s] + ik[i, s] + rng.normal(0, 0.16, w.size)
    return pd.DataFrame({"worker": [f"w{j:02d}" for j in w], "item": [f"i{j:04d}" for j in i],
                         "system": np.array(list("ABCD"))[s], "rating": y})


def read_data(case: str, path: Path) -> Any:
    import pandas as pd

    return pd.read_csv(path, dtype={f: str for f in CASES[case]["factors"]})


# ----------------------------------------------------------------------------- summaries

def base_grp(grp: str) -> str:
    return re.sub(r"\.\d+$", "", grp)


def identified_sds(case: str, rows: list[tuple[str, str | None, str | None, float]],
                   sigma: float) -> dict[str, float]:
    """SDs that every engine must agree on, keyed ``group:column``.

    ``rows`` are VarCorr rows ``(grp, var1, var2, vcov)`` (variances only
    needed).  For (iii) the per-system SDs ``sqrt(s0^2 + Sigma[k, k])``.
    """
    import math

    var: dict[tuple[str, str], float] = {}
    for grp, v1, v2, vc in rows:
        if v2 is None and v1 is not None and grp != "Residual":
            var[(base_grp(grp), v1)] = float(vc)
    out: dict[str, float] = {"Residual": sigma}
    if case in ("iii", "iv") or CASES[case].get("per_system"):
        for g in ("item", "worker"):
            s0 = var.get((g, "(Intercept)"), 0.0)
            cols = sorted(c for (gg, c) in var if gg == g and c != "(Intercept)")
            for k, c in enumerate(cols):
                out[f"{g}:system#{k + 1}"] = math.sqrt(max(s0 + var[(g, c)], 0.0))
        return out
    for (g, c), v in var.items():
        out[f"{g}:{c}"] = math.sqrt(max(v, 0.0))
    return out


# ----------------------------------------------------------------------------- engines

def run_native(case: str, path: Path, repeats: int, budget: float) -> dict[str, Any]:
    from nlpower.lmm import lmer

    spec = CASES[case]
    df = read_data(case, path)
    times, cpu = [], []
    fit = None
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0, t0 = time.process_time(), time.perf_counter()
            fit = lmer(spec["formula"], df, REML=False, contrasts=spec["contrasts"])
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        if sum(times) > budget:
            break
    assert fit is not None
    rows = [(r.grp, r.var1 if isinstance(r.var1, str) else None,
             r.var2 if isinstance(r.var2, str) else None, r.vcov)
            for r in fit.varcorr().itertuples(index=False)]
    return {"times": times, "cpu": cpu, "objective": float(fit.deviance),
            "fixef": [float(v) for v in fit.fixef.to_numpy()],
            "fixef_names": list(fit.fixef.index),
            "sds": identified_sds(case, rows, float(fit.sigma)),
            "singular": bool(fit.singular), "converged": bool(fit.converged),
            "n_evals": fit.optinfo.get("n_evals")}


def run_mixedlm(case: str, path: Path, repeats: int, budget: float) -> dict[str, Any]:
    import mixedlm

    spec = CASES[case]
    df = read_data(case, path)
    times, cpu = [], []
    res = None
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0, t0 = time.process_time(), time.perf_counter()
            res = mixedlm.lmer(spec["mixedlm"], df, REML=False, contrasts=spec["contrasts"])
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        if sum(times) > budget:
            break
    assert res is not None
    rows: list[tuple[str, str | None, str | None, float]] = []
    for grp, g in res.VarCorr().groups.items():
        for k, c in enumerate(g.term_names):
            rows.append((grp, str(c), None, float(g.cov[k, k])))
    fx = res.fixef()
    sigma = float(res.sigma() if callable(res.sigma) else res.sigma)
    dev = res.deviance() if callable(res.deviance) else res.deviance
    return {"times": times, "cpu": cpu, "objective": float(dev),
            "fixef": [float(v) for v in fx.values()], "fixef_names": list(fx),
            "sds": identified_sds(case, rows, sigma),
            "singular": bool(res.isSingular()), "converged": bool(res.converged)}


R_TEMPLATE = r"""
suppressPackageStartupMessages(library(lme4))
suppressPackageStartupMessages(library(jsonlite))
factors <- %(factors)s
d <- read.csv(%(path)s, colClasses = setNames(rep("character", length(factors)), factors))
for (f in factors) d[[f]] <- factor(d[[f]])
ctr <- %(contrasts)s
times <- numeric(0)
cpu <- numeric(0)
repeat {
  st <- system.time(fit <- suppressMessages(lmer(%(formula)s, data = d, REML = FALSE,
                                                 contrasts = ctr)))
  times <- c(times, st[["elapsed"]])
  cpu <- c(cpu, st[["user.self"]] + st[["sys.self"]])
  if (length(times) >= %(repeats)d || sum(times) > %(budget)f) break
}
vc <- as.data.frame(VarCorr(fit))
cat(toJSON(list(times = times, cpu = cpu, objective = deviance(fit), fixef = unname(fixef(fit)),
                fixef_names = names(fixef(fit)), sigma = sigma(fit),
                vc = vc, singular = isSingular(fit),
                lme4 = format(packageVersion("lme4")), R = R.version.string),
           auto_unbox = TRUE, digits = NA, na = "null"))
"""


def run_lme4(case: str, path: Path, repeats: int, budget: float) -> dict[str, Any]:
    spec = CASES[case]
    ctr = "NULL" if not spec["contrasts"] else \
        "list(" + ", ".join(f'{k} = "contr.{v}"' for k, v in spec["contrasts"].items()) + ")"
    code = R_TEMPLATE % {
        "factors": "c(" + ", ".join(f'"{f}"' for f in spec["factors"]) + ")",
        "path": json.dumps(str(path)), "contrasts": ctr, "formula": spec["formula"],
        "repeats": repeats, "budget": budget,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(code)
        script = fh.name
    try:
        proc = subprocess.run(["Rscript", "--vanilla", script], capture_output=True, text=True,
                              timeout=max(600.0, 4 * budget))
    finally:
        os.unlink(script)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-500:])
    r = json.loads(proc.stdout)
    vc = r["vc"]
    rows = [(vc["grp"][k], vc["var1"][k], vc["var2"][k], vc["vcov"][k])
            for k in range(len(vc["grp"]))] if isinstance(vc, dict) else \
        [(x["grp"], x.get("var1"), x.get("var2"), x["vcov"]) for x in vc]
    times = r["times"] if isinstance(r["times"], list) else [r["times"]]
    cpu = r["cpu"] if isinstance(r["cpu"], list) else [r["cpu"]]
    fixef = r["fixef"] if isinstance(r["fixef"], list) else [r["fixef"]]
    names = r["fixef_names"] if isinstance(r["fixef_names"], list) else [r["fixef_names"]]
    return {"times": times, "cpu": cpu, "objective": float(r["objective"]), "fixef": fixef,
            "fixef_names": names, "sds": identified_sds(case, rows, float(r["sigma"])),
            "singular": bool(r["singular"]), "version": f"lme4 {r['lme4']}, {r['R']}"}


def availability(engine: str) -> str | None:
    """None if the engine can run, else the reason it is skipped."""
    if engine == "native":
        return None
    if engine == "mixedlm":
        try:
            import mixedlm  # noqa: F401
        except ImportError as exc:
            return f"mixedlm not installed ({exc}); pip install 'nlpower[bench]'"
        return None
    if shutil.which("Rscript") is None:
        return "Rscript not found"
    proc = subprocess.run(["Rscript", "-e", "suppressMessages(library(lme4)); library(jsonlite)"],
                          capture_output=True, text=True)
    return None if proc.returncode == 0 else "R packages lme4/jsonlite not loadable"


def warm_up(engine: str) -> None:
    """One small fit so imports and first-call costs are not timed."""
    import pandas as pd

    d = pd.read_csv(ROOT / "tests" / "reference" / "data" / "sleepstudy.csv",
                    dtype={"Subject": str})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if engine == "native":
            from nlpower.lmm import lmer
            lmer("Reaction ~ Days + (Days | Subject)", d, REML=False)
        elif engine == "mixedlm":
            import mixedlm
            mixedlm.lmer("Reaction ~ Days + (Days | Subject)", d, REML=False)


# ----------------------------------------------------------------------------- report

def max_abs_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    keys = set(a["sds"]) & set(b["sds"])
    return {
        "objective": abs(a["objective"] - b["objective"]),
        "fixef": max(abs(x - y) for x, y in zip(a["fixef"], b["fixef"], strict=True)),
        "sd": max(abs(a["sds"][k] - b["sds"][k]) for k in keys) if keys else float("nan"),
        "sd_keys_missing": sorted(set(a["sds"]) ^ set(b["sds"])),  # type: ignore[dict-item]
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="i,ii,iii,iv," + ",".join([*SHAPES, *GLMM_CASES]),
                    help="comma-separated subset of i,ii,iii,iv, the pilot shapes "
                         f"{','.join(SHAPES)} (benchmarks/pilot_shapes.py) and the GLMM cases "
                         f"{','.join(GLMM_CASES)} (benchmarks/bench_glmm.py)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=120.0,
                    help="stop repeating an engine/case once its fits took this many seconds")
    ap.add_argument("--threads", default="1", help="BLAS/OpenMP/Rayon threads (default 1)")
    ap.add_argument("--out", default=str(OUT / "bench_engine.json"))
    ap.add_argument("--ordinal", action="store_true",
                    help="also the ordinal cases: nlpower.clmm vs ordinal::clmm (bench_ordinal.py)")
    args = ap.parse_args(argv)
    for var in THREAD_VARS:           # for R and for anything that reads them later
        os.environ[var] = args.threads

    cases = [c.strip() for c in args.cases.split(",") if c.strip() and c.strip() != "none"]
    glmm_cases = [c for c in cases if c in GLMM_CASES]
    cases = [c for c in cases if c not in GLMM_CASES]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for c in cases:
        if c not in CASES:
            ap.error(f"--cases: unknown case {c!r}; choose from {', '.join(CASES)}")
    for e in engines:
        if e not in ENGINES:
            ap.error(f"--engines: unknown engine {e!r}; choose from {', '.join(ENGINES)}")

    data_dir = OUT / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    skipped = {e: availability(e) for e in engines}
    for e, why in skipped.items():
        if why is None and e != "lme4":
            warm_up(e)
    runners = {"native": run_native, "lme4": run_lme4, "mixedlm": run_mixedlm}
    report: dict[str, Any] = {"threads": args.threads, "repeats": args.repeats,
                              "budget": args.budget, "python": sys.version.split()[0],
                              "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(),
                              "cases": {}}
    print(f"CPU: {cpu_model()}; cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} "
          "(wall-clock times and CPU minima: a loaded machine inflates wall clock most)", flush=True)
    for c in cases:
        spec = CASES[c]
        path = data_dir / f"{spec['name']}.csv"
        make_data(c, path)
        print(f"\n== case ({c}) {spec['name']}: {spec['formula']}  [{path.name}]", flush=True)
        res: dict[str, Any] = {}
        for e in engines:
            if skipped[e] is not None:
                res[e] = {"skipped": skipped[e]}
                print(f"  {e:8s} skipped: {skipped[e]}", flush=True)
                continue
            try:
                res[e] = runners[e](c, path, args.repeats, args.budget)
            except Exception as exc:  # report and go on with the other engines
                res[e] = {"skipped": f"failed: {type(exc).__name__}: {exc}"}
                print(f"  {e:8s} skipped: {res[e]['skipped']}", flush=True)
                continue
            res[e]["median"] = statistics.median(res[e]["times"])
            res[e]["min"] = min(res[e]["times"])
            res[e]["cpu_min"] = min(res[e]["cpu"])
            print(f"  {e:8s} {res[e]['median']:8.3f} s  (median of {len(res[e]['times'])}: "
                  f"{', '.join(f'{t:.3f}' for t in res[e]['times'])}; CPU min "
                  f"{res[e]['cpu_min']:.3f} s)  deviance {res[e]['objective']:.6f}", flush=True)
        nat = res.get("native", {})
        summary: dict[str, Any] = {}
        for e in ("lme4", "mixedlm"):
            other = res.get(e, {})
            if "median" in nat and "median" in other:
                summary[f"{e}/native"] = other["median"] / nat["median"]
                summary[f"{e}/native (min)"] = other["min"] / nat["min"]
                summary[f"{e}/native (CPU)"] = other["cpu_min"] / nat["cpu_min"]
                summary[f"diff_native_{e}"] = max_abs_diff(nat, other)
                d = summary[f"diff_native_{e}"]
                print(f"  {e}/native time ratio {summary[f'{e}/native']:.2f} (of the minima "
                      f"{summary[f'{e}/native (min)']:.2f}, of the CPU minima "
                      f"{summary[f'{e}/native (CPU)']:.2f}); max |diff| "
                      f"objective {d['objective']:.2e}, fixef {d['fixef']:.2e}, SD {d['sd']:.2e}",
                      flush=True)
            elif e in res:
                print(f"  {e}/native: skipped", flush=True)
        if "median" in res.get("lme4", {}) and "median" in res.get("mixedlm", {}):
            d = max_abs_diff(res["lme4"], res["mixedlm"])
            summary["diff_lme4_mixedlm"] = d
            print(f"  mixedlm vs lme4: max |diff| objective {d['objective']:.2e}, "
                  f"fixef {d['fixef']:.2e}, SD {d['sd']:.2e}", flush=True)
        report["cases"][c] = {"name": spec["name"], "formula": spec["formula"],
                              "results": res, "summary": summary}
    if args.ordinal:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_ordinal import run_all  # the cumulative link cases, same run
        print("\n== ordinal: nlpower.clmm vs ordinal::clmm", flush=True)
        report["ordinal"] = run_all(args.repeats)
    if glmm_cases:              # nlpower.glmer vs lme4::glmer (mixedlm fits no GLMMs)
        report["glmm"] = run_glmm(glmm_cases, args.repeats,
                                  [e for e in engines if e in ("native", "lme4")])
    report["loadavg_end"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
