"""nlpower.clmm on crowd-like data: crossed designs, robustness, the result interface, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower.errors import FormulaError, InputError, NlpowerWarning
from nlpower.ordinal import clmm, prepare_clmm


def crowd(n_workers: int = 40, n_items: int = 30, per_item: int = 8, *, worker_sd: float = 1.0,
          item_sd: float = 0.6, slope_sd: float = 0.0, effect: float = 0.5, seed: int = 0,
          cuts: tuple[float, ...] = (-2.0, -0.7, 0.7, 2.0)) -> pd.DataFrame:
    """Likert 1-5 ratings: each item rated by ``per_item`` random workers, systems A/B."""
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), per_item)
    worker = np.concatenate([rng.choice(n_workers, per_item, replace=False) for _ in range(n_items)])
    system = rng.integers(0, 2, item.size)
    x = system - 0.5
    b0 = rng.normal(0, worker_sd, n_workers)
    b1 = rng.normal(0, slope_sd, n_workers) if slope_sd else np.zeros(n_workers)
    c = rng.normal(0, item_sd, n_items)
    latent = effect * x + b0[worker] + b1[worker] * x + c[item] + rng.logistic(size=item.size)
    rating = np.digitize(latent, cuts) + 1
    return pd.DataFrame({"rating": rating, "system": np.where(system, "B", "A"), "x": x,
                         "worker": [f"w{k:03d}" for k in worker],
                         "item": [f"i{k:03d}" for k in item]})


def _fit(formula: str, d: pd.DataFrame, **kw):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clmm(formula, d, **kw)


@pytest.fixture(scope="module")
def crossed() -> pd.DataFrame:
    return crowd(seed=1, slope_sd=0.5)


def test_crossed_loglik_at_least_single_grouping(crossed: pd.DataFrame) -> None:
    full = _fit("rating ~ system + (1 | worker) + (1 | item)", crossed)
    w = _fit("rating ~ system + (1 | worker)", crossed)
    i = _fit("rating ~ system + (1 | item)", crossed)
    none = _fit("rating ~ system", crossed)
    assert full.converged and w.converged and i.converged
    assert full.loglik >= max(w.loglik, i.loglik) - 1e-6
    assert min(w.loglik, i.loglik) >= none.loglik - 1e-6
    assert full.loglik > w.loglik + 1.0           # the item SD 0.6 is visible in 240 ratings


def test_crossed_slopes_and_double_bar(crossed: pd.DataFrame) -> None:
    f = _fit("rating ~ system + (1 + system | worker) + (1 | item)", crossed)
    g = _fit("rating ~ system + (x || worker) + (1 | item)", crossed)
    assert f.converged and g.converged
    assert f.loglik >= g.loglik - 1e-6            # || is the correlation-0 sub-model
    vc = g.varcorr()
    assert vc["var2"].isna().all()                # no correlation under ||
    assert len(f.varcorr()) == 5                  # 2 SDs + corr + item SD + latent residual
    assert f.optinfo["checkconv"]["ok"]


def test_large_worker_sd_recovered() -> None:
    d = crowd(n_workers=60, n_items=60, per_item=10, worker_sd=2.5, seed=7)
    f = _fit("rating ~ system + (1 | worker) + (1 | item)", d)
    assert f.converged
    sd = f.varcorr().set_index("grp").loc["worker", "sdcor"]
    assert 1.8 < sd < 3.4          # 60 workers: SE of the SD ~ 0.3


def test_messy_crowd_data_converges() -> None:
    """One-category workers, workers with 1-2 ratings, an unused category, unbalanced items."""
    d = crowd(n_workers=50, n_items=40, per_item=6, worker_sd=2.0, seed=3)
    d.loc[d.worker == "w000", "rating"] = 5                # a worker who only says 5
    d.loc[d.worker == "w001", "rating"] = 1
    d = d[~((d.worker == "w002") & (d.index % 3 != 0))]    # a worker with few ratings
    d = d.assign(rating=d.rating.replace({4: 5}))          # nobody uses 4
    d["rating"] = pd.Categorical(d.rating, categories=[1, 2, 3, 4, 5], ordered=True)
    with pytest.warns(NlpowerWarning, match="categories nobody used"):
        f = clmm("rating ~ system + (1 | worker) + (1 | item)", d)
    assert f.converged
    assert f.unused_categories == ("4",)
    assert list(f.thresholds.index) == ["1|2", "2|3", "3|5"]
    assert "Unused response categories" in f.summary()
    re = f.ranef()["worker"]["(Intercept)"]
    assert re["w000"] > 1.0 > -1.0 > re["w001"]


def test_summary_and_interface(crossed: pd.DataFrame) -> None:
    f = _fit("rating ~ system + (1 | worker) + (1 | item)", crossed)
    text = f.summary()
    for piece in ("Cumulative Link Mixed Model", "Random effects:", "Coefficients:",
                  "Threshold coefficients:", "cond.H", "systemB", "1|2"):
        assert piece in text
    assert f.fixef.index.tolist() == ["systemB"]
    assert f.thresholds.is_monotonic_increasing
    assert f.aic == pytest.approx(-2 * f.loglik + 2 * (4 + 1 + 2))
    assert f.bic > f.aic
    assert set(f.ranef()) == {"worker", "item"}
    assert f.ranef()["item"].shape == (30, 1)
    tf = f.to_frame()
    assert set(tf["effect"]) == {"threshold", "fixed", "ran_pars"}
    vcv = f.vcov
    assert vcv.shape == (7, 7) and np.all(np.diag(vcv) > 0)
    assert "loglik" in repr(f)


def test_predict(crossed: pd.DataFrame) -> None:
    f = _fit("rating ~ system + (1 | worker) + (1 | item)", crossed)
    P = f.predict()
    assert P.shape == (len(crossed), 5)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    new = pd.DataFrame({"system": ["A", "B"], "worker": ["w000", "nobody"], "item": ["i000", "x"]})
    Pn = f.predict(new, re_form="NA")
    # population level: B shifts mass upwards by exp(beta) in odds
    assert (Pn.iloc[1, 3:].sum() > Pn.iloc[0, 3:].sum()) == (f.fixef["systemB"] > 0)
    lat = f.predict(new, type="latent", re_form="NA")
    assert lat.iloc[1] - lat.iloc[0] == pytest.approx(f.fixef["systemB"])
    cls = f.predict(new, type="class", allow_new_levels=True)
    assert set(cls) <= set(f.categories)
    with pytest.raises(InputError, match="type"):
        f.predict(type="probability")


def test_simulate_and_refit(crossed: pd.DataFrame) -> None:
    f = _fit("rating ~ system + (1 | worker) + (1 | item)", crossed)
    y1 = f.simulate(3, rng=5)
    y2 = f.simulate(3, rng=5)
    assert y1.shape == (3, len(crossed))
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(y1[0], y1[1])
    same = f.refit(f.model.y)
    assert same.loglik == pytest.approx(f.loglik, abs=1e-6)
    new = f.refit(y1[0])
    assert new.converged
    assert new.model is not f.model              # its own copy: the original fit never changes


def test_refit_cheaper_with_warm_start(crossed: pd.DataFrame) -> None:
    m = prepare_clmm("rating ~ system + (1 | worker) + (1 | item)", crossed, warn=False)
    c0 = m.refit()
    cold = m.refit(start=None)
    warm = m.refit(start=c0)
    assert warm.n_evals <= cold.n_evals
    assert warm.loglik == pytest.approx(cold.loglik, abs=1e-6)


def test_agq_validates() -> None:
    d = crowd(seed=2)
    f = _fit("rating ~ system + (1 | worker)", d, nAGQ=7)
    lap = _fit("rating ~ system + (1 | worker)", d)
    assert abs(f.loglik - lap.loglik) < 1.0
    assert "Gauss-Hermite" in f.summary()
    with pytest.raises(InputError, match="one scalar random-effect term"):
        clmm("rating ~ system + (1 | worker) + (1 | item)", d, nAGQ=5)
    with pytest.raises(InputError, match="nAGQ"):
        clmm("rating ~ system + (1 | worker)", d, nAGQ=0)


def test_exported() -> None:
    assert nlpower.clmm is clmm


@pytest.mark.parametrize(("values", "match"), [
    (pd.Categorical(["a", "b", "c"] * 10), "unordered categorical"),
    (["low", "mid", "high"] * 10, "ordered pandas Categorical or integer scores"),
    ([1.5, 2.0, 3.0] * 10, "integer scores"),
    ([3] * 30, "single used category"),
])
def test_bad_responses(values: object, match: str) -> None:
    d = pd.DataFrame({"rating": values, "worker": np.repeat(np.arange(10), 3)})
    with pytest.raises(InputError, match=match):
        clmm("rating ~ (1 | worker)", d)


def test_bad_threshold_and_columns() -> None:
    d = pd.DataFrame({"rating": [1, 2] * 15, "worker": np.repeat(np.arange(10), 3)})
    with pytest.raises(InputError, match="at least 3 categories"):
        clmm("rating ~ (1 | worker)", d, threshold="equidistant")
    with pytest.raises(InputError, match="at least 3 categories"):
        clmm("rating ~ (1 | worker)", d, threshold="symmetric")
    with pytest.raises(FormulaError, match="worke"):
        clmm("rating ~ (1 | worke)", d)
    with pytest.raises(FormulaError, match="score"):
        clmm("score ~ (1 | worker)", d)
    with pytest.raises(InputError, match="threshold"):
        clmm("rating ~ (1 | worker)", d, threshold="flex")
    with pytest.raises(InputError, match="link"):
        clmm("rating ~ (1 | worker)", d, link="identity")
    with pytest.raises(InputError, match="engine"):
        clmm("rating ~ (1 | worker)", d, engine="R")
    with pytest.raises(InputError, match="DataFrame"):
        clmm("rating ~ (1 | worker)", d.to_dict())
    with pytest.raises(InputError, match="control"):
        clmm("rating ~ (1 | worker)", d, control={"maxeval": 3})


def test_engine_family_slot(crossed: pd.DataFrame) -> None:
    from nlpower.lmm import get_engine
    from nlpower.lmm.family import Ordinal
    from nlpower.lmm.frame import model_frame
    from nlpower.ordinal import ClmmModel
    spec = model_frame("rating ~ system + (1 | worker) + (1 | item)", crossed)
    model = get_engine("native").prepare(spec, family=Ordinal())
    assert isinstance(model, ClmmModel)
    core = model.refit(model.y)
    direct = _fit("rating ~ system + (1 | worker) + (1 | item)", crossed)
    assert core.loglik == pytest.approx(direct.loglik, abs=1e-6)
    assert core.se.shape == core.beta.shape == (1,)
    assert core.thresholds.size == 4


def test_warm_start_from_a_singular_fit_leaves_zero() -> None:
    """A zero SD is a stationary point; a replicate warm-started there must still find the SD."""
    flat = crowd(item_sd=0.0, worker_sd=1.0, seed=11)
    strong = crowd(item_sd=1.5, worker_sd=1.0, seed=11)
    m = prepare_clmm("rating ~ system + (1 | worker) + (1 | item)", flat, warn=False)
    c0 = m.refit()
    c0_at_zero = _with_theta(c0, [c0.theta[0], 0.0])
    y = prepare_clmm("rating ~ system + (1 | worker) + (1 | item)", strong, warn=False).y
    c1 = m.refit(y, start=c0_at_zero)
    assert c1.theta[1] > 0.7
    z = m._to_opt(c1.params.copy())
    z[-1] = 0.0
    assert m._off_boundary(z, m.nll(m._from_opt(z))) is not None   # steps off the saddle


def _with_theta(core, theta):  # type: ignore[no-untyped-def]
    import dataclasses
    return dataclasses.replace(core, theta=np.asarray(theta, dtype=float))


def test_integer_scores_on_a_declared_scale_report_unused_scores() -> None:
    """levels=range(1, 6) on integer scores: the same fit and report as the Categorical 1..5."""
    d = crowd(n_workers=20, n_items=15, per_item=4, seed=5)
    d = d.assign(rating=d.rating.replace({2: 1}))          # nobody uses 2
    cat = d.assign(rating=pd.Categorical(d.rating, categories=[1, 2, 3, 4, 5], ordered=True))
    with pytest.warns(NlpowerWarning, match=r"categories nobody used \('2'\)"):
        f = clmm("rating ~ system + (1 | worker)", d, levels=range(1, 6))
    g = _fit("rating ~ system + (1 | worker)", cat)
    assert f.unused_categories == g.unused_categories == ("2",)
    assert list(f.thresholds.index) == list(g.thresholds.index) == ["1|3", "3|4", "4|5"]
    assert f.loglik == pytest.approx(g.loglik, abs=1e-8)
    assert _fit("rating ~ system + (1 | worker)", d).unused_categories == ()


@pytest.mark.parametrize(("values", "levels", "match"), [
    ([1, 2, 6] * 10, range(1, 6), r"scores outside levels \(6; levels are 1, 2, 3, 4, 5\)"),
    ([1, 2, 3] * 10, [1.5, 2.5], "increasing integer scores"),
    ([1, 2, 3] * 10, [3, 2, 1], "increasing integer scores"),
    ([1, 2, 3] * 10, 5, "integer scores of the rating scale"),
    (pd.Categorical([1, 2, 3] * 10, ordered=True), range(1, 4), "levels= is for integer scores"),
])
def test_bad_levels(values: object, levels: object, match: str) -> None:
    d = pd.DataFrame({"rating": values, "worker": np.repeat(np.arange(10), 3)})
    with pytest.raises(InputError, match=match):
        clmm("rating ~ (1 | worker)", d, levels=levels)
