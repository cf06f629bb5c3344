"""Paired power results and interim looks on the generic codec: the records do not change.

``paired_monitor_records.json`` holds records written by these types' former hand-written
``to_record`` methods (``make_paired_monitor_records.py``, run with the package before the
move): the same calls must write the same records (keys in order, values, NaN kept as NaN,
the seed's entropy as text) and those records must read back to the results.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from nlpower.paired.power import PairedPowerResult
from nlpower.sequential.monitor import InterimLook

HERE = Path(__file__).parent
WRITTEN = json.loads((HERE / "paired_monitor_records.json").read_text())


def _maker():
    """The script that wrote the pinned records (its functions, not its output)."""
    spec = importlib.util.spec_from_file_location("make_records_now", HERE / "make_paired_monitor_records.py")
    module = importlib.util.module_from_spec(spec)
    stdout, sys.stdout = sys.stdout, open("/dev/null", "w")      # it prints when run
    try:
        spec.loader.exec_module(module)
    finally:
        sys.stdout.close()
        sys.stdout = stdout
    return module


@pytest.fixture(scope="module")
def now():
    m = _maker()
    return {"paired": m.paired(), "look": m.looks()}


def _same(a, b):
    assert list(a) == list(b)                       # same keys, same order
    assert json.dumps(a) == json.dumps(b)           # same values (NaN, None, int, text)


@pytest.mark.parametrize("kind, name", [(k, n) for k in sorted(WRITTEN) for n in WRITTEN[k]])
def test_the_codec_writes_the_records_the_hand_written_code_wrote(now, kind, name):
    assert set(now[kind]) == set(WRITTEN[kind])
    _same(now[kind][name], WRITTEN[kind][name])


@pytest.mark.parametrize("name", sorted(WRITTEN["paired"]))
def test_a_paired_record_reads_back(name):
    rec = WRITTEN["paired"][name]
    res = PairedPowerResult.from_record(rec)
    _same(res.to_record(), rec)
    assert res.seed == (None if rec["seed_entropy"] is None else
                        {"entropy": int(rec["seed_entropy"]),
                         "spawn_key": tuple(rec["seed_spawn_key"])})
    assert res.n == rec["n"] and isinstance(res.n, int)
    if rec["n_sims"]:                                # simulated: the Monte Carlo summary too
        assert res.mc is not None and res.mc.n_rejected == rec["n_rejected"]
        assert res.mc.effect == rec["effect"]
    else:
        assert res.mc is None and math.isnan(res.type_m)
    assert PairedPowerResult.from_record(json.loads(json.dumps(rec))) == res


@pytest.mark.parametrize("name", sorted(WRITTEN["look"]))
def test_an_interim_look_reads_back(name):
    rec = WRITTEN["look"][name]
    look = InterimLook.from_record(rec)
    _same(look.to_record(), rec)
    assert look.decision == rec["decision"] and look.stop == (rec["decision"] != "continue")
