"""Records written by the hand-written codecs (before the generic one), for tests/records.

Run once, before the generic codec replaced them (its output is ``written_records.json``):
``PYTHONPATH=src python tests/records/make_records.py > tests/records/written_records.json``.
"""
import json

import pandas as pd

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.accuracy.metrics import metric_power
from nlpower.accuracy.planning import closed_form_power
from nlpower.accuracy.power import power as accuracy_power
from nlpower.bleu.power import mde as bleu_mde
from nlpower.bleu.power import power as bleu_power
from nlpower.powersim import power
from nlpower.preference import power as pref_power
from nlpower.simpower import simulate_power

out = {}
out["preference_exact"] = pref_power(100, 0.6, p_draw=0.1).to_record()
out["preference_null"] = pref_power(50, 0.5, p_draw=0.1, ties="split").to_record()
out["preference_simulated"] = pref_power(80, 0.6, p_draw=0.1, method="simulate", n_sims=200, rng=3).to_record()
r = simulate_power(lambda rng, n: rng.normal(0.5, 1, n),
                   lambda y: (y.mean(), 0.01 if y.mean() > 0.36 else 0.5), effect=0.5, n_sims=50, rng=1, params={"n": 30})
out["simulated"] = r.to_record()
r0 = simulate_power(lambda rng: rng.normal(0.0, 1, 10),
                    lambda y: (y.mean(), 0.01 if y.mean() > 0.6 else 0.5), effect=0.0, n_sims=20, rng=2)
out["simulated_null"] = r0.to_record()
out["power_balanced"] = power(CrossedDesign(5, 30), presets.high_variance(0.15), n_sims=100,
                              rng=5, null=True).to_record()
out["power_simulate"] = power(CrossedDesign(4, 12, items="nested"), presets.high_variance(0.15),
                              n_sims=20, rng=6, test="satterthwaite",
                              precision=0.2).to_record()
out["power_null_effect"] = power(CrossedDesign(3, 10), presets.low_variance(0.0), n_sims=30,
                                 rng=7, test="lrt", method="simulate").to_record()
sleep = pd.read_csv("tests/reference/data/sleepstudy.csv")
m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", sleep, REML=False)
out["model"] = nlpower.power(m.with_params(fixef={"Days": 2.0}), term="Days", n_sims=20,
                             rng=1).to_record()
out["model_compare"] = nlpower.power(m.with_params(fixef={"Days": 2.0}), compare="~ . - Days",
                                     n_sims=10, rng=2).to_record()
out["accuracy_exact"] = accuracy_power(500, 0.02, 0.9).to_record()
out["accuracy_simulated"] = accuracy_power(300, 0.03, 0.85, method="simulate", n_sims=200,
                                           rng=4).to_record()
out["accuracy_unpaired"] = closed_form_power(300, 0.05, baseline=0.7).to_record()
neg, pos = [[0.90, 0.02], [0.02, 0.06]], [[0.10, 0.15], [0.05, 0.70]]
out["metric"] = metric_power(500, [0.8, 0.2], [neg, pos], n_sims=40, n_resamples=50,
                             rng=1).to_record()
out["bleu"] = bleu_power(500, 1.0, 0.125, 25.8, n_sims=40, n_resamples=50, rng=1).to_record()
out["bleu_normal"] = bleu_power(500, 0.0, 0.125, 25.8, n_sims=40, method="normal",
                                rng=2).to_record()
out["bleumde"] = bleu_mde(500, 0.125, 25.8, n_sims=40, method="normal", rng=3).to_record()
print(json.dumps(out, indent=1))
