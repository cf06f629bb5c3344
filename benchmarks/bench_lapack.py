"""The engines' direct LAPACK calls against the public wrappers that would replace them.

Usage (from the repository root; one BLAS thread, as the engines run)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_lapack.py

Each row is one kind of call site (``scipy.linalg.lapack`` / ``blas``) at a
size an engine meets (the rest of ``expert3``/``da2``/InstEval, a 4 x 4
block-1 factor, ...), timed against the replacement a reader would write
with ``numpy.linalg`` or ``scipy.linalg``.  CPU time, minimum over 7 rounds
of a loop sized to ~20 ms; the inputs are copied outside the timing where a
call overwrites them.  The table in ``docs/engine.md`` ("Direct LAPACK
calls") is this script's output.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.linalg as sla
from scipy.linalg import blas, lapack


def _spd(n: int, seed: int = 0) -> np.ndarray:
    a = np.random.default_rng(seed).standard_normal((n, n + 5))
    return a @ a.T / n + np.eye(n)


def _time(fn: Callable[[], object], setup: Callable[[], object] | None = None) -> float:
    """Seconds per call (CPU, minimum of 7 rounds)."""
    reps = 1
    while True:                                   # size the loop to ~20 ms
        args = [setup() if setup else None for _ in range(reps)]
        t0 = time.process_time()
        for a in args:
            fn() if a is None else fn(a)          # type: ignore[call-arg]
        if time.process_time() - t0 > 0.02 or reps > 1 << 16:
            break
        reps *= 4
    best = float("inf")
    for _ in range(7):
        args = [setup() if setup else None for _ in range(reps)]
        t0 = time.process_time()
        for a in args:
            fn() if a is None else fn(a)          # type: ignore[call-arg]
        best = min(best, (time.process_time() - t0) / reps)
    return best


def _potrf_rows() -> list[tuple[str, str, float, str, float]]:
    out = []
    for n, where in ((20, "expert3 rest"), (243, "da2 rest"), (1145, "InstEval rest")):
        A = np.asfortranarray(_spd(n))

        def copy(A: np.ndarray = A) -> np.ndarray:
            return A.copy(order="F")

        t_l = _time(lambda a: lapack.dpotrf(a, lower=1, clean=0, overwrite_a=1), copy)
        t_s = _time(lambda a: sla.cholesky(a, lower=True, overwrite_a=True, check_finite=False),
                    copy)
        t_n = _time(lambda a: np.linalg.cholesky(a), copy)
        out.append((f"dpotrf, in place, n = {n} ({where})", "deviance.py, rest.py, lead.py",
                    t_l, "scipy.linalg.cholesky / numpy.linalg.cholesky", min(t_s, t_n)))
    return out


def _inverse_rows() -> list[tuple[str, str, float, str, float]]:
    out = []
    for n, where in ((240, "da2 gradient"), (1141, "InstEval gradient")):
        L = np.asfortranarray(np.linalg.cholesky(_spd(n)))
        eye = np.eye(n)
        out.append((f"dpotri, n = {n} ({where})", "deviance.py rest_inverse, rest.py, lead.py",
                    _time(lambda L=L: lapack.dpotri(L, lower=1)),
                    "scipy.linalg.cho_solve((L, True), I)",
                    _time(lambda L=L, eye=eye: sla.cho_solve((L, True), eye, check_finite=False))))
    L = np.asfortranarray(np.linalg.cholesky(_spd(243)))
    eye = np.eye(243)
    out.append(("dtrtri, n = 243 (dense gradient T)", "gradient.py _inverse_blocks_dense",
                _time(lambda: lapack.dtrtri(L, lower=1)),
                "scipy.linalg.solve_triangular(L, I)",
                _time(lambda: sla.solve_triangular(L, eye, lower=True, check_finite=False))))
    return out


def rows() -> list[tuple[str, str, float, str, float]]:
    out = _potrf_rows()
    L = np.asfortranarray(np.linalg.cholesky(_spd(244)))
    Ls, b = L[:-1, :-1], L[-1, :-1]               # as the engine: the factor's leading block
    out.append(("dtrtrs, 1 right-hand side, n = 243 (beta, modes)", "deviance.py _trsolve, rest.py",
                _time(lambda: lapack.dtrtrs(Ls, b, lower=1, trans=1)),
                "scipy.linalg.solve_triangular",
                _time(lambda: sla.solve_triangular(Ls, b, lower=True, trans=1,
                                                   check_finite=False))))
    out += _inverse_rows()
    Lt = np.linalg.cholesky(_spd(3))
    out.append(("dtrtri, n = 3 (a term's Lambda)", "gradient.py theta_gradient",
                _time(lambda: lapack.dtrtri(Lt, lower=1)), "numpy.linalg.inv",
                _time(lambda: np.linalg.inv(Lt))))
    B = _spd(4)
    lam = np.linalg.cholesky(_spd(4, 2))
    out.append(("dpotrf + dtrtrs, n = 4 (block 1, one group)", "block1.py grouped_W",
                _time(lambda: lapack.dtrtrs(lapack.dpotrf(B, lower=1, clean=1)[0], lam.T,
                                            lower=1, trans=0)),
                "numpy.linalg.cholesky + scipy.linalg.solve_triangular",
                _time(lambda: sla.solve_triangular(np.linalg.cholesky(B), lam.T, lower=True,
                                                   check_finite=False))))
    beta = np.random.default_rng(3).standard_normal((202, 1000))
    C = np.asfortranarray(_spd(202))

    def copy_c() -> np.ndarray:
        return C.copy(order="F")

    out.append(("dsyrk of beta' (trans), 202 x 1,000 (sys20 lead update)", "lead.py lead_factor",
                _time(lambda c: blas.dsyrk(-1.0, beta.T, beta=1.0, c=c, lower=1, overwrite_c=1,
                                           trans=1), copy_c),
                "C - beta @ beta.T",
                _time(lambda c: c - beta @ beta.T, copy_c)))
    H = _spd(14)
    g = np.ones(14)
    out.append(("dsyevd + dpotrf + dtrtrs, k = 14 (convergence check)", "lmm/checkconv.py",
                _time(lambda: (lapack.dsyevd(H, compute_v=0, lower=1),
                               lapack.dtrtrs(lapack.dpotrf(H, lower=1)[0], g, lower=1, trans=1))),
                "numpy.linalg.eigvalsh + cholesky + scipy.linalg.solve_triangular",
                _time(lambda: (np.linalg.eigvalsh(H),
                               sla.solve_triangular(np.linalg.cholesky(H), g, lower=True,
                                                    trans=1, check_finite=False)))))
    out += _small_rows()
    return out


def _small_rows() -> list[tuple[str, str, float, str, float]]:
    """The GLMM and ordinal engines' small dense systems (k = 10: a model's parameters)."""
    H = _spd(10, 4)
    g = np.ones(10)
    S = np.asfortranarray(_spd(60, 5))
    L = np.asfortranarray(np.linalg.cholesky(S))
    R = np.random.default_rng(6).standard_normal((60, 200))
    g6 = np.ones(60)
    return [
        ("dgesv, k = 10", "ordinal/_dense.py solve", _time(lambda: lapack.dgesv(H, g)),
         "numpy.linalg.solve", _time(lambda: np.linalg.solve(H, g))),
        ("dposv, k = 10", "ordinal/_dense.py floored_solve", _time(lambda: lapack.dposv(H, g, lower=1)),
         "scipy.linalg.solve(assume_a='pos')",
         _time(lambda: sla.solve(H, g, assume_a="pos", check_finite=False))),
        ("dsyevd with vectors, k = 10", "ordinal/_dense.py inv_and_cond",
         _time(lambda: lapack.dsyevd(H, compute_v=1, lower=1)), "numpy.linalg.eigh",
         _time(lambda: np.linalg.eigh(H))),
        ("dpotrf in place + dpotrs, n = 60 (PIRLS rest)", "mixed/blocked.py",
         _time(lambda a: lapack.dpotrs(lapack.dpotrf(a, lower=1, clean=1, overwrite_a=1)[0], g6,
                                       lower=1), lambda: S.copy(order="F")),
         "scipy.linalg.cho_factor + cho_solve",
         _time(lambda a: sla.cho_solve(sla.cho_factor(a, lower=True, overwrite_a=True,
                                                      check_finite=False), g6, check_finite=False),
               lambda: S.copy(order="F"))),
        ("dtrtrs x 2 + dpotri, n = 60, 200 columns", "glmm/gradient.py, mixed/pairs.py",
         _time(lambda: (lapack.dtrtrs(L, lapack.dtrtrs(L, R, lower=1)[0], lower=1, trans=1),
                        lapack.dpotri(L, lower=1))),
         "scipy.linalg.solve_triangular x 2 + cho_solve(I)",
         _time(lambda: (sla.solve_triangular(L, sla.solve_triangular(L, R, lower=True,
                                                                       check_finite=False),
                                             lower=True, trans=1, check_finite=False),
                        sla.cho_solve((L, True), np.eye(60), check_finite=False)))),
    ]



def main() -> int:
    print("| call | site | direct | wrapper | wrapper time | wrapper / direct |")
    print("|---|---|---|---|---|---|")
    for what, site, t_d, wrapper, t_w in rows():
        print(f"| {what} | `{site}` | {1e6 * t_d:.1f} us | {wrapper} | {1e6 * t_w:.1f} us "
              f"| {t_w / t_d:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
