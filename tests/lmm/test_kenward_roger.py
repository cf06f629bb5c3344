"""Kenward-Roger tests against pbkrtest / lmerTest (tests/reference/kenward_roger.R)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import InputError
from nlpower.lmm import lmer
from nlpower.lmm.frame import model_frame
from nlpower.lmm.kenward_roger import kr_state

REF_DIR = Path(__file__).resolve().parents[1] / "reference"
REF = {c["name"]: c for c in json.loads((REF_DIR / "kenward_roger.json").read_text())["cases"]}


def _data(name: str) -> pd.DataFrame:
    if name.startswith("sleepstudy"):
        d = pd.read_csv(REF_DIR / "data" / "sleepstudy.csv")
        d["Subject"] = d["Subject"].astype(str)
        return d
    return pd.read_csv(REF_DIR / "data" / "kr_paired.csv")


def _state(name: str):
    r = REF[name]
    d = _data(name)
    fit = lmer(r["formula"], d, REML=True)
    spec = model_frame(r["formula"], d)
    covs = [next(v.cov for v in fit.var_terms
                 if v.group == t.group and tuple(v.cnames) == tuple(t.cnames))
            for t in spec.re_terms]
    return fit, kr_state(spec, fit.fixef.to_numpy(), covs, fit.sigma)


# the REML optima of the two engines differ by ~1e-6 relative in theta; KR inherits that
RTOL = 2e-5


@pytest.mark.parametrize("name", sorted(REF))
def test_t_test_matches_lmertest_kenward_roger(name):
    r = REF[name]
    _, st = _state(name)
    est, se, df, p = st.t_test(r["L"])
    assert est == pytest.approx(r["t_estimate"], rel=1e-6)
    assert se == pytest.approx(r["t_se"], rel=RTOL)
    assert df == pytest.approx(r["t_df"], rel=RTOL)
    assert p == pytest.approx(r["t_p"], rel=1e-3)


@pytest.mark.parametrize("name", sorted(REF))
def test_f_test_and_adjusted_vcov_match_pbkrtest(name):
    r = REF[name]
    _, st = _state(name)
    F, ddf, scaling, p = st.f_test([r["L"]])
    assert F == pytest.approx(r["F"], rel=1e-4)
    assert ddf == pytest.approx(r["F_ddf"], rel=RTOL)
    assert scaling == pytest.approx(r["F_scaling"], rel=1e-6)
    p_ = len(r["fixef"])
    np.testing.assert_allclose(st.PhiA, np.reshape(r["vcov_adj"], (p_, p_)),
                               rtol=1e-4, atol=1e-4 * np.max(np.abs(r["vcov_adj"])))


def test_balanced_design_kr_equals_satterthwaite():
    """Balanced crossed design: Phi_A = Phi and KR df = Satterthwaite df (pbkrtest agrees)."""
    fit, st = _state("kr_paired")
    np.testing.assert_allclose(st.PhiA, st.Phi, atol=1e-12)
    satt = fit.coef_table(ddf="satterthwaite")["df"].iloc[1]
    assert st.t_test([0, 1])[2] == pytest.approx(satt, rel=1e-3)


def test_term_covs_length_message():
    r = REF["sleepstudy"]
    spec = model_frame(r["formula"], _data("sleepstudy"))
    with pytest.raises(InputError, match="one matrix per random-effects term"):
        kr_state(spec, [0.0, 0.0], [], 1.0)
