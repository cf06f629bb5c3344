"""Bradley-Terry fits: vote encodings, intervals, bootstrap, random effects, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.arena import ELO_SCALE, bradley_terry
from nlpower.errors import FitError, InputError


def simulated_votes(n=2000, k=4, *, tie_nu=0.5, workers=0, worker_sd=0.0, seed=0):
    """Davidson votes among k systems with scores spread over [-1, 1]."""
    rng = np.random.default_rng(seed)
    s = np.linspace(-1, 1, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    lean = rng.normal(0, worker_sd, max(workers, 1))
    wk = rng.integers(0, max(workers, 1), n)
    d = s[a] - s[b] + lean[wk]
    z = np.column_stack([np.exp(d / 2), np.exp(-d / 2), np.full(n, tie_nu)])
    p = z / z.sum(axis=1, keepdims=True)
    u = rng.random(n)
    out = np.where(u < p[:, 0], "model_a", np.where(u < p[:, 0] + p[:, 1], "model_b", "tie"))
    return pd.DataFrame({"model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
                         "winner": out, "judge": wk})


def test_outcome_encodings_agree():
    votes = simulated_votes(300)
    names = votes["winner"].map({"model_a": "a", "model_b": "B", "tie": "Tie"})
    winner = np.where(votes["winner"] == "model_a", votes["model_a"],
                      np.where(votes["winner"] == "model_b", votes["model_b"], "draw"))
    numeric = votes["winner"].map({"model_a": 1, "model_b": 0, "tie": 0.5})
    fits = [bradley_terry(votes.assign(winner=w)) for w in (votes["winner"], names, winner, numeric)]
    for f in fits[1:]:
        np.testing.assert_allclose(f.estimate, fits[0].estimate, atol=1e-12)


def test_counts_equal_repeated_rows():
    votes = simulated_votes(200)
    grouped = votes.groupby(["model_a", "model_b", "winner"]).size().rename("n").reset_index()
    f1 = bradley_terry(votes, ties="rao-kupper")
    f2 = bradley_terry(grouped, count="n", ties="rao-kupper")
    np.testing.assert_allclose(f2.estimate, f1.estimate, atol=1e-10)
    np.testing.assert_allclose(f2.se("sandwich"), f1.se("sandwich"), atol=1e-10)


def test_reference_and_centering_are_the_same_model():
    votes = simulated_votes(500)
    centred = bradley_terry(votes)
    anchored = bradley_terry(votes, reference="m2")
    np.testing.assert_allclose(anchored.estimate, centred.estimate - centred.estimate[2], atol=1e-10)
    assert anchored.estimate[2] == 0.0 and anchored.se("model")[2] == 0.0
    assert centred.estimate.sum() == pytest.approx(0.0, abs=1e-12)
    e1, se1 = centred.difference("m3", "m0", "model")
    e2, se2 = anchored.difference("m3", "m0", "model")
    assert (e1, se1) == pytest.approx((e2, se2), abs=1e-10)


def test_davidson_recovers_scores_within_their_intervals():
    votes = simulated_votes(4000, tie_nu=0.5, seed=3)
    fit = bradley_terry(votes, ties="davidson")
    truth = np.linspace(-1, 1, 4)
    z = (fit.estimate - (truth - truth.mean())) / fit.se("sandwich")
    assert np.all(np.abs(z) < 4)
    assert fit.tie == pytest.approx(np.log(0.5), abs=4 * fit.tie_se)
    assert fit.ranking() == ("m3", "m2", "m1", "m0")


def test_bootstrap_is_reproducible_and_close_to_the_model_se():
    votes = simulated_votes(3000, seed=5)
    f1 = bradley_terry(votes, ties="drop", n_boot=200, rng=7)
    f2 = bradley_terry(votes, ties="drop", n_boot=200, rng=7)
    np.testing.assert_array_equal(f1.bootstrap, f2.bootstrap)
    # an SD from 200 draws has relative SE ~ 1/sqrt(2*199) = 5%: allow 4 of them
    np.testing.assert_allclose(f1.se("bootstrap"), f1.se("model"), rtol=0.2)
    ci = f1.intervals("bootstrap")
    assert np.all(ci["low"] < f1.estimate) and np.all(f1.estimate < ci["high"])


def test_frame_and_summary():
    fit = bradley_terry(simulated_votes(400), ties="davidson")
    frame = fit.to_frame(scale="elo")
    assert frame["rank"].tolist() == [1, 2, 3, 4]
    assert frame["score"].tolist() == sorted(frame["score"], reverse=True)
    np.testing.assert_allclose(frame["score"].to_numpy(), np.sort(fit.estimate)[::-1] * ELO_SCALE)
    text = fit.summary()
    assert "Davidson" in text and "log nu" in text
    assert "best='m3'" in repr(fit)


def test_clustered_sandwich_is_wider_with_worker_leans():
    votes = simulated_votes(3000, workers=30, worker_sd=1.0, seed=2)
    plain = bradley_terry(votes, ties="drop", worker="judge")
    clustered = bradley_terry(votes, ties="drop", worker="judge", cluster="worker")
    assert np.all(clustered.se("sandwich") > plain.se("sandwich"))


def test_worker_random_effects_through_glmer():
    votes = simulated_votes(1500, workers=30, worker_sd=1.0, seed=4)
    fit = bradley_terry(votes, ties="drop", worker="judge", random="worker")
    plain = bradley_terry(votes, ties="drop")
    assert fit.random_effects["group"].tolist() == ["worker"]
    assert 0.5 < fit.random_effects["sd"].iloc[0] < 1.6
    truth = np.linspace(-1, 1, 4)
    # conditional on the worker, the scores are the simulated ones; the plain fit's
    # marginal scores shrink toward 0 when workers lean
    assert np.all(np.abs(fit.estimate - truth) < 4 * fit.se("model"))
    assert np.ptp(fit.estimate) > np.ptp(plain.estimate)
    assert np.isnan(fit.se("sandwich")).all()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"outcome": "nope"}, "outcome='nope' is not a column"),
    ({"ties": "split"}, "ties"),
    ({"reference": "zz"}, "reference='zz' is not one of the systems"),
    ({"cluster": "worker"}, "needs the worker= column"),
    ({"random": "worker"}, "needs the worker= column"),
    ({"random": "worker", "worker": "judge"}, "has no tie model"),
])
def test_errors_name_the_argument(kwargs, message):
    with pytest.raises(InputError, match=message):
        bradley_terry(simulated_votes(100), **kwargs)


def test_bad_votes_are_refused():
    votes = simulated_votes(50)
    with pytest.raises(InputError, match="not an outcome"):
        bradley_terry(votes.assign(winner="maybe"))
    with pytest.raises(InputError, match="with itself"):
        bradley_terry(votes.assign(model_b=votes["model_a"]))
    with pytest.raises(InputError, match="votes have none"):
        bradley_terry(votes[votes["winner"] != "tie"], ties="davidson")
    with pytest.raises(InputError, match="n_boot >= 2"):
        bradley_terry(votes).intervals("bootstrap")


def test_a_system_that_never_loses_has_no_finite_score():
    votes = pd.DataFrame({"model_a": ["x", "x", "y", "y"], "model_b": ["y", "z", "z", "z"],
                          "winner": ["model_a", "model_a", "model_a", "model_b"]})
    with pytest.raises(FitError, match="no finite maximum"):
        bradley_terry(votes, ties="drop")


def test_methods_paragraph_states_the_fit():
    fit = bradley_terry(simulated_votes(300), ties="rao-kupper", position=True)
    text = fit.methods()
    assert "Rao and Kupper (1967)" in text and "300 paired votes among 4 systems" in text
    assert "first-listed" in text and "sandwich" in text
    assert "95\\% confidence" in fit.methods("latex")
