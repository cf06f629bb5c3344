"""Table rendering, the verbs' error messages, and the appended fit methods."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower import display
from nlpower.errors import InputError
from nlpower.inference import anova, confint, emmeans, pairs
from nlpower.inference.adjust import adjust_pvalues

DATA = Path(__file__).resolve().parents[1] / "reference" / "data"


@cache
def sleep_fit() -> Any:
    return nlpower.lmer("Reaction ~ Days + (1 | Subject)", pd.read_csv(DATA / "sleepstudy.csv"))


def test_latex_escapes_and_booktabs() -> None:
    df = pd.DataFrame({"p": [1e-6, 0.5], "name": ["a_b & c", "50%"]}, index=["x_1", "y"])
    tex = display.to_latex(df, caption="Means & SEs")
    assert r"\toprule" in tex and r"\bottomrule" in tex
    assert r"a\_b \& c" in tex and r"50\%" in tex and r"x\_1" in tex
    assert r"$<$0.0001" in tex and "0.5000" in tex
    assert r"\caption{Means \& SEs}" in tex


def test_markdown_and_html() -> None:
    df = pd.DataFrame({"est": [1.23456, np.nan, np.inf]}, index=["a|b", "c", "d"])
    md = display.to_markdown(df).splitlines()
    assert md[1] == "|---|---:|" and md[2] == r"| a\|b | 1.235 |" and md[3] == "| c |  |"
    assert md[4] == "| d | Inf |"
    html = display.to_html(pd.DataFrame({"x": [1.0]}, index=["<b>"]), caption="T")
    assert "&lt;b&gt;" in html and "<b>" not in html.replace("<b>", "", 0).split("</caption>")[1]


def test_format_cell_large_and_small() -> None:
    assert display.format_cell(12345.6) == "12346"
    assert display.format_cell(1.5e-7) == "1.500e-07"
    assert display.format_cell(3) == "3"


def test_fit_display_methods() -> None:
    fit = sleep_fit()
    html = fit._repr_html_()
    assert "Fixed effects" in html and "Random effects" in html and "Subject" in html
    assert "| Days |" in fit.to_markdown()
    assert r"\begin{tabular}" in fit.to_latex()
    ci = fit.confint(method="wald")
    assert ci.to_frame().loc["Days", "lower"] < fit.fixef["Days"] < ci.to_frame().loc["Days", "upper"]
    assert "Wald confidence intervals" in ci._repr_html_()


def test_adjustments_against_their_definitions() -> None:
    t = np.array([2.5, 1.0, 3.2])
    df = np.full(3, np.inf)
    raw = adjust_pvalues(t, df, "none", 3)
    np.testing.assert_allclose(adjust_pvalues(t, df, "bonferroni", 3), np.minimum(1, 3 * raw))
    order = np.argsort(raw)
    holm = adjust_pvalues(t, df, "holm", 3)
    assert holm[order[0]] == pytest.approx(3 * raw[order[0]])
    assert holm[order[1]] == pytest.approx(max(3 * raw[order[0]], 2 * raw[order[1]]))
    fdr = adjust_pvalues(t, df, "fdr", 3)
    assert fdr[order[2]] == pytest.approx(raw[order[2]])
    assert np.all(fdr <= holm + 1e-15)


def test_errors_name_the_argument() -> None:
    fit = sleep_fit()
    with pytest.raises(InputError, match="method"):
        confint(fit, method="bayes")
    with pytest.raises(InputError, match="level must be"):
        confint(fit, level=95)
    with pytest.raises(InputError, match="parm='nope'"):
        confint(fit, method="wald", parm="nope")
    with pytest.raises(InputError, match="n_boot"):
        confint(fit, method="boot", n_boot=3)
    with pytest.raises(InputError, match="at least one fit"):
        anova()
    with pytest.raises(InputError, match="lmer, glmer or clmm"):
        anova("not a fit", "neither")
    ml = nlpower.lmer("Reaction ~ Days + (1 | Subject)", pd.read_csv(DATA / "sleepstudy.csv"),
                      REML=False)
    with pytest.raises(InputError, match="kenward-roger"):
        anova(ml, ddf="kenward-roger")
    import dataclasses
    with pytest.raises(InputError, match="pass data="):
        emmeans(dataclasses.replace(fit, data=None), "Subject")   # a fit that kept no rows
    d = pd.read_csv(DATA / "sleepstudy.csv")
    with pytest.raises(InputError, match="numeric"):
        emmeans(fit, "Days", data=d)
    with pytest.raises(InputError, match="'Nope' is not a variable"):
        emmeans(fit, "Nope", data=d)


def test_pairs_errors_and_baseline() -> None:
    d = pd.read_csv(DATA / "crossed4.csv")
    fit = nlpower.lmer("rating ~ system + (1 | worker) + (1 | item)", d)
    with pytest.raises(InputError, match="tukey"):
        pairs(fit, "system", data=d, method="baseline", adjust="tukey", df="asymptotic")
    with pytest.raises(InputError, match="baseline='Z'"):
        pairs(fit, "system", data=d, method="baseline", adjust="holm", baseline="Z",
              df="asymptotic")
    got = pairs(fit, "system", data=d, method="baseline", adjust="none", baseline="C",
                df="satterthwaite").to_frame()
    assert list(got.index) == ["A - C", "B - C", "D - C"]
    em = emmeans(fit, "system", data=d, df="satterthwaite").to_frame()["emmean"]
    np.testing.assert_allclose(got["estimate"], em[["A", "B", "D"]].to_numpy() - em["C"], rtol=1e-12)


def test_anova_refuses_different_rows() -> None:
    d = pd.read_csv(DATA / "sleepstudy.csv")
    a = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d)
    b = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d.iloc[:-10])
    with pytest.raises(InputError, match="same observations"):
        anova(a, b)


def test_latex_tables_compile(tmp_path: Path) -> None:
    """A fit's and a contrast table's LaTeX compile with pdflatex + booktabs (skipped
    without a TeX installation)."""
    import shutil
    import subprocess
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed")
    fit = sleep_fit()
    body = fit.to_latex() + "\n" + fit.confint(method="wald").to_latex(label="tab:ci")
    (tmp_path / "t.tex").write_text("\\documentclass{article}\\usepackage{booktabs}"
                                    "\\begin{document}\n" + body + "\n\\end{document}\n")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "t.pdf").stat().st_size > 1000


def test_glmm_and_clmm_display() -> None:
    import warnings
    cb = pd.read_csv(DATA / "cbpp.csv", dtype={"herd": str, "period": str})
    g = nlpower.glmer("prop ~ period + (1 | herd)", cb, "binomial", weights="size")
    md = g.to_markdown()
    assert md.startswith("GlmmFit: prop ~ period + (1 | herd)") and "| period4 |" in md
    assert "herd" in g._repr_html_() and r"\toprule" in g.to_latex()
    wine = pd.read_csv(DATA / "wine.csv", dtype={"judge": str})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = nlpower.clmm("rating ~ temp + (1 | judge)", wine)
    assert r"| 1\|2 |" in c.to_markdown() and "tempwarm" in c._repr_html_()
    assert anova(c, nlpower.clmm("rating ~ 1 + (1 | judge)", wine)).to_frame()["Df"].iloc[1] == 1


def test_power_results_in_a_notebook() -> None:
    from nlpower import CrossedDesign, presets
    from nlpower.powersim import analytic_power
    res = analytic_power(CrossedDesign(8, 40), presets.high_variance(0.1))
    html = res._repr_html_()
    assert html.startswith('<pre class="nlpower-power">') and "Analytic power" in html
    from conftest import fake_power_result
    sim = fake_power_result(power=0.8, ci=(0.75, 0.85), n_sims=200, effect=0.1, n_rejected=160,
                            rejection_rate=0.8, type_m=1.1, type_s=0.0)
    assert "Power simulation" in sim._repr_html_() and "&lt;" not in sim._repr_html_()[:30]


def test_type3_without_data_says_what_it_tests() -> None:
    d = pd.read_csv(DATA / "crossed4.csv")
    d = d[d["system"].isin(["A", "B", "C"])].assign(
        half=lambda x: np.where(x["item"].str[1:].astype(int) % 2 == 0, "even", "odd"))
    fit = nlpower.lmer("rating ~ system * half + (1 | worker) + (1 | item)", d)
    table = anova(fit)
    assert any("pass data=" in n for n in table.notes)
    with pytest.raises(InputError, match="data must be the DataFrame"):
        anova(fit, data=[1, 2])
