"""One PIRLS iteration through the shared factorisation and through the Gaussian fitter's.

glmer's PIRLS factors ``Lambda'Z'WZ Lambda + I`` (and ``X``) through
:mod:`nlpower.mixed.blocked` (or :mod:`nlpower.mixed.pairs`, where the
rule sends it) at every step.  A step is a weighted LMM solve, so the
Gaussian fitter's factorisation (:mod:`nlpower.lmm.native`: dense or sparse
Schur products, active-column patterns, the peeled rest, the uncoupled lead)
could do it if fed weighted cross-products
(``native_core.WeightedNative`` in this folder: the pattern's part once,
the weighted numbers per step).  For each GLMM benchmark design this script
fits the model once, takes the working weights and response at the optimum's
mode and times one iteration both ways (CPU minimum over ``--repeats``
calls, one BLAS thread):

(a) ``Pirls.factor`` (the layout's strategy) + the right-hand side + ``solve``;
(b) ``WeightedNative.set_weights`` (every weighted cross-product) +
    ``solve`` (the native factorisation, ``u``, ``beta``), split into its two parts;

both with ``beta`` solved with ``u`` (stage 1, ``nAGQ = 0``) and with
``beta`` fixed (stage 2, ``--fixed``), and checks that they give the same
``u``, ``beta`` and ``log |L|^2``.  ``--mode dense,sparse`` forces the
native Schur strategy, each timed alternating with the others (default:
the fitter's own rule).

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/glmm_on_native.py \
        --cases verbagg,cbpp,grouseticks,paper50x100,paper150x500,crowd_scalar
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


def iteration_blocked(model: Any, theta: np.ndarray, w: np.ndarray, z: np.ndarray,
                      fixed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, float]:
    """(a): ``u``, ``beta`` and ``log |L|^2`` of one step through ``Pirls.factor``."""
    pirls = model.pirls
    at = pirls.at(theta)
    with_x = fixed is None
    fac = pirls.factor(at, w, with_x)
    wz = w * z if with_x else w * (z - fixed)
    rhs = at.ztv(wz)
    if with_x:
        rhs = np.concatenate([rhs, pirls.X.T @ wz])
    x = fac.solve(rhs)
    return x[:pirls.q], x[pirls.q:], float(fac.logdet)


def cpu_min(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def strategy(wn: Any, model: Any) -> str:
    """The native strategy the weighted system takes, and the shared one's."""
    b, ev = wn.b, wn.ev
    parts = ["dense Schur" if b.use_dense else "sparse Schur"]
    if b.patterns is not None:
        parts.append(f"{len(b.patterns)} patterns")
    if ev.peel is not None:
        parts.append("peeled rest")
    if ev.lead is not None:
        parts.append("lead")
    shared = "pairs" if model.pirls.layout.pairs is not None else (
        "blocked, sparse C" if model.pirls.layout.sparse_c else "blocked")
    return f"{', '.join(parts)} (N2 {b.N2}) | shared: {shared}"


def _agreement(step: Any, ua: np.ndarray, ba: np.ndarray, lda: float) -> tuple[float, ...]:
    """Largest relative differences of ``u``, ``beta`` and ``log |L|^2``."""
    du = float(np.max(np.abs(step.u - ua)) / max(1.0, float(np.max(np.abs(ua)))))
    db = float(np.max(np.abs(step.beta - ba)) / max(1.0, float(np.max(np.abs(ba))))) if \
        ba.size else 0.0
    return du, db, abs(step.logdet - lda) / max(1.0, abs(lda))


def run_case(case: str, repeats: int, fixed_beta: bool, modes: list[str]) -> list[dict[str, Any]]:
    """One row per native mode; (a) and every mode alternate 4 times in this process."""
    from native_core import WeightedNative

    from nlpower.glmm.pirls import Pirls

    f = fit(case)
    model = f.model
    theta, beta = np.asarray(f.theta, dtype=float), f.fixef.to_numpy()
    w, z, fx = working(model, theta, beta)
    fixed = fx if fixed_beta else None
    zz = z - fx if fixed_beta else z
    t0 = time.process_time()
    Pirls(model.pirls.X, model.blocks, model.k, model.family, model.pirls.y, model.wt,
          model.offset)
    t_shared = time.process_time() - t0
    ua, ba, lda = iteration_blocked(model, theta, w, z, fixed)
    rows, wns = [], []
    for mode in modes:
        t0 = time.process_time()
        wn = WeightedNative(model.spec, mode, with_x=not fixed_beta)
        t_setup = time.process_time() - t0
        wn.set_weights(w, zz)
        du, db, dld = _agreement(wn.solve(theta), ua, ba, lda)
        wns.append(wn)
        rows.append({"case": case, "mode": mode, "n": model.spec.n, "q": model.pirls.q,
                     "strategy": strategy(wn, model), "setup_ms": 1e3 * t_setup,
                     "shared_setup_ms": 1e3 * t_shared, "du": du, "dbeta": db, "dlogdet": dld,
                     "tw": [], "ts": []})
    ta = []
    for _ in range(4):                       # alternate the ways
        ta.append(cpu_min(lambda: iteration_blocked(model, theta, w, z, fixed), repeats))
        for wn, row in zip(wns, rows, strict=True):
            row["tw"].append(cpu_min(lambda: wn.set_weights(w, zz), repeats))   # noqa: B023
            row["ts"].append(cpu_min(lambda: wn.solve(theta), repeats))         # noqa: B023
    for row in rows:
        row.update(blocked_ms=1e3 * min(ta), weights_ms=1e3 * min(row.pop("tw")),
                   native_ms=1e3 * min(row.pop("ts")))
        row["ratio"] = (row["weights_ms"] + row["native_ms"]) / row["blocked_ms"]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--fixed", action="store_true", help="beta fixed (stage 2): u alone")
    ap.add_argument("--mode", default="auto",
                    help="the native Schur strategy (NativeModel's mode: auto, dense, sparse); "
                    "several, comma-separated, are timed alternating")
    args = ap.parse_args(argv)
    modes = [m for m in args.mode.split(",") if m]
    if not modes or any(m not in ("auto", "dense", "sparse") for m in modes):
        ap.error(f"--mode: choose from auto, dense, sparse; got {args.mode!r}")
    print(f"load average {os.getloadavg()[0]:.2f}; beta {'fixed' if args.fixed else 'with u'}; "
          f"native mode {args.mode}", flush=True)
    print("| case | mode | n | q | native strategy, shared strategy | (a) shared | (b) weighted products "
          "| (b) native factor + solve | (b) / (a) | set-up once (a), (b) | max rel. diff u, "
          "beta, logdet |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for c in [c for c in args.cases.split(",") if c]:
        for r in run_case(c, args.repeats, args.fixed, modes):
            print(f"| {c} | {r['mode']} | {r['n']} | {r['q']} | {r['strategy']} | {r['blocked_ms']:.2f} ms | "
                  f"{r['weights_ms']:.2f} ms | {r['native_ms']:.2f} ms | {r['ratio']:.2f} | "
                  f"{r['shared_setup_ms']:.0f}, {r['setup_ms']:.0f} ms | {r['du']:.1e}, "
                  f"{r['dbeta']:.1e}, {r['dlogdet']:.1e} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
