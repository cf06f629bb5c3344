"""Batched GLMM refits (``GlmmModel.refit_many``) against one ``refit`` per replicate.

::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_glmm_batched.py
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_glmm_batched.py --n-sims 1000 --n-ref 100
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_glmm_batched.py --crowd 200x2000x5 \
        --n-sims 32 --n-ref 4

Cases: simr's vignette model (``z ~ x + (1 | g)``, Poisson, ``simdata``, x set
to -0.05) and a crossed ratings design of 10 workers x 100 items
(``y ~ system + (1 | worker) + (1 | item)``, binomial and Poisson, simulated
here from a fixed seed).  Every replicate starts at the truth, as in a power
study.  Reported: CPU milliseconds per replicate (``process_time``: a
loaded machine inflates it less than wall-clock) of ``refit_many`` on
``--n-sims`` responses and of ``refit`` on the first ``--n-ref``, the
number of rows the batch left to ``refit``, and the largest deviance
difference between the two on the rows both fitted.

``--crowd WxIxK`` (e.g. ``200x2000x5``: workers x items x ratings per item)
instead times a sparse crowd design (``bench_glmm.crowd_glmm``, binomial
``y ~ system + (1|worker) + (1|item)``) whose single fit takes the pair
strategy: the batch on the rule's strategy, the batch with the dense Schur
complement (``pairs=False``), alternating ``--rounds`` times, and ``refit``;
and the largest differences between their fits.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from nlpower.glmm import glmer
from nlpower.glmm.laplace_batch import BatchedLaplace
from nlpower.mixed.blocked_batch import BatchedLayout


def _crossed(family: str) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n_workers, n_items = 10, 100
    d = pd.DataFrame([(f"w{w}", f"i{i}") for w in range(n_workers) for i in range(n_items)],
                     columns=["worker", "item"])
    d["system"] = np.where(rng.random(len(d)) < 0.5, "A", "B")
    eta = ((0.3 if family == "poisson" else 0.0) + 0.2 * (d["system"] == "B")
           + rng.normal(0, 0.5, n_workers)[d["worker"].str[1:].astype(int)]
           + rng.normal(0, 0.8, n_items)[d["item"].str[1:].astype(int)])
    d["y"] = (rng.poisson(np.exp(eta)) if family == "poisson"
              else rng.binomial(1, 1.0 / (1.0 + np.exp(-eta))))
    return d


def cases() -> dict[str, object]:
    simdata = pd.read_csv("tests/reference/data/simdata.csv", dtype={"g": str})
    out = {"simdata poisson (1|g), 30 rows":
           glmer("z ~ x + (1 | g)", simdata, "poisson").with_params(fixef={"x": -0.05})}
    for fam in ("binomial", "poisson"):
        out[f"crossed {fam} 10 x 100"] = glmer("y ~ system + (1 | worker) + (1 | item)",
                                               _crossed(fam), fam)
    return out


def _largest(a: list, b: list) -> str:
    """The largest differences of deviance, beta and theta between two lists of fits."""
    dd = max(abs(x.deviance - y.deviance) for x, y in zip(a, b, strict=False))
    db = max(float(np.max(np.abs(x.beta - y.beta))) for x, y in zip(a, b, strict=False))
    dt = max(float(np.max(np.abs(x.theta - y.theta))) for x, y in zip(a, b, strict=False))
    return f"deviance {dd:.1e}, beta {db:.1e}, theta {dt:.1e}"


def crowd(spec: str, n_sims: int, n_ref: int, rounds: int) -> None:
    """The batch on the pair strategy against the dense batch and ``refit`` (module docstring)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_glmm import crowd_glmm
    n_w, n_i, k = (int(v) for v in spec.split("x"))
    fit = glmer("y ~ system + (1|worker) + (1|item)", crowd_glmm("binomial", n_w, n_i, k * n_i),
                "binomial")
    m = fit.model
    print(f"{spec}: single fit on {'pairs' if m.pirls.layout.pairs is not None else 'blocked'}")
    Y = m.simulate(n_sims, rng=1, params=fit)
    cpu: dict[bool, list[float]] = {True: [], False: []}
    res = {}
    for _ in range(rounds):
        for pairs in (False, True):
            bl = BatchedLaplace(m)
            if not pairs:
                bl.lay = BatchedLayout([b.codes for b in m.blocks], [b.Z[:, 0] for b in m.blocks],
                                       [b.m for b in m.blocks], pairs=False)
            m._batched = bl
            t0 = time.process_time()
            res[pairs] = m.refit_many(Y, start=fit)
            cpu[pairs].append(1e3 * (time.process_time() - t0) / n_sims)
    t0 = time.process_time()
    ref = [m.refit(y, start=fit) for y in Y[:n_ref]]
    t_ref = 1e3 * (time.process_time() - t0) / n_ref
    print(f"  CPU ms per replicate (minimum of {rounds}): dense batch {min(cpu[False]):.1f}, "
          f"rule's batch {min(cpu[True]):.1f}, refit {t_ref:.1f}")
    print(f"  rule's batch vs dense batch: {_largest(res[True], res[False])}")
    print(f"  rule's batch vs refit: {_largest(res[True][:n_ref], ref)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-sims", type=int, default=300)
    ap.add_argument("--n-ref", type=int, default=30)
    ap.add_argument("--crowd", default="", help="a sparse crowd design WxIxK (module docstring)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if args.crowd:
        crowd(args.crowd, args.n_sims, args.n_ref, args.rounds)
        return
    print(f"{'case':34s} {'refit_many ms':>13s} {'refit ms':>9s} {'ratio':>6s} "
          f"{'to refit':>8s} {'max |d dev|':>11s}")
    for name, fit in cases().items():
        m = fit.model
        Y = m.simulate(args.n_sims, rng=1, params=fit)
        m.refit_many(Y[:2], start=fit)                           # warm-up (builds the batch)
        t0 = time.process_time()
        many = m.refit_many(Y, start=fit)
        t1 = time.process_time()
        ref = [m.refit(y, start=fit) for y in Y[:args.n_ref]]
        t2 = time.process_time()
        a, b = 1e3 * (t1 - t0) / len(Y), 1e3 * (t2 - t1) / len(ref)
        left = sum("batched" not in getattr(c, "message", "") for c in many)
        dd = max(abs(c.deviance - r.deviance) for c, r in zip(many, ref, strict=False))
        print(f"{name:34s} {a:13.2f} {b:9.2f} {b / a:6.1f} {left:8d} {dd:11.1e}")


if __name__ == "__main__":
    main()
