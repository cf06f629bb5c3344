"""Agreement with simr 1.0.7 within Monte Carlo error, on simr's own examples.

The references are pinned by ``tests/reference/simr_reference.R`` in
``tests/reference/simr_reference.json`` (simr is not in Debian, so CI reads
the file).  Each case sets nlpower's model to simr's exact parameters,
builds the same design (extended where simr extended it) and asks the same
question; the two powers are compared with the standard error of their
difference (both are binomial proportions).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import nlpower
from conftest import REFERENCE

CASES = json.loads((REFERENCE / "simr_reference.json").read_text(encoding="utf-8"))["cases"]
TESTS = {"z": "z", "lr": "lrt", "t": "satterthwaite", "kr": "kenward-roger"}
#: replicates per case here (simr's are in the file); the slow ones get fewer
N_SIMS = 300


def _data(case: dict) -> pd.DataFrame:
    name = case["data"]
    if name == "simdata":
        return pd.read_csv(REFERENCE / "data" / "simdata.csv")
    if name == "cake":
        d = pd.read_csv(REFERENCE / "data" / "cake.csv")
        d["replicate"] = d["replicate"].astype(str)
        return d
    # the crossed speed design: expand.grid(worker, item), system = 1 when the 1-based
    # indices' sum is even
    w, i = np.meshgrid(np.arange(1, 11), np.arange(1, 101))
    w, i = w.ravel(), i.ravel()
    rng = np.random.default_rng(0)
    y = rng.poisson(2.0, w.size) if case["family"] == "poisson" else rng.integers(0, 2, w.size)
    return pd.DataFrame({"worker": [f"w{k:02d}" for k in w], "item": [f"i{k:03d}" for k in i],
                         "system": ((w + i) % 2 == 0).astype(float), "y": y.astype(float)})


def _model(case: dict):
    d = _data(case)
    if case["family"] == "gaussian":
        fit = nlpower.lmer(case["formula"], d, REML=bool(case.get("REML", True)))
    else:
        fit = nlpower.glmer(case["formula"], d, case["family"])
    p = case["params"]
    sd = {k.split("|")[0]: v for k, v in p.get("sd", {}).items() if "|" in k}
    sigma = p.get("sigma") if case["family"] == "gaussian" else None
    model = fit.with_params(fixef=p["fixef"], sd=sd, sigma=sigma)
    if "extend" in case:
        model = nlpower.extend(model, along=case["extend"]["along"], n=case["extend"]["n"])
    return model


def _agrees(ours: float, n1: int, theirs: float, n2: int) -> bool:
    pooled = (ours * n1 + theirs * n2) / (n1 + n2)
    se = math.sqrt(max(pooled * (1 - pooled), 1e-4) * (1 / n1 + 1 / n2))
    return abs(ours - theirs) <= 3.5 * se


def _question(case: dict) -> dict:
    if case["simr_test"].startswith("fcompare"):
        return {"compare": case["simr_test"][len("fcompare("):-1], "test": "lrt"}
    return {"term": case["term"], "test": TESTS[case["method"]]}


SINGLE = [k for k, c in CASES.items() if "curve" not in c]
SLOW = {"f_crossed_poisson_z", "f_crossed_binomial_z", "c_poisson_extend_x_lr", "a_poisson_lr"}


@pytest.mark.parametrize("name", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k
                                  for k in SINGLE])
def test_power_agrees_with_simr(name):
    case = CASES[name]
    n = N_SIMS if name not in SLOW else 200
    res = nlpower.power(_model(case), n_sims=n, rng=7, **_question(case))
    # simr counts rejections of either sign
    assert _agrees(res.rejection_rate, n, case["power"], case["nsim"]), (
        f"{name}: nlpower {res.rejection_rate:.3f} (n={n}) vs simr {case['power']:.3f} "
        f"(n={case['nsim']})")


@pytest.mark.slow
@pytest.mark.parametrize("name", [k for k, c in CASES.items() if "curve" in c])
def test_power_curve_agrees_with_simr(name):
    case = CASES[name]
    breaks = [int(b["break_levels"]) for b in case["curve"]]
    # simr: powerCurve(extend(m, along = "x", n = 20), along = "x", breaks = ...)
    model = nlpower.extend(_model(case), along="x", n=max(breaks))
    curve = nlpower.power_curve(model, along="x", breaks=breaks, n_sims=150, rng=8,
                                **_question(case))
    for point, ref in zip(curve.points, case["curve"], strict=True):
        assert _agrees(point.rejection_rate, 150, ref["power"], ref["nsim"]), (name, ref)
