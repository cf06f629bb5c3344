"""One result type for every simulated power: kinds, the study's fields, records, the old names."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nlpower import CrossedDesign, PowerResult, presets
from nlpower import power as ratings_power
from nlpower.errors import InputError
from nlpower.powerresult import CallbackStudy, ModelStudy, PreferenceStudy, RatingsStudy
from nlpower.preference import PreferencePowerResult
from nlpower.preference import power as preference_power
from nlpower.simpower import SimulatedPowerResult, simulate_power
from nlpower.study import ModelPowerResult

WRITTEN = json.loads((Path(__file__).parents[1] / "records" / "written_records.json").read_text())


def _generate(rng, n):
    return rng.normal(0.3, 1.0, n)


def _test(y):
    return y.mean(), (0.01 if y.mean() > 0.35 else 0.5)


@pytest.fixture(scope="module")
def results():
    return {
        "ratings": ratings_power(CrossedDesign(4, 20), presets.high_variance(0.1), n_sims=40,
                                 rng=2),
        "model": PowerResult.from_record(WRITTEN["model"]),
        "preference": preference_power(100, 0.65),
        "callback": simulate_power(_generate, _test, effect=0.3, params={"n": 20}, n_sims=40,
                                   rng=5),
    }


def test_the_former_names_are_the_one_class():
    assert ModelPowerResult is PowerResult
    assert PreferencePowerResult is PowerResult
    assert SimulatedPowerResult is PowerResult


@pytest.mark.parametrize("kind,study", [("ratings", RatingsStudy), ("model", ModelStudy),
                                        ("preference", PreferenceStudy),
                                        ("callback", CallbackStudy)])
def test_every_entry_point_returns_the_one_type(results, kind, study):
    r = results[kind]
    assert type(r) is PowerResult and r.kind == kind and isinstance(r.study, study)
    assert repr(r).startswith("PowerResult(power=")
    assert r.summary() and len(r.to_frame()) == 1
    assert r._repr_html_().startswith('<pre class="nlpower-power">')
    assert "<" not in r._repr_html_()[len('<pre class="nlpower-power">'):-len("</pre>")]
    # the core's numbers are there for every kind
    assert 0.0 <= r.rejection_rate <= 1.0 and r.alpha == 0.05 and isinstance(r.test, str)


def test_the_study_fields_read_as_the_results_own(results):
    assert results["ratings"].design == CrossedDesign(4, 20)
    assert results["ratings"].coding == results["ratings"].study.coding
    assert results["model"].hypothesis == WRITTEN["model"]["hypothesis"]
    assert results["preference"].p_win == 0.65 and results["preference"].ties == "exclude"
    assert results["callback"].params == {"n": 20}
    assert results["callback"].study.test_name.endswith("_test")


def test_a_field_of_another_kind_says_so(results):
    with pytest.raises(AttributeError, match="'preference' study has no 'design'"):
        _ = results["preference"].design
    with pytest.raises(AttributeError, match="'ratings' study has no 'p_win'"):
        _ = results["ratings"].p_win


@pytest.mark.parametrize("name,kind", [("model", "model"), ("preference_exact", "preference"),
                                       ("simulated", "callback"), ("power_simulate", "ratings")])
def test_records_written_by_the_former_types_find_their_kind(name, kind):
    r = PowerResult.from_record(WRITTEN[name])
    assert r.kind == kind
    assert PowerResult.from_record(WRITTEN[name], kind=kind) == r


def test_a_kind_that_does_not_exist_is_refused():
    with pytest.raises(InputError, match="kind='bleu' is not a kind of power study"):
        PowerResult.from_record(WRITTEN["model"], kind="bleu")


def test_callback_results_keep_their_intervals_through_a_record(results):
    r = results["callback"]
    back = PowerResult.from_record(json.loads(json.dumps(r.to_record())))
    assert back == r and back.mc is None          # (its record has no Type-S counts)
    assert back.type_m_ci == r.type_m_ci and back.type_s_ci == r.type_s_ci
    assert back.rejection_ci == r.rejection_ci and back.n_significant == r.n_significant


def test_methods_for_every_kind(results):
    text = results["preference"].methods()
    assert "100 people" in text and f"{results['preference'].power:.3f}" in text
    assert "a t test" in results["callback"].methods(test="a t test")
    assert results["ratings"].methods().startswith("We estimated")
    with pytest.raises(InputError, match="model= and test= describe"):
        results["ratings"].methods(test="a t test")


def test_plot_needs_the_kept_replicates(results):
    pytest.importorskip("matplotlib").use("Agg")
    with pytest.raises(InputError, match="keep_replicates=True"):
        PowerResult.from_record(results["ratings"].to_record()).plot()
    fig = results["ratings"].plot()           # Card et al.'s Fig. 1 for any kind with replicates
    assert len(fig.axes[0].patches) > 0
    back = PowerResult.from_record(results["callback"].to_record())
    with pytest.raises(InputError, match="keep_draws=True"):
        back.plot()
    r = results["callback"]
    assert r.estimates is not None and r.estimates.shape == (40,) and r.elapsed is not None


def test_with_study_returns_a_new_result(results):
    r = results["model"]
    new = r.with_study(parameters={"fixef": {"x": 1.0}})
    assert new.parameters == {"fixef": {"x": 1.0}} and r.parameters == {}
    assert new == r                      # parameters are not compared (not in records)


def test_exact_results_have_zero_width_intervals(results):
    r = results["preference"]
    assert r.exact and r.n_sims == 0 and r.n_rejected is None
    assert r.rejection_ci.low == r.rejection_ci.high == r.rejection_rate
    assert math.isnan(r.type_s_ci.low)


def test_a_result_equals_its_copy_sent_to_another_process(results):
    import pickle

    for r in results.values():                 # NaN fields (mean_estimate, power at 0) too
        assert pickle.loads(pickle.dumps(r)) == r
    assert results["preference"] != results["callback"]
