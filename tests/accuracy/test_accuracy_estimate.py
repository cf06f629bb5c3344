"""nlpower.accuracy.estimate / plan_from_dev and metric_power (App. F)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from nlpower.accuracy import estimate, metric_power, plan_from_dev, power
from nlpower.accuracy.metrics import MetricPowerResult, confusion_metric
from nlpower.errors import InputError


def _predictions():
    # 12 both right, 5 only b right, 2 only a right, 1 both wrong; labels "pos"/"neg"
    labels = ["pos"] * 20
    a = ["pos"] * 12 + ["neg"] * 5 + ["pos"] * 2 + ["neg"]
    b = ["pos"] * 12 + ["pos"] * 5 + ["neg"] * 2 + ["neg"]
    return a, b, labels


def test_estimate_counts_and_mcnemar():
    a, b, y = _predictions()
    est = estimate(a, b, y)
    assert (est.both_correct, est.only_new, est.only_old, est.both_wrong) == (12, 5, 2, 1)
    assert est.baseline == pytest.approx(14 / 20) and est.new_accuracy == pytest.approx(17 / 20)
    assert est.delta == pytest.approx(3 / 20) and est.agreement == pytest.approx(13 / 20)
    assert est.mcnemar.pvalue == pytest.approx(sm_mcnemar([[12, 2], [5, 1]]).pvalue)
    assert est.to_table().to_numpy().sum() == 20
    assert "Paired accuracy comparison" in est.summary() and len(est.to_frame()) == 1


def test_estimate_from_dataframe():
    a, b, y = _predictions()
    df = pd.DataFrame({"old": a, "new": b, "gold": y})
    est = estimate("old", "new", "gold", data=df, test="chi2")
    assert est.only_new == 5 and est.mcnemar.test == "chi2"


def test_plan_from_dev_uses_the_estimates():
    a, b, y = _predictions()
    est = estimate(a, b, y)
    planned = plan_from_dev(est, 500)
    direct = power(500, est.delta, est.agreement, baseline=est.baseline)
    assert planned.power == direct.power and planned.type_m == direct.type_m
    assert est.power(500).power == direct.power


@pytest.mark.parametrize("args,kw,msg", [
    (([1, 0], [1], [1, 1]), {}, "must have the same length; got 2, 1 and 2"),
    (([], [], []), {}, "no items"),
    (([1, None], [1, 0], [1, 1]), {}, "preds_a has missing values at positions \\[1\\]"),
    (([[1, 0]], [[1, 0]], [[1, 0]]), {}, "preds_a must be one-dimensional"),
    (("old", "nwe", "gold"), {"data": pd.DataFrame({"old": [1], "new": [1], "gold": [1]})},
     "column 'nwe' \\(did you mean 'new'\\?\\) not found"),
    (([1], [1], [1]), {"data": [1]}, "data must be a pandas DataFrame"),
])
def test_estimate_errors(args, kw, msg):
    with pytest.raises(InputError, match=msg):
        estimate(*args, **kw)


def test_plan_from_dev_errors():
    with pytest.raises(InputError, match="dev must be the result of nlpower.accuracy.estimate"):
        plan_from_dev({"delta": 0.1}, 100)
    tie = estimate([1, 0], [0, 1], [1, 1])
    with pytest.raises(InputError, match="no accuracy difference"):
        plan_from_dev(tie, 100)


# --- App. F: other metrics ------------------------------------------------------------

def test_confusion_metrics_hand_computed():
    conf = np.array([[50, 10], [5, 35]])          # rows true, columns predicted
    tp, fp, fn, tn = 35, 10, 5, 50
    assert confusion_metric(conf, "f1") == pytest.approx(2 * tp / (2 * tp + fp + fn))
    mcc = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert confusion_metric(conf, "mcc") == pytest.approx(mcc)
    f1_neg = 2 * tn / (2 * tn + fn + fp)
    assert confusion_metric(conf, "macro-f1") == pytest.approx((f1_neg + 2 * tp / (2 * tp + fp + fn)) / 2)
    assert confusion_metric(conf, "accuracy") == pytest.approx(0.85)


NEG = [[0.90, 0.02], [0.02, 0.06]]
POS = [[0.10, 0.15], [0.05, 0.70]]


def test_metric_power_accuracy_close_to_mcnemar():
    """On accuracy, the randomization test is a (Monte Carlo) conditional sign test: its
    power is within MC error (plus the permutation p-value's resolution) of McNemar's."""
    # two classes, 50/50, per class: only-new 0.06, only-old 0.04, agreement 0.9
    neg = [[0.3, 0.04], [0.06, 0.6]]        # label 0: old predicts 0 = right
    pos = [[0.3, 0.06], [0.04, 0.6]]        # label 1: new predicts 1 = right
    r = metric_power(600, [0.5, 0.5], [neg, pos], metric="accuracy", n_sims=1000,
                     n_resamples=400, rng=3)
    exact = power(600, 0.02, 0.9)
    assert r.true_difference == pytest.approx(0.02)
    assert abs(r.power - exact.power) < 4 * r.se + 0.02


def test_metric_power_reproducible_and_record():
    a = metric_power(1000, [0.8, 0.2], [NEG, POS], n_sims=200, n_resamples=200, rng=9)
    b = metric_power(1000, [0.8, 0.2], [NEG, POS], n_sims=200, n_resamples=200, rng=9)
    assert a.power == b.power and a.type_m == b.type_m
    assert MetricPowerResult.from_record(a.to_record()).to_record() == a.to_record()
    assert "Randomization-test power for f1" in a.summary()


def test_metric_power_increases_with_n():
    small = metric_power(300, [0.8, 0.2], [NEG, POS], metric="mcc", n_sims=400,
                         n_resamples=200, rng=1)
    large = metric_power(3000, [0.8, 0.2], [NEG, POS], metric="mcc", n_sims=400,
                         n_resamples=200, rng=1)
    assert large.power - small.power > 4 * math.hypot(small.se, large.se)


@pytest.mark.parametrize("probs,tables,kw,msg", [
    ([1.0], [[[1.0]]], {}, "class_probs must list p\\(c\\) for at least two classes"),
    ([0.5, 0.5], [NEG], {}, "tables must have shape .* \\(2, 2, 2\\)"),
    ([0.6, 0.6], [NEG, POS], {}, "class_probs must be non-negative and sum to 1"),
    ([0.5, 0.5], [NEG, [[0.5, 0.5], [0.5, 0.5]]], {}, "each tables\\[c\\] must be"),
    ([0.5, 0.5], [NEG, NEG], {}, "same expected metric"),
    ([1 / 3] * 3, np.full((3, 3, 3), 1 / 9), {}, "metric='f1' is binary F1"),
    ([0.8, 0.2], [NEG, POS], {"metric": "auc"}, "metric must be one of"),
])
def test_metric_power_errors(probs, tables, kw, msg):
    with pytest.raises(InputError, match=msg):
        metric_power(100, probs, tables, n_sims=10, n_resamples=10, **kw)
