"""Adaptive Gauss-Hermite fits of one scalar term from the batched scalar path.

- :func:`~nlpower.ordinal.agq.batch_agq_nll_grad` (many points at once, the
  scalar term's modes) against the general path one point at a time
  (:func:`~nlpower.ordinal.laplace.conditional_modes` on the
  :class:`~nlpower.ordinal.structure.ReStructure`, then
  :func:`~nlpower.ordinal.agq.agq_loglik` and :func:`~nlpower.ordinal.agq.agq_gradient`);
- the batched forward-difference Hessian against single gradient calls.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.checkconv import hessian_from_gradient
from nlpower.ordinal import prepare_clmm
from nlpower.ordinal.agq import agq_gradient, agq_loglik, batch_agq_nll_grad
from nlpower.ordinal.hessian import fd_hessian
from nlpower.ordinal.laplace import conditional_modes


def ratings(n_judges: int = 12, per: int = 8, *, seed: int = 0, sd: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    judge = np.repeat(np.arange(n_judges), per)
    rng.shuffle(judge)
    d = pd.DataFrame({"judge": [f"j{k:02d}" for k in judge], "x": rng.normal(size=judge.size),
                      "temp": rng.choice(["cold", "warm"], judge.size)})
    latent = (0.7 * d.x + 0.9 * (d.temp == "warm") + rng.normal(0, sd, n_judges)[judge]
              + rng.logistic(size=judge.size))
    d["rating"] = np.digitize(latent, [-1.5, -0.3, 0.8, 2.0]) + 1
    return d


def general_nll_grad(m: object, x: np.ndarray) -> tuple[float, np.ndarray]:
    """``-loglik`` and its gradient by the general structure's modes (the pre-batch path)."""
    alpha, beta, theta = m.split(x)                       # type: ignore[attr-defined]
    up, lo = m.bounds(alpha, beta)                        # type: ignore[attr-defined]
    m.rs.set_theta(theta)                                  # type: ignore[attr-defined]
    inner = conditional_modes(m.rs, m.link, up, lo, np.zeros(m.rs.n_u))  # type: ignore[attr-defined]
    f = -agq_loglik(m.rs, m.link, up, lo, inner, m.nAGQ)  # type: ignore[attr-defined]
    g = -agq_gradient(m.rs, m.link, up, lo, m.Bu, m.Bl, inner, m.nAGQ)  # type: ignore[attr-defined]
    return f, g


@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
@pytest.mark.parametrize("n_agq", [3, 10])
def test_batch_matches_the_general_path_one_point_at_a_time(link: str, n_agq: int) -> None:
    m = prepare_clmm("rating ~ x + temp + (1 | judge)", ratings(seed=3), link=link,
                     nAGQ=n_agq)
    x0 = m.start()
    rng = np.random.default_rng(4)
    xs = x0 + 0.1 * rng.standard_normal((5, x0.size))
    xs[:, -1] = rng.uniform(0.3, 2.0, 5)
    m.nll(x0)                                             # the batch's warm start
    f, g, u = batch_agq_nll_grad(m, xs)
    assert u.shape == (5, 12)
    for j in range(5):
        fj, gj = general_nll_grad(m, xs[j])
        # the modes of both paths are converged far below the tolerance
        assert f[j] == pytest.approx(fj, abs=1e-9)
        np.testing.assert_allclose(g[j], gj, atol=1e-8)
        assert np.abs(gj).max() > 1e-2                    # not a point where both vanish
        # and the model's single-point evaluation is the same
        m._state.last = None
        fm, gm = m.nll_grad(xs[j])
        assert fm == pytest.approx(fj, abs=1e-9)
        np.testing.assert_allclose(gm, gj, atol=1e-8)


def test_batched_hessian_matches_single_gradient_calls() -> None:
    m = prepare_clmm("rating ~ x + temp + (1 | judge)", ratings(seed=5), nAGQ=7)
    x = m.start()
    x[-1] = 0.9
    f, g = m.nll_grad(x)
    H = fd_hessian(m, x, g)
    assert H is not None
    H1 = hessian_from_gradient(lambda z: m.nll_grad(z)[1], x, delta=1e-4, g=g)
    # the same forward differences; the modes' noise over delta is ~1e-12 / 1e-4
    np.testing.assert_allclose(H, H1, atol=1e-6)
    assert np.all(np.linalg.eigvalsh(H) > 0)
