"""CPU seconds of whole ``lmer()`` calls on the pilot-file shapes, for alternating before/after runs.

Usage (from the repository root; run it once per engine checkout, alternating)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/pilot_cpu.py
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/path/to/other/checkout/src \\
        .venv/bin/python benchmarks/pilot_cpu.py

Per shape (``benchmarks/pilot_shapes.py``): one warm-up ``lmer()``, then the
minimum CPU time (``time.process_time``: frame, set-up, fit, convergence
check) of ``--repeats`` calls, and the deviance.  Prints one JSON line.  On a
shared machine CPU time is the fairer comparison (other processes inflate
wall clock far more), and alternating the two engines in a few rounds
spreads the load over both.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pilot_shapes import SHAPES, make_shape  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="?", default=",".join(SHAPES))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    from nlpower.lmm import lmer

    out = {}
    for name in args.shapes.split(","):
        df, formula = make_shape(name), SHAPES[name]["formula"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lmer(formula, df, REML=False, contrasts={"system": "sum"})
            best = float("inf")
            for _ in range(args.repeats):
                t0 = time.process_time()
                fit = lmer(formula, df, REML=False, contrasts={"system": "sum"})
                best = min(best, time.process_time() - t0)
        out[name] = {"cpu": round(best, 4), "deviance": fit.deviance}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
