"""Group-sequential boundaries and characteristics against rpact.

Pinned in tests/reference/rpact_reference.json, written by
tests/reference/rpact_reference.R (rpact 3.3.4: getDesignGroupSequential,
getDesignCharacteristics) for O'Brien-Fleming-, Pocock- and
Hwang-Shih-DeCani-type alpha spending, one- and two-sided, with and without
non-binding futility (z values or beta spending).
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from conftest import REFERENCE, run_rscript
from nlpower.sequential import group_sequential

REF = json.loads((REFERENCE / "rpact_reference.json").read_text())
CASES = {c["name"]: c for c in REF["cases"]}
KIND = {"asOF": "obf", "asP": "pocock", "asHSD": "hsd", "bsOF": "obf", "bsP": "pocock", "bsHSD": "hsd"}


@functools.cache
def ours_by_name(name):
    return ours(CASES[name])


def ours(case):
    a = case["args"]
    futility = None
    if "typeBetaSpending" in a:
        futility = KIND[a["typeBetaSpending"]]
    elif "futilityBounds" in a:
        futility = a["futilityBounds"]
    return group_sequential(information=case["information_rates"], alpha=a["alpha"],
                            beta=a.get("beta", 0.2), sided=a["sided"], spending=KIND[a["typeOfDesign"]],
                            gamma=a.get("gammaA", -4.0), futility=futility,
                            futility_gamma=a.get("gammaB", -4.0))


@pytest.mark.parametrize("name", sorted(CASES))
def test_boundaries_match_rpact(name):
    case = CASES[name]
    d = ours_by_name(name)
    np.testing.assert_allclose(d.efficacy, case["critical_values"], atol=1e-7, rtol=0)
    # rpact reports the last cumulative alpha as alpha - 1e-8
    np.testing.assert_allclose(d.alpha_spent, case["alpha_spent"], atol=2e-8, rtol=0)
    np.testing.assert_allclose(d.to_frame()["nominal_p"] / d.sided, case["stage_levels"], atol=1e-8)
    if "typeBetaSpending" in case["args"]:
        np.testing.assert_allclose(d.futility[:-1], case["futility_bounds"], atol=1e-7, rtol=0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_characteristics_match_rpact(name):
    case = CASES[name]
    d = ours_by_name(name)
    assert d.drift**2 == pytest.approx(case["shift"], abs=1e-6)
    assert d.inflation_factor == pytest.approx(case["inflation_factor"], abs=1e-7)
    h1 = d.probabilities(d.drift)
    np.testing.assert_allclose(h1.efficacy, case["rejection_probabilities"], atol=1e-7)
    if case["futility_probabilities"] is not None and d.futility is not None:
        np.testing.assert_allclose(h1.futility[:-1], case["futility_probabilities"], atol=1e-7)
    for key, effect in (("asn_h1", 1.0), ("asn_h01", 0.5), ("asn_h0", 0.0)):
        assert d.expected_cost(effect) == pytest.approx(case[key], abs=1e-7)


def test_type_one_error_is_alpha_and_non_binding_futility_only_lowers_it():
    d = group_sequential(3, futility=[0.0, 0.0])
    plain = group_sequential(3)
    assert plain.probabilities(0.0).reject == pytest.approx(0.025, abs=1e-9)
    assert d.probabilities(0.0).reject < 0.025
    np.testing.assert_array_equal(d.efficacy, plain.efficacy)


@pytest.mark.requires_r
def test_pinned_reference_is_what_the_script_writes():
    live = json.loads(run_rscript(REFERENCE / "rpact_reference.R"))
    for got, pinned in zip(live["cases"], REF["cases"], strict=True):
        np.testing.assert_allclose(got["critical_values"], pinned["critical_values"], atol=1e-12)
