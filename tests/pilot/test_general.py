"""Assurance of pilots off the balanced path: the parametric bootstrap through the engine."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from nlpower import CrossedDesign
from nlpower.cli import main
from nlpower.errors import InputError
from nlpower.lmm import get_engine
from nlpower.pilot import assurance, plan_with_assurance
from nlpower.pilot.draws import bootstrap_draws, variances_of
from nlpower.pilot.general import GeneralBootstrap, general_bootstrap_draws
from nlpower.ratings import fit_ratings, read_ratings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PILOT = FIXTURES / "pilot_ratings.csv"


@pytest.fixture(scope="module")
def full_fit():
    return fit_ratings(read_ratings(PILOT, scale=(1, 5)))


@pytest.fixture(scope="module")
def missing_csv(tmp_path_factory):
    lines = PILOT.read_text().splitlines()
    path = tmp_path_factory.mktemp("pilot") / "pilot_missing.csv"
    path.write_text("\n".join(lines[:101] + lines[102:]) + "\n")   # rating 101 of 640 deleted
    return path


@pytest.fixture(scope="module")
def missing_fit(missing_csv):
    return fit_ratings(read_ratings(missing_csv, scale=(1, 5)))


def test_the_fit_keeps_its_rows(full_fit):
    assert full_fit.data is not None and len(full_fit.data) == 640


def test_refit_of_the_pilot_itself_gives_its_parameters(full_fit):
    boot = GeneralBootstrap(full_fit)
    y = full_fit.data["rating"].to_numpy(dtype=float)
    got = variances_of(boot.refit_params(y))
    assert np.allclose(got, variances_of(full_fit.to_params()), rtol=1e-3, atol=1e-6)


def test_refits_without_the_flat_ridge_give_the_full_models_parameters(missing_fit):
    """The paper's model has the exact (system || g) ridges: a bootstrap refit fits the model
    without their intercept terms; the planning parameters are those of the full model's
    ML refit of the same response (they depend on the identified s0^2 J + Sigma only)."""
    boot = GeneralBootstrap(missing_fit)
    assert len(boot.ridges) == 2 and boot.model.layout.size == boot.layout.size - 2
    full = GeneralBootstrap(missing_fit)
    full.ridges, full.start, full.fit_layout = (), full.theta, full.layout
    full.model = get_engine("native").prepare(full.spec.with_response(full.mean.copy()))
    for seed in range(3):
        y = boot.simulate(np.random.default_rng(seed))
        got, want = variances_of(boot.refit_params(y)), variances_of(full.refit_params(y))
        assert np.allclose(got, want, rtol=1e-3, atol=1e-6)


def test_general_bootstrap_agrees_with_the_balanced_one(full_fit):
    """On a balanced pilot both bootstraps draw the same distribution (means within 4 SE)."""
    v = variances_of(full_fit.to_params())
    n = 40
    gen = general_bootstrap_draws(full_fit, np.random.SeedSequence(1).spawn(n))
    bal = bootstrap_draws(v, 8, 40, np.random.SeedSequence(2).spawn(4000))
    se = np.sqrt(gen.var(axis=0, ddof=1) / n + bal.var(axis=0, ddof=1) / 4000)
    assert gen.shape == (n, 5)
    assert np.all(np.abs(gen.mean(axis=0) - bal.mean(axis=0)) <= 4 * se + 1e-12)


def test_assurance_of_a_pilot_with_a_missing_rating(missing_fit):
    d = CrossedDesign(20, 100)
    a = assurance(missing_fit, d, effect=0.05, n_boot=30, rng=3)
    b = assurance(missing_fit, d, effect=0.05, n_boot=30, rng=3)
    assert a.assurance == b.assurance and a.n_boot == 30
    assert "639 ratings" in a.pilot and "general parametric bootstrap" in a.pilot
    assert 0 < a.assurance < 1 and math.isfinite(a.safeguard_power)
    assert a.safeguard_power <= a.power + 1e-12


def test_plan_from_a_k_of_w_pilot():
    from nlpower import presets, simulate

    design = CrossedDesign(6, 30, workers_per_item=3)
    df = simulate(design, presets.high_variance(0.1), rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_ratings(read_ratings(df, scale="identity"))
    res = plan_with_assurance(fit, effect=0.1, n_boot=20, rng=5, max_workers=30)
    assert res.point_assurance.n_boot == 20 and "3 systems" not in res.point_assurance.pilot


def test_cli_plan_on_a_pilot_with_a_missing_rating(missing_csv, capsys):
    code = main(["plan", "--ratings", str(missing_csv), "--scale", "1,5", "--effect", "0.1",
                 "--n-boot", "20", "--seed", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "639 ratings" in out and "safeguard" in out


def test_bad_general_inputs(full_fit):
    with pytest.raises(InputError, match="RatingsFit"):
        GeneralBootstrap("fit")  # type: ignore[arg-type]


def test_cli_plan_on_the_nested_four_system_pilot(capsys):
    nested = str(FIXTURES / "nested_4sys_ratings.csv")
    assert main(["plan", "--ratings", nested, "--scale", "1,5", "--effect", "0.1",
                 "--seed", "1"]) != 0
    err = capsys.readouterr().err
    assert "4 systems ('A', 'B', 'C', 'D')" in err and "--contrast" in err
    code = main(["plan", "--ratings", nested, "--scale", "1,5", "--effect", "0.1", "--n-boot", "20",
                 "--seed", "1", "--contrast", "C"])
    out = capsys.readouterr().out
    assert code == 0 and "4 systems" in out and "general parametric bootstrap" in out
