"""Satterthwaite df (lmerTest's method) and the numerical derivatives behind it."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lmm_specs import _term, crossed_spec
from nlpower.errors import InputError
from nlpower.lmm.native import NativeModel
from nlpower.lmm.structure import ModelSpec
from nlpower.mixed.fdiff import richardson_hessian as hessian
from nlpower.mixed.fdiff import richardson_jacobian as jacobian

ROOT = Path(__file__).resolve().parents[2]


def test_hessian_and_jacobian_of_known_functions():
    f = lambda x: x[0] ** 2 * x[1] ** 3 + np.exp(x[0] * x[1])  # noqa: E731
    a, b = 0.7, 1.3
    H = hessian(f, np.array([a, b]))
    e = np.exp(a * b)
    exact = np.array([[2 * b ** 3 + b * b * e, 6 * a * b * b + e * (1 + a * b)],
                      [6 * a * b * b + e * (1 + a * b), 6 * a * a * b + a * a * e]])
    np.testing.assert_allclose(H, exact, rtol=1e-7)
    g = lambda x: np.array([[x[0] * x[1], np.sin(x[0])], [x[1] ** 2, 1.0]])  # noqa: E731
    J = jacobian(g, np.array([a, b]))
    assert J.shape == (2, 2, 2)
    np.testing.assert_allclose(J[0], [[b, np.cos(a)], [0, 0]], atol=1e-9)
    np.testing.assert_allclose(J[1], [[a, 0], [2 * b, 0]], atol=1e-9)


def split_plot(seed: int = 0) -> ModelSpec:
    """18 subjects in 3 groups, 4 measurements each; y ~ group + time + (1 | subject)."""
    rng = np.random.default_rng(seed)
    n_subj, n_rep = 18, 4
    subj = np.repeat(np.arange(n_subj), n_rep)
    grp = subj % 3
    time = np.tile(np.arange(n_rep) - 1.5, n_subj)
    G = np.eye(3)[grp]
    X = np.column_stack([np.ones(subj.size), G[:, 1] - G[:, 0], G[:, 2] - G[:, 0], time])
    y = X @ [1.0, 0.3, -0.2, 0.1] + rng.normal(0, 1.0, n_subj)[subj] + rng.normal(0, .5, subj.size)
    return ModelSpec("y ~ group + time + (1 | subject)", "y", y, X,
                     ("(Intercept)", "group1", "group2", "time"),
                     (_term("subject", subj, np.ones(subj.size), ("(Intercept)",)),))


@pytest.mark.parametrize("seed", [0, 1])
def test_balanced_split_plot_gives_the_anova_strata_df(seed):
    # balanced design: between-subject contrasts get the subject stratum df
    # (18 subjects - 3 groups = 15), the within-subject slope the residual
    # stratum df (72 - 18 - 1 = 53) -- exact, up to numerical differentiation.
    model = NativeModel(split_plot(seed))
    fit = model.fit(REML=True)
    assert fit.theta[0] > 0.1
    df = fit.coef_table()["df"]
    np.testing.assert_allclose(df[["(Intercept)", "group1", "group2"]], 15.0, rtol=1e-3)
    assert df["time"] == pytest.approx(53.0, rel=1e-3)
    # a contrast between two groups lives in the same stratum
    assert fit.contrast_df([0, 1, -1, 0]) == pytest.approx(15.0, rel=1e-3)


def test_satterthwaite_df_hot_path_api():
    model = NativeModel(crossed_spec())
    core = model.refit_core(model.spec.y)
    d1 = model.satterthwaite_df(core, [0.0, 1.0])
    assert isinstance(d1, float) and 1.0 < d1 < model.spec.n
    both = model.satterthwaite_df(core, np.eye(2))
    assert both.shape == (2,) and both[1] == pytest.approx(d1)
    # refit_core polishes only past lme4's gradient tolerance (a power replicate): same setting
    fit = model.fit(control={"polish_gtol": 2e-3})
    np.testing.assert_allclose(fit.coef_table()["df"].to_numpy(), both, rtol=1e-8)
    with pytest.raises(InputError, match=r"L must have 2 columns .*got shape \(3,\)"):
        model.satterthwaite_df(core, [1.0, 0.0, 0.0])


_R_SCRIPT = r"""
suppressMessages(library(lmerTest))
d <- read.csv(commandArgs(TRUE)[1])
d$Subject <- factor(d$Subject); d$g <- factor(d$g)
out <- list()
for (reml in c(TRUE, FALSE)) {
  m <- lmer(Reaction ~ Days + (Days | Subject), d, REML = reml)
  out[[if (reml) "REML" else "ML"]] <- unname(coef(summary(m))[, "df"])
}
m <- suppressMessages(lmer(Reaction ~ Days + (1 | g) + (1 | Subject), d))
out$singular <- unname(coef(summary(m))[, "df"])
out$is_singular <- isSingular(m)
cat(jsonlite::toJSON(out, digits = 12, auto_unbox = TRUE))
"""


@pytest.mark.requires_r
def test_agrees_with_lmertest_on_sleepstudy():
    probe = subprocess.run(["Rscript", "-e", "library(lmerTest); library(jsonlite)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("lmerTest/jsonlite not installed in R")
    d = pd.read_csv(ROOT / "tests" / "reference" / "data" / "sleepstudy.csv")
    # a grouping factor unrelated to the response: a singular (boundary) fit
    d["g"] = [f"g{(i * 5) % 6}" for i in range(len(d))]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "sleep.csv"
        d.to_csv(data, index=False)
        script = Path(tmp) / "satt.R"
        script.write_text(_R_SCRIPT)
        proc = subprocess.run(["Rscript", "--vanilla", str(script), str(data)],
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ref = json.loads(proc.stdout)
    codes = pd.Categorical(d["Subject"].astype(str))
    X = np.column_stack([np.ones(len(d)), d["Days"]])
    spec = ModelSpec("Reaction ~ Days + (Days | Subject)", "Reaction", d["Reaction"].to_numpy(float),
                     X, ("(Intercept)", "Days"),
                     (_term("Subject", codes.codes, X, ("(Intercept)", "Days")),))
    model = NativeModel(spec)
    for crit, REML in (("REML", True), ("ML", False)):
        df = model.fit(REML=REML).coef_table()["df"].to_numpy()
        np.testing.assert_allclose(df, ref[crit], rtol=1e-3)
    # singular fit: the flat direction of the Hessian is dropped as lmerTest does
    g = pd.Categorical(d["g"])
    one = np.ones(len(d))
    spec_g = ModelSpec("Reaction ~ Days + (1 | g) + (1 | Subject)", "Reaction",
                       d["Reaction"].to_numpy(float), X, ("(Intercept)", "Days"),
                       (_term("g", g.codes, one, ("(Intercept)",)),
                        _term("Subject", codes.codes, one, ("(Intercept)",))))
    fit = NativeModel(spec_g).fit(REML=True)
    assert ref["is_singular"] and fit.singular
    np.testing.assert_allclose(fit.coef_table()["df"].to_numpy(), ref["singular"], rtol=1e-3)
