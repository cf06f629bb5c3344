"""Model matrices: contrasts, R's term coding rule and column names, aliased columns.

Stage 3 of the model frame (:mod:`nlpower.lmm.frame`; R's ``model.matrix``
and lme4's rank check), numerically equal to R 4.2.2 ``model.matrix`` with
``contr.treatment``, ``contr.sum`` and ``contr.sum / 2`` (see the module
docstring of :mod:`nlpower.lmm.frame` for the rules).  Columns carry R's
names except that a sum-coded factor's are named by level (``system[A]``,
R's ``system1``; :mod:`nlpower.lmm.names`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy.linalg.lapack import dpotrf as _dpotrf

from .._choices import Coding, allowed
from ..errors import InputError
from ..formula import Terms
from .columns import Factor, Variable

__all__ = ["CONTRASTS", "RANK_TOL", "contrast_matrix", "drop_aliased", "model_matrix"]

#: Contrast codings accepted in ``contrasts=`` (the :data:`~nlpower._choices.Coding`
#: values), R's default first.
CONTRASTS: tuple[str, ...] = ("treatment", *(c for c in allowed(Coding) if c != "treatment"))

#: Relative tolerance of the rank check (R's ``qr`` default).
RANK_TOL = 1e-7


# ---------------------------------------------------------------------------
# contrasts


def contrast_matrix(kind: str, levels: tuple[str, ...] | list[str]) -> tuple[np.ndarray, list[str]]:
    """Coding matrix (K x m) and column-name suffixes for a factor.

    ``kind`` is ``"treatment"``, ``"sum"``, ``"half"`` or ``"full"`` (one
    indicator per level, used where R does not apply contrasts).  Numerically
    equal to R's ``contr.treatment(K)``, ``contr.sum(K)``,
    ``contr.sum(K) / 2`` and ``diag(K)``.  The suffixes are R's, except
    under sum coding: ``[A]`` for the column that is +1 for level A
    (R: ``1``; :mod:`nlpower.lmm.names`).

    Examples
    --------
    >>> contrast_matrix("sum", ["A", "B", "C"])
    (array([[ 1.,  0.],
           [ 0.,  1.],
           [-1., -1.]]), ['[A]', '[B]'])
    """
    k = len(levels)
    if kind == "full":
        return np.eye(k), [str(lv) for lv in levels]
    if k < 2:
        raise InputError(
            f"contrasts need a factor with at least 2 levels; got {k} level(s) {list(levels)}."
        )
    if kind == "treatment":
        return np.eye(k)[:, 1:], [str(lv) for lv in levels[1:]]
    if kind in ("sum", "half"):
        m = np.vstack([np.eye(k - 1), -np.ones((1, k - 1))])
        if kind == "half":
            m = 0.5 * m
        # column j is named by the level it is +1 for (R: by position, "1", "2"; names.py)
        return m, [f"[{lv}]" for lv in levels[:-1]]
    raise InputError(f"contrast must be one of {', '.join(map(repr, CONTRASTS))}; got {kind!r}.")


# ---------------------------------------------------------------------------
# model matrices


def _codings(terms: Terms, variables: Mapping[str, Variable]) -> list[list[str | None]]:
    """R's TermCode: per term and variable, "contrast", "full" or None (numeric)."""
    out: list[list[str | None]] = []
    sets = [frozenset(t) for t in terms.terms]
    for j, term in enumerate(terms.terms):
        codes: list[str | None] = []
        for v in term:
            if not isinstance(variables[v], Factor):
                codes.append(None)
                continue
            rest = sets[j] - {v}
            margin = not rest or any(rest <= s for s in sets[:j])
            codes.append("contrast" if margin else "full")
        out.append(codes)
    if not terms.intercept:
        # model.matrix: without an intercept the first factor is fully coded
        for j, term in enumerate(terms.terms):
            hit = [i for i, v in enumerate(term) if _n_levels(variables[v]) > 1]
            if hit:
                out[j][hit[0]] = "full"
                break
    return out


def _n_levels(var: Variable) -> int:
    return var.n_levels if isinstance(var, Factor) else 0


def model_matrix(
    terms: Terms,
    variables: Mapping[str, Variable],
    contrasts: Mapping[str, str],
    n: int,
) -> tuple[np.ndarray, list[str]]:
    """Model matrix of ``terms`` with lme4/R column names (``system[A]`` under sum coding).

    Parameters
    ----------
    terms : Terms
        Intercept flag and R-ordered terms (from :func:`nlpower.formula.parse`).
    variables : mapping
        Column name -> float array (numeric) or :class:`Factor`.
    contrasts : mapping
        Factor name -> ``"treatment"``, ``"sum"`` or ``"half"``; missing
        factors use ``"treatment"``.
    n : int
        Number of rows.
    """
    blocks: list[np.ndarray] = []
    names: list[str] = []
    if terms.intercept:
        blocks.append(np.ones((n, 1)))
        names.append("(Intercept)")
    for term, codes in zip(terms.terms, _codings(terms, variables), strict=True):
        cols: np.ndarray | None = None  # None: the empty product (a column of ones)
        cnames = [""]
        for v, code in zip(term, codes, strict=True):
            var = variables[v]
            if isinstance(var, Factor):
                kind = "full" if code == "full" else contrasts.get(v, "treatment")
                try:
                    mat, suffixes = contrast_matrix(kind, var.levels)
                except InputError:
                    raise InputError(
                        f"factor {v!r} has only {var.n_levels} level ({var.levels[0]!r}) in the "
                        "rows used, so it cannot be coded by contrasts. Drop it from the "
                        "formula or check the data."
                    ) from None
                block = mat[var.codes]
                bnames = [f"{v}{s}" for s in suffixes]
            else:
                block = var[:, None]
                bnames = [v]
            if cols is None:
                cols = block
            else:
                m_prev, m_v = cols.shape[1], block.shape[1]
                # first variable varies fastest: column index i + m_prev * j
                cols = (cols[:, None, :] * block[:, :, None]).reshape(n, m_prev * m_v)
            cnames = [f"{a}:{b}" if a else b for b in bnames for a in cnames]
        assert cols is not None
        blocks.append(cols)
        names.extend(cnames)
    mat = np.hstack(blocks) if blocks else np.zeros((n, 0))
    return np.ascontiguousarray(mat, dtype=float), names


def _gram_schmidt_keep(A: np.ndarray, tol: float) -> list[int]:
    """Indices of columns of ``A`` that are not (near) combinations of earlier kept ones.

    Classical Gram-Schmidt with re-orthogonalisation ("twice is enough"),
    column by column in order, as R's limited-pivoting QR decides.
    """
    m, p = A.shape
    A = np.asfortranarray(A, dtype=float)
    basis = np.empty((m, p), order="F")
    k = 0
    keep: list[int] = []
    for j in range(p):
        x = A[:, j]
        norm = float(np.sqrt(x @ x))
        if norm == 0.0:
            continue
        r = x.copy()
        if k:
            for _ in range(2):
                Bk = basis[:, :k]
                r -= Bk @ (r @ Bk)
        rn = float(np.sqrt(r @ r))
        if rn <= tol * norm:
            continue
        basis[:, k] = r / rn
        k += 1
        keep.append(j)
    return keep


#: :func:`_clearly_full_rank`'s margin on the smallest eigenvalue of the scaled ``X'X``
_GRAM_MARGIN = 1e-6


def _clearly_full_rank(X: np.ndarray) -> bool:
    """Whether no column of ``X`` is anywhere near the span of the others.

    With the columns scaled to unit length, ``X'X - 1e-6 I`` has a Cholesky
    factor only if the smallest singular value of the scaled ``X`` exceeds
    about ``1e-3``.  Each column's residual after projection on the others,
    relative to its length, is then at least that -- four orders above
    :data:`RANK_TOL` and far beyond the rounding of either computation -- so
    the column-by-column check would keep every column.  One small product
    and a ``p x p`` Cholesky instead of that check; ``False`` (zero, tiny or
    huge columns, or columns close to dependent) leaves the decision to it.
    (The rounding of ``X'X`` is ``n eps`` relative to the scaled entries,
    ``1e-10`` even for a million rows, against the margin ``1e-6``.)
    """
    if not np.abs(X).max() <= 1e100:        # X'X cannot overflow (no warning of its own)
        return False
    G = X.T @ X
    d = np.diagonal(G)
    if not (1e-200 <= d.min() and d.max() <= 1e200):       # (False for NaN too)
        return False
    s = 1.0 / np.sqrt(d)
    Gn = G * s * s[:, None]                                 # a new C-ordered array
    Gn.ravel()[:: Gn.shape[0] + 1] -= _GRAM_MARGIN
    return bool(_dpotrf(Gn, overwrite_a=1)[1] == 0)


def drop_aliased(
    X: np.ndarray,
    names: list[str],
    tol: float = RANK_TOL,
    row_key: np.ndarray | None = None,
) -> tuple[np.ndarray, list[str], list[str]]:
    """Drop columns of ``X`` that are linear combinations of earlier columns.

    A column is aliased when its residual after projection on the kept
    columns has norm <= ``tol`` times its own norm (R's ``qr`` with limited
    pivoting moves exactly these columns to the end; lme4 then drops them).

    ``row_key`` (optional) gives equal integers to rows of ``X`` known to be
    identical; the check then runs on the distinct rows weighted by the
    square root of their counts, which has the same cross-product
    ``X'X`` -- the same column lengths and angles -- at a fraction of the cost.

    Returns ``(X_kept, kept_names, dropped_names)``.
    """
    n, p = X.shape
    if p and _clearly_full_rank(X):
        return X, list(names), []
    A = X
    if row_key is not None and n > 4 * p:
        uniq, first, counts = np.unique(row_key, return_index=True, return_counts=True)
        if len(uniq) < n // 2:
            A = X[first] * np.sqrt(counts)[:, None]
    if A.shape[0] > 8 * p and A.shape[0] > 4096:
        # A = QR with Q orthonormal, so the columns of R have the same lengths
        # and angles as those of A: run the check on the small p x p matrix R.
        A = np.asarray(np.linalg.qr(A, mode="r"))
    keep = _gram_schmidt_keep(A, tol)
    kept = set(keep)
    dropped = [names[j] for j in range(p) if j not in kept]
    if not dropped:
        return X, list(names), []
    return np.ascontiguousarray(X[:, keep]), [names[j] for j in keep], dropped
