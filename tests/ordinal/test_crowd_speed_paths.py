"""The shortcuts of the crossed vector-term fit reach what the long way reaches.

``rating ~ s + (s || w) + (s || i)`` fits through :class:`~nlpower.mixed.pairs.PairFactor`;
by default L-BFGS-B stops once an iteration gains < 1e-10 relative (not
while an SD is near 0) and ``_finish``'s Newton steps (with the Hessian
computed for ``vcov``) finish the fit.  The long way is any ``control``
(here ``{"ftol": 1e-14}``, the default): L-BFGS-B to its own end.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.linalg import lapack

from nlpower.mixed.pairs import PairFactor
from nlpower.ordinal import prepare_clmm

FORMULA = "rating ~ s + (s || w) + (s || i)"


def _crowd(seed: int, n: int = 900, n_w: int = 30, n_i: int = 60) -> pd.DataFrame:
    """Ratings with real worker, item and worker x system variation (SDs away from 0)."""
    rng = np.random.default_rng(seed)
    w = rng.integers(0, n_w, n)
    i = rng.integers(0, n_i, n)
    s = rng.integers(0, 4, n)
    eta = (np.array([0.0, 0.3, -0.2, 0.5])[s] + rng.normal(0, 0.8, n_w)[w]
           + rng.normal(0, 0.6, (n_w, 4))[w, s] + rng.normal(0, 1.0, n_i)[i]
           + rng.normal(0, 0.4, (n_i, 4))[i, s])
    y = np.searchsorted(np.array([-1.5, -0.5, 0.5, 1.5]), eta + rng.logistic(size=n)) + 1
    return pd.DataFrame({"w": w.astype(str), "i": i.astype(str),
                         "s": np.array(list("ABCD"))[s], "rating": y})


@pytest.mark.parametrize("seed", [3, 4])
def test_default_stop_reaches_the_tight_optimum_and_its_standard_errors(seed: int) -> None:
    d = _crowd(seed)
    m = prepare_clmm(FORMULA, d)
    m.rs.use_pairs = True            # (by default this size takes the dense Schur complement)
    assert m.rs.pair_plan() is not None
    quick = m.refit()
    tight = m.refit(control={"ftol": 1e-14})
    assert quick.converged and tight.converged
    assert quick.loglik >= tight.loglik - 1e-6
    np.testing.assert_allclose(quick.params, tight.params, atol=1e-3)
    se_q, se_t = np.sqrt(np.diag(quick.vcov)), np.sqrt(np.diag(tight.vcov))
    np.testing.assert_array_equal(np.isfinite(se_q), np.isfinite(se_t))
    ok = np.isfinite(se_t)
    assert ok.sum() > quick.alpha.size + quick.beta.size      # some random-effect SEs too
    np.testing.assert_allclose(se_q[ok], se_t[ok], rtol=1e-3)


def test_symmetrised_dpotri_inverse_equals_the_solve_fallback(monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    d = _crowd(5, n=500)
    m = prepare_clmm(FORMULA, d)
    m.rs.use_pairs = True
    x = m.start()
    m.nll(x)
    fac = m._state.inner.factor
    assert isinstance(fac, PairFactor)
    fast = fac.selected(m.rs.Avals)

    def failing(c: np.ndarray, lower: int = 0) -> tuple[np.ndarray, int]:
        return np.zeros_like(c), 1                                  # forces cho_solve
    monkeypatch.setattr(lapack, "dpotri", failing)
    slow = fac.selected(m.rs.Avals)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)
