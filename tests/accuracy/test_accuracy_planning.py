"""nlpower.accuracy planning: MDE, sample size, closed-form powers, Table 9, priors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from nlpower.accuracy import (
    TABLE9,
    closed_form_power,
    glue_agreement,
    glue_effect,
    lachenbruch_discordance,
    mde,
    power,
    sample_size,
    squad_agreement,
    squad_effect,
    table9,
)
from nlpower.errors import InputError


@pytest.fixture(scope="module")
def r_reference(reference_dir):
    return json.loads((reference_dir / "accuracy_reference.json").read_text())


@pytest.fixture(scope="module")
def t9():
    return table9().set_index("task")


# --- R power.prop.test (tests/reference/accuracy_reference.R) ---------------------------

def test_two_proportion_power_matches_r(r_reference):
    for case in r_reference["power"]:
        r = closed_form_power(case["n"], case["p2"] - case["p1"], baseline=case["p1"],
                              alpha=case["sig_level"])
        assert r.power == pytest.approx(case["power"], abs=1e-10)


def test_two_proportion_mde_matches_r(r_reference):
    for case in r_reference["p2"]:
        m = mde(case["n"], case["p1"], test="two-proportion", target_power=case["power"])
        assert m.new_accuracy == pytest.approx(case["p2"], abs=1e-8)


def test_two_proportion_sample_size_matches_r(r_reference):
    for case in r_reference["n"]:
        s = sample_size(case["p2"] - case["p1"], case["p1"], test="two-proportion",
                        target_power=case["power"])
        assert s.n == pytest.approx(case["n"], rel=1e-8)
        assert s.n_required == math.ceil(case["n"])


# --- textbook and hand-checked values ---------------------------------------------------

def test_mcnemar_sample_size_textbook():
    """Chow, Shao & Wang (2008), Sample Size Calculations in Clinical Research, 2nd ed.,
    section 4.5 example: p10 = 0.50, p01 = 0.20 (discordant 0.70, agreement 0.30), alpha 0.05,
    power 80% -> n = 58.63, i.e. 59 pairs (Connor 1987)."""
    s = sample_size(0.3, agreement=0.3, test="mcnemar-normal")
    assert s.n == pytest.approx(58.63, abs=0.01)
    assert s.n_required == 59


def test_lachenbruch_hand_checked():
    """Connor's formula, baseline 0.92, delta 0.02, mid bound: psi = (0.02 + (0.08 + 0.06)) / 2
    = 0.08; n = (1.959964 sqrt(0.08) + 0.841621 sqrt(0.08 - 0.02^2))^2 / 0.02^2
      = (0.554363 + 0.237451)^2 / 0.0004 = 1567.4."""
    assert lachenbruch_discordance(0.92, 0.02, "mid", "connor") == pytest.approx(0.08)
    assert lachenbruch_discordance(0.92, 0.02, "lower", "connor") == pytest.approx(0.02)
    assert lachenbruch_discordance(0.92, 0.02, "upper", "connor") == pytest.approx(0.14)
    s = sample_size(0.02, 0.92, test="lachenbruch", bound="mid", formula="connor")
    assert s.n == pytest.approx(1567.4, abs=0.05)
    assert s.n_required == 1568


def test_lachenbruch_biostatuzh_hand_checked():
    """biostatUZH: p11 runs 0.92, 0.9199, ..., down to 0.86 (601 or 600 points, R's seq);
    psi = 1.86 - 2 p11.  Lower: psi = 0.02 exactly; upper: the grid's end (0.14, or 0.1398
    when floating point drops the last step); mid: the median point, within 2e-4 of 0.08.
    n = (z_a + z_b)^2 psi / delta^2: at the lower bound 7.84887 * 0.02 / 0.0004 = 392.44."""
    assert lachenbruch_discordance(0.92, 0.02, "lower") == pytest.approx(0.02, abs=1e-12)
    assert lachenbruch_discordance(0.92, 0.02, "upper") == pytest.approx(0.14, abs=2.01e-4)
    assert lachenbruch_discordance(0.92, 0.02, "mid") == pytest.approx(0.08, abs=2.01e-4)
    s = sample_size(0.02, 0.92, test="lachenbruch", bound="lower")
    z2 = (stats.norm.isf(0.025) + stats.norm.ppf(0.8)) ** 2
    assert s.n == pytest.approx(z2 * 0.02 / 0.02**2, rel=1e-12)
    assert s.n_required == 393
    # power and sample size agree: the power at n_required reaches 0.8, one item less does not
    kw = {"baseline": 0.92, "test": "lachenbruch", "bound": "mid"}
    m = sample_size(0.02, **kw)
    assert closed_form_power(m.n_required, 0.02, **kw).power >= 0.8
    assert closed_form_power(m.n_required - 1, 0.02, **kw).power < 0.8


def test_formula_only_for_lachenbruch():
    with pytest.raises(InputError, match="formula='connor' applies only to test='lachenbruch'"):
        mde(100, 0.8, agreement=0.9, test="mid-p", formula="connor")
    with pytest.raises(InputError, match="formula must be one of"):
        mde(100, 0.8, test="lachenbruch", bound="mid", formula="uzh")


# --- solvers invert the power functions ------------------------------------------------

@pytest.mark.parametrize("test", ["exact", "mid-p", "chi2", "chi2-cc", "exact-unconditional"])
def test_mde_inverts_exact_power(test):
    m = mde(1500, 0.85, agreement=0.9, test=test)
    assert power(1500, m.delta, 0.9, test=test).power == pytest.approx(0.8, abs=1e-8)
    assert power(1500, m.delta * 0.98, 0.9, test=test).power < 0.8


def test_mde_with_prior_evaluates_it_at_the_mde():
    m = mde(3000, 0.9, agreement="glue", test="exact")
    assert m.agreement == pytest.approx(glue_agreement(0.9, m.delta))
    assert m.feasible and m.achieved_power == pytest.approx(0.8, abs=1e-8)
    assert "MDE" in m.summary() and len(m.to_frame()) == 1


def test_sample_size_exact_reaches_power():
    s = sample_size(0.02, 0.8, agreement=0.9, test="exact")
    assert s.achieved_power >= 0.8
    assert power(s.n_required - 1, 0.02, 0.9).power < 0.8
    assert "paired items" in s.summary()


@pytest.mark.parametrize("kw", [
    {"test": "two-proportion"},
    {"test": "lachenbruch", "bound": "upper"},
    {"test": "mcnemar-normal", "agreement": 0.93},
])
def test_closed_form_sample_size_inverts_power(kw):
    s = sample_size(0.015, 0.9, **kw)
    assert closed_form_power(s.n_required, 0.015, baseline=0.9, **kw).power >= 0.8
    assert closed_form_power(s.n_required - 1, 0.015, baseline=0.9, **kw).power < 0.8


# --- Table 9 (Card et al. 2020, App. E.4) ------------------------------------------------

ROWS = [t.task for t in TABLE9]


@pytest.mark.parametrize("task", ROWS)
def test_table9_binomial_column(t9, task):
    assert abs(t9.loc[task, "binomial"] - t9.loc[task, "binomial_printed"]) < 0.03


@pytest.mark.parametrize("task", ROWS)
def test_table9_regression_column(t9, task):
    """The regression MDE: mid-p McNemar power at the task's overlap prior (Table 5 or 6) --
    the rejection region of MESS's power_mcnemar_test(method="exact"), which the paper ran
    (test_mess_exact_power_region_is_mid_p in test_unconditional.py)."""
    assert abs(t9.loc[task, "regression"] - t9.loc[task, "regression_printed"]) < 0.03


@pytest.mark.parametrize("task", [r for r in ROWS if r != "WNLI"])
def test_table9_regression_column_normal_approximation(t9, task):
    """Connor's normal approximation agrees everywhere but on WNLI's 147 items."""
    assert abs(t9.loc[task, "regression_normal"] - t9.loc[task, "regression_printed"]) < 0.03


@pytest.mark.parametrize("task", [r for r in ROWS if r != "WNLI"])
def test_table9_regression_column_exact_unconditional(t9, task):
    """Suissa & Shuster's test agrees with the printed column to 0.03 points on 1,725+ items."""
    assert abs(t9.loc[task, "regression_unconditional"] - t9.loc[task, "regression_printed"]) < 0.03


def test_table9_wnli_exact_unconditional_is_more_powerful(t9):
    """On 147 items the unconditional test rejects some tables the mid-p rule does not (d = 4,
    m = 0: Z = 2 > z_crit = 1.986), so its MDE is lower than the printed one (5.11 vs 5.26)."""
    row = t9.loc["WNLI"]
    assert 0.1 < row["regression_printed"] - row["regression_unconditional"] < 0.2


@pytest.mark.parametrize("task", ROWS)
@pytest.mark.parametrize("column", ["lachenbruch", "lachenbruch_lower", "lachenbruch_upper"])
def test_table9_lachenbruch_columns(t9, task, column):
    """biostatUZH's formula (the default) reproduces every Lachenbruch cell to 0.03 points,
    WNLI included (5.418 / 5.339 / 5.440 against 5.42 / 5.36 / 5.45).  QQP's lower bound:
    ours 0.0020 points vs printed 8.45e-5 (test_table9_qqp_lower_bound)."""
    assert abs(t9.loc[task, column] - t9.loc[task, f"{column}_printed"]) < 0.03


def test_table9_wnli_lachenbruch_connor_formula_misses():
    """Under Connor's formula the printed WNLI Lachenbruch MDEs are those of about 144 items,
    not 147: the printed table used biostatUZH's formula, not Connor's."""
    for bound, printed in (("mid", 5.42), ("lower", 5.36), ("upper", 5.45)):
        s = sample_size(printed / 100, 0.945, test="lachenbruch", bound=bound, formula="connor")
        assert 143.5 < s.n < 145.0
        ours = mde(147, 0.945, test="lachenbruch", bound=bound, formula="connor").delta * 100
        assert 0.03 < printed - ours < 0.11


def test_table9_qqp_lower_bound():
    """QQP's printed lower bound, 8.45e-5 %, gives nearly no power on 390,965 pairs; the
    formula's MDE there is (z_a + z_b)^2 / n = 0.0020 % under either formula."""
    printed = 8.45e-5 / 100
    assert closed_form_power(390965, printed, baseline=0.91, test="lachenbruch",
                             bound="lower").power < 0.1
    z = stats.norm.isf(0.025) + stats.norm.ppf(0.8)
    for formula in ("biostatuzh", "connor"):
        ours = mde(390965, 0.91, test="lachenbruch", bound="lower", formula=formula).delta
        assert ours == pytest.approx(z**2 / 390965, rel=0.01)


def test_wnli_regression_mde_notes_the_impossible_table():
    m = mde(147, 0.945, agreement="glue", test="mid-p")
    assert not m.feasible and "both_wrong" in m.notes[0]


# --- priors (Tables 5-8) --------------------------------------------------------------

def test_agreement_priors():
    assert glue_agreement(0.9, 0.01) == pytest.approx(0.4142 + 0.5819 * 0.9 - 0.4662 * 0.01)
    assert squad_agreement(0.9, 0.01) == pytest.approx(0.4339 + 0.5932 * 0.9 - 1.2849 * 0.01)


@pytest.mark.parametrize("row", [t for t in TABLE9 if t.prior == "glue"], ids=lambda t: t.task)
def test_glue_effect_prior_against_table9(row):
    """Table 7 with its printed (rounded) slope -0.264 lands 0.04-0.05 points above Table 9's
    Delta-hat column; a slope of -0.2645 would close the gap."""
    assert abs(100 * glue_effect(row.task, row.sota) - row.delta_hat) < 0.06


def test_squad_effect_prior_against_table9():
    assert abs(100 * squad_effect(0.90724) - 0.528) < 0.01


# --- errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,msg", [
    ({"test": "exact"}, "test='exact' needs the agreement rate"),
    ({"test": "two-proportion", "agreement": 0.9}, "agreement=0.9 is not used by "
                                                   "test='two-proportion'"),
    ({"test": "lachenbruch"}, "test='lachenbruch' needs bound="),
    ({"test": "exact", "agreement": 0.9, "bound": "mid"}, "bound='mid' applies only to "
                                                          "test='lachenbruch'"),
    ({"test": "lachenbruch", "bound": "middle"}, "bound must be one of"),
    ({"test": "binomial"}, "test must be one of"),
    ({"test": "exact", "agreement": "glue", "target_power": 1.2}, "target_power must be < 1.0"),
])
def test_mde_option_errors(kw, msg):
    with pytest.raises(InputError, match=msg):
        mde(1000, 0.9, **kw)


def test_mde_errors_needing_baseline():
    with pytest.raises(InputError, match="test='two-proportion' needs the baseline accuracy"):
        mde(1000, test="two-proportion")
    with pytest.raises(InputError, match="agreement='glue' is a regression prior and needs "
                                         "baseline"):
        mde(1000, agreement="glue")


def test_mde_unreachable_power():
    with pytest.raises(InputError, match=r"no delta up to .* reaches target_power=0.8 with n=5 .*"
                                         r"Increase n"):
        mde(5, 0.9, agreement=0.95)


def test_sample_size_errors():
    with pytest.raises(InputError, match="delta must be non-zero"):
        sample_size(0.0, 0.9, test="two-proportion")
    with pytest.raises(InputError, match="no n up to n_max=100 reaches target_power=0.8"):
        sample_size(0.01, agreement=0.9, n_max=100)


def test_closed_form_power_refuses_mcnemar_tests():
    with pytest.raises(InputError, match="is a McNemar test: use nlpower.accuracy.power"):
        closed_form_power(100, 0.02, agreement=0.9, test="exact")


def test_glue_effect_unknown_task():
    with pytest.raises(InputError, match="task must be one of 'MNLI-m'"):
        glue_effect("CoLA", 0.7)


def test_closed_form_type_m_and_type_s_match_their_normal_model():
    """Type-M/Type-S of the closed forms are the exact moments of their normal model:
    checked against 400,000 draws of delta_hat ~ N(delta, (psi - delta^2) / n)."""
    n, delta, pa = 400, 0.02, 0.9
    r = closed_form_power(n, delta, agreement=pa, test="mcnemar-normal")
    psi = 1 - pa
    gen = np.random.default_rng(0)
    x = gen.normal(delta, math.sqrt((psi - delta**2) / n), size=400_000)
    sig = np.abs(x) > stats.norm.isf(0.025) * math.sqrt(psi / n)
    ratio = np.abs(x[sig]) / delta
    assert abs(r.type_m - ratio.mean()) < 4 * ratio.std() / math.sqrt(sig.sum())
    ts = np.mean(x[sig] < 0)
    assert abs(r.type_s - ts) < 4 * math.sqrt(ts * (1 - ts) / sig.sum()) + 1e-4
    assert r.power == pytest.approx(np.mean(sig & (x > 0)), abs=4 * math.sqrt(0.25 / 400_000))


def test_closed_form_close_to_exact_enumeration_for_large_n():
    exact = power(2000, 0.02, 0.9, test="chi2")
    approx = closed_form_power(2000, 0.02, agreement=0.9, test="mcnemar-normal")
    assert abs(approx.power - exact.power) < 0.01
    assert abs(approx.type_m - exact.type_m) < 0.02
    assert "closed form" in approx.summary()


def test_lachenbruch_biostatuzh_matches_r(reference_dir):
    """tests/reference/lachenbruch_reference.R (R's own seq grid, uniroot): every Table 9 row."""
    ref = json.loads((reference_dir / "lachenbruch_reference.json").read_text())
    for row in ref["table9"]:
        for bound in ("lower", "mid", "upper"):
            ours = mde(row["n"], row["sota"], test="lachenbruch", bound=bound).delta
            assert ours == pytest.approx(row[bound], abs=1e-9), (row["task"], bound)
