"""Nothing silently wrong (issue 23): one reproducer per cause, through the API and the CLI.

Each cause was found by a trial of 363 bad inputs; every test here failed
(a silent wrong number, a raw traceback or a foreign error type) before its fix.
"""

from __future__ import annotations

import numpy as np
import pytest

import nlpower
from nlpower import CrossedDesign, LMMParams, presets
from nlpower.cli import main
from nlpower.errors import DesignError, InputError, InputTypeError, NlpowerError

DESIGN = CrossedDesign(3, 10)


# --- item 2: huge magnitudes are refused, not turned into power 0 or NaN ------------------


@pytest.mark.parametrize("method", ["balanced", "analytic", "simulate"])
def test_huge_effect_is_refused_not_power_zero(method):
    with pytest.raises(InputError, match=r"effect = 1e\+308 is too large to compute with"):
        nlpower.power(DESIGN, presets.high_variance().with_effect(1e308), n_sims=5, rng=1,
                      method=method)


def test_effect_far_beyond_the_noise_is_refused():
    """Within float range but 4e7 residual SDs: the fits lost all precision (power 0.4)."""
    with pytest.raises(InputError, match=r"effect = 1e\+07 is 3\.85e\+07 residual SDs "
                                         r"\(sigma = 0\.26\).*within 10,000 x sigma"):
        LMMParams(effect=1e7)
    with pytest.raises(InputError, match=r"sd_worker = 1e\+06 is"):
        LMMParams(sd_worker=1e6)
    with pytest.raises(InputError, match=r"sd_item_systems\[1\] = 5000 is"):
        nlpower.MultiSystemParams(beta0=0.5, effects=(0.1,), sd_worker=0.1, sd_worker_systems=(0, 0),
                                  sd_item=0.1, sd_item_systems=(0, 5000), sigma=0.2)


def test_large_but_computable_effect_has_power_one():
    params = presets.high_variance().with_effect(2000.0)  # 7,700 residual SDs: still fine
    for method in ("balanced", "analytic", "simulate"):
        assert nlpower.power(DESIGN, params, n_sims=5, rng=1, method=method).power == 1.0


def test_simulate_and_plan_refuse_huge_values():
    with pytest.raises(InputError, match="too large to compute with"):
        nlpower.simulate(DESIGN, presets.high_variance().with_effect(-1e308), rng=1)
    with pytest.raises(InputError, match="too large to compute with"):
        nlpower.plan(presets.high_variance(), effect=1e308)


def test_cli_huge_effect_is_a_cli_error(capsys):
    code = main(["power", "--preset", "high-variance", "--workers", "3", "--items", "10",
                 "--effect", "1e308", "--n-sims", "5", "--seed", "1", "--quiet"])
    assert code == 2
    assert "too large to compute with" in capsys.readouterr().err


# --- items 5 and 7: seeds ------------------------------------------------------------------


def test_negative_seed_is_the_packages_error():
    with pytest.raises(InputError, match=r"rng must be a non-negative integer \(a seed\); got -1"):
        nlpower.simulate(DESIGN, presets.high_variance(), rng=-1)


def test_seed_of_the_wrong_type_is_the_packages_error_and_a_type_error():
    with pytest.raises(InputTypeError, match="rng must be None, an int") as info:
        nlpower.simulate(DESIGN, presets.high_variance(), rng="abc")
    assert isinstance(info.value, TypeError) and isinstance(info.value, NlpowerError)


def test_cli_negative_seed_names_the_flag(capsys):
    code = main(["power", "--preset", "high-variance", "--workers", "3", "--items", "10",
                 "--effect", "0.1", "--n-sims", "5", "--seed", "-1", "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--seed must be a non-negative integer (a seed); got -1. Pass e.g. --seed 1." in err
    assert "Traceback" not in err and "rng" not in err


def test_check_real_finite_uses_no_numpy():
    from nlpower._validation import check_real
    with pytest.raises(InputError, match="must be finite"):
        check_real("x", np.float64("nan"))


# --- item 4: an unreachable target is said in words, not with scipy's root-finder error ----


def test_mde_below_the_null_rejection_rate():
    with pytest.raises(InputError, match=r"target_power=0\.01 is reached with no effect at all "
                                         r"\(power at effect 0 is 0\.05\)"):
        nlpower.mde(DESIGN, presets.high_variance(), target_power=0.01)


def test_accuracy_mde_below_the_null_rejection_rate():
    with pytest.raises(InputError, match=r"reached with no difference at all"):
        nlpower.accuracy.mde(500, agreement=0.9, target_power=0.01)


def test_cli_accuracy_mde_unreachable_target(capsys):
    assert main(["accuracy", "mde", "--n", "500", "--agreement", "0.9", "--target-power", "0.01"]) == 2
    err = capsys.readouterr().err
    assert "reached with no difference at all" in err and "f(a) and f(b)" not in err


# --- item 5: counts, starting values, differences and sizes --------------------------------


def test_mcnemar_pvalue_refuses_nan_counts():
    with pytest.raises(InputError, match=r"b must hold counts >= 0 \(finite numbers\); got nan"):
        nlpower.accuracy.mcnemar_pvalue(float("nan"), 3)
    with pytest.raises(InputError, match=r"c must hold counts"):
        nlpower.accuracy.mcnemar_pvalue([1, 2], [3, -1])


def test_fit_ratings_start_that_is_not_numbers():
    data = nlpower.simulate(CrossedDesign(4, 10), presets.high_variance(0.1), rng=1)
    ratings = nlpower.read_ratings(data, scale="identity")
    with pytest.raises(InputError, match=r"start must be 8 finite theta values.*got \[-1, 'a'\]"):
        nlpower.fit_ratings(ratings, start=[-1, "a"])


def test_accuracy_power_of_a_huge_test_set():
    """n = 1e9 ran for minutes (thresholds for every d up to n); now only its window is used."""
    result = nlpower.accuracy.power(10**9, 0.0001, 0.9, test="chi2")
    assert result.power > 0.999


def test_compare_refuses_identical_scores():
    a = np.arange(30.0)
    with pytest.raises(InputError, match=r"A and B have the same score on every evaluation unit"):
        nlpower.paired.compare(a, a)
    with pytest.raises(InputError, match=r"every difference is 0"):
        nlpower.paired.compare(a + 1e-14, a)  # rounding noise only
    nlpower.paired.compare(a + 1 + 1e-3 * np.arange(30), a, rng=1)  # varied: fine


def test_cli_compare_of_one_file_with_itself(tmp_path, capsys):
    path = tmp_path / "a.txt"
    path.write_text("\n".join(str(v) for v in range(20)) + "\n")
    assert main(["compare", str(path), str(path)]) == 2
    err = capsys.readouterr().err
    assert "not the same file" in err and "Traceback" not in err


# --- item 13: an empty hypothesis line is valid MT output ----------------------------------


def test_bleu_estimate_scores_empty_hypotheses_as_sacrebleu(tmp_path, capsys):
    sacrebleu = pytest.importorskip("sacrebleu")
    a = ["the cat sat on the mat", "", "a dog barks loudly today", "hello world this is"] * 10
    b = ["the cat sat on a mat", "it rains", "", "hello world this is it"] * 10
    r = ["the cat sat on the mat", "it is raining", "a dog barks loudly", "hello world this is it"] * 10
    result = nlpower.bleu.estimate(a, b, r, n_resamples=99, rng=1)
    assert result.bleu_a == pytest.approx(sacrebleu.corpus_bleu(a, [r]).score)
    assert result.bleu_b == pytest.approx(sacrebleu.corpus_bleu(b, [r]).score)
    paths = []
    for name, lines in (("a", a), ("b", b), ("r", r)):
        path = tmp_path / f"{name}.txt"
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    assert main(["bleu", "estimate", paths[0], paths[1], "--refs", paths[2],
                 "--n-resamples", "99"]) == 0
    assert "BLEU A 73.05" in capsys.readouterr().out


def test_bleu_references_still_need_text():
    with pytest.raises(InputError, match=r"refs: 1 empty line\(s\) \(line 2\)"):
        nlpower.bleu.estimate(["a b c", "d e"], ["a b", "d e f"], ["a b c", ""])


# --- item 15: a canned note never contradicts a measured number ----------------------------


def test_singular_note_gives_way_to_a_measured_type1():
    from conftest import fake_power_result

    common = dict(power=0.5, ci=(0.4, 0.6), n_sims=100, n_rejected=50, n_singular=30,
                  effect=0.1, mean_difference=0.2, method="simulate")
    canned = "they lean liberal"
    assert canned in fake_power_result(**common).summary()
    import dataclasses

    from nlpower.intervals import ConfidenceInterval

    measured = dataclasses.replace(fake_power_result(**common, type1=0.031, n_type1=3,
                                                     n_type1_sims=100),
                                   type1_ci=ConfidenceInterval(0.01, 0.09))
    assert canned not in measured.summary() and "Type I error 0.031" in measured.summary()


def test_plan_extends_an_uncapped_search_past_an_edge_optimum_and_says_so():
    """No max_workers: 2-50 workers, extended (with a note) while the optimum is on the edge."""
    result = nlpower.plan(presets.high_variance(), effect=0.05)
    assert result.n_workers > 50
    assert result.n_workers < result.frontier["n_workers"].max()  # interior, not the edge
    assert any("went past 50 workers" in n for n in result.notes)
    assert "went past 50 workers" in result.summary()


def test_plan_max_workers_is_a_cap():
    """max_workers=10: no design within 10 workers reaches the target; it is not extended."""
    with pytest.raises(DesignError, match="2-10 workers.*raise max_workers"):
        nlpower.plan(presets.high_variance(), effect=0.1, max_workers=10)
    capped = nlpower.plan(presets.high_variance(), effect=0.05, max_workers=50)
    assert capped.n_workers == 50 and capped.frontier["n_workers"].max() == 50
    assert any("50 workers, the cap (max_workers=50)" in n for n in capped.notes)


def test_compare_of_constant_differences_calls_d_and_skewness_undefined():
    import warnings

    b = np.random.default_rng(2).uniform(0, 1, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no scipy cancellation warning leaks
        result = nlpower.paired.compare(b + 0.1, b, n_resamples=99, rng=1)
    text = result.summary()
    assert "skewness of A - B: undefined (the differences are constant)" in text
    assert "Cohen's d = undefined (the differences do not vary)" in text
    assert np.isnan(result.effect_sizes.cohens_d) and "e+15" not in text + result.report()
