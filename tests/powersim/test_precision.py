"""Adaptive Monte Carlo precision: a run stops at a batch boundary once its interval is narrow.

The rule lives in the batch driver (``run_batches``): checked after each
fixed batch, in batch order, on the rejection rate's Wilson interval.  The
reference intervals here come from scipy (``binomtest(...).proportion_ci``),
not from the package's own Wilson function.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.errors import InputError
from nlpower.grid import batchfile
from nlpower.powersim.batches import (
    BATCH_SIZE,
    Precision,
    replicate_jobs,
    run_batches,
    stop_early,
)
from nlpower.powersim.result import Replicates
from nlpower.simpower import simulate_power

pytestmark = pytest.mark.filterwarnings("ignore:test=.* does not hold alpha")


def half_width(k: int, n: int) -> float:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return (ci.high - ci.low) / 2


def bernoulli_batch(lo: int, hi: int) -> Replicates:
    """Replicates ``lo:hi`` that reject with probability 0.3, each from its own seed."""
    p = np.array([0.0 if np.random.default_rng([7, i]).random() < 0.3 else 1.0
                  for i in range(lo, hi)])
    z = np.arange(lo, hi, dtype=float)
    no = np.zeros(hi - lo, dtype=bool)
    return Replicates(z, z, z, z, p, ~no, no, no)


def first_boundary(pvalues: np.ndarray, target: float, size: int = BATCH_SIZE) -> int:
    """Where the rule should stop, computed from scratch with scipy's interval."""
    for n in range(size, len(pvalues) + size, size):
        n = min(n, len(pvalues))
        if half_width(int(np.sum(pvalues[:n] <= 0.05)), n) <= target:
            return n
    return len(pvalues)


def test_driver_stops_at_the_first_batch_boundary_where_the_interval_is_narrow_enough():
    full = run_batches(2000, bernoulli_batch, run="b")
    used = run_batches(2000, bernoulli_batch, run="b", stop=Precision(0.04, 0.05))
    n = used.pvalue.shape[0]
    assert n == first_boundary(full.pvalue, 0.04)
    assert n % BATCH_SIZE == 0 and n < 2000
    assert half_width(int(np.sum(used.pvalue == 0)), n) <= 0.04
    assert half_width(int(np.sum(full.pvalue[:n - BATCH_SIZE] == 0)), n - BATCH_SIZE) > 0.04
    assert np.array_equal(used.estimate, full.estimate[:n])      # the first n replicates
    assert stop_early(full, Precision(0.04, 0.05)).pvalue.shape[0] == n   # same rule, after


def test_same_replicates_with_two_processes():
    rule = Precision(0.05, 0.05)
    one = run_batches(1000, bernoulli_batch, run="j", stop=rule)
    with replicate_jobs(2):
        two = run_batches(1000, bernoulli_batch, run="j", stop=rule)
    assert 0 < one.pvalue.shape[0] < 1000
    assert np.array_equal(one.estimate, two.estimate)
    assert np.array_equal(one.pvalue, two.pvalue)


def test_same_replicates_after_a_resume_from_a_checkpoint(tmp_path):
    rule = Precision(0.03, 0.05)
    plain = run_batches(3000, bernoulli_batch, run="r", stop=rule)
    path = tmp_path / "run.ckpt"
    calls: list[int] = []

    def killed(lo, hi):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(lo)
        return bernoulli_batch(lo, hi)

    with pytest.raises(KeyboardInterrupt):
        run_batches(3000, killed, run="r", checkpoint=batchfile.BatchFile(path, {"x": 1}),
                    stop=rule)
    seen: list[int] = []
    resumed = run_batches(3000, lambda lo, hi: (seen.append(lo), bernoulli_batch(lo, hi))[1],
                          run="r", checkpoint=batchfile.BatchFile(path, {"x": 1}), stop=rule)
    assert seen[0] == 4 * BATCH_SIZE                       # the 4 stored batches were read back
    assert np.array_equal(resumed.estimate, plain.estimate)
    # a finished run read back stops at the same place, computing nothing
    seen.clear()
    again = run_batches(3000, lambda lo, hi: (seen.append(lo), bernoulli_batch(lo, hi))[1],
                        run="r", checkpoint=batchfile.BatchFile(path, {"x": 1}), stop=rule)
    assert seen == [] and np.array_equal(again.estimate, plain.estimate)


def test_an_unreachable_target_uses_every_replicate_and_says_so():
    res = nlpower.power(CrossedDesign(3, 20), presets.high_variance(0.1), n_sims=120, rng=3,
                        precision=0.001)
    assert res.n_sims == 120 and not res.stopped_early
    assert res.mc.n_max == 120 and res.mc.precision == 0.001
    assert "target not met within the maximum of 120 replicates" in res.summary()


def test_power_balanced_path_stops_where_the_batched_rule_would():
    d, p = CrossedDesign(5, 40), presets.high_variance(0.12)
    full = nlpower.power(d, p, n_sims=3000, rng=11)
    res = nlpower.power(d, p, n_sims=3000, rng=11, precision=0.02)
    assert res.method == "balanced" and res.stopped_early
    n = res.n_sims
    assert n == first_boundary(full.replicates.pvalue, 0.02)
    assert np.array_equal(res.replicates.pvalue, full.replicates.pvalue[:n])
    assert res.n_rejected == int(np.sum((full.replicates.pvalue[:n] <= 0.05)
                                        & (full.replicates.estimate[:n] > 0)))
    assert "stopped after" in res.summary()
    back = type(res).from_record(res.to_record())
    assert back.stopped_early and back.mc.n_max == 3000 and back.n_sims == n


def test_power_simulate_path_with_a_checkpoint_and_a_null_run(tmp_path):
    kw = dict(n_sims=200, rng=2, method="simulate", test="z", null=True, precision=0.1)
    d, p = CrossedDesign(3, 8), presets.high_variance(0.3)
    res = nlpower.power(d, p, **kw)
    assert res.n_sims % BATCH_SIZE == 0 and res.n_sims < 200
    assert res.n_type1_sims % BATCH_SIZE == 0 and res.n_type1_sims < 200   # its own stop
    path = tmp_path / "p.ckpt"
    again = nlpower.power(d, p, **kw, checkpoint=path)
    assert again.to_record() == res.to_record()
    # the checkpoint is the run's with or without precision: a full run reuses its batches
    full = nlpower.power(d, p, **{**kw, "precision": None}, checkpoint=path)
    assert np.array_equal(full.replicates.pvalue[:res.n_sims], res.replicates.pvalue)


def test_likert_and_head_to_head_outcomes_stop_early():
    lk = nlpower.power(CrossedDesign(5, 30), presets.high_variance(0.3), outcome="likert",
                       levels=5, n_sims=1000, rng=1, precision=0.03)
    assert lk.stopped_early and lk.n_sims % BATCH_SIZE == 0
    from nlpower.outcomes import HeadToHeadParams
    hh = nlpower.power(CrossedDesign(4, 12), HeadToHeadParams.from_share(0.9, sd_worker=0.3,
                                                                       sd_item=0.3),
                       outcome="preference", n_sims=300, rng=1, precision=0.1)
    assert hh.n_sims % BATCH_SIZE == 0
    assert hh.n_sims == first_boundary(hh.replicates.pvalue, 0.1) or hh.n_sims == 300


def test_grid_cells_stop_on_their_own():
    g = nlpower.power_grid(presets.high_variance(0.1), n_workers=[3, 10], n_items=100,
                           n_sims=2000, rng=1, progress=False, precision=0.03)
    n = g.to_frame()["n_sims"].tolist()
    assert all(k % BATCH_SIZE == 0 and k < 2000 for k in n)


def test_simulate_power_with_a_bernoulli_test_stops_early():
    def generate(rng):
        return rng.random() < 0.6

    def test(reject):
        return 1.0, 0.0 if reject else 1.0

    full = simulate_power(generate, test, effect=1.0, n_sims=3000, rng=4)
    res = simulate_power(generate, test, effect=1.0, n_sims=3000, rng=4, precision=0.03)
    assert res.mc.stopped_early and res.n_sims == first_boundary(full.pvalues, 0.03)
    assert np.array_equal(res.pvalues, full.pvalues[:res.n_sims])
    assert "stopped after" in res.summary()


def test_power_model_stops_early_in_its_batches():
    import pandas as pd
    d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
    res = nlpower.power(m.with_params(fixef={"Days": 8.0}), term="Days", test="z",
                        n_sims=1000, rng=1, precision=0.05)
    assert res.n_sims < 1000 and res.n_sims % 200 == 0 and res.mc.stopped_early
    assert "stopped after" in res.summary()


@pytest.mark.parametrize("bad", [0, 0.5, -0.1, "0.01", True, float("nan")])
def test_bad_precision_is_refused_naming_it(bad):
    with pytest.raises(InputError, match="precision must be None"):
        nlpower.power(CrossedDesign(3, 20), presets.high_variance(0.1), n_sims=10, precision=bad)
    with pytest.raises(InputError, match="precision must be None"):
        simulate_power(lambda rng: 0, lambda d: (1.0, 0.5), effect=1.0, n_sims=10,
                       precision=bad)


def test_cli_precision_on_power_grid_and_study(tmp_path, capsys):
    import json

    from nlpower.cli import main
    base = ["--preset", "high-variance", "--workers", "5", "--items", "40", "--n-sims", "3000",
            "--seed", "1", "--quiet", "--precision", "0.03"]
    out = tmp_path / "p.json"
    assert main(["power", *base, "--effect", "0.12", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    lib = nlpower.power(CrossedDesign(5, 40), presets.high_variance(0.12), n_sims=3000, rng=1,
                        precision=0.03)
    assert got["n_sims"] == lib.n_sims < 3000 and got["power"] == lib.power
    grid = tmp_path / "g.csv"
    assert main(["grid", *base, "--effects", "0.12", "--out", str(grid)]) == 0
    import pandas as pd
    assert pd.read_csv(grid)["n_sims"].iloc[0] == lib.n_sims
    capsys.readouterr()
    study = ["study", "tests/reference/data/sleepstudy.csv", "--formula",
             "Reaction ~ Days + (1 | Subject)",
             "--term", "Days", "--set", "Days=8", "--test", "z", "--seed", "1",
             "--precision", "0.05"]
    assert main(study) == 0
    assert "stopped after 200 of at most 1000 replicates" in capsys.readouterr().out
    assert main(["power", *base[:-1], "0.7", "--effect", "0.1"]) == 2
    assert "--precision must be None" in capsys.readouterr().err
    assert main([*study, "--curve", "Subject=6,12"]) == 2
    assert "--curve and --plan run fixed --n-sims" in capsys.readouterr().err
