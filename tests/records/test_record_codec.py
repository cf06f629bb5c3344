"""The generic record codec: records written by the hand-written codecs still load, unchanged.

``written_records.json`` holds records written by the result types' former hand-written
``to_record`` methods (``make_records.py``, run once before the codec replaced them): a
checkpoint or grid file written then must read back to the same result and write the same
record again, key order included (grid frames take their column order from it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nlpower._records import RecordCodec, RecordLayout, from_record, to_record
from nlpower.accuracy.metrics import MetricPowerResult
from nlpower.accuracy.power import AccuracyPowerResult
from nlpower.bleu.power import BleuMDEResult, BleuPowerResult
from nlpower.intervals import ConfidenceInterval
from nlpower.powerresult.records import SCHEMAS
from nlpower.powersim.result import PowerResult
from nlpower.preference.power import PreferencePowerResult
from nlpower.preference.power import power as preference_power
from nlpower.simpower import SimulatedPowerResult, simulate_power
from nlpower.study.result import ModelPowerResult

WRITTEN = json.loads((Path(__file__).parent / "written_records.json").read_text())
TYPES = {"preference": PreferencePowerResult, "simulated": SimulatedPowerResult,
         "power": PowerResult, "model": ModelPowerResult, "accuracy": AccuracyPowerResult,
         "metric": MetricPowerResult, "bleu": BleuPowerResult, "bleumde": BleuMDEResult}


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_a_record_written_before_loads_and_writes_back_identically(name):
    cls = TYPES[name.split("_")[0]]
    rec = WRITTEN[name]
    res = cls.from_record(rec)
    again = res.to_record()
    if getattr(res, "kind", None) == "model" and rec["type_m_ci_low"] is not None:
        # its record has no type_m, so the Type-M interval is not rebuilt on reading (as with
        # the former hand-written codec): the one thing a round trip loses
        rec = {**rec, "type_m_ci_low": None, "type_m_ci_high": None}
    if getattr(res, "kind", None) == "model":
        # a model record now also carries the columns every grid cell holds (so a power
        # curve resumes from its checkpoint); the keys it had keep their order and values
        grid_columns = ["power", "ci_low", "ci_high", "se", "type_m", "type_s"]
        assert [k for k in again if k not in rec] == grid_columns
        assert again["power"] == res.power and again["se"] == res.se
        again = {k: again[k] for k in rec}
    assert list(again) == list(rec)                     # same keys, same order
    assert json.dumps(again) == json.dumps(rec)         # same values (NaN or None as written)
    assert cls.from_record(again) == res
    # (the one power result type has a layout per kind of study)
    layout = (SCHEMAS[res.kind] if isinstance(res, PowerResult) else cls)._record_layout
    if layout.summary and rec.get("n_significant") is not None:   # the MC summary too
        assert res.mc is not None and res.mc.n_significant == rec["n_significant"]


def test_fresh_results_round_trip():
    r = preference_power(60, 0.62, p_draw=0.2, method="simulate", n_sims=100, rng=4)
    back = PreferencePowerResult.from_record(json.loads(json.dumps(r.to_record())))
    assert back == r and back.seed == r.seed and back.notes == r.notes
    s = simulate_power(lambda rng: rng.normal(0.3, 1, 20),
                       lambda y: (y.mean(), 0.01 if y.mean() > 0.45 else 0.5), effect=0.3,
                       n_sims=40, rng=5)
    back_s = SimulatedPowerResult.from_record(json.loads(json.dumps(s.to_record())))
    assert back_s == s and back_s.estimates is None


@dataclass(frozen=True)
class _Toy(RecordCodec):
    power: float
    ci: ConfidenceInterval
    n: int
    label: str
    extra: int | None = None
    notes: tuple[str, ...] = ()
    seed: dict = field(default_factory=dict)
    draws: list = field(default_factory=list, compare=False)

    _record_layout = RecordLayout(intervals={"ci": ("lo", "hi")}, first=("n",))


def test_the_codec_follows_fields_and_type_hints():
    t = _Toy(math.nan, ConfidenceInterval(0.1, math.inf), 3, "a", None, ("x",),
             {"entropy": 7, "spawn_key": (1,)}, [1, 2])
    rec = t.to_record()
    assert rec == {"n": 3, "power": None, "lo": 0.1, "hi": math.inf, "label": "a",
                   "extra": None, "notes": ["x"], "seed_entropy": 7, "seed_spawn_key": [1]}
    assert list(rec)[0] == "n" and "draws" not in rec
    back = _Toy.from_record(rec)
    assert math.isnan(back.power) and back.ci.high == math.inf and back.notes == ("x",)
    assert back.seed == {"entropy": 7, "spawn_key": (1,)} and back.draws == []
    # a key missing from an old record takes the field's default
    del rec["notes"]
    assert _Toy.from_record(rec).notes == ()
    assert to_record(t, RecordLayout(nan="nonfinite"))["ci_high"] is None
    assert from_record(_Toy, {"power": 1, "n": "4", "label": "b"}, RecordLayout()).n == 4


@dataclass(frozen=True)
class _Seeded(RecordCodec):
    n: int
    seed: dict | None = None

    _record_layout = RecordLayout(seed="text")


def test_seed_layouts_and_an_optional_seed():
    s = _Seeded(2, {"entropy": 2**100 + 1, "spawn_key": (3, 4)})
    rec = s.to_record()
    assert rec == {"n": 2, "seed_entropy": str(2**100 + 1), "seed_spawn_key": [3, 4]}
    assert _Seeded.from_record(json.loads(json.dumps(rec))) == s
    # an optional seed that is None: None values, read back as None (not an empty dict)
    assert _Seeded(1).to_record() == {"n": 1, "seed_entropy": None, "seed_spawn_key": None}
    assert _Seeded.from_record({"n": 1, "seed_entropy": None, "seed_spawn_key": None}).seed is None
    assert _Seeded.from_record({"n": 1}).seed is None
    nested = RecordLayout(seed="nested")
    assert to_record(_Seeded(1), nested) == {"n": 1, "seed": None}
    assert from_record(_Seeded, {"n": 1, "seed": None}, nested).seed is None
    assert to_record(s, nested)["seed"] == {"entropy": 2**100 + 1, "spawn_key": [3, 4]}
    assert from_record(_Seeded, to_record(s, nested), nested) == s
    # a required seed absent is an empty dict, as before
    assert _Toy.from_record({"power": 1, "n": 1, "label": "c"}).seed == {}
