"""Peak memory of the native engine against the number of systems (the paper's model).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_memory.py                 # K = 2, 4, 6, 10, 15, 20
    .venv/bin/python benchmarks/bench_memory.py --systems 2,20 --fit

Design: ``pilot_shapes.many_systems(K)`` -- 181 annotators, 1,000 segments,
every (segment, system) cell rated once and 13 % twice (22,616 ratings at
K = 20, the shape of a real 20-system direct-assessment file).  Model: the
paper's ``rating ~ system + (system || worker) + (system || item)``, sum
contrasts, ML: ``2 (1 + K (K + 1) / 2)`` variance parameters (422 at K = 20).

Each K runs in its own process (``ru_maxrss`` is a high-water mark):
``NativeModel(spec)`` (the structure, with the up-front memory check), one
deviance evaluation and one analytic gradient at lme4's start -- the largest
allocations of a fit; ``--fit`` runs the whole ``lmer`` fit instead (hours at
K = 20: 422 parameters, ~1 s per evaluation, ~7 s per gradient).  Reported:
peak RSS, the engine's own estimate (:func:`nlpower.mixed.native.memory.memory_estimate`),
the Schur products and the seconds of each stage.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"

CHILD = r"""
import json, resource, sys, time, warnings
sys.path.insert(0, %(bench)r)
from pilot_shapes import PAPER, many_systems
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
try:
    from nlpower.mixed.native.memory import memory_estimate
except ImportError:                          # an engine without the estimate (before/after runs)
    memory_estimate = lambda *a: float("nan")
k, fit = %(k)d, %(fit)r
df = many_systems(k)
spec = model_frame(PAPER, df, contrasts={"system": "sum"})
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
out = {"K": k, "n": len(df), "rss_frame_mb": rss()}
t0 = time.process_time()
try:
    m = NativeModel(spec)
except Exception as exc:
    out["refused"] = str(exc)
    print(json.dumps(out)); raise SystemExit
out["build_s"] = time.process_time() - t0
b = m.blocks
nnz = float(b.schur.V.nnz) if hasattr(b.schur, "V") else 0.0
out.update(theta=m.layout.size, N2=b.N2, q1=b.b1.q, products=nnz,
           estimate_mb=memory_estimate(b.b1, b.N2, nnz, b.use_dense) / 2**20,
           rss_build_mb=rss())
t0 = time.process_time()
if fit:
    from nlpower.lmm import lmer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = lmer(PAPER, df, REML=False, contrasts={"system": "sum"})
    out.update(fit_s=time.process_time() - t0, deviance=f.deviance)
else:
    out["deviance_start"] = m.ev(m.layout.start)
    out["eval_s"] = time.process_time() - t0
    t0 = time.process_time()
    m.value_and_gradient(m.layout.start)
    out["gradient_s"] = time.process_time() - t0
out["rss_peak_mb"] = rss()
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", default="2,4,6,10,15,20")
    ap.add_argument("--fit", action="store_true", help="the whole fit (slow for many systems)")
    ap.add_argument("--out", default=str(OUT / "bench_memory.json"))
    args = ap.parse_args(argv)
    rows = []
    print(f"{'K':>3} {'ratings':>8} {'theta':>5} {'N2':>5} {'products':>10} "
          f"{'estimate MB':>11} {'peak RSS MB':>11}  seconds", flush=True)
    for k in (int(x) for x in args.systems.split(",")):
        code = CHILD % {"bench": str(ROOT / "benchmarks"), "k": k, "fit": args.fit}
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**__import__("os").environ, "OPENBLAS_NUM_THREADS": "1"})
        if proc.returncode != 0:
            row = {"K": k, "failed": proc.stderr.strip()[-300:] or f"exit {proc.returncode}"}
            print(f"{k:>3} failed: {row['failed']}", flush=True)
        else:
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            if "refused" in row:
                print(f"{k:>3} {row['n']:>8} refused: {row['refused']}", flush=True)
            else:
                secs = ", ".join(f"{key[:-2]} {row[key]:.2f}" for key in
                                 ("build_s", "eval_s", "gradient_s", "fit_s") if key in row)
                print(f"{k:>3} {row['n']:>8} {row['theta']:>5} {row['N2']:>5} "
                      f"{row['products']:>10.3g} {row['estimate_mb']:>11.0f} "
                      f"{row['rss_peak_mb']:>11.0f}  {secs}", flush=True)
        rows.append(row)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
