"""The accuracy test rules: one registry, every test= a rule, no name branches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

import nlpower.accuracy.mcnemar  # noqa: F401  (the module, not the function the package exports)
from nlpower._choices import AccuracyPlanTest, McNemarTest, allowed
from nlpower.accuracy import rules
from nlpower.accuracy.rules import (
    ACCURACY_TESTS,
    ClosedFormRule,
    ConditionalMcNemar,
    McNemarRule,
    get_accuracy_test,
)
from nlpower.errors import InputError

mcnemar_module = sys.modules["nlpower.accuracy.mcnemar"]
SRC = Path(__file__).resolve().parents[2] / "src" / "nlpower" / "accuracy"


def test_every_choice_is_a_rule_and_every_rule_a_choice():
    assert set(ACCURACY_TESTS) == set(allowed(AccuracyPlanTest))
    assert {k for k, r in ACCURACY_TESTS.items() if isinstance(r, McNemarRule)} == \
        set(allowed(McNemarTest))
    assert {k for k, r in ACCURACY_TESTS.items() if r.closed_form} == \
        {"mcnemar-normal", "lachenbruch", "two-proportion"}
    assert all(isinstance(r, ClosedFormRule) == r.closed_form for r in ACCURACY_TESTS.values())


def test_lookup_names_the_choices():
    with pytest.raises(InputError, match="Did you mean 'mid-p'"):
        get_accuracy_test("midp")
    assert get_accuracy_test(ACCURACY_TESTS["exact"]) is ACCURACY_TESTS["exact"]


def test_no_test_name_branches_outside_the_registry():
    out = subprocess.run(["grep", "-rn", r"test == \|test in (", str(SRC)],
                         capture_output=True, text=True).stdout
    assert out == ""


@pytest.mark.parametrize("name", ["exact", "mid-p", "chi2", "chi2-cc"])
def test_conditional_thresholds_are_where_the_pvalue_crosses_alpha(name):
    rule = ACCURACY_TESTS[name]
    assert isinstance(rule, ConditionalMcNemar)
    c = rule.thresholds(300, 0.05, n=None)
    d = np.arange(301)
    assert np.all(rule.p_md(c, d)[c >= 0] <= 0.05)
    assert np.all(rule.p_md(c + 1, d)[c + 1 < d / 2] > 0.05)
    # the window used for huge n gives the same thresholds
    np.testing.assert_array_equal(rule.thresholds_at(d[250:], 0.05), c[250:])


def test_statistics_are_statsmodels():
    for b, c in [(10, 2), (3, 9), (5, 5), (0, 0)]:
        table = [[0, b], [c, 0]]
        assert ACCURACY_TESTS["exact"].statistic(b, c) == sm_mcnemar(table).statistic  # type: ignore[attr-defined]
        if b + c:
            assert ACCURACY_TESTS["chi2"].statistic(b, c) == pytest.approx(  # type: ignore[attr-defined]
                sm_mcnemar(table, exact=False, correction=False).statistic, rel=1e-12)
        if b != c:        # at a tie the corrected statistic is cut at 0 here (module docstring)
            assert ACCURACY_TESTS["chi2-cc"].statistic(b, c) == pytest.approx(  # type: ignore[attr-defined]
                sm_mcnemar(table, exact=False, correction=True).statistic, rel=1e-12)


def test_summaries_read_title_and_unit_from_the_rule():
    from nlpower.accuracy import closed_form_power, sample_size

    r = closed_form_power(1000, 0.03, baseline=0.85, test="two-proportion")
    assert r.summary().startswith("Two-proportion power") and "items per group" in r.summary()
    r = closed_form_power(1000, 0.03, baseline=0.85, test="lachenbruch", bound="mid")
    assert r.test == "lachenbruch-mid" and r.summary().startswith("McNemar power")
    assert sample_size(0.03, 0.85, test="two-proportion").summary().endswith(
        f"per group (power {sample_size(0.03, 0.85, test='two-proportion').achieved_power:.4f})")


def test_adding_a_test_is_adding_one_rule(monkeypatch):
    """A new conditional McNemar variant: one rule (and its name among the choices)."""
    monkeypatch.setitem(ACCURACY_TESTS, "exact-again",
                        ConditionalMcNemar("exact-again", formula=rules._p_exact))
    monkeypatch.setattr(mcnemar_module, "McNemarTest", Literal["exact", "exact-again"])
    b, c = np.array([10, 3, 7]), np.array([2, 9, 7])
    np.testing.assert_array_equal(mcnemar_module.mcnemar_pvalue(b, c, "exact-again"),
                                  mcnemar_module.mcnemar_pvalue(b, c, "exact"))
    np.testing.assert_array_equal(mcnemar_module.rejection_thresholds(500, "exact-again"),
                                  mcnemar_module.rejection_thresholds(500, "exact"))
    r = mcnemar_module.mcnemar(10, 2, test="exact-again")
    assert r.test == "exact-again" and r.pvalue == mcnemar_module.mcnemar(10, 2).pvalue
