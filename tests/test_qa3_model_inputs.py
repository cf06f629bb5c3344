"""Bad and real-shaped inputs to the fitted-model power and the fit verbs.

Each test is something a user could pass: a ``compare=`` that removes
nothing, a grouping factor as ``term=``, a direction for a likelihood ratio
of several df, text as a response, ``simulate(-1)``, a design extended past
memory.  Before, these ended in a misleading ``FitError`` after every
replicate had been fitted, a raw numpy/pandas traceback, a silently ignored
option, or the operating system killing the process.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower.errors import InputError

SLEEP = "tests/reference/data/sleepstudy.csv"


@pytest.fixture(scope="module")
def crossed_fit():
    gen = np.random.default_rng(0)
    w, i = np.meshgrid(np.arange(6), np.arange(10), indexing="ij")
    rows = pd.DataFrame({"worker": np.repeat([f"wörker{k}" for k in w.ravel()], 2),
                         "item": np.repeat([f"ítem{k}" for k in i.ravel()], 2),
                         "system": np.tile(["base", "new"], w.size)})
    rows["score"] = (3 + 0.3 * (rows.system == "new") + gen.normal(0, 0.5, 6)[w.ravel()].repeat(2)
                     + gen.normal(0, 0.5, 10)[i.ravel()].repeat(2) + gen.normal(0, 1, len(rows)))
    fit = nlpower.lmer("score ~ system + (1|worker) + (1|item)", rows)
    return fit.with_params(fixef={"systemnew": 0.3})


@pytest.fixture(scope="module")
def sleep_fit():
    return nlpower.lmer("Reaction ~ Days + (1 | Subject)", pd.read_csv(SLEEP), REML=False)


@pytest.mark.parametrize("compare, words", [
    ("~ . - nothing", "as many parameters as"),
    ("~ .", "as many parameters as"),
    ("score ~ system + (1|worker) + (1|item) + (1|worker:item)", "more parameters than"),
])
def test_a_comparison_with_nothing_to_test_is_refused_before_fitting(crossed_fit, compare,
                                                                     words):
    # before: every replicate was fitted, then FitError "every one of the 20 replicate fits
    # failed ... Check the parameters (with_params)"
    with pytest.raises(InputError, match=words) as err:
        nlpower.power(crossed_fit, compare=compare, n_sims=20, rng=1)
    assert "compare=" in str(err.value) and "'~ . - x'" in str(err.value)


@pytest.mark.parametrize("term", ["worker", "(1|worker)", "( 1 | worker )"])
def test_a_random_effects_term_as_term_says_how_to_test_it(crossed_fit, term):
    with pytest.raises(InputError, match="names the random-effects term '\\(1 \\| worker\\)'"
                       ) as err:
        nlpower.power(crossed_fit, term=term, n_sims=10, rng=1)
    suggested = str(err.value).split("compare=")[1].split("'")[1]
    assert suggested == "score ~ 1 + system + (1 | item)"
    res = nlpower.power(crossed_fit, compare=suggested, n_sims=3, rng=1)   # the advice runs
    assert res.test == "lrt" and res.n_sims == 3


def test_a_model_comparison_refuses_a_direction(crossed_fit):
    # before: alternative='less' was silently ignored (a likelihood ratio has no sign)
    with pytest.raises(InputError, match="alternative='less'.*has no direction"):
        nlpower.power(crossed_fit, compare="~ . - system", alternative="less", n_sims=5, rng=1)


@pytest.mark.parametrize("test", ["satterthwaite", "kr", "pblrt"])
def test_a_count_model_is_pointed_to_the_tests_it_takes(test):
    d = pd.read_csv("tests/reference/data/grouseticks.csv").head(120)
    fit = nlpower.glmer("TICKS ~ YEAR + (1 | BROOD)", d, family="poisson")
    # before: satterthwaite's refusal suggested 'pblrt', itself refused for a Poisson model
    with pytest.raises(InputError, match="tested by test='z' or 'lrt'") as err:
        nlpower.power(fit, term="YEAR", test=test, n_sims=5, rng=1)
    assert "pblrt'." not in str(err.value)


@pytest.mark.parametrize("breaks", [[], "3,6", 4])
def test_power_curve_breaks_that_are_not_a_list_are_refused(sleep_fit, breaks):
    # before: [] -> IndexError; "3,6" -> "got '3'" (the string's first character)
    with pytest.raises(InputError, match="breaks must be a non-empty list"):
        nlpower.power_curve(sleep_fit.with_params(fixef={"Days": 2.0}), along="Subject",
                            breaks=breaks, term="Days", n_sims=5, rng=1)


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_simulate_refuses_a_count_that_is_not_a_positive_integer(sleep_fit, n):
    # before: -1 -> numpy "negative dimensions are not allowed"
    with pytest.raises(InputError, match="n must be a positive integer"):
        sleep_fit.simulate(n, rng=1)
    with pytest.raises(InputError, match="n must be a positive integer"):
        nlpower.extend(sleep_fit, along="Subject", n=20).simulate(n, rng=1)


def test_refit_refuses_text_in_words_for_every_family(sleep_fit):
    d = pd.read_csv("tests/reference/data/grouseticks.csv").head(120)
    pois = nlpower.glmer("TICKS ~ YEAR + (1 | BROOD)", d, family="poisson")
    for fit in (sleep_fit, pois):
        y = np.array(["n/a"] * fit.nobs)
        # before: ValueError "could not convert string to float: np.str_('n/a')"
        with pytest.raises(InputError, match="y must be numbers.*'n/a'.*pd.to_numeric"):
            fit.refit(y)
    numbers_as_objects = pd.Series(sleep_fit.simulate(1, rng=2)[0]).astype(object)
    assert np.isfinite(sleep_fit.refit(numbers_as_objects).fixef["Days"])


def test_a_constant_response_message_shows_a_plain_number(sleep_fit):
    with pytest.raises(InputError, match=r"every value is 1\.0\)"):
        sleep_fit.refit(np.ones(sleep_fit.nobs))


def test_with_params_takes_fixef_as_a_series(sleep_fit):
    # before: "fixef must be a mapping ...; got Series" -- although fit.fixef is one
    doubled = sleep_fit.with_params(fixef=sleep_fit.fixef * 2)
    assert np.allclose(doubled.fixef.to_numpy(), 2 * sleep_fit.fixef.to_numpy())
    with pytest.raises(InputError, match="no coefficient 'day'"):
        sleep_fit.with_params(fixef=pd.Series({"day": 1.0}))


def test_extend_refuses_the_response_and_designs_past_memory(sleep_fit):
    with pytest.raises(InputError, match="it is the model's response"):
        nlpower.extend(sleep_fit, along="Reaction", n=20)
    # before: the process was killed by the out-of-memory killer while building the rows
    with pytest.raises(InputError, match="nothing was allocated"):
        nlpower.extend(sleep_fit, along="Subject", n=10**11)
    with pytest.raises(InputError, match="nothing was allocated"):
        nlpower.extend(sleep_fit, within="Subject", n=10**13)


def test_the_type1_error_at_a_true_value_of_zero_holds_alpha(sleep_fit):
    n = 400
    res = nlpower.power(sleep_fit.with_params(fixef={"Days": 0.0}), term="Days", n_sims=n,
                        rng=5)
    # before: type1 None, summary "nan% (95% CI nan-nan)"
    assert math.isnan(res.power) and res.type1 == res.rejection_rate
    assert res.n_type1_sims == n and res.type1_ci.low <= res.type1 <= res.type1_ci.high
    assert abs(res.type1 - 0.05) <= 4 * math.sqrt(0.05 * 0.95 / n)
    text = res.summary()
    assert text.startswith("Type I error for Days") and "nan" not in text.splitlines()[0]
    assert repr(res).startswith(f"PowerResult(type1={res.type1:.3f} [")
    again = type(res).from_record(res.to_record())
    assert (again.type1, again.n_type1) == (res.type1, res.n_type1)
    effect = nlpower.power(sleep_fit.with_params(fixef={"Days": 2.0}), term="Days", n_sims=5,
                           rng=5)
    assert effect.type1 is None and effect.summary().startswith("Power for Days")


@pytest.fixture(scope="module")
def negbin_fit():
    d = pd.read_csv("tests/reference/data/negbin_crossed.csv")
    return nlpower.glmer("errors ~ system + (1 | worker) + (1 | item)", d,
                         family="negative_binomial")


@pytest.mark.parametrize("value", ["2", True])
def test_negbin_dispersion_refuses_text_and_booleans(negbin_fit, value):
    # before: "2" became theta 2.0 and True theta 1.0, silently
    with pytest.raises(InputError, match="dispersion must be a number"):
        negbin_fit.with_params(dispersion=value)
    with pytest.raises(InputError, match="dispersion must be a number"):
        nlpower.extend(negbin_fit, along="worker", n=4).with_params(dispersion=value)
    assert negbin_fit.with_params(dispersion=np.float32(0.5)).dispersion == 0.5


def test_clmm_thresholds_by_name():
    wine = pd.read_csv("tests/reference/data/wine.csv")
    m = nlpower.clmm("rating ~ temp + (1 | judge)", wine)
    names = list(m.alpha.index)
    # before: a mapping raised TypeError "float() argument must be ... not 'dict'"
    m2 = m.with_params(thresholds={names[0]: -3.0})
    assert m2.alpha.iloc[0] == -3.0 and np.allclose(m2.alpha.iloc[1:], m.alpha.iloc[1:])
    with pytest.raises(InputError, match="no cut point 'bottom'"):
        m.with_params(thresholds={"bottom": -3.0})
    with pytest.raises(InputError, match="increasing"):
        m.with_params(thresholds={names[0]: 10.0})
    with pytest.raises(InputError, match="thresholds must be .* increasing numbers"):
        m.with_params(thresholds=[[1, 2], [3]])


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_unwritable_grid_checkpoint_names_its_path_once():
    from nlpower import presets
    target = "/proc/grid.jsonl"                      # unwritable even for root
    with pytest.raises(nlpower.errors.CheckpointError) as err:
        nlpower.power_grid(presets.high_variance(0.2), n_workers=[3], n_items=10, n_sims=5,
                           rng=1, progress=False, checkpoint=str(target))
    assert str(err.value).count(str(target)) == 1, str(err.value)


def test_curves_and_pairwise_results_carry_their_seed_version_and_engine(sleep_fit):
    truth = sleep_fit.with_params(fixef={"Days": 0.0})
    curve = nlpower.power_curve(truth, along="Subject", breaks=[6, 18], term="Days", n_sims=20,
                                rng=4)
    # before: a PowerCurve had no seed or version, and printed "nan% (nan-nan)" at a value of 0
    assert curve.seed["entropy"] == 4 and curve.version == nlpower.__version__
    text = curve.summary()
    assert "nan" not in text and text.count("Type I error") == 2
    assert text.endswith(f"seed 4; nlpower {nlpower.__version__} (engine native)")
    d = pd.read_csv(SLEEP)
    d["block"] = np.where(d.Days < 3, "early", np.where(d.Days < 6, "mid", "late"))
    fit = nlpower.lmer("Reaction ~ block + (1 | Subject)", d)
    res = nlpower.power(fit, pairwise="block", n_sims=5, rng=6)
    assert res.seed["entropy"] == 6 and res.engine == "native"
    assert res.summary().endswith("seed 6; nlpower " + nlpower.__version__ + " (engine native)")


def test_a_replicate_fit_out_of_memory_is_reported_in_words(monkeypatch):
    # a 10^5 x 10^5 design with 3 workers per item has 6e5 ratings (they fit) but the native
    # fitter asked numpy for a 298 GiB matrix: a raw MemoryError before
    import nlpower.powersim.run as run_module
    from nlpower import CrossedDesign, presets

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 298. GiB for an array")

    monkeypatch.setattr(run_module, "run_simulate", no_memory)
    with pytest.raises(InputError, match="ran out of memory fitting a replicate.*fewer workers"):
        nlpower.power(CrossedDesign(5, 20, workers_per_item=3), presets.high_variance(0.1),
                      method="simulate", n_sims=2, rng=1)
    import nlpower.study.power as study_power
    monkeypatch.setattr(study_power, "_replicates", no_memory)
    with pytest.raises(InputError, match="on 180 rows ran out of memory.*Extend the design less"):
        nlpower.power(nlpower.lmer("Reaction ~ Days + (1 | Subject)", pd.read_csv(SLEEP)),
                      term="Days", n_sims=2, rng=1)


def test_a_data_file_given_as_checkpoint_is_left_alone_and_quoted_cleanly(sleep_fit, tmp_path):
    data = tmp_path / "pilot.csv"
    data.write_text("Reaction,Days,Subject\n249.6,0,308\n")
    before = data.read_bytes()
    with pytest.raises(nlpower.errors.CheckpointError) as err:
        nlpower.power_curve(sleep_fit.with_params(fixef={"Days": 2.0}), along="Subject",
                            breaks=[6], term="Days", n_sims=2, rng=1, checkpoint=str(data))
    # before: "its first line is 'Reaction,Days,Subject\\n'"
    assert "'Reaction,Days,Subject')" in str(err.value)
    assert data.read_bytes() == before


@pytest.mark.requires_r
def test_clmm_likelihood_ratio_with_r_drops_the_tested_coefficient():
    pytest.importorskip("rpy2")
    from nlpower.study.analysis import coef_names
    from nlpower.study.design import model_design
    wine = pd.read_csv("tests/reference/data/wine.csv")
    truth = nlpower.clmm("rating ~ temp + contact + (1 | judge)", wine).with_params(
        fixef={"tempwarm": 1.0})
    d = model_design(truth)
    y = d.simulate(1, rng=3, model=d.prepare())[0]
    lr = {}
    for engine in ("native", "lme4"):
        full = d.prepare(d.formula, engine=engine)
        null = d.prepare(d.formula, engine=engine, drop="tempwarm")
        assert coef_names(null) == ("contactyes",) and null.n_alpha == 4
        lr[engine] = (null.refit(y).deviance - full.refit(y, start=d.start(coef_names(full)))
                      .deviance)
    # before: R refitted the formula, which brought tempwarm back: LR 0 and power 0
    assert lr["native"] > 5 and lr["lme4"] == pytest.approx(lr["native"], abs=5e-3)
    # and the clmm with R had no coefficient names for the test: IndexError
    res = nlpower.power(truth, term="tempwarm", test="z", engine="lme4", n_sims=2, rng=1)
    assert res.n_failed == 0


@pytest.mark.parametrize("n_resamples, words", [
    (5, "n_resamples=5 cannot reject at alpha=0.05"), (-1, "n_resamples must be >= 1"),
    ("99", "n_resamples must be an integer")])
def test_model_pblrt_refuses_a_bootstrap_that_cannot_reject(sleep_fit, n_resamples, words):
    # before: 5 ran and reported power 0 (the smallest p-value is 1/6); -1 failed every fit
    with pytest.raises(InputError, match=words):
        nlpower.power(sleep_fit, term="Days", test="pblrt", n_resamples=n_resamples,
                      n_sims=3, rng=1)


def test_pairwise_refuses_a_numeric_covariate(sleep_fit):
    # before: the 10 values of Days were compared as 45 "levels"
    with pytest.raises(InputError, match="pairwise='Days' is a numeric covariate.*term='Days'"):
        nlpower.power(sleep_fit, pairwise="Days", n_sims=3, rng=1)


def test_power_of_a_fit_refuses_the_rating_studys_null_and_options(sleep_fit):
    from nlpower.powersim.options import power_options
    # before: both were silently ignored (no Type I error measured; the options' test unused)
    with pytest.raises(InputError, match="null=True goes with power\\(design, params\\).*type1"):
        nlpower.power(sleep_fit, term="Days", null=True, n_sims=3, rng=1)
    with pytest.raises(InputError, match="options= \\(PowerOptions\\) goes with"):
        nlpower.power(sleep_fit, term="Days", options=power_options(n_sims=3, test="z"), rng=1)


def test_an_offset_in_the_formula_points_to_glmers_offset_keyword():
    d = pd.read_csv("tests/reference/data/negbin_crossed.csv").assign(loglen=0.0)
    # before: "compute the column in the data frame first" -- a covariate, not an offset
    with pytest.raises(nlpower.errors.FormulaError, match="pass the column to glmer as "
                                                         "offset='col'"):
        nlpower.glmer("errors ~ system + offset(loglen) + (1 | worker)", d, family="poisson")
    fit = nlpower.glmer("errors ~ system + (1 | worker)", d, family="poisson", offset="loglen")
    assert np.isfinite(fit.fixef["systemB"])


def test_a_contrast_without_spaces_is_shown_with_them(crossed_fit):
    # before: "did you mean 'systemnew'?" -- a coefficient, not the contrast typed
    with pytest.raises(InputError, match="write it with spaces around \\+ and - "
                                         "\\('systemnew - \\(Intercept\\)'\\)"):
        nlpower.power(crossed_fit, term="systemnew-(Intercept)", n_sims=3, rng=1)


def test_a_grid_axis_of_text_is_refused_by_its_cell():
    from nlpower import presets
    # before: ValueError "invalid literal for int() with base 10: '3,5'"
    with pytest.raises(nlpower.errors.DesignError, match="n_workers must be an integer; got "
                                                         "'3,5'"):
        nlpower.power_grid(presets.high_variance(0.1), n_workers="3,5", n_items=10, n_sims=5,
                           rng=1, progress=False)
