"""Records of paired power results and interim looks as their hand-written codecs wrote them.

Run with the package before these types moved to the generic codec (main at 87cab5b), from
the repository root:
``PYTHONPATH=/path/to/that/checkout/src python tests/records/make_paired_monitor_records.py
> tests/records/paired_monitor_records.json``.  ``test_paired_monitor_records.py`` checks
that the codec writes the same records (keys, order, values) and reads them back.
"""
import json

import numpy as np
import pandas as pd

from nlpower import CrossedDesign, presets, simulate
from nlpower.paired.power import power_curve, retrospective_power
from nlpower.sequential import Monitor, group_sequential


def paired() -> dict:
    d = np.random.default_rng(1).normal(0.3, 1.0, 60)
    out = {}
    for name, curve in {
        "exact": power_curve([10, 34], 0.5, 1.0),
        "exact_greater": power_curve([8], -0.2, 1.0, alternative="greater"),
        "normal": retrospective_power(d, sizes=[5, 40], n_sims=50, rng=7),
        "wilcoxon": retrospective_power(d, sizes=[30], test="wilcoxon", n_sims=40, rng=8),
        "bootstrap_sign": retrospective_power(d, sizes=[12], method="bootstrap", test="sign",
                                              n_sims=30, rng=9),
        "null": retrospective_power(d, sizes=[10], mean=0.0, sd=1.0, n_sims=30, rng=10),
    }.items():
        for r in curve.results:
            out[f"{name}_{r.n}"] = r.to_record()
    return out


def looks() -> dict:
    out = {}
    for name, effect, futility in (("gaussian", 0.02, None), ("futility", -0.05, "obf")):
        ratings = simulate(CrossedDesign(4, 30), presets.high_variance(effect), rng=3)
        mon = Monitor(group_sequential(3, futility=futility),
                      formula="rating ~ x + (1 | worker) + (1 | item)", max_items=30)
        for k, last in enumerate(("i10", "i20", "i30")):
            out[f"{name}_{k + 1}"] = mon.update(ratings[ratings["item"] <= last]).to_record()
            if mon.stopped:
                break
    g = np.random.default_rng(1)
    judged = pd.DataFrame({"worker": np.tile(np.arange(6), 40),
                           "item": np.repeat(np.arange(40), 6),
                           "win": (g.random(240) < 0.7).astype(int), "weight": 1.0})
    pm = Monitor(group_sequential(2), outcome="preference", max_items=40)
    out["preference_1"] = pm.update(judged[judged["item"] < 20]).to_record()
    return out


print(json.dumps({"paired": paired(), "look": looks()}, indent=1))
