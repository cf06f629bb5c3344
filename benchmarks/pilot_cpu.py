"""CPU seconds of whole ``lmer()`` calls on the pilot-file shapes, for alternating before/after runs.

Usage (from the repository root; run it once per engine checkout, alternating)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/pilot_cpu.py
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/path/to/other/checkout/src \\
        .venv/bin/python benchmarks/pilot_cpu.py

Per shape (``benchmarks/pilot_shapes.py``): one warm-up ``lmer()``, then the
minimum CPU time (``time.process_time``: frame, set-up, fit, convergence
check) of ``--repeats`` calls, and the deviance.  Prints one JSON line.
``--per-call``: also one deviance evaluation and one value-and-gradient call of
the model the fit optimised (the reduced model of an ``(f || g)`` ridge fit),
at its optimum and at that point with every ``theta`` under 1e-3 set to 0.05
(no zero pivot), in ms (minimum over 5 batches of 20 calls).  On a
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pilot_shapes import SHAPES, make_shape  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="?", default=",".join(SHAPES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--per-call", action="store_true")
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
        if args.per_call:
            out[name].update(per_call(df, formula))
    print(json.dumps(out))
    return 0


def per_call(df: Any, formula: str) -> dict[str, float]:
    """ms per evaluation and per value-and-gradient call (see the module docstring)."""
    import numpy as np

    from nlpower.lmm.frame import model_frame
    from nlpower.lmm.native import NativeModel

    model = NativeModel(model_frame(formula, df, contrasts={"system": "sum"}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        th = model.fit(REML=False).theta
    red = getattr(model, "_ridge_red", None)
    if red is not None:                   # the ridge fit optimised the reduced model
        from nlpower.lmm.native.ridge import to_reduced_theta

        th, model = to_reduced_theta(th, red.layout, model.layout, model._ridges), red
    th2 = np.where(th < 1e-3, 0.05, th)

    def ms(fn: object) -> float:
        best = float("inf")
        for _ in range(5):
            t0 = time.process_time()
            for _ in range(20):
                fn()                      # type: ignore[operator]
            best = min(best, (time.process_time() - t0) / 20)
        return round(1e3 * best, 3)

    return {"eval_ms": ms(lambda: model.ev(th2)), "vg_ms": ms(lambda: model.value_and_gradient(th2)),
            "vg_opt_ms": ms(lambda: model.value_and_gradient(th))}


if __name__ == "__main__":
    raise SystemExit(main())
