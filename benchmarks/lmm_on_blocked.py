"""What a Gaussian fit would cost on the shared weighted factorisation (`mixed.blocked`).

glmer and clmm factor ``Lambda'Z'WZ Lambda + I`` through
:mod:`nlpower.mixed.blocked`; the Gaussian fitter (`lmm/native/`) keeps its
own factorisation of the unweighted profiled deviance, with the cross-products
``Z'Z``, ``Z'X``, ``Z'y`` formed once per model.  This script measures the
price of the single path: for each case it evaluates lme4's profiled ML
deviance (Bates et al. 2015, eq. 34) at the native optimum both ways --
``mixed.blocked.factor`` with unit weights and ``[X y]`` joined as its fixed
columns (``r^2`` is the last pivot squared) against
``NativeModel.deviance`` -- checks that they agree, and times one
evaluation of each (CPU minimum over ``--repeats`` calls, one BLAS thread).

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/lmm_on_blocked.py \
        --cases i,iii,iv,da2,expert3,crowd2,nested4s,sys20,full6
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import CASES, make_data, read_data  # noqa: E402


def blocked_deviance(blocks: list, X: np.ndarray, y: np.ndarray, theta: np.ndarray) -> float:
    """Profiled ML deviance at ``theta`` from ``mixed.blocked`` with unit weights."""
    from nlpower.mixed.blocked import BlockedLayout, factor

    n, p = X.shape
    lay = BlockedLayout([b.codes for b in blocks], [b.q for b in blocks], [b.m for b in blocks],
                        p + 1)
    zl = np.concatenate([b.Z @ b.lam(theta) for b in blocks], axis=1)
    Xy = np.column_stack([X, y])
    fac = factor(lay, lay.products(zl), np.ones(n), Xy, lay.x_products(Xy, zl))
    r2 = float(fac.L2[-1, -1]) ** 2 if fac.L2 is not None else float("nan")
    return fac.logdet + n * (1.0 + math.log(2.0 * math.pi * r2 / n))


def _cpu_min(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="i,iii,iv,da2,expert3,crowd2,nested4s,sys20,full6")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    from nlpower.lmm import lmer
    from nlpower.lmm.frame import model_frame
    from nlpower.lmm.native.model import NativeModel
    from nlpower.mixed.native.blocks import group_blocks

    print("| case | n | random-effects columns | native evaluation | mixed.blocked evaluation "
          "| ratio | deviance difference |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            path = Path(tmp) / f"{case}.csv"
            make_data(case, path)
            df = read_data(case, path)
            spec = CASES[case]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = lmer(spec["formula"], df, REML=False, contrasts=spec["contrasts"])
                ms = model_frame(spec["formula"], df, contrasts=spec["contrasts"])
            model = NativeModel(ms)
            theta = np.asarray(fit.theta, dtype=float)
            blocks = group_blocks(model.layout)
            X, y = np.asarray(ms.X, dtype=float), np.asarray(ms.y, dtype=float)
            d_nat = model.deviance(theta)
            d_blk = blocked_deviance(blocks, X, y, theta)
            t_nat = _cpu_min(partial(model.deviance, theta), args.repeats)
            t_blk = _cpu_min(partial(blocked_deviance, blocks, X, y, theta), args.repeats)
            q = sum(b.m * b.q for b in blocks)
            print(f"| {case} | {ms.n} | {q} | {t_nat * 1e3:.2f} ms | {t_blk * 1e3:.2f} ms "
                  f"| {t_blk / t_nat:.1f}x | {d_blk - d_nat:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
