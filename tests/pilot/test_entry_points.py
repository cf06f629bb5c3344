"""Every planning entry point accepts a fitted pilot (issue 14).

``nlpower.power``, ``mde``, ``plan``, ``power_grid`` and ``nlpower power --ratings``
call :func:`nlpower.pilot.as_params` at their boundary.  Each test compares the
entry point on the fit with the same entry point on ``as_params(fit, effect=...)``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import nlpower
from nlpower import CrossedDesign
from nlpower.errors import InputError
from nlpower.pilot import as_params
from nlpower.ratings import fit_ratings, read_ratings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"



@pytest.fixture(scope="module")
def pilot_fit():
    return fit_ratings(read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5)))


def test_power_accepts_a_fit(pilot_fit):
    d = CrossedDesign(10, 100)
    got = nlpower.power(d, pilot_fit, effect=0.05, method="analytic")
    ref = nlpower.power(d, as_params(pilot_fit, effect=0.05), method="analytic")
    assert got.power == pytest.approx(ref.power, rel=1e-12)
    half = nlpower.power(d, pilot_fit, effect=0.1, coding="half", method="analytic")
    assert half.power == pytest.approx(ref.power, rel=1e-10)  # same mean difference


def test_power_on_a_fit_requires_the_effect(pilot_fit):
    with pytest.raises(InputError, match="effect is required.*smallest effect"):
        nlpower.power(CrossedDesign(10, 100), pilot_fit, method="analytic")


def test_mde_accepts_a_fit(pilot_fit):
    # the MDE needs no effect: the lead passes a placeholder effect to as_params
    d = CrossedDesign(10, 100)
    got = nlpower.mde(d, pilot_fit)
    ref = nlpower.mde(d, as_params(pilot_fit, effect=1.0))
    assert got.effect == pytest.approx(ref.effect, rel=1e-10)


def test_plan_accepts_a_fit(pilot_fit):
    got = nlpower.plan(pilot_fit, effect=0.1, cost_per_worker=20)
    ref = nlpower.plan(as_params(pilot_fit, effect=0.1), effect=0.1, cost_per_worker=20)
    assert (got.n_workers, got.n_items) == (ref.n_workers, ref.n_items)


def test_power_grid_accepts_a_fit(pilot_fit):
    kw = dict(n_workers=[3, 10], n_items=[50], effect=[0.05, 0.1], method="analytic",
              progress=False)
    got = nlpower.power_grid(pilot_fit, **kw).to_frame()
    ref = nlpower.power_grid(as_params(pilot_fit, effect=0.05), **kw).to_frame()
    assert list(got["power"]) == pytest.approx(list(ref["power"]), rel=1e-12)


def test_cli_power_accepts_a_rating_file(pilot_fit, capsys):
    from nlpower.cli import main

    code = main(["power", "--ratings", str(FIXTURES / "pilot_ratings.csv"), "--scale", "1,5",
                 "--workers", "10", "--items", "200", "--effect", "0.05", "--method", "analytic"])
    assert code == 0
    ref = nlpower.power(CrossedDesign(10, 200), as_params(pilot_fit, effect=0.05),
                        method="analytic")
    assert f"{ref.power:.3f}" in capsys.readouterr().out
