"""Central or forward differences of the gradient for the convergence check's Hessian.

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/checkconv_hessian.py
    ... benchmarks/checkconv_hessian.py --shapes da2,crowd2 --no-corpus

For every non-singular fit that uses the analytic gradient -- the pilot shapes
(``benchmarks/pilot_shapes.py``) and the validation corpus without InstEval
(``benchmarks/validation_corpus.py --quick``) -- the Hessian of the profiled ML
deviance at the native optimum by central differences of the gradient (what
``lmer`` computes: ``2k`` gradient calls) and by forward differences (``k``
calls), each symmetrised, with lme4's Hessian verdict (``lme4:::checkHess``
code) of each, their smallest eigenvalues and the 2-norm of their difference.
For the corpus cases lme4's own findings come from the pinned results
(``tests/reference/validation_corpus.json``).  A cheaper Hessian can only
replace the central one where it gives the same verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PINNED = HERE.parent / "tests" / "reference" / "validation_corpus.json"


def compare(name: str, formula: str, df, contrasts, lme4_msgs: str = "") -> None:  # noqa: ANN001
    from nlpower.lmm.checkconv import DERIV_STEP, HESS_TOL, _check_hess
    from nlpower.lmm.frame import model_frame
    from nlpower.lmm.native import NativeModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NativeModel(model_frame(formula, df, contrasts=contrasts))
        fit = model.fit(REML=False)
    th = np.asarray(fit.theta, dtype=float)
    diag = model.layout.lower == 0
    if np.any(th[diag] < 1e-4) or not model._analytic:
        print(f"| {name} | {'singular' if model._analytic else 'no analytic gradient'} |")
        return
    k = th.size
    g = model.value_and_gradient(th)[1]
    fwd, cen = np.empty((k, k)), np.empty((k, k))
    for j in range(k):
        xa, xs = th.copy(), th.copy()
        xa[j] += DERIV_STEP
        xs[j] -= DERIV_STEP
        ga, gs = model.value_and_gradient(xa)[1], model.value_and_gradient(xs)[1]
        fwd[:, j] = (ga - g) / DERIV_STEP
        cen[:, j] = (ga - gs) / (2 * DERIV_STEP)
    Hf, Hc = 0.5 * (fwd + fwd.T), 0.5 * (cen + cen.T)
    ec, ef = np.linalg.eigvalsh(Hc), np.linalg.eigvalsh(Hf)
    print(f"| {name} | {k} | {_check_hess(Hc, HESS_TOL)[0]} | {_check_hess(Hf, HESS_TOL)[0]} | "
          f"{ec[0]:.2e} | {ef[0]:.2e} | {ec[-1]:.3g} | {np.linalg.norm(Hf - Hc, 2):.2e} | "
          f"{lme4_msgs} |")


def main(argv: list[str] | None = None) -> int:
    from pilot_shapes import SHAPES, make_shape

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--no-corpus", action="store_true")
    args = ap.parse_args(argv)
    print("| case | k | central: code | forward: code | central: min eigenvalue | "
          "forward: min eigenvalue | max eigenvalue | norm(forward - central) | lme4 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in filter(None, args.shapes.split(",")):
        compare(s, SHAPES[s]["formula"], make_shape(s), {"system": "sum"})
    if args.no_corpus:
        return 0
    import validation_corpus as vc

    pinned = {c["name"]: c for c in json.loads(PINNED.read_text())["cases"]}
    for c in vc.all_cases(quick=True):
        msgs = pinned.get(c.name, {}).get("messages", [])
        msgs = [msgs] if isinstance(msgs, str) else msgs
        short = "; ".join(" ".join(m.split())[:40] for m in msgs) or "none"
        compare(c.name, c.formula, c.data, c.contrasts or None, short)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
