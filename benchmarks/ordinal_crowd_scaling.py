"""How the default ordinal ratings fit scales on a crowd-like file (issue 20, items 4 and 6).

Fits ``fit_ratings(read_ratings(subset, scale=(1, 5)), family="ordinal")`` --
the paper's ``(system || worker) + (system || item)`` terms, four systems,
28 parameters -- on the first ``--items`` items of the 20,000-rating crowd
file of ``benchmarks/outside_in.py`` and prints, per subset, the ratings,
wall and CPU seconds, the log-likelihood, convergence, the likelihood
evaluations and the sparse factorisations of ``H`` they took (see the
"Speed" section of ``docs/ordinal.md``).  ``--reference DIR``: also fit with
the ``src`` tree in ``DIR`` (e.g. an older checkout) in a subprocess and
print the log-likelihood, the largest parameter difference and the largest
relative difference of the standard errors (from ``vcov``).

Run:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/ordinal_crowd_scaling.py \\
          --items 100 200 500 1000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import nlpower

sys.path.insert(0, str(Path(__file__).parent))
from outside_in import crowd_file  # noqa: E402


def fit_subset(n_items: int) -> dict[str, object]:
    """One timed fit of the first ``n_items`` items; counts factorisations of ``H``."""
    import nlpower.ordinal.structure as st
    df = crowd_file()
    sub = df[df["item"].isin(df["item"].unique()[:n_items])]
    counter = {"factor": 0}
    orig = st.ReStructure.factor

    def counted(self, w):  # type: ignore[no-untyped-def]
        counter["factor"] += 1
        return orig(self, w)

    st.ReStructure.factor = counted  # type: ignore[method-assign]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ratings = nlpower.read_ratings(sub, scale=(1, 5))
            w0, c0 = time.perf_counter(), time.process_time()
            fit = nlpower.fit_ratings(ratings, family="ordinal")
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    finally:
        st.ReStructure.factor = orig  # type: ignore[method-assign]
    f = fit.fit
    core = f.core
    return {"items": n_items, "ratings": len(sub), "wall": wall, "cpu": cpu,
            "loglik": float(f.loglik), "converged": bool(f.converged),
            "evals": int(core.n_evals), "factors": counter["factor"],
            "params": np.asarray(core.params).tolist(),
            "se": np.sqrt(np.diag(np.asarray(core.vcov))).tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, nargs="+", default=[100, 200])
    ap.add_argument("--reference", type=Path, default=None,
                    help="a checkout whose src/ fits the same subsets for comparison")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.json:                                   # the reference subprocess
        print(json.dumps([fit_subset(n) for n in args.items]))
        return
    print(f"load average {os.getloadavg()[0]:.1f} (2 cores shared)")
    print("| items | ratings | wall (s) | CPU (s) | log-likelihood | converged | evaluations "
          "| factorisations |" + (" reference CPU (s) | reference loglik | d loglik | max d param | max rel d SE |"
                                  if args.reference else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|---|---|---|---|" if args.reference else ""))
    for n in args.items:
        r = fit_subset(n)
        line = (f"| {n} | {r['ratings']:,} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                f"{r['loglik']:.6f} | {r['converged']} | {r['evals']} | {r['factors']} |")
        if args.reference:
            env = dict(os.environ, PYTHONPATH=str(args.reference / "src"))
            out = subprocess.run([sys.executable, __file__, "--json", "--items", str(n)],
                                 env=env, capture_output=True, text=True, check=True)
            ref = json.loads(out.stdout.strip().splitlines()[-1])[0]
            dpar = float(np.max(np.abs(np.subtract(r["params"], ref["params"]))))
            se, se_ref = np.asarray(r["se"]), np.asarray(ref.get("se", np.nan))
            ok = np.isfinite(se) & np.isfinite(se_ref)      # an intercept held at 0 has none
            same_nan = bool(np.array_equal(np.isfinite(se), np.isfinite(se_ref)))
            dse = float(np.max(np.abs(se[ok] / se_ref[ok] - 1.0))) if same_nan else np.nan
            line += (f" {ref['cpu']:.1f} | {ref['loglik']:.6f} | {r['loglik'] - ref['loglik']:+.2e} | {dpar:.1e} |"
                     f" {dse:.1e} |")
        print(line, flush=True)


if __name__ == "__main__":
    main()
