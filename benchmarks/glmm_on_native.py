"""One PIRLS step and whole fits through the shared factorisation and the native strategy.

glmer's PIRLS and clmm's Laplace factor ``Lambda'Z'WZ Lambda + I`` (and
``X``) through :mod:`nlpower.mixed.blocked`, whose rule picks the strategy:
pairs (:mod:`nlpower.mixed.pairs`), the Gaussian fitter's (:mod:`nlpower.mixed.native.weighted`:
dense or sparse Schur products, active-column patterns, the peeled rest, the
uncoupled lead) or the blocked one.  For each design this script fits the
model once, takes the working weights at the optimum's mode and times, both
ways (CPU minimum over ``--repeats`` calls, alternating 4 times, one BLAS thread):

(a) the shared layout's step (the rule without the native strategy: the
    factor, then ``solve`` of the PIRLS right-hand side), and its selected
    inverse (the analytic gradient's);
(b) the same through :class:`~nlpower.mixed.native.weighted.NativePlan` (every
    weighted cross-product, the native factor, ``solve``; ``selected``);

with ``beta`` solved with ``u`` (stage 1, ``nAGQ = 0``) or fixed (stage 2,
``--fixed``), and checks that they give the same solves, ``log |L|^2`` and
selected inverse.  ``--fits`` times whole fits instead (the strategy forced
off and on in one process, or ``--trees``: under two source trees).

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/glmm_on_native.py \
        --cases verbagg,cbpp,grouseticks,paper50x100,crowd_scalar
    # whole fits with the native strategy off and forced, alternating in one process
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/glmm_on_native.py \
        --fits glmer:150x500,glmer:300x1000,clmm:crowd20k --repeats 3
    # ... or under two source trees, one process per fit
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/glmm_on_native.py \
        --fits clmm:crowd20k --repeats 3 --trees /path/to/before/src,src
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from bench_glmm import CROWD, crowd_glmm  # noqa: E402

sys.path.insert(0, str(ROOT.parent / "tests" / "glmm"))
from glmm_cases import fit_case  # noqa: E402

_PAPER = CROWD["binomial_paper"][1]
#: case -> how to fit it (a validation case, or a crowd design: family, formula, workers, items)
CASES: dict[str, Any] = {
    "verbagg": "verbagg_crossed",
    "cbpp": "cbpp_weights",
    "grouseticks": "grouseticks",
    "paper50x100": ("binomial", _PAPER, 50, 100),
    "paper150x500": ("binomial", _PAPER, 150, 500),
    "crowd_scalar": ("binomial", CROWD["binomial"][1], 300, 1000),
    "crowd_scalar150x500": ("binomial", CROWD["binomial"][1], 150, 500),
    "crowd_scalar60x200": ("binomial", CROWD["binomial"][1], 60, 200),
    "crowd_scalar450x1500": ("binomial", CROWD["binomial"][1], 450, 1500),
    "crowd_scalar600x2000": ("binomial", CROWD["binomial"][1], 600, 2000),
}


def fit(case: str) -> Any:
    """The fitted case (its ``model`` is the :class:`~nlpower.glmm.model.GlmmModel`)."""
    how = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(how, str):
            return fit_case(how)
        import nlpower
        fam, formula, n_w, n_i = how
        return nlpower.glmer(formula, crowd_glmm(fam, n_w, n_i, 20 * n_i), fam,
                             checkconv="ignore")


def working(model: Any, theta: np.ndarray, beta: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Working weights ``w``, working response ``z`` and the fixed part at the mode."""
    pirls = model.pirls
    mode = pirls.run(theta, beta, None, update_beta=False)
    eta, mu, w = mode.eta, mode.mu, mode.w
    z = eta - pirls.offset + (pirls.y - mu) / np.maximum(pirls.link.mu_eta(eta, mu), 1e-300)
    return w, z, pirls.X @ beta


def shared_layout(model: Any) -> Any:
    """The layout glmer had without the native strategy (the same blocks, pairs by the rule)."""
    from nlpower.mixed.blocked import BlockedLayout
    blocks = model.blocks
    return BlockedLayout([b.codes for b in blocks], [b.q for b in blocks], [b.m for b in blocks],
                         model.pirls.p, designs=[b.Z for b in blocks], native=False)


def step(fac_of: Callable[[], Any], rhs: np.ndarray) -> tuple[Any, np.ndarray]:
    """One PIRLS step: the factor, then its solve."""
    fac = fac_of()
    return fac, fac.solve(rhs)


def cpu_min(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def strategy(plan: Any, lay: Any) -> str:
    """The native strategy the weighted system takes, and the shared one's."""
    b, ev = plan.b, plan.ev
    parts = ["dense Schur" if b.use_dense else "sparse Schur"]
    if b.patterns is not None:
        parts.append(f"{len(b.patterns)} patterns")
    if ev.peel is not None:
        parts.append("peeled rest")
    if ev.lead is not None:
        parts.append("lead")
    shared = "pairs" if lay.pairs is not None else (
        "blocked, sparse C" if lay.sparse_c else "blocked")
    return f"{', '.join(parts)} (N2 {b.N2}) | {shared}"


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(1e-300, float(np.max(np.abs(b)))))


def run_case(case: str, repeats: int, fixed_beta: bool) -> dict[str, Any]:
    """(a) the shared layout's step and selected inverse, (b) the native plan's; alternating."""
    from nlpower.mixed.blocked import factor
    from nlpower.mixed.native.weighted import NativePlan

    f = fit(case)
    model = f.model
    theta, beta = np.asarray(f.theta, dtype=float), f.fixef.to_numpy()
    w, z, fx = working(model, theta, beta)
    X = model.pirls.X
    with_x = not fixed_beta
    t0 = time.process_time()
    lay = shared_layout(model)
    t_shared = time.process_time() - t0
    t0 = time.process_time()
    plan = NativePlan(model.blocks, X, lay)
    t_native = time.process_time() - t0
    zl = np.concatenate([b.Z @ b.lam(theta) for b in model.blocks], axis=1)
    tp = lay.products(zl)
    wz = w * (z if with_x else z - fx)
    rhs = lay.ztv(zl, wz)
    if with_x:
        rhs = np.concatenate([rhs, X.T @ wz])

    def shared() -> Any:
        return (factor(lay, tp, w, X, lay.x_products(X, zl)) if with_x else factor(lay, tp, w))

    def native() -> Any:
        return plan.factor(theta, w, with_x)

    fa, xa = step(shared, rhs)
    fb, xb = step(native, rhs)
    agree = (_rel(xb, xa), abs(fb.logdet - fa.logdet) / abs(fa.logdet),
             _rel(fb.selected(zl), fa.selected(zl)))
    ta, tb, sa, sb = [], [], [], []
    for _ in range(4):                       # alternate the ways
        ta.append(cpu_min(lambda: step(shared, rhs), repeats))
        tb.append(cpu_min(lambda: step(native, rhs), repeats))
        sa.append(cpu_min(lambda: fa.selected(zl), repeats))
        sb.append(cpu_min(lambda: fb.selected(zl), repeats))
    return {"case": case, "n": model.spec.n, "q": model.pirls.q, "strategy": strategy(plan, lay),
            "step": (1e3 * min(ta), 1e3 * min(tb)), "selected": (1e3 * min(sa), 1e3 * min(sb)),
            "setup": (1e3 * t_shared, 1e3 * t_native), "agree": agree}


def _clmm_crowd20k() -> Any:
    import tempfile

    import pandas as pd
    from bench_ordinal import crowd20k
    path = Path(tempfile.mkdtemp()) / "crowd20k.csv"
    crowd20k(path)
    return pd.read_csv(path)


def _fit_fn(spec: str) -> tuple[str, Callable[[], Any]]:
    """``glmer:300x1000`` (the scalar crowd, binomial) or ``clmm:crowd20k``: label and fit."""
    import nlpower
    kind, size = spec.split(":")
    if kind == "clmm":
        data = _clmm_crowd20k()
        nlpower.clmm("rating ~ x + (1|worker)", data.iloc[:3000])          # warm-up
        return spec, lambda: nlpower.clmm("rating ~ x + (1|worker) + (1|item)", data)
    nw, ni = (int(v) for v in size.split("x"))
    data = crowd_glmm("binomial", nw, ni, 20 * ni)
    nlpower.glmer("y ~ system + (1|worker)", data.iloc[:2000], "binomial")   # warm-up
    return spec, lambda: nlpower.glmer(CROWD["binomial"][1], data, "binomial")


def run_fits(specs: list[str], rounds: int) -> None:
    """Whole fits with the native strategy off and forced, alternating in this process."""
    import nlpower.mixed.blocked as bl
    for spec in specs:
        label, fn = _fit_fn(spec)
        res: dict[str, list[float]] = {"off": [], "native": []}
        ll = {}
        for _ in range(rounds):
            for k, thr in (("off", float("inf")), ("native", 0.0)):
                bl.NATIVE_MIN_WORK = thr
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    c = time.process_time()
                    f = fn()
                    res[k].append(time.process_time() - c)
                ll[k] = f.loglik
        print(f"| {label} | {min(res['off']):.3f} s | {min(res['native']):.3f} s | "
              f"{min(res['native']) / min(res['off']):.2f} | {ll['off']!r} / {ll['native']!r} |",
              flush=True)


def run_trees(specs: list[str], rounds: int, trees: list[str]) -> None:
    """Whole fits under each source tree in turn (one process per fit, alternating)."""
    import json
    import subprocess
    for spec in specs:
        res: dict[str, list[float]] = {t: [] for t in trees}
        ll = {}
        for _ in range(rounds):
            for tree in trees:
                proc = subprocess.run([sys.executable, __file__, "--one", spec], capture_output=True,
                                      text=True, env={**os.environ, "PYTHONPATH": tree},
                                      timeout=7200)
                if proc.returncode != 0:
                    raise RuntimeError(proc.stderr.strip()[-500:])
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                res[tree].append(r["cpu"])
                ll[tree] = r["loglik"]
        print(f"| {spec} | " + " | ".join(f"{min(res[t]):.3f} s ({ll[t]!r})" for t in trees)
              + " |", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--fixed", action="store_true", help="beta fixed (stage 2): u alone")
    ap.add_argument("--fits", default="", help="whole fits, native off and forced, e.g. "
                    "glmer:300x1000,clmm:crowd20k (--repeats rounds)")
    ap.add_argument("--trees", default="", help="with --fits: source trees to alternate instead")
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        import json
        _, fn = _fit_fn(args.one)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = time.process_time()
            f = fn()
            print(json.dumps({"cpu": time.process_time() - c, "loglik": f.loglik}))
        return 0
    if args.fits:
        specs = [f for f in args.fits.split(",") if f]
        print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
        if args.trees:
            run_trees(specs, args.repeats, [t for t in args.trees.split(",") if t])
        else:
            print("| fit | native off | native | ratio | logLik off / native |\n|---|---|---|---|---|")
            run_fits(specs, args.repeats)
        print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
        return 0
    print(f"load average {os.getloadavg()[0]:.2f}; beta {'fixed' if args.fixed else 'with u'}",
          flush=True)
    print("| case | n | q | native strategy (rest columns) | shared strategy | step (a) | step (b) "
          "| (b) / (a) | selected (a) | selected (b) | set-up (a), (b) | max rel. diff solve, "
          "logdet, selected |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in [c for c in args.cases.split(",") if c]:
        r = run_case(c, args.repeats, args.fixed)
        (a, b), (sa, sb), (ua, ub) = r["step"], r["selected"], r["setup"]
        print(f"| {c} | {r['n']} | {r['q']} | {r['strategy']} | {a:.2f} ms | {b:.2f} ms | "
              f"{b / a:.2f} | {sa:.2f} ms | {sb:.2f} ms | {ua:.0f}, {ub:.0f} ms | "
              f"{r['agree'][0]:.1e}, {r['agree'][1]:.1e}, {r['agree'][2]:.1e} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
