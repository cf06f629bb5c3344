"""Bad input to glmer, clmm and the Likert / head-to-head power and planning paths (issues 19.6, 20.7, 21.7).

One parametrised case per bad input the issues list, through the API and the
CLI: each must raise an :mod:`nlpower.errors` type (the CLI: exit 2 with a
one-line ``error:`` message and no traceback) whose message names the
problem and says what to do.  Cases that fail today are ``xfail(strict=True)``
with the reason; the verifier's report gives their reproducers.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower import CrossedDesign, fit_ratings, preference, presets, read_ratings
from nlpower.cli import main
from nlpower.errors import FormulaError, InputError, NlpowerError, NlpowerWarning
from nlpower.outcomes import HeadToHeadParams, LikertParams

PILOT = Path(__file__).resolve().parents[1] / "fixtures" / "pilot_ratings.csv"

_N = 200
_gen = np.random.default_rng(20)
_W = _gen.integers(0, 10, _N)
_I = _gen.integers(0, 20, _N)
_X = _gen.normal(size=_N)
BASE = pd.DataFrame({"w": [f"w{k}" for k in _W], "i": [f"i{k}" for k in _I], "x": _X})
Y01 = (_gen.random(_N) < 0.5).astype(float)
YK = _gen.integers(1, 6, _N)          # 5-point ratings
ROW = np.arange(_N)


def _with(y: Any) -> pd.DataFrame:
    return BASE.assign(y=y)


def _raises(call: Callable[[], Any], error: type[Exception], match: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # fit warnings are not what is tested here
        with pytest.raises(error, match=match) as info:
            call()
    assert isinstance(info.value, NlpowerError)


# --- glmer (issue 19.6) ------------------------------------------------------------------------

GLMER_CASES: list[Any] = [
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(np.where(ROW % 7 == 0, 2.0, Y01)),
                                       "binomial"),
                 InputError, r"must be 0/1.*has values 2.*Recode", id="binary-has-2"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(np.where(ROW % 7 == 0, -1.0, Y01)),
                                       "binomial"),
                 InputError, r"must be 0/1.*-1.*Recode", id="binary-has-negative"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(_gen.random(_N)), "binomial"),
                 InputError, r"proportions.*no weights=.*weights=", id="proportions-without-weights"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(np.full(_N, 0.3)), "binomial",
                                       weights=np.full(_N, 4)),
                 InputError, r"not a whole number of successes", id="proportions-not-k-of-n"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)",
                                       _with(np.where(ROW % 7 == 0, -1, _gen.poisson(2, _N))),
                                       "poisson"),
                 InputError, r"Poisson response must be non-negative whole counts.*-1", id="poisson-negative"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(_gen.poisson(2, _N) + 0.5), "poisson"),
                 InputError, r"Poisson response must be non-negative whole counts.*\.5",
                 id="poisson-non-integer"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(np.zeros(_N)), "binomial"),
                 InputError, r"is 0 in every row.*Check the coding", id="all-zero"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(np.ones(_N)), "binomial"),
                 InputError, r"is 1 in every row.*Check the coding", id="all-one"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)",
                                       _with(pd.Categorical(np.array(["a", "b", "c"])[ROW % 3])),
                                       "binomial"),
                 InputError, r"factor with 3 used level.*needs exactly two", id="three-level-factor"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(Y01), "binomal"),
                 InputError, r"family must be one of.*Did you mean 'binomial'", id="family-typo"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(Y01), "binomial", link="logti"),
                 InputError, r"link must be one of.*Did you mean 'logit'", id="link-typo"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(Y01), "poisson", link="logit"),
                 InputError, r"link 'logit' is not available for the poisson family; use one of 'log'",
                 id="link-not-of-family"),
    pytest.param(lambda: nlpower.glmer("y ~ x + (1|w)", _with(Y01), "gaussian"),
                 InputError, r"binomial.*poisson.*lmer", id="gaussian-family-to-glmer"),
    pytest.param(lambda: nlpower.glmer("y ~ z + (1|w)", _with(Y01), "binomial"),
                 FormulaError, r"column 'z' is not in the data", id="unknown-column"),
    pytest.param(lambda: nlpower.glmer("y ~ x", _with(Y01), "binomial"),
                 InputError, r"no random-effects terms.*\(1 \| worker\)", id="no-random-term"),
]


@pytest.mark.parametrize("call, error, match", GLMER_CASES)
def test_glmer_bad_input(call, error, match):
    _raises(call, error, match)


def test_glmer_complete_separation_warns_with_advice():
    """lme4 warns on separation; so do we, and say what to do."""
    with pytest.warns(NlpowerWarning, match=r"separation.*not meaningful.*(Remove|pool|penalised)"):
        nlpower.glmer("y ~ x + (1|w)", _with((_X > 0).astype(float)), "binomial")


def test_glmer_family_typo_lists_only_glmer_families():
    with pytest.raises(InputError) as info:
        nlpower.glmer("y ~ x + (1|w)", _with(Y01), "binomal")
    assert "'ordinal'" not in str(info.value) and "'gaussian'" not in str(info.value)


# --- clmm (issue 20.7) -------------------------------------------------------------------------

CLMM_CASES: list[Any] = [
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(YK + 0.5)),
                 InputError, r"must hold integer scores.*Round or map", id="non-integer"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(_gen.normal(size=_N))),
                 InputError, r"must hold integer scores.*Round or map", id="continuous"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)",
                                      _with(pd.Categorical(np.array(["bad", "ok", "good"])[YK % 3]))),
                 InputError, r"unordered categorical.*ordered", id="unordered-categorical"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(np.array(["bad", "ok", "good"])[YK % 3])),
                 InputError, r"ordered pandas Categorical or integer scores", id="strings"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(YK > 2)),
                 InputError, r"dtype bool.*ordered pandas Categorical", id="bool"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(np.full(_N, 3))),
                 InputError, r"single used category.*at least two", id="single-category"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(1 + YK % 2), threshold="equidistant"),
                 InputError, r"'equidistant' needs .*at least 3 categories.*threshold='flexible'",
                 id="two-categories-equidistant"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(1 + YK % 2), threshold="symmetric"),
                 InputError, r"'symmetric' needs .*at least 3 categories.*threshold='flexible'",
                 id="two-categories-symmetric"),
    pytest.param(lambda: nlpower.clmm("y ~ z + (1|w)", _with(YK)),
                 FormulaError, r"column 'z' is not in the data", id="unknown-fixed-column"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|worker)", _with(YK)),
                 FormulaError, r"column 'worker' is not in the data", id="unknown-grouping-column"),
    pytest.param(lambda: nlpower.clmm("rating ~ x + (1|w)", _with(YK)),
                 FormulaError, r"column 'rating' is not in the data", id="unknown-response-column"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(YK), link="logti"),
                 InputError, r"Did you mean 'logit'", id="link-typo"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(YK), link="identity"),
                 InputError, r"not available for the ordinal family.*'logit', 'probit', 'cloglog'",
                 id="link-not-cumulative"),
    pytest.param(lambda: nlpower.clmm("y ~ x + (1|w)", _with(YK), threshold="flexibel"),
                 InputError, r"Did you mean 'flexible'", id="threshold-typo"),
]


@pytest.mark.parametrize("call, error, match", CLMM_CASES)
def test_clmm_bad_input(call, error, match):
    _raises(call, error, match)


# --- preference and outcome parameters (issue 21.7) --------------------------------------------

DESIGN = CrossedDesign(3, 10)

OUTCOME_CASES: list[Any] = [
    *[pytest.param(lambda p=p: preference.power(100, p), InputError,
                   r"p_win .* strictly between 0 and 1.*not a percentage", id=f"p_win={p}")
      for p in (1.2, -0.1, 0.0, 1.0, 65.0)],
    pytest.param(lambda: preference.power(100, 0.6, p_draw=0.5), InputError,
                 r"p_win \+ p_draw must be at most 1.*p_lose = -0\.1.*Lower", id="p_win+p_draw>1"),
    pytest.param(lambda: preference.power(100, 0.6, p_draw=-0.1), InputError,
                 r"p_draw .* must be in \[0, 1\).*p_draw=0", id="p_draw<0"),
    pytest.param(lambda: preference.power(100, 0.5, p_draw=1.0), InputError,
                 r"p_draw .* must be in \[0, 1\)", id="p_draw=1"),
    pytest.param(lambda: preference.power(100, float("nan")), InputError, r"p_win must be finite",
                 id="p_win-nan"),
    pytest.param(lambda: preference.power(0, 0.6), InputError, r"n must be >= 1", id="n=0"),
    pytest.param(lambda: preference.power(100, 0.6, ties="drop"), InputError,
                 r"ties must be one of 'exclude', 'split'", id="ties-unknown"),
    pytest.param(lambda: preference.sample_size(1.1), InputError, r"strictly between 0 and 1",
                 id="sample_size-p_win>1"),
    pytest.param(lambda: preference.sample_size(0.5), InputError, r"no preference.*p_win != p_lose",
                 id="sample_size-no-effect"),
    pytest.param(lambda: preference.mde(100, power=1.5), InputError, r"power", id="mde-power>1"),
    pytest.param(lambda: HeadToHeadParams(effect=0.3, p_draw=1.2), InputError,
                 r"p_draw .* must be in \[0, 1\)", id="h2h-p_draw>1"),
    pytest.param(lambda: HeadToHeadParams.from_share(1.3), InputError,
                 r"share .* strictly between 0 and 1", id="h2h-share>1"),
    pytest.param(lambda: LikertParams(thresholds=[1.0, 0.0, 2.0]), InputError,
                 r"strictly increasing.*Sort them", id="thresholds-decreasing"),
    pytest.param(lambda: LikertParams(thresholds=[0.0, 0.0, 2.0]), InputError,
                 r"strictly increasing.*merge categories", id="thresholds-tied"),
    pytest.param(lambda: LikertParams(thresholds=[]), InputError, r"K - 1 >= 1 cut points",
                 id="thresholds-empty"),
    pytest.param(lambda: LikertParams(thresholds=[0.0, float("nan")]), InputError,
                 r"thresholds must be finite", id="thresholds-nan"),
    *[pytest.param(lambda k=k: nlpower.power(DESIGN, presets.high_variance(0.1), outcome="likert",
                                             levels=k, n_sims=5, rng=1),
                   InputError, r"levels .* integer >= 2, e\.g\. 5", id=f"levels={k}")
      for k in (1, 0, 2.5)],
    pytest.param(lambda: LikertParams.from_preset(presets.high_variance(0.1), 1), InputError,
                 r"integer >= 2", id="from_preset-levels=1"),
    pytest.param(lambda: nlpower.power(DESIGN, presets.high_variance(0.1), outcome="likert",
                                       n_sims=5, rng=1),
                 InputError, r"needs levels=K", id="likert-without-levels"),
    pytest.param(lambda: nlpower.power(DESIGN, presets.high_variance(0.1), outcome="likert",
                                       levels=5, analysis="clm", n_sims=5, rng=1),
                 InputError, r"Did you mean 'clmm'", id="analysis-typo"),
    pytest.param(lambda: nlpower.power(DESIGN, presets.high_variance(0.1), outcome="likret",
                                       levels=5, n_sims=5, rng=1),
                 InputError, r"outcome must be one of", id="outcome-typo"),
    pytest.param(lambda: nlpower.power(DESIGN, presets.high_variance(0.1), outcome="preference",
                                       n_sims=5, rng=1),
                 InputError, r"needs HeadToHeadParams.*preference\.power", id="preference-with-LMMParams"),
    pytest.param(lambda: nlpower.power(DESIGN, HeadToHeadParams(effect=0.3), outcome="preference",
                                       analysis="clmm", n_sims=5, rng=1),
                 InputError, r"must be one of 'glmer'", id="preference-analysis-clmm"),
]


@pytest.mark.parametrize("call, error, match", OUTCOME_CASES)
def test_outcome_bad_input(call, error, match):
    _raises(call, error, match)


def test_likert_params_without_outcome_points_to_outcome_likert():
    _raises(lambda: nlpower.power(DESIGN, LikertParams(thresholds=[-1.0, 0.0, 1.0]), n_sims=5,
                                  rng=1), InputError, r"outcome='likert'")
    _raises(lambda: nlpower.power(DESIGN, HeadToHeadParams(effect=0.3), n_sims=5, rng=1),
            InputError, r"outcome='preference'")


# --- pilots of the wrong family to plan / assurance (issue 21.5) -------------------------------


@pytest.fixture(scope="module")
def pilots() -> dict[str, Any]:
    r = read_ratings(PILOT, scale=(1, 5))
    df = pd.read_csv(PILOT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "gaussian": fit_ratings(r),
            "ordinal": fit_ratings(r, family="ordinal"),
            "poisson": nlpower.glmer("rating ~ system + (1|worker)", df, "poisson"),
            "topbox": nlpower.glmer("top ~ system + (1|worker) + (1|item)",
                                    df.assign(top=(df.rating >= 4).astype(int)), "binomial"),
        }


D10 = CrossedDesign(10, 50)


@pytest.mark.parametrize("pilot, kwargs, match", [
    ("ordinal", {"outcome": "gaussian"}, r"cannot use this pilot.*outcome='likert'"),
    ("ordinal", {"outcome": "preference"}, r"cannot use this pilot.*outcome='likert'"),
    ("gaussian", {"outcome": "likert"}, r"cannot use this pilot.*family='ordinal'"),
    ("gaussian", {"outcome": "preference"}, r"cannot use this pilot"),
    ("ordinal", {"analysis": "glmer"}, r"not an analysis of outcome='likert'.*'clmm', 'lmm'"),
    ("gaussian", {"analysis": "clmm"}, r"not an analysis of outcome='gaussian'"),
    ("poisson", {}, r"binomial glmer fit with the logit link; got poisson"),
])
def test_assurance_with_a_pilot_of_the_wrong_family(pilots, pilot, kwargs, match):
    _raises(lambda: nlpower.assurance(pilots[pilot], D10, effect=0.1, n_boot=20, n_sims=1, rng=1,
                                      **kwargs), InputError, match)


def test_assurance_outcome_typo_is_did_you_mean(pilots):
    _raises(lambda: nlpower.assurance(pilots["ordinal"], D10, effect=0.1, outcome="likret",
                                      n_boot=20, n_sims=1, rng=1), InputError, r"Did you mean 'likert'")


def test_topbox_binary_pilot_message_says_what_binary_pilots_are(pilots):
    _raises(lambda: nlpower.assurance(pilots["topbox"], D10, effect=0.1, n_boot=20, n_sims=1, rng=1),
            InputError, r"head-to-head judgements.*top-box.*outcome='likert'")


def test_plan_with_assurance_refuses_a_poisson_pilot(pilots):
    _raises(lambda: nlpower.plan_with_assurance(pilots["poisson"], effect=0.1, n_boot=20, rng=1),
            InputError, r"binomial glmer fit with the logit link; got poisson|got GlmmFit")


def test_assurance_refuses_likert_params_as_pilot():
    _raises(lambda: nlpower.assurance(LikertParams(thresholds=[-1.0, 0.0, 1.0]), D10, effect=0.1,
                                      n_boot=20, rng=1), InputError, r"got LikertParams")


def test_plan_with_a_fit_says_what_to_do(pilots):
    _raises(lambda: nlpower.plan(pilots["ordinal"], effect=0.1), InputError,
            r"pass outcome='likert'.*plan_with_assurance")
    _raises(lambda: nlpower.plan(pilots["poisson"], effect=0.1), InputError,
            r"\(poisson\) is no model nlpower plans from.*fit_ratings")


# --- CLI ---------------------------------------------------------------------------------------


def _files(tmp: Path) -> dict[str, Path]:
    df = pd.read_csv(PILOT)
    out = {
        "nonint": df.assign(rating=df.rating + 0.5),
        "single": df.assign(rating=3),
        "strings": df.assign(rating=np.array(["bad", "ok", "good", "great", "best"])[df.rating - 1]),
        "score": df.rename(columns={"rating": "score"}),
    }
    paths = {}
    for name, frame in out.items():
        paths[name] = tmp / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    return paths


POWER = ["power", "--preset", "high-variance", "--workers", "3", "--items", "10", "--effect", "0.1",
         "--n-sims", "5", "--seed", "1", "--quiet"]
PREF = ["power", "--outcome", "preference", "--seed", "1"]

CLI_CASES: list[Any] = [
    pytest.param(["fit", "--family", "binomal", "{pilot}"], r"invalid choice: 'binomal'",
                 id="fit-family-unknown"),
    pytest.param(["fit", "--family", "ordinal", "{nonint}"], r"needs integer ratings",
                 id="fit-ordinal-non-integer"),
    pytest.param(["fit", "--family", "ordinal", "{single}"], r"every rating equals 3",
                 id="fit-ordinal-single-category"),
    pytest.param(["fit", "--family", "ordinal", "{strings}"], r"non-numeric.*--rating",
                 id="fit-ordinal-strings"),
    pytest.param(["fit", "--family", "ordinal", "{score}"], r"did you mean 'score'",
                 id="fit-ordinal-missing-column"),
    pytest.param(["fit", "--family", "ordinal", "--model", "rating ~ system + (1|judge)", "{pilot}"],
                 r"unknown column 'judge' \(did you mean 'worker'\?\)", id="fit-ordinal-formula-column"),
    pytest.param([*POWER, "--outcome", "likert", "--levels", "1"], r"--levels .* integer >= 2",
                 id="power-likert-levels-1"),
    pytest.param([*POWER, "--outcome", "likert"], r"needs --levels K", id="power-likert-no-levels"),
    pytest.param([*POWER, "--outcome", "likert", "--levels", "5", "--analysis", "glmer"],
                 r"--analysis.*'lmm', 'clmm'.*'glmer'|invalid choice: 'glmer'",
                 id="power-likert-analysis-glmer"),
    pytest.param([*POWER, "--outcome", "gaussian", "--levels", "5"], r"--levels is for --outcome likert|'gaussian' does not take levels",
                 id="power-gaussian-levels"),
    pytest.param([*PREF, "--judges", "100", "--p-win", "1.2"], r"--p-win .*strictly between 0 and 1",
                 id="power-preference-p_win>1"),
    pytest.param([*PREF, "--judges", "100", "--p-win", "65"], r"not a percentage",
                 id="power-preference-percentage"),
    pytest.param([*PREF, "--judges", "100", "--p-win", "0.6", "--p-draw", "0.5"],
                 r"p_lose = -0\.1 < 0", id="power-preference-sum>1"),
    pytest.param([*PREF, "--judges", "100", "--p-win", "0.6", "--p-draw", "-0.1"],
                 r"--p-draw .* must be in \[0, 1\)", id="power-preference-p_draw<0"),
    pytest.param([*PREF, "--judges", "100"], r"needs --p-win P|needs --judges N and --p-win P",
                 id="power-preference-no-p_win"),
    pytest.param([*PREF, "--judges", "0", "--p-win", "0.6"], r"--judges must be >= 1",
                 id="power-preference-judges-0"),
    pytest.param([*POWER, "--outcome", "gaussian", "--analysis", "clmm"], r"--analysis",
                 id="power-gaussian-analysis-clmm"),
    pytest.param([*POWER, "--outcome", "likert", "--levels", "5", "--p-win", "0.6"],
                 r"--outcome likert does not read --p-win \(for --outcome preference\): drop it",
                 id="power-likert-p_win"),
    pytest.param([*POWER, "--outcome", "preference", "--judges", "100", "--p-win", "0.6"],
                 r"one judgement per person.*drop --preset, --workers, --items, --effect",
                 id="power-preference-with-crossed-flags"),
    pytest.param(["plan", "--ratings", "{single}", "--effect", "0.1", "--seed", "1"],
                 r"every rating equals 3", id="plan-single-category"),
    pytest.param(["plan", "--ratings", "{strings}", "--effect", "0.1", "--seed", "1"],
                 r"non-numeric", id="plan-strings"),
    pytest.param(["plan", "--ratings", "{score}", "--effect", "0.1", "--seed", "1"],
                 r"did you mean 'score'", id="plan-missing-column"),
]


@pytest.mark.parametrize("argv, match", CLI_CASES)
def test_cli_bad_input(tmp_path, capsys, argv, match):
    paths = {**_files(tmp_path), "pilot": PILOT}
    argv = [a.format(**{k: str(v) for k, v in paths.items()}) if "{" in a else a for a in argv]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = main(argv)
        except SystemExit as exc:          # argparse's own errors
            code = exc.code
    err = capsys.readouterr().err
    assert code == 2, f"exit {code}; stderr: {err[-300:]}"
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert "error:" in last
    assert re.search(match, last), last


def test_messages_show_plain_numbers_not_numpy_reprs(tmp_path, capsys):
    with pytest.raises(InputError) as info:
        nlpower.clmm("y ~ x + (1|w)", _with(YK + 0.5))
    assert "np.float64" not in str(info.value)
    assert main(["fit", "--family", "ordinal", str(_files(tmp_path)["nonint"])]) == 2
    assert "np.float64" not in capsys.readouterr().err


def test_integer_ratings_with_a_gap_report_the_unused_category():
    df = pd.read_csv(PILOT)
    df.loc[df.rating == 2, "rating"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_ratings(read_ratings(df, scale=(1, 5)), family="ordinal")
    assert fit.fit.unused_categories == ("2",)
