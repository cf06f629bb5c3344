"""plan_model: the smallest extension of a factor that reaches a target power."""

from __future__ import annotations

import pandas as pd
import pytest

import nlpower
from conftest import REFERENCE
from nlpower.errors import InputError
from nlpower.study import plan_model


@pytest.fixture(scope="module")
def fit():
    d = pd.read_csv(REFERENCE / "data" / "sleepstudy.csv")
    return nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)


def test_the_plan_is_the_smallest_size_at_or_above_target(fit):
    plan = plan_model(fit.with_params(fixef={"Days": 1.5}), along="Subject", term="Days",
                      test="z", n_sims=80, n_max=80, rng=2, cost_per_level=10.0, resolution=0)
    assert plan.reached and plan.result.power >= 0.8
    frame = plan.to_frame()
    below = frame[frame.n_Subject < plan.n]
    assert (below.power < 0.8).any() or below.empty
    # the size just below the plan was simulated and missed the target (bisection's invariant)
    assert plan.n - 1 in set(frame.n_Subject) or plan.n == frame.n_Subject.min()
    assert plan.cost == pytest.approx(10.0 * plan.n)


def test_no_plan_below_the_target(fit):
    # a slope of 0.01 ms/day against a residual SD of about 25: power stays near alpha
    plan = plan_model(fit.with_params(fixef={"Days": 0.01}), along="Subject", term="Days",
                      test="z", n_sims=40, n_max=30, rng=3)
    assert not plan.reached and plan.result is None
    assert "no size up to 30 levels reaches the target" in plan.summary()
    assert plan.seed["entropy"] == 3 and plan.summary().endswith("(engine native)")


def test_a_true_value_of_zero_is_refused_before_searching(fit):
    # before: the search simulated every size up to n_max and planned on the Type I error
    with pytest.raises(InputError, match="true value of Days is 0"):
        plan_model(fit.with_params(fixef={"Days": 0.0}), along="Subject", term="Days",
                   n_sims=40, n_max=30, rng=3)


@pytest.mark.parametrize("kwargs,match", [
    ({"target": 1.2}, "target must be"), ({"n_max": 0}, "n_max"),
    ({"n_min": 10, "n_max": 5}, "must not exceed"), ({"along": "Subjet"}, "did you mean"),
])
def test_refusals(fit, kwargs, match):
    args = {"along": "Subject", "term": "Days", "n_sims": 10, **kwargs}
    with pytest.raises(InputError, match=match):
        plan_model(fit, **args)
