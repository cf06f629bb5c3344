"""The optional ``engine="lme4"`` (rpy2 adapter, ``nlpower.lmm.lme4``).

``requires_r`` tests fit through embedded R and compare with the pinned
values of ``tests/reference/lme4_reference.R`` (same lme4, so tolerances are
tight: the only differences are how the data reach R -- a pandas frame
through rpy2 instead of ``read.csv``).  They also need rpy2: without it they
skip, or fail when ``NLPOWER_REQUIRE_R=1`` (CI installs ``nlpower[r]``
whenever R is present).  The missing-rpy2/R paths are tested without R by
monkeypatching the imports.
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
import types
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import REFERENCE
from nlpower.errors import (
    ConvergenceWarning,
    EngineUnavailableError,
    FitError,
    InputError,
    SingularFitWarning,
)
from nlpower.lmm import LmmFit, lmer
from nlpower.lmm import lme4 as lme4_engine
from nlpower.lmm.names import coef_aliases, lme4_name

REF = json.loads((REFERENCE / "lme4_reference.json").read_text())["cases"]
CHEAP = ["sleepstudy_ML", "sleepstudy_REML", "penicillin_REML", "penicillin_ML",
         "crossed2_ML", "crossed4_ML"]


def require_rpy2() -> None:
    ok, reason = lme4_engine.available()
    if ok:
        return
    if os.environ.get("NLPOWER_REQUIRE_R") == "1":
        pytest.fail(f"NLPOWER_REQUIRE_R=1 but engine='lme4' is unavailable: {reason}")
    pytest.skip(f"engine='lme4' unavailable: {reason}")


def case_data(cid: str) -> pd.DataFrame:
    case = REF[cid]
    return pd.read_csv(REFERENCE / case["data"], dtype={f: str for f in case["factors"]})


def case_contrasts(cid: str) -> dict[str, str] | None:
    return {k: "sum" for k in REF[cid]["contrasts"]} or None


_fits: dict[str, tuple[LmmFit, list[warnings.WarningMessage]]] = {}


def fit_lme4_warnings(cid: str) -> tuple[LmmFit, list[warnings.WarningMessage]]:
    """The lme4-engine fit of a pinned case and the warnings it raised (cached)."""
    if cid not in _fits:
        case = REF[cid]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = lmer(case["formula"], case_data(cid), REML=case["REML"], engine="lme4",
                       contrasts=case_contrasts(cid))
        _fits[cid] = (fit, list(caught))
    return _fits[cid]


def fit_lme4(cid: str) -> LmmFit:
    return fit_lme4_warnings(cid)[0]


# ---------------------------------------------------------------------------
# with R


@pytest.mark.requires_r
@pytest.mark.parametrize("cid", CHEAP)
def test_lme4_engine_reproduces_the_pinned_fit(cid: str) -> None:
    require_rpy2()
    case = REF[cid]
    fit = fit_lme4(cid)
    assert isinstance(fit, LmmFit)
    assert fit.engine == "lme4" and fit.REML == case["REML"] and fit.formula == case["formula"]
    obj = fit.reml_criterion if case["REML"] else fit.deviance
    assert obj == pytest.approx(case["objective"], abs=1e-5)
    assert fit.loglik == pytest.approx(case["logLik"], abs=1e-5)
    assert fit.aic == pytest.approx(case["AIC"], abs=1e-5)
    assert fit.bic == pytest.approx(case["BIC"], abs=1e-5)
    # the engine names lme4's sum-coded columns by level as the native one does (system[A])
    assert [lme4_name(str(n), coef_aliases(fit)) for n in fit.fixef.index] == list(case["fixef"])
    np.testing.assert_allclose(fit.fixef.to_numpy(), list(case["fixef"].values()), rtol=1e-6)
    np.testing.assert_allclose(fit.se.to_numpy(), list(case["se"].values()), rtol=1e-4)
    # absolute floor for near-zero covariances: 1e-3 of the largest variance
    # (crossed4's deviance is flat along the boundary; the tiny ulp-level
    # differences between read.csv's and pandas' decimal parsing move lme4's
    # optimum there by ~1e-4 relative)
    V = np.array(case["vcov"])
    np.testing.assert_allclose(fit.vcov.to_numpy(), V, rtol=1e-4,
                               atol=1e-3 * np.abs(np.diag(V)).max())
    assert fit.sigma == pytest.approx(case["sigma"], rel=1e-5)
    assert fit.nobs == case["nobs"] and fit.ngrps == case["ngrps"]
    assert fit.singular == case["isSingular"]
    assert list(fit.theta_names) == case["theta_names"]
    vc = fit.varcorr()
    assert list(vc.columns) == ["grp", "var1", "var2", "vcov", "sdcor"]
    assert list(vc["grp"]) == [r["grp"] for r in case["varcorr"]]
    if cid != "crossed4_ML":
        # crossed4's individual SDs are not identified ((1|g) + (0 + system|g),
        # see test_lme4_agreement); its objective and fixed effects are checked above
        np.testing.assert_allclose(fit.theta, case["theta"], rtol=1e-3, atol=1e-5)
        np.testing.assert_allclose(vc["sdcor"].to_numpy(dtype=float),
                                   [r["sdcor"] for r in case["varcorr"]], rtol=1e-3, atol=1e-6)


@pytest.mark.requires_r
def test_lme4_engine_result_has_the_native_shape() -> None:
    """Same result type and layout as the native engine: ranef, residuals, summary."""
    require_rpy2()
    data = case_data("sleepstudy_REML")
    a = fit_lme4("sleepstudy_REML")
    b = lmer(REF["sleepstudy_REML"]["formula"], data, REML=True)
    assert type(a) is type(b)
    assert list(a.varcorr()["grp"]) == list(b.varcorr()["grp"])
    assert list(a.varcorr()["var1"].fillna("-")) == list(b.varcorr()["var1"].fillna("-"))
    ra, rb = a.ranef(), b.ranef()
    assert list(ra) == list(rb) == ["Subject"]
    assert list(ra["Subject"].columns) == list(rb["Subject"].columns) == ["(Intercept)", "Days"]
    assert sorted(ra["Subject"].index) == sorted(rb["Subject"].index)
    # conditional modes agree between engines (sleepstudy: 2 SDs of ~24 and ~6)
    diff = ra["Subject"].sort_index() - rb["Subject"].sort_index()
    assert np.abs(diff.to_numpy()).max() < 1e-2
    assert a.residuals.shape == (len(data),)
    assert np.abs(a.residuals - b.residuals).max() < 1e-2
    text = a.summary()
    assert "engine: lme4" in text and "REML criterion" in text
    assert a.optinfo["lme4_version"] == "1.1.31"
    assert a.converged and a.optinfo["conv_messages"] == []
    tab = a.coef_table("normal")
    assert list(tab.index) == ["(Intercept)", "Days"]
    # lmerTest's and pbkrtest's df at lme4's estimates: those of the native fit (same optimum)
    for ddf in ("satterthwaite", "kenward-roger"):
        np.testing.assert_allclose(a.coef_table(ddf)["df"], b.coef_table(ddf)["df"], rtol=1e-3)
    assert "df" in a.summary() and a.optsum.optimizer.startswith("lme4")


@pytest.mark.requires_r
def test_lme4_engine_warnings_and_errors() -> None:
    require_rpy2()
    data = case_data("sleepstudy_ML")
    formula = REF["sleepstudy_ML"]["formula"]
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        fit = lmer(formula, data, REML=False, engine="lme4",
                   control={"optimizer": "bobyqa", "optCtrl": {"maxfun": 10}})
    assert not fit.converged
    fit4, caught = fit_lme4_warnings("crossed4_ML")     # lme4: singular
    assert fit4.singular
    assert any(issubclass(w.category, SingularFitWarning) and "boundary" in str(w.message)
               for w in caught)
    fit2, caught = fit_lme4_warnings("crossed2_ML")     # lme4: not singular, converged
    assert not fit2.singular and fit2.converged
    assert not [w for w in caught if issubclass(w.category, (SingularFitWarning, ConvergenceWarning))]
    with pytest.raises(FitError, match=r"couldn.t find optimizer function nonexistent(.|\n)*engine=.native."):
        lmer(formula, data, engine="lme4", control={"optimizer": "nonexistent"})
    # "half" coding is contr.sum / 2: the slope doubles, the intercept is unchanged
    d2 = case_data("crossed2_ML")
    f_sum = lmer("rating ~ system + (1 | worker)", d2, engine="lme4", contrasts={"system": "sum"})
    f_half = lmer("rating ~ system + (1 | worker)", d2, engine="lme4",
                  contrasts={"system": "half"})
    assert list(f_sum.fixef.index) == ["(Intercept)", "system[A]"]     # lme4: system1
    assert f_half.fixef["system[A]"] == pytest.approx(2 * f_sum.fixef["system[A]"], rel=1e-6)
    assert f_half.fixef["(Intercept)"] == pytest.approx(f_sum.fixef["(Intercept)"], rel=1e-6)


# ---------------------------------------------------------------------------
# without R


def test_bad_control_is_rejected_before_r_is_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lme4_engine, "_R", {})
    monkeypatch.setitem(sys.modules, "rpy2", None)      # R must not be needed for this
    data = case_data("sleepstudy_ML")
    with pytest.raises(InputError, match=r"control for engine='lme4' must be a dict"):
        lmer("Reaction ~ Days + (1 | Subject)", data, engine="lme4", control=["bobyqa"])  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"control\['optCtrl'\] for engine='lme4' must be"):
        lmer("Reaction ~ Days + (1 | Subject)", data, engine="lme4", control={"optCtrl": [1]})


def test_missing_rpy2_raises_engine_unavailable_with_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lme4_engine, "_R", {})
    for name in [m for m in sys.modules if m == "rpy2" or m.startswith("rpy2.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "rpy2", None)      # makes `import rpy2` raise ImportError
    data = case_data("sleepstudy_ML")
    with pytest.raises(EngineUnavailableError) as err:
        lmer("Reaction ~ Days + (1 | Subject)", data, engine="lme4")
    msg = str(err.value)
    assert "rpy2 is not installed" in msg
    assert "pip install 'nlpower[r]'" in msg
    assert "apt-get install r-base-core r-cran-lme4" in msg
    assert "engine='native'" in msg
    assert isinstance(err.value, ImportError)           # EngineUnavailableError is an ImportError
    ok, reason = lme4_engine.available()
    assert not ok and "pip install 'nlpower[r]'" in reason


def test_rpy2_without_r_raises_engine_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """rpy2 built in ABI mode on a machine without R imports, then fails on R."""
    monkeypatch.setattr(lme4_engine, "_R", {})
    monkeypatch.setitem(sys.modules, "rpy2", types.ModuleType("rpy2"))
    monkeypatch.delitem(sys.modules, "rpy2.robjects", raising=False)
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "rpy2.robjects":
            raise ValueError("r_home is None. Try python -m rpy2.situation")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(EngineUnavailableError, match=r"cannot start R \(ValueError: r_home is None"):
        lmer("Reaction ~ Days + (1 | Subject)", case_data("sleepstudy_ML"), engine="lme4")


def test_r_without_lme4_raises_engine_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lme4_engine, "_R", {})
    fake_rpy2 = types.ModuleType("rpy2")
    fake_ro = types.ModuleType("rpy2.robjects")
    fake_ro.r = lambda code: [False]  # type: ignore[attr-defined]   # requireNamespace("lme4") is FALSE
    fake_rpy2.robjects = fake_ro  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rpy2", fake_rpy2)
    monkeypatch.setitem(sys.modules, "rpy2.robjects", fake_ro)
    with pytest.raises(EngineUnavailableError, match="R is available but the lme4 package is not"):
        lmer("Reaction ~ Days + (1 | Subject)", case_data("sleepstudy_ML"), engine="lme4")


def test_importing_the_adapter_does_not_import_rpy2() -> None:
    code = "import sys, nlpower.lmm.lme4; print('rpy2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_r_that_fails_to_start_raises_engine_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lme4_engine, "_R", {})
    fake_rpy2 = types.ModuleType("rpy2")
    fake_ro = types.ModuleType("rpy2.robjects")

    def broken_r(code: str) -> Any:
        raise RuntimeError("R_HOME/lib/libR.so: cannot open shared object file")

    fake_ro.r = broken_r  # type: ignore[attr-defined]
    fake_rpy2.robjects = fake_ro  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rpy2", fake_rpy2)
    monkeypatch.setitem(sys.modules, "rpy2.robjects", fake_ro)
    with pytest.raises(EngineUnavailableError, match=r"R failed to start \(R_HOME/lib/libR.so"):
        lmer("Reaction ~ Days + (1 | Subject)", case_data("sleepstudy_ML"), engine="lme4")


def test_starting_r_leaves_ld_library_path_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """rpy2 prepends R's library dirs to LD_LIBRARY_PATH; child processes
    (Dask workers) must not inherit that, so the adapter restores it."""
    monkeypatch.setattr(lme4_engine, "_R", {})
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/original")
    fake_rpy2 = types.ModuleType("rpy2")
    fake_ro = types.ModuleType("rpy2.robjects")

    calls: list[str] = []

    def r_that_edits_the_environment(code: str) -> Any:
        if not calls:  # the first call stands for starting R
            os.environ["LD_LIBRARY_PATH"] = "/usr/lib/R/lib:/opt/original"
        calls.append(code)
        return [True]

    fake_ro.r = r_that_edits_the_environment  # type: ignore[attr-defined]
    fake_rpy2.robjects = fake_ro  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rpy2", fake_rpy2)
    monkeypatch.setitem(sys.modules, "rpy2.robjects", fake_ro)
    lme4_engine._r()
    assert os.environ["LD_LIBRARY_PATH"] == "/opt/original"
