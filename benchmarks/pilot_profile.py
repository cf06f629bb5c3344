"""Where a native fit's time goes on the pilot-file shapes (CPU seconds, one BLAS thread).

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/pilot_profile.py da2,nested4s,sys20

Per shape (``benchmarks/pilot_shapes.py``): the model frame, the set-up
(``NativeModel``: cross-products, Schur strategy, peeling plan; the grouped
products of block 1 are built by the first evaluation, so the set-up with one
evaluation, and with the one factorisation a ridge fit reads of the full model,
are timed too), the fit
(``NativeModel.fit``, ML; the gradient's path, ``gradient._inverse_path``) and, from
``fit.optinfo["stages"]``, the deviance
evaluations and gradient calls per stage; then the cost of one evaluation and
of one value-and-gradient call at the optimum (minimum over 10 calls).  CPU
time (``time.process_time``), minimum over ``--repeats`` fits, so that other
processes on a shared machine inflate it less than wall-clock time.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pilot_shapes import SHAPES, make_shape  # noqa: E402


def _cpu(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def profile(name: str, repeats: int) -> None:
    from nlpower.lmm.frame import model_frame
    from nlpower.lmm.native import NativeModel

    df = make_shape(name)
    formula = SHAPES[name]["formula"]
    t_frame, spec = _cpu(lambda: model_frame(formula, df, contrasts={"system": "sum"}), repeats)
    t_setup, model = _cpu(lambda: NativeModel(spec), repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_fit, fit = _cpu(lambda: model.fit(REML=False), repeats)
    th = fit.theta
    t_eval, _ = _cpu(lambda: model.ev(th), 10)
    t_grad, _ = _cpu(lambda: model.value_and_gradient(th), 10)
    # the grouped products are built by the first evaluation: set-up + one evaluation,
    # and set-up + the one factorisation a ridge fit's full model takes (factor_once)
    t_first, _ = _cpu(lambda: NativeModel(spec).ev(th), repeats)
    t_once, _ = _cpu(lambda: NativeModel(spec).ev.factor_once(th), repeats)
    b = model.blocks
    from nlpower.lmm.native.gradient import _inverse_path

    path = _inverse_path(model.ev, model.ev.factor(th), b.nre2)
    print(f"== {name}: n {spec.n}, theta {th.size}, block 1 {b.b1.group!r} "
          f"{b.b1.m} x {b.b1.q}, rest {b.N2} columns ({type(b.schur).__name__}"
          f"{', peeled' if model.ev.peel is not None else ''}), gradient path {path}, "
          f"deviance {fit.deviance:.6f}")
    print(f"   frame {t_frame:.3f} s, set-up {t_setup:.3f} s, fit {t_fit:.3f} s; "
          f"one evaluation {1e3 * t_eval:.2f} ms, one value+gradient {1e3 * t_grad:.2f} ms")
    print(f"   set-up + first evaluation {t_first:.3f} s, set-up + factor_once {t_once:.3f} s")
    red = getattr(model, "_ridge_red", None)
    if red is not None:       # fitted without the (f || g) ridges (nlpower.lmm.native.ridge)
        t_red, _ = _cpu(lambda: type(model)(red.spec), repeats)
        from nlpower.lmm.native.ridge import to_reduced_theta

        th_r = to_reduced_theta(th, red.layout, model.layout, model._ridges)
        t_rg, _ = _cpu(lambda: red.value_and_gradient(th_r), 10)
        print(f"   ridge: reduced model theta {red.layout.size}, rest {red.blocks.N2} columns, "
              f"set-up {t_red:.3f} s, one value+gradient {1e3 * t_rg:.2f} ms")
    for stage, c in fit.optinfo["stages"].items():
        print(f"   {stage:15s} evaluations {c['evaluations']:4d}  gradients {c['gradients']:4d}  "
              f"{c['seconds']:.3f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="?", default=",".join(SHAPES))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    for name in args.shapes.split(","):
        profile(name.strip(), args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
