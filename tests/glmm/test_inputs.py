"""Response forms and bad input (issue 19 item 6): clear InputErrors, never tracebacks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import InputError
from nlpower.glmm import glmer

from .glmm_cases import dataset


@pytest.fixture(scope="module")
def binary() -> pd.DataFrame:
    rng = np.random.default_rng(19)
    g = np.repeat([f"w{i}" for i in range(25)], 12)
    x = rng.normal(size=g.size)
    b = rng.normal(0, 0.8, 25)[np.repeat(np.arange(25), 12)]
    y = rng.binomial(1, 1 / (1 + np.exp(-(0.2 + 0.7 * x + b))))
    return pd.DataFrame({"worker": g, "x": x, "y": y})


def test_response_forms_agree(binary: pd.DataFrame) -> None:
    a = glmer("y ~ x + (1 | worker)", binary)
    b = glmer("y ~ x + (1 | worker)", binary.assign(y=binary["y"].astype(bool)))
    lab = binary.assign(y=np.where(binary["y"] == 1, "win", "lose"))
    c = glmer("y ~ x + (1 | worker)", lab)                       # sorted: "lose" is failure
    cat = lab.assign(y=pd.Categorical(lab["y"], categories=["win", "lose"]))
    d = glmer("y ~ x + (1 | worker)", cat)                       # first level "win" = failure
    for f in (b, c):
        assert f.loglik == pytest.approx(a.loglik, abs=1e-8)
    assert d.fixef["x"] == pytest.approx(-a.fixef["x"], abs=1e-4)
    assert d.loglik == pytest.approx(a.loglik, abs=1e-6)


def test_proportions_with_weights_equal_binary_rows() -> None:
    """cbpp as proportions + weights = the same data expanded to 0/1 rows (lme4's semantics)."""
    d = dataset("cbpp")
    a = glmer("prop ~ period + (1 | herd)", d, weights="size")
    rows = []
    for r in d.itertuples(index=False):
        rows += [(r.herd, r.period, 1)] * int(r.incidence)
        rows += [(r.herd, r.period, 0)] * int(r.size - r.incidence)
    long = pd.DataFrame(rows, columns=["herd", "period", "y"])
    b = glmer("y ~ period + (1 | herd)", long)
    np.testing.assert_allclose(b.fixef, a.fixef, atol=1e-4)
    np.testing.assert_allclose(b.theta, a.theta, atol=1e-4)
    # the log-likelihoods differ by the binomial coefficients only (as in R)
    from scipy.special import gammaln
    n, k = d["size"].to_numpy(), d["incidence"].to_numpy()
    logc = float(np.sum(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)))
    assert a.loglik - b.loglik == pytest.approx(logc, abs=1e-4)


def test_probit_and_nagq0_run(binary: pd.DataFrame) -> None:
    p = glmer("y ~ x + (1 | worker)", binary, link="probit")
    lg = glmer("y ~ x + (1 | worker)", binary)
    assert p.link == "probit"
    assert p.fixef["x"] == pytest.approx(lg.fixef["x"] / 1.7, rel=0.15)   # logit ~ 1.6-1.8 probit
    z = glmer("y ~ x + (1 | worker)", binary, nAGQ=0)
    assert z.loglik <= lg.loglik + 1e-8
    assert "nAGQ = 0" in z.summary()


@pytest.mark.parametrize("values, match", [
    ([0, 1, 2], "must be 0/1"),
    ([0.0, 0.5, 1.0], "no weights="),
    (["a", "b", "c"], "3 distinct values"),
])
def test_bad_binary_response(binary: pd.DataFrame, values: list, match: str) -> None:
    y = np.resize(np.array(values, dtype=object), len(binary))
    with pytest.raises(InputError, match=match):
        glmer("y ~ x + (1 | worker)", binary.assign(y=list(y)))


def test_all_zero_and_all_one(binary: pd.DataFrame) -> None:
    for v in (0, 1):
        with pytest.raises(InputError, match=f"is {v} in every row"):
            glmer("y ~ x + (1 | worker)", binary.assign(y=v))


def test_poisson_counts(binary: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="non-negative whole counts"):
        glmer("y ~ x + (1 | worker)", binary.assign(y=binary["y"] - 0.5), "poisson")
    with pytest.raises(InputError, match="non-negative whole counts"):
        glmer("y ~ x + (1 | worker)", binary.assign(y=-binary["y"]), "poisson")
    with pytest.raises(InputError, match="numeric counts"):
        glmer("y ~ x + (1 | worker)", binary.assign(y="a"), "poisson")


def test_unknown_family_and_link(binary: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="binomial"):
        glmer("y ~ x + (1 | worker)", binary, "binomal")
    with pytest.raises(InputError, match="probit"):
        glmer("y ~ x + (1 | worker)", binary, link="probt")
    with pytest.raises(InputError, match="not available for the poisson"):
        glmer("y ~ x + (1 | worker)", binary, "poisson", link="logit")
    with pytest.raises(InputError, match="lmer"):
        glmer("y ~ x + (1 | worker)", binary, "gaussian")


def test_bad_options(binary: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="nAGQ"):
        glmer("y ~ x + (1 | worker)", binary, nAGQ=-1)
    two = binary.assign(item=np.tile([f"i{i}" for i in range(12)], 25))
    with pytest.raises(InputError, match="single scalar"):
        glmer("y ~ x + (1 | worker) + (1 | item)", two, nAGQ=5)
    with pytest.raises(InputError, match="weights"):
        glmer("y ~ x + (1 | worker)", binary, weights="trials")
    with pytest.raises(InputError, match="offset"):
        glmer("y ~ x + (1 | worker)", binary, offset=np.ones(3))
    with pytest.raises(InputError, match="DataFrame"):
        glmer("y ~ x + (1 | worker)", binary.to_dict())


def test_complete_separation_warns() -> None:
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"g": np.repeat([f"g{i}" for i in range(20)], 10), "x": rng.normal(size=200)})
    d["y"] = (d["x"] > 0).astype(int)
    with pytest.warns(Warning, match="separation"):
        fit = glmer("y ~ x + (1 | g)", d)
    assert fit.optinfo["separation"]


def test_model_level_errors(binary: pd.DataFrame) -> None:
    from nlpower.glmm import GlmmModel
    from nlpower.lmm.family import Binomial, Gaussian
    from nlpower.lmm.frame import model_frame

    spec = model_frame("y ~ x + (1 | worker)", binary)
    with pytest.raises(InputError, match="binomial and Poisson"):
        GlmmModel(spec, Gaussian())
    with pytest.raises(InputError, match="no random-effects terms"):
        GlmmModel(model_frame("y ~ x", binary), Binomial())
    m = GlmmModel(spec, Binomial())
    with pytest.raises(InputError, match="control keys"):
        m.fit(control={"maxiter": 10})
    with pytest.raises(InputError, match="maxeval"):
        m.fit(control={"maxeval": 1.5})
    with pytest.raises(InputError, match="start beta"):
        m.fit(start={"theta": [1.0], "beta": [0.0]})
    with pytest.raises(InputError, match="theta"):
        m.fit(start={"theta": [1.0, 2.0], "beta": [0.0, 0.0]})
    with pytest.raises(InputError, match="simulate needs params"):
        m.simulate(1, rng=1)
    with pytest.raises(InputError, match="one per row"):
        m.refit(np.ones(3))
