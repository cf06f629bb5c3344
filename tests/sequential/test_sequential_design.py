"""Group-sequential designs: Lan-DeMets re-spending at observed looks, display, errors."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower.errors import InputError
from nlpower.sequential import group_sequential


def test_boundaries_at_planned_fractions_are_the_design():
    d = group_sequential(4, spending="pocock", futility=[-0.5, 0.0, 0.5])
    upper, lower = d.boundaries_at(d.information_rates)
    np.testing.assert_allclose(upper, d.efficacy, atol=1e-12)
    np.testing.assert_allclose(lower, d.futility, atol=1e-12)


def test_boundaries_at_other_fractions_spend_the_same_function():
    d = group_sequential(3)
    upper, _ = d.boundaries_at([0.4, 0.9])
    # the first look of any design spends f(t_1): one-look boundary from f(0.4)
    first = group_sequential(information=[0.4, 1.0]).efficacy[0]
    assert upper[0] == pytest.approx(first, abs=1e-9)
    assert upper[1] > d.efficacy[-1]          # not the final look: alpha is left for later


def test_beta_spending_futility_at_observed_fractions_ends_at_the_efficacy_boundary():
    d = group_sequential(3, futility="obf")
    upper, lower = d.boundaries_at([0.3, 0.7, 1.0])
    assert lower[-1] == upper[-1]
    assert np.all(lower <= upper)


def test_frame_summary_repr():
    d = group_sequential(3, spending="hsd", gamma=-2, futility="hsd", futility_gamma=1)
    frame = d.to_frame()
    assert frame["look"].tolist() == [1, 2, 3]
    assert frame["reject_h0"].sum() <= 0.025 + 1e-9
    assert frame["reject_h1"].sum() == pytest.approx(0.8, abs=1e-7)
    assert "Hwang-Shih-DeCani" in d.summary()
    assert "3 looks" in repr(d)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"information": [0.5, 0.4, 1.0]}, "increasing fractions"),
    ({"information": [0.5, 0.9]}, "ending at 1"),
    ({"looks": 2, "information": [0.3, 0.6, 1.0]}, "looks=2 but information has 3"),
    ({"looks": 0}, "looks must be >= 1"),
    ({"spending": "haybittle"}, "spending"),
    ({"sided": 3}, "sided must be 1 or 2"),
    ({"futility": [0.0]}, "give 2 z values"),
    ({"futility": [5.0, 0.0]}, "below the efficacy"),
    ({"futility": "obf", "sided": 2}, "one-sided designs"),
    ({"alpha": 1.5}, "alpha"),
])
def test_errors(kwargs, message):
    with pytest.raises(InputError, match=message):
        group_sequential(**kwargs)


def test_methods_paragraph_states_the_design():
    d = group_sequential(3, futility="obf")
    text = d.methods()
    for piece in ("3 analyses", "O'Brien-Fleming type", "3.710, 2.511, 1.993", "Non-binding futility",
                  f"{d.inflation_factor:.3f} times"):
        assert piece in text
    latex = d.methods("latex")
    assert "$\\alpha$" in latex and "alpha" not in latex.replace("$\\alpha$", "")


def test_compare_designs_ranks_by_expected_cost():
    from nlpower.sequential import compare_designs

    t = compare_designs(looks=(2, 3), spending=("obf", "pocock"), weight_null=0.25)
    assert len(t) == 4 and t["cost"].is_monotonic_increasing
    row = t.iloc[0]
    d = group_sequential(int(row["looks"]), spending=row["spending"])
    assert row["cost"] == pytest.approx(0.75 * d.expected_cost(1.0) + 0.25 * d.expected_cost(0.0))
    assert row["max_size"] == pytest.approx(d.inflation_factor)
