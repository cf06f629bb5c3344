"""Small model structures shared by the mixed-model tests (tests/lmm), and a brute-force deviance."""

from __future__ import annotations

import math

import numpy as np

from nlpower.lmm.native import NativeModel
from nlpower.lmm.structure import ModelSpec, ReTerm


def _term(group: str, codes: np.ndarray, Z: np.ndarray, cnames: tuple[str, ...]) -> ReTerm:
    m = int(codes.max()) + 1
    return ReTerm(group, codes.astype(np.intp), tuple(f"{group}{i}" for i in range(m)),
                  np.asarray(Z, float).reshape(len(codes), -1), cnames)


def crossed_spec(n_w: int = 6, n_i: int = 15, seed: int = 1, corr: bool = False) -> ModelSpec:
    """Paired crossed design, y ~ x + (1+x||worker) + (1+x||item) (or correlated item slopes)."""
    rng = np.random.default_rng(seed)
    w, i, s = np.meshgrid(np.arange(n_w), np.arange(n_i), [-1.0, 1.0], indexing="ij")
    w, i, x = w.ravel(), i.ravel(), s.ravel()
    n = x.size
    y = (0.5 + 0.2 * x + rng.normal(0, .4, n_w)[w] + rng.normal(0, .2, n_w)[w] * x
         + rng.normal(0, .5, n_i)[i] + rng.normal(0, .3, n_i)[i] * x + rng.normal(0, .6, n))
    X = np.column_stack([np.ones(n), x])
    one = np.ones(n)
    if corr:
        terms = (_term("worker", w, one, ("(Intercept)",)), _term("worker", w, x, ("x",)),
                 _term("item", i, np.column_stack([one, x]), ("(Intercept)", "x")))
    else:
        terms = (_term("worker", w, one, ("(Intercept)",)), _term("worker", w, x, ("x",)),
                 _term("item", i, one, ("(Intercept)",)), _term("item", i, x, ("x",)))
    return ModelSpec("y ~ x + (1 + x || worker) + (1 + x || item)", "y", y, X,
                     ("(Intercept)", "x"), terms)


def nested_spec(seed: int = 2, item_slopes: bool = False) -> ModelSpec:
    """Items nested in 3 systems, (system || worker) + (1 | item) [or (system || item)]."""
    rng = np.random.default_rng(seed)
    n_items, n_w = 30, 8
    sys_of_item = np.arange(n_items) % 3
    rows = [(wk, it) for it in range(n_items) for wk in rng.choice(n_w, 3, replace=False)]
    w = np.array([r[0] for r in rows])
    it = np.array([r[1] for r in rows])
    sy = sys_of_item[it]
    ind = np.eye(3)[sy]
    n = w.size
    X = np.column_stack([np.ones(n), ind[:, 0] - ind[:, 2], ind[:, 1] - ind[:, 2]])
    y = X @ [0.5, 0.1, -0.05] + rng.normal(0, .3, n_items)[it] + rng.normal(0, .2, n_w)[w] + rng.normal(0, .4, n)
    one = np.ones(n)
    names = ("systemA", "systemB", "systemC")
    terms = (_term("worker", w, one, ("(Intercept)",)), _term("worker", w, ind, names),
             _term("item", it, one, ("(Intercept)",)))
    if item_slopes:     # each item has only 2 of its 4 columns non-zero ("patterns")
        terms = (*terms, _term("item", it, ind, names))
    return ModelSpec("y ~ system + (system || worker) + (1 | item)", "y", y, X,
                     ("(Intercept)", "system[A]", "system[B]"), terms)


def dense_deviance(model: NativeModel, theta: np.ndarray, REML: bool) -> float:
    """Brute force: full Z, Lambda, dense Cholesky of Lambda'Z'Z Lambda + I, PLS solve."""
    spec, lay = model.spec, model.layout
    Zs, Ls = [], []
    for t, off in zip(lay.terms, lay.term_offsets, strict=True):
        lam = np.zeros((t.q, t.q))
        k = off
        for j in range(t.q):
            for i in range(j, t.q):
                lam[i, j] = theta[k]
                k += 1
        Zfull = np.zeros((spec.n, t.n_levels * t.q))
        for c in range(t.q):
            Zfull[np.arange(spec.n), t.codes * t.q + c] = t.Z[:, c]
        Zs.append(Zfull)
        Ls.append(np.kron(np.eye(t.n_levels), lam))
    Z = np.hstack(Zs)
    q = Z.shape[1]
    Lam = np.zeros((q, q))
    o = 0
    for L in Ls:
        Lam[o:o + L.shape[0], o:o + L.shape[0]] = L
        o += L.shape[0]
    ZL = Z @ Lam
    X, y = spec.X, spec.y
    n, p = X.shape
    # penalised least squares on the augmented system
    A = np.block([[ZL.T @ ZL + np.eye(q), ZL.T @ X], [X.T @ ZL, X.T @ X]])
    rhs = np.concatenate([ZL.T @ y, X.T @ y])
    sol = np.linalg.solve(A, rhs)
    u, beta = sol[:q], sol[q:]
    r2 = float(np.sum((y - ZL @ u - X @ beta) ** 2) + u @ u)
    ldL2 = np.linalg.slogdet(ZL.T @ ZL + np.eye(q))[1]
    if not REML:
        return ldL2 + n * (1 + math.log(2 * math.pi * r2 / n))
    LX = np.linalg.cholesky(A)[q:, q:]
    ldRX2 = 2 * np.sum(np.log(np.diag(LX)))
    return ldL2 + ldRX2 + (n - p) * (1 + math.log(2 * math.pi * r2 / (n - p)))


SPECS = [crossed_spec, nested_spec, lambda: crossed_spec(corr=True),
         lambda: nested_spec(item_slopes=True)]


SPEC_IDS = ["crossed", "nested", "correlated", "nested-patterns"]
