"""A fit is the same whatever the model fitted or evaluated before it.

The structure's per-``theta`` arrays (``Z Lambda``, the factorisation's
products and the pair strategy's part) are a memo keyed by the value of
``theta``, and the fit's warm starts live in the fit: a fit on a fresh
model and the same fit after other fits and evaluations (another response,
another ``theta``) agree to the last bit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.ordinal import prepare_clmm


def _crowd(seed: int, n: int = 500, n_w: int = 25, n_i: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    w, i, s = rng.integers(0, n_w, n), rng.integers(0, n_i, n), rng.integers(0, 3, n)
    eta = (np.array([0.0, 0.4, -0.3])[s] + rng.normal(0, 0.8, n_w)[w]
           + rng.normal(0, 0.5, (n_w, 3))[w, s] + rng.normal(0, 0.9, n_i)[i])
    y = np.searchsorted(np.array([-1.5, -0.5, 0.5, 1.5]), eta + rng.logistic(size=n)) + 1
    return pd.DataFrame({"w": w.astype(str), "i": i.astype(str),
                         "s": np.array(list("ABC"))[s], "rating": y})


CASES = [  # (formula, nAGQ, use_pairs): one scalar term (batched Newton, AGQ), crossed, pairs
    ("rating ~ s + (1 | w)", 1, None),
    ("rating ~ s + (1 | w)", 5, None),
    ("rating ~ s + (1 | w) + (1 | i)", 1, None),
    ("rating ~ s + (s || w) + (1 | i)", 1, True),
]


def _model(d: pd.DataFrame, formula: str, nAGQ: int, pairs: bool | None):
    m = prepare_clmm(formula, d, nAGQ=nAGQ)
    m.rs.use_pairs = pairs
    return m


@pytest.mark.parametrize(("formula", "nAGQ", "pairs"), CASES)
def test_a_fit_is_identical_after_other_fits_and_evaluations(formula: str, nAGQ: int,
                                                             pairs: bool | None) -> None:
    d = _crowd(1)
    fresh = _model(d, formula, nAGQ, pairs)
    if pairs:
        assert fresh.rs.pair_plan() is not None
    ref = fresh.refit()
    used = _model(d, formula, nAGQ, pairs)
    other = used.simulate(1, rng=4, params=ref.params)[0]
    used.refit(other)                              # another response ...
    x = ref.params.copy()
    x[used.n_alpha + used.p:] = 1.7                # ... and an evaluation at another theta
    assert np.isfinite(used.nll(x))
    again = used.refit(d["rating"].to_numpy() - 1)
    assert again.loglik == ref.loglik
    np.testing.assert_array_equal(again.params, ref.params)
    np.testing.assert_array_equal(again.vcov, ref.vcov)
    np.testing.assert_array_equal(again.u, ref.u)
    assert again.n_evals == ref.n_evals
