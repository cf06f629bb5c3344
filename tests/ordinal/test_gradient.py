"""The analytic Laplace gradient against central differences of the log-likelihood."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.checkconv import gradient
from nlpower.ordinal import prepare_clmm


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 400
    d = pd.DataFrame({"w": rng.integers(0, 25, n), "i": rng.integers(0, 12, n),
                      "x": rng.normal(size=n), "s": rng.choice(["A", "B"], n)})
    d["rating"] = rng.integers(1, 6, n)
    return d


@pytest.mark.parametrize("formula", [
    "rating ~ x + (1|w)",
    "rating ~ x + s + (1 + x|w)",
    "rating ~ x + (1|w) + (1|i)",
    "rating ~ x + s + (1 + x|w) + (1|i)",
    "rating ~ x + (x||w) + (1|i) + (0 + x|i)",
])
@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
def test_gradient_matches_differences(data: pd.DataFrame, formula: str, link: str) -> None:
    m = prepare_clmm(formula, data, link=link)
    rng = np.random.default_rng(0)
    x = m.start()
    x[m.n_alpha:m.n_alpha + m.p] += 0.2
    x[m.n_alpha + m.p:] = rng.uniform(0.3, 0.9, m.n_theta)
    f, g = m.nll_grad(x)
    fd = gradient(m.nll, x, f, 1e-4)[0]
    # differences carry the inner Newton's noise (~1e-9 in -loglik): 1e-4 absolute
    np.testing.assert_allclose(g, fd, atol=2e-4 * max(1.0, np.abs(fd).max() / 10))
    assert np.abs(g).max() > 1e-2      # a non-trivial point


def test_thresholds_other_than_flexible(data: pd.DataFrame) -> None:
    for thr in ("equidistant", "symmetric"):
        m = prepare_clmm("rating ~ x + (1|w)", data, threshold=thr)
        x = m.start()
        x[-1] = 0.7
        f, g = m.nll_grad(x)
        np.testing.assert_allclose(g, gradient(m.nll, x, f, 1e-4)[0], atol=1e-4)


def test_sparse_and_dense_schur_agree(data: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    import nlpower.mixed.blocked as bl
    m = prepare_clmm("rating ~ x + s + (1 + x|w) + (1|i)", data)
    x = m.start()
    x[m.n_alpha + m.p:] = [0.8, 0.2, 0.5, 0.6]
    f_dense, g_dense = m.nll_grad(x)
    assert not m.rs.layout.sparse_c
    monkeypatch.setattr(bl, "DENSE_C", 0)
    m2 = prepare_clmm("rating ~ x + s + (1 + x|w) + (1|i)", data)
    f_sparse, g_sparse = m2.nll_grad(x)
    assert m2.rs.layout.sparse_c
    assert f_sparse == pytest.approx(f_dense, abs=1e-9)
    np.testing.assert_allclose(g_sparse, g_dense, atol=1e-8)
