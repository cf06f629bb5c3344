"""nlpower.judge.fit: the i.i.d. rectifier equals ppi-python, the crossed one its own parts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import InputError
from nlpower.judge import fit, simulate_study

REF = json.loads((Path(__file__).parents[1] / "reference" / "ppi_reference.json").read_text())


def _paired_files(case: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One worker per item rating A (0) and B (the difference): item means are the labels."""
    d = case["data"]
    n = len(d["y"])
    human = pd.DataFrame({"worker": [f"w{i}" for i in range(n) for _ in range(2)],
                          "item": [f"i{i}" for i in range(n) for _ in range(2)],
                          "system": ["A", "B"] * n,
                          "rating": [v for y in d["y"] for v in (0.0, y)]})
    g = d["f"] + d["f_unlabelled"]
    judge = pd.DataFrame({"item": [f"i{i}" for i in range(len(g)) for _ in range(2)],
                          "system": ["A", "B"] * len(g),
                          "score": [v for x in g for v in (0.0, x)]})
    return human, judge


@pytest.mark.parametrize("name", ["paired difference ppi++", "paired difference ppi"])
def test_iid_rectifier_equals_ppi_python(name: str) -> None:
    case = next(c for c in REF["cases"] if c["name"] == name)
    human, judge = _paired_files(case)
    res = fit(human, judge, rectifier="iid", lam=case["lam"])
    est = res.estimates["ppi++" if case["lam"] is None else "ppi"]["B - A"]
    assert est.estimate == pytest.approx(case["estimate"], rel=1e-10)
    assert (est.ci_low, est.ci_high) == pytest.approx(tuple(case["ci"]), rel=1e-9)
    assert est.pvalue == pytest.approx(case["pvalue"], rel=1e-7)


@pytest.fixture(scope="module")
def study() -> tuple[pd.DataFrame, pd.DataFrame]:
    return simulate_study(n_items=200, n_labelled=30, workers_per_item=3, effect=0.3,
                          judge_bias=(0.0, 0.4), rng=11)


def test_lambda_zero_is_the_human_only_fit(study: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    res = fit(*study, lam=0.0)
    ppi, hum = res.estimates["ppi"]["B - A"], res.estimates["human"]["B - A"]
    assert ppi.estimate == pytest.approx(hum.estimate, rel=1e-6)
    assert ppi.se == pytest.approx(hum.se, rel=1e-4)


def test_estimate_is_judge_part_plus_rectifier(study: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    human, judge = study
    res = fit(human, judge, lam=0.7, compare=False)
    labelled = set(human["item"])
    wide = judge.groupby(["item", "system"])["score"].mean().unstack()
    g_u = (wide["B"] - wide["A"])[~wide.index.isin(labelled)]
    merged = human.join(wide, on="item")
    merged["r"] = merged["rating"] - 0.7 * np.where(merged["system"] == "B", merged["B"],
                                                    merged["A"])
    rect = res.rectifier_fit
    diff = rect.fixef["systemB"] - rect.fixef["systemA"]
    assert res.ppi["B - A"].estimate == pytest.approx(0.7 * g_u.mean() + diff, rel=1e-10)
    assert rect.nobs == len(merged)


def test_judge_samples_are_averaged(study: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    human, judge = study
    spread = pd.concat([judge.assign(score=judge["score"] + 0.1),
                        judge.assign(score=judge["score"] - 0.1)])
    a = fit(human, judge, rectifier="iid").ppi["B - A"]
    b = fit(human, spread, rectifier="iid").ppi["B - A"]
    assert a.estimate == pytest.approx(b.estimate, rel=1e-12)


def test_result_frame_and_summary(study: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    res = fit(*study)
    frame = res.to_frame()
    assert list(frame["method"]) == ["ppi++", "human", "judge"]
    assert (frame["ci_low"] < frame["estimate"]).all() and (frame["estimate"] < frame["ci_high"]).all()
    text = res.summary()
    assert "lambda" in text and "judge" in text
    assert "JudgeFit(B - A" in repr(res)


def test_binary_single_quantity_tests_one_half() -> None:
    human, judge = simulate_study(n_items=150, n_labelled=30, workers_per_item=3,
                                  outcome="binary", rng=4)
    human = human[human["system"] == "B"].drop(columns="system")
    judge = judge[judge["system"] == "B"].drop(columns="system")
    res = fit(human, judge, system=None, outcome="binary")
    assert set(res.estimates) == {"ppi++", "human", "judge", "human-glmer"}
    assert res.ppi["mean"].null == 0.5


def test_errors(study: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    human, judge = study
    with pytest.raises(InputError, match="'ratng'"):
        fit(human, judge, rating="ratng")
    some = sorted(set(human["item"]))[0]
    with pytest.raises(InputError, match="lack a judge score"):
        fit(human, judge[judge["item"] != some])
    with pytest.raises(InputError, match="rated by no human"):
        fit(human, judge[judge["item"].isin(set(human["item"]))])
    with pytest.raises(InputError, match="outcome='binary'"):
        fit(human.assign(rating=human["rating"] + 5), judge, outcome="binary")
    with pytest.raises(InputError, match="baseline"):
        fit(human, judge, baseline="Z")
    with pytest.raises(InputError, match="rectifier"):
        fit(human, judge, rectifier="glm")  # type: ignore[arg-type]


@pytest.mark.slow
def test_judge_r_estimates_the_simulated_correlation() -> None:
    """sd_item_system 0.4, judge noise 0.3: r = 0.4 / sqrt(0.4^2 + 0.3^2) = 0.8."""
    human, judge = simulate_study(n_items=1500, n_labelled=300, workers_per_item=3, n_workers=30,
                                  sd_item_system=0.4, judge_noise=0.3, sigma=0.5, rng=21)
    res = fit(human, judge)
    # over seeds 1-3 and 21 the estimate ranged 0.78-0.87 (SD about 0.04, most of it the
    # item x system variance component's uncertainty): 0.12 is 3 SD
    assert res.judge_r == pytest.approx(0.8, abs=0.12)
    assert "judge-human correlation" in res.summary()
