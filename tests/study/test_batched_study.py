"""The batched replicate path (nlpower.study.batched) gives the per-replicate path's numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower
import nlpower.study.analysis as study_analysis
import nlpower.study.power as study_power
from conftest import REFERENCE

DATA = REFERENCE / "data"


@pytest.fixture(scope="module")
def sleep():
    d = pd.read_csv(DATA / "sleepstudy.csv").sample(frac=0.7, random_state=2)
    d = d.reset_index(drop=True).astype({"Subject": str})
    d["group"] = np.where(d["Subject"].astype(int) % 3 == 0, "a",
                          np.where(d["Subject"].astype(int) % 3 == 1, "b", "c"))
    fit = nlpower.lmer("Reaction ~ Days + group + (1 | Subject)", d, REML=False)
    return fit.with_params(fixef={"Days": 2.0})


def _replicates(monkeypatch, batched: bool, **kw):
    """The per-replicate records of a run (with or without the batched path)."""
    seen = {}
    orig = study_power._result

    def capture(reps, *args, **kwargs):
        seen["reps"] = reps
        return orig(reps, *args, **kwargs)

    monkeypatch.setattr(study_power, "_result", capture)
    if not batched:
        monkeypatch.setattr(study_analysis, "lmm_replicates", lambda *a, **k: None)
    res = nlpower.power(kw.pop("model"), n_sims=8, rng=4, **kw)
    monkeypatch.undo()
    return res, seen["reps"]


@pytest.mark.parametrize("kw", [
    {"term": "Days", "test": "satterthwaite"},
    {"term": "Days", "test": "kenward-roger"},
    {"term": "Days", "test": "z"},
    {"term": "Days", "test": "lrt"},
    {"compare": "~ . - group"},
])
def test_batched_replicates_equal_the_per_replicate_ones(monkeypatch, sleep, kw):
    res_b, fast = _replicates(monkeypatch, True, model=sleep, **kw)
    res_s, slow = _replicates(monkeypatch, False, model=sleep, **kw)
    assert not fast.failed.any() and not slow.failed.any()
    np.testing.assert_allclose(fast.pvalue, slow.pvalue, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(fast.estimate, slow.estimate, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fast.df, slow.df, rtol=1e-4)
    assert res_b.mc.n_rejected == res_s.mc.n_rejected


def test_batched_pairwise_comparisons(monkeypatch, sleep):
    fast = nlpower.power(sleep, pairwise="group", n_sims=8, rng=4)
    assert fast.n_sims == 8 and fast.n_failed == 0
    monkeypatch.setattr(study_analysis, "lmm_replicates", lambda *a, **k: None)
    slow = nlpower.power(sleep, pairwise="group", n_sims=8, rng=4)
    pd.testing.assert_frame_equal(fast.to_frame(), slow.to_frame(), check_exact=False, rtol=1e-6)


def test_batched_draws_are_each_replicates_own(sleep):
    """Replicate k's response is the one its own generator draws, one replicate at a time."""
    from nlpower.study.design import model_design
    d = model_design(sleep)
    sim = d.prepare()
    seeds = np.random.SeedSequence(9).spawn(5)
    gens = [np.random.Generator(np.random.PCG64(seeds[k])) for k in range(1, 5)]
    Y = study_analysis.ModelGenerator(d).draw_batch(gens, sim)
    one = [d.simulate(1, rng=np.random.Generator(np.random.PCG64(seeds[k])), model=sim)[0]
           for k in range(1, 5)]
    np.testing.assert_allclose(Y, np.vstack(one), rtol=1e-13)


@pytest.fixture(scope="module")
def crossed_clmm():
    rng = np.random.default_rng(3)
    w, i = np.tile(np.arange(6), 24), np.repeat(np.arange(24), 6)
    system = ((w + i) % 2 == 0).astype(float)
    eta = 0.5 * system + rng.normal(0, 0.5, 6)[w] + rng.normal(0, 0.8, 24)[i]
    y = np.digitize(eta + rng.logistic(size=w.size), [-1.0, 0.0, 1.0]) + 1
    d = pd.DataFrame({"worker": [f"w{k}" for k in w], "item": [f"i{k}" for k in i],
                      "system": system, "y": pd.Categorical(y, ordered=True)})
    return nlpower.clmm("y ~ system + (1 | worker) + (1 | item)", d)


@pytest.mark.parametrize("test", ["z", "lrt"])
def test_ordinal_replicates_from_a_shared_hessian(monkeypatch, crossed_clmm, test):
    """BFGS from one reference Hessian reaches refit's optimum: the same tests."""
    res_b, fast = _replicates(monkeypatch, True, model=crossed_clmm, term="system", test=test)
    monkeypatch.setattr(study_analysis, "ordinal_refits", lambda *a, **k: None)
    res_s, slow = _replicates(monkeypatch, True, model=crossed_clmm, term="system", test=test)
    assert not fast.failed.any() and not slow.failed.any()
    np.testing.assert_allclose(fast.pvalue, slow.pvalue, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(fast.estimate, slow.estimate, rtol=1e-5, atol=1e-6)
    assert res_b.mc.n_rejected == res_s.mc.n_rejected


def test_rows_the_batch_cannot_fit_are_refitted_one_at_a_time(monkeypatch, sleep):
    """A replicate the batch leaves (ok False) goes through the per-replicate refit."""
    from dataclasses import replace

    from nlpower.lmm.batched import ScalarLmm
    _, whole = _replicates(monkeypatch, True, model=sleep, term="Days", test="satterthwaite")
    fit = ScalarLmm.fit

    def drop_first(self, Y, **kw):
        fits = fit(self, Y, **kw)
        ok = fits.ok.copy()
        ok[0] = False
        return replace(fits, ok=ok)

    monkeypatch.setattr(ScalarLmm, "fit", drop_first)
    _, mixed = _replicates(monkeypatch, True, model=sleep, term="Days", test="satterthwaite")
    assert not mixed.failed.any()
    np.testing.assert_allclose(mixed.pvalue, whole.pvalue, rtol=1e-5)
