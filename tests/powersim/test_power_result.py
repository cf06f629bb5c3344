"""Results: flat records for the grid runner, one rule for ``.design``."""

from __future__ import annotations

import json
import math

from nlpower import CrossedDesign, presets
from nlpower.powersim import AnalyticPowerResult, PowerResult, analytic_power, mde, power


def test_record_round_trip_keeps_every_field():
    d = CrossedDesign(6, 12, workers_per_item=3, systems=("base", "new"))
    res = power(d, presets.high_variance(0.1), n_sims=6, method="simulate", rng=4, null=True)
    record = res.to_record()
    text = json.dumps(record)  # JSON-able
    back = PowerResult.from_record(json.loads(text))
    assert back == res  # every field but the per-replicate arrays
    assert back.design == d and back.replicates is None
    assert record["method"] == "simulate" and record["engine"] == "native"
    assert record["design"] == {"n_workers": 6, "n_items": 12, "systems": ["base", "new"],
                                "workers_per_item": 3, "items": "paired"}


def test_effect_zero_record_has_nan_power():
    res = power(CrossedDesign(3, 20), presets.low_variance(0.0), n_sims=50, rng=1)
    back = PowerResult.from_record(json.loads(json.dumps(res.to_record())))
    assert math.isnan(back.power) and back.type1 == res.type1 and back.method == "balanced"
    assert back.engine is None


def test_design_is_the_design_object_everywhere():
    d = CrossedDesign(10, 100)
    p = presets.high_variance(0.1)
    for res in (power(d, p, n_sims=20, rng=1), power(d, p, method="analytic"),
                analytic_power(d, p), mde(d, p)):
        assert res.design is d
        assert repr(d) in res.summary()
    assert isinstance(analytic_power(d, p), AnalyticPowerResult)
