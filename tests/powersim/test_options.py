"""Stage 1: PowerOptions, validated once; power(options=) takes them as they are."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.errors import InputError
from nlpower.powersim import PowerOptions, power, power_options
from nlpower.powersim import run as run_module

HIGH = presets.high_variance


def test_defaults_and_reml_follows_the_test():
    opts = power_options()
    assert (opts.n_sims, opts.alpha, opts.test, opts.alternative) == (1000, 0.05, "satterthwaite",
                                                                     "two-sided")
    assert (opts.method, opts.engine, opts.on_failure) == ("auto", "native", "ignore")
    assert opts.REML is True  # lmerTest's default for the Satterthwaite test
    assert power_options(test="z").REML is False and power_options(test="lrt").REML is False
    assert power_options(test="z", REML=True).REML is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.n_sims = 5  # type: ignore[misc]
    assert opts.to_dict()["method"] == "auto" and set(opts.to_dict()) == {
        f.name for f in dataclasses.fields(PowerOptions)}


def test_prebuilt_options_give_the_same_result_without_revalidating(monkeypatch):
    d, p = CrossedDesign(4, 30), HIGH(0.1)
    opts = power_options(n_sims=150, test="z", null=True)
    direct = power(d, p, n_sims=150, test="z", null=True, rng=5)

    def refuse(**kwargs):
        raise AssertionError("power(options=...) validated the options again")

    monkeypatch.setattr(run_module, "power_options", refuse)
    via = power(d, p, options=opts, rng=5)
    assert via == direct
    np.testing.assert_array_equal(via.replicates.statistic, direct.replicates.statistic)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"engine": "fast"}, r"engine='fast' is no longer .*Use method='balanced'"),
        ({"engine": "auto"}, r"Use method='auto'"),
        ({"engine": "analytic"}, r"Use method='analytic'"),
        ({"engine": "nativ"}, r"engine must be one of .*Did you mean 'native'"),
        ({"method": "fast"}, r"method must be one of"),
        ({"method": "balanced", "engine": "lme4"}, r"method='balanced' uses no mixed-model fitter"),
        ({"method": "analytic", "engine": "lme4"}, r"method='analytic' uses no mixed-model fitter"),
        ({"on_failure": "skip"}, r"on_failure must be one of"),
        ({"null": "yes"}, r"null must be True or False; got 'yes'"),
        ({"keep_replicates": 1}, r"keep_replicates must be True or False; got 1"),
    ],
)
def test_option_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        power_options(**kwargs)
    with pytest.raises(InputError, match=match):  # the same message through power()
        power(CrossedDesign(3, 10), HIGH(0.1), n_sims=5, **kwargs)


def test_options_and_keywords_are_not_mixed():
    opts = power_options(n_sims=5)
    with pytest.raises(InputError, match="either options= .* not both; got options= and n_sims, test"):
        power(CrossedDesign(3, 10), HIGH(0.1), options=opts, n_sims=6, test="z")
    with pytest.raises(InputError, match="options must be a PowerOptions from power_options"):
        power(CrossedDesign(3, 10), HIGH(0.1), options={"n_sims": 5})  # type: ignore[arg-type]
