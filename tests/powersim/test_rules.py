"""The test-rule registry (nlpower.powersim.rules)."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower._choices import RatingsTest, allowed
from nlpower.errors import InputError
from nlpower.lmm.family import get_family
from nlpower.powersim.rules import TESTS, get_test


def test_registry_is_the_list_of_tests():
    assert tuple(TESTS) == allowed(RatingsTest)
    with pytest.raises(InputError, match="test must be one of .* Did you mean 'lrt'"):
        get_test("lrtt")


@pytest.mark.parametrize("name", ["z", "lrt", "pblrt"])
def test_family_neutral_rules_accept_every_family(name):
    for fam in ("gaussian", "binomial", "ordinal"):
        get_test(name).check_family(get_family(fam))


@pytest.mark.parametrize("name", ["satterthwaite", "kenward-roger"])
def test_df_rules_are_gaussian_only(name):
    get_test(name).check_family("gaussian")
    with pytest.raises(InputError, match=f"test='{name}' is defined for the gaussian family only"
                                         ".*got the binomial family. Use one of 'z', 'lrt', 'pblrt'"):
        get_test(name).check_family(get_family("binomial"))


def test_rules_say_their_fit_and_reference():
    assert [r.needs_null for r in TESTS.values()] == [False, False, False, True, True, False]
    assert get_test("kenward-roger").resolve_REML(None) is True
    assert get_test("lrt").resolve_REML(None) is False
    with pytest.raises(InputError, match="REML likelihoods"):
        get_test("pblrt").resolve_REML(True)
    with pytest.raises(InputError, match="defined at a REML fit"):
        get_test("kenward-roger").resolve_REML(False)
    assert get_test("pblrt").approximate() is get_test("lrt")


def test_power_is_vectorised_and_gives_the_size_at_zero():
    rule = get_test("satterthwaite")
    se, df = np.array([0.05, 0.1]), np.array([5.0, np.inf])
    got = rule.power(0.1, se, df, alpha=0.05, alternative="two-sided")
    assert got.shape == (2,) and got[0] > got[1]
    assert rule.power(0.0, 0.1, 8.0, alpha=0.05, alternative="two-sided") == pytest.approx(0.05)
    assert rule.power(-0.1, 0.1, 8.0, alpha=0.05, alternative="greater") == 0.0


def test_power_layer_does_not_import_the_ratings_package():
    import subprocess
    import sys

    code = ("import sys, nlpower.powersim, nlpower.powersim.grid, nlpower.powersim.planning; "
            "print([m for m in sys.modules if m.startswith('nlpower.ratings')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
