"""The one rng policy (nlpower._rng, docs/api.md): seeds are replayed, Generators consumed.

The same rule holds for every stochastic entry point; the add-ons state it in
their own tests with the same helper.
"""

from __future__ import annotations

import numpy as np
import pytest

import nlpower
from nlpower import presets
from nlpower._rng import as_generator, root_seed, seed_record


def _check_policy(call, value):
    """call(rng) -> result; value(result) -> something comparable."""
    assert value(call(7)) == value(call(7))                                   # int seed: replayed
    seq = np.random.SeedSequence(123)
    assert value(call(seq)) == value(call(seq))                               # SeedSequence: replayed
    gen = np.random.default_rng(5)
    first, second = value(call(gen)), value(call(gen))
    assert first != second                                                    # one Generator: consumed
    assert first == value(call(np.random.default_rng(5)))                     # alike seeded: same


def test_root_seed_rules():
    assert root_seed(3).entropy == 3 and root_seed(None).entropy is not None
    seq = np.random.SeedSequence(9)
    assert root_seed(seq).entropy == 9 and root_seed(seq) is not seq
    g = np.random.default_rng(1)
    a, b = root_seed(g), root_seed(g)
    assert a.entropy != b.entropy and root_seed(np.random.default_rng(1)).entropy == a.entropy
    assert root_seed(np.random.PCG64(1)).entropy == a.entropy  # a BitGenerator is a stream too
    assert seed_record(np.random.SeedSequence(4, spawn_key=(2,))) == {"entropy": 4, "spawn_key": (2,)}
    with pytest.raises(TypeError, match="rng must be None, an int"):
        root_seed("2020")
    gen = np.random.default_rng(0)
    assert as_generator(gen) is gen


def test_simulate_follows_the_policy():
    design = nlpower.CrossedDesign(3, 10)
    _check_policy(lambda r: nlpower.simulate(design, presets.low_variance(0.1), rng=r),
                  lambda df: tuple(df["rating"].round(12)))


def test_power_follows_the_policy():
    design = nlpower.CrossedDesign(3, 20)
    _check_policy(lambda r: nlpower.power(design, presets.high_variance(0.1), n_sims=20, test="z", rng=r),
                  lambda res: tuple(res.replicates.estimate.round(12)))


def test_power_grid_follows_the_policy():
    _check_policy(lambda r: nlpower.power_grid(presets.high_variance(0.1), n_workers=3, n_items=[20, 30],
                                               n_sims=20, test="z", rng=r, progress=False),
                  lambda grid: tuple(grid.to_frame()["mean_estimate"].round(12)))


def test_the_add_ons_follow_the_same_policy():
    from nlpower import accuracy, bleu, paired

    _check_policy(lambda r: accuracy.power(300, 0.03, 0.9, method="simulate", n_sims=400, rng=r),
                  lambda res: res.power)
    _check_policy(lambda r: bleu.power(300, 1.0, 0.125, 25.8, n_sims=40, n_resamples=99, rng=r),
                  lambda res: (res.power, res.mean_estimate))
    scores = np.random.default_rng(0).normal(size=(2, 60))
    _check_policy(lambda r: paired.compare(scores[0], scores[1] + 0.1, test="bootstrap_percentile",
                                           n_resamples=500, rng=r),
                  lambda res: (res.pvalue, tuple(res.ci)))
