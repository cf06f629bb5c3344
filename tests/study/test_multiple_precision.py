"""Adaptive precision with pairwise comparisons: the run stops when every reported rate is precise.

Reference intervals come from scipy (``binomtest(...).proportion_ci``, Wilson),
not from the package's own Wilson function.  The first comparison is chosen
to be precise early (power near alpha) and another to need more replicates,
so a rule that watched the first comparison only would stop too soon.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import nlpower
from nlpower.grid import batchfile
from nlpower.powersim.batches import BATCH_SIZE, replicate_jobs, run_batches
from nlpower.powersim.result import Replicates
from nlpower.study.multiple import Comparisons, ComparisonsPrecision

TARGET = 0.05


def half_width(k: int, n: int) -> float:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return (ci.high - ci.low) / 2


def rates(res) -> list[int]:
    """The counts behind every rate the result reports with an interval."""
    per = [mc.n_rejected if t != 0 else mc.n_significant
           for mc, t in zip(res.per_comparison, res.true_differences, strict=True)]
    best = [res.n_best] if res.n_best >= 0 else []
    return [*per, res.n_any, res.n_all, res.n_fwe, *best]


@pytest.fixture(scope="module")
def fit():
    rng = np.random.default_rng(3)
    rows = [(w, i, s) for w in range(6) for i in range(10) for s in "ABC"]
    d = pd.DataFrame(rows, columns=["worker", "item", "system"])
    d["rating"] = (rng.normal(size=len(d)) + d.system.map({"A": 0.0, "B": 0.0, "C": 0.5})
                   + 0.3 * rng.normal(size=6)[d.worker] + 0.3 * rng.normal(size=10)[d.item])
    fit = nlpower.lmer("rating ~ system + (1 | worker) + (1 | item)", d, REML=False)
    return fit.with_params(fixef={"systemB": 0.02, "systemC": 0.45})


def test_pairwise_run_stops_when_every_rate_is_precise(fit):
    kw = dict(pairwise="system", test="z", rng=1)
    res = nlpower.power(fit, n_sims=3000, precision=TARGET, **kw)
    n = res.n_sims
    assert res.stopped_early and n % 200 == 0 and "stopped after" in res.summary()
    # the same replicates without the rule (children of one root seed)
    same = nlpower.power(fit, n_sims=n, **kw)
    assert rates(same) == rates(res)
    assert all(half_width(k, n) <= TARGET for k in rates(res))
    before = nlpower.power(fit, n_sims=n - 200, **kw)
    assert any(half_width(k, n - 200) > TARGET for k in rates(before))
    # the first comparison alone (power near alpha) was precise a boundary earlier
    assert half_width(rates(before)[0], n - 200) <= TARGET


LEVELS = Comparisons("s", ("A", "B", "C"), ("B - A", "C - A", "C - B"),
                     ((1, 0), (2, 0), (2, 1)), np.eye(3), np.array([0.0, 0.05, 0.3]), None)


def comparison_batch(lo: int, hi: int) -> Replicates:
    """Replicates ``lo:hi``: B - A rejected w.p. 0.06, C - A w.p. 0.5, C - B w.p. 0.3."""
    g = [np.random.default_rng([11, i]) for i in range(lo, hi)]
    u = np.array([r.random(3) for r in g]).reshape(hi - lo, 3)
    p = np.where(u < [0.06, 0.5, 0.3], 0.001, 0.9)
    z = np.arange(lo, hi, dtype=float)
    no = np.zeros(hi - lo, dtype=bool)
    extra = {f"estimate.{c}": np.ones(hi - lo) for c in range(3)}
    extra.update({f"pvalue.{c}": p[:, c] for c in range(3)})
    extra.update({f"mean.{j}": np.full(hi - lo, float(j)) for j in range(3)})
    return Replicates(z, z, z, z, p[:, 0], ~no, no, no, extra=extra)


def test_rule_is_the_same_for_two_processes_and_after_a_resume(tmp_path):
    rule = ComparisonsPrecision(TARGET, 0.05, comparisons=LEVELS, adjust="none")
    one = run_batches(3000, comparison_batch, run="m", stop=rule)
    n = one.pvalue.shape[0]
    assert n % BATCH_SIZE == 0 and 0 < n < 3000
    share = float(np.mean(one.extra["pvalue.1"] <= 0.05))     # C - A: the slowest rate
    assert half_width(int(round(share * n)), n) <= TARGET
    assert half_width(int(np.sum(one.extra["pvalue.1"][:n - BATCH_SIZE] <= 0.05)),
                      n - BATCH_SIZE) > TARGET
    with replicate_jobs(2):
        two = run_batches(3000, comparison_batch, run="m", stop=rule)
    assert np.array_equal(one.estimate, two.estimate)
    path = tmp_path / "run.ckpt"
    calls: list[int] = []

    def killed(lo, hi):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(lo)
        return comparison_batch(lo, hi)

    with pytest.raises(KeyboardInterrupt):
        run_batches(3000, killed, run="m", checkpoint=batchfile.BatchFile(path, {"x": 1}),
                    stop=rule)
    resumed = run_batches(3000, comparison_batch, run="m",
                          checkpoint=batchfile.BatchFile(path, {"x": 1}), stop=rule)
    assert np.array_equal(resumed.estimate, one.estimate)
