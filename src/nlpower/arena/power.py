"""Power and vote budgets of pairwise leaderboards, by simulation on the grid runner.

For K systems with given true scores, each replicate allocates the votes
over pairs (uniformly or adaptively, :mod:`.simulate`), draws outcomes (with
ties when ``tie_rate > 0``), refits the scores and records

* whether the fitted best system is the true best (top-1),
* whether the fitted top ``k`` are the true top ``k`` in order (top-k),
* whether the whole ranking is right,
* for a named pair, whether the Wald test of ``s_a - s_b`` (model SE)
  rejects at ``alpha`` with the true sign (power to detect the difference),
* the largest half-width of the scores' 95% intervals.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .._rng import RNGLike, as_generator
from .._validation import check_choice, check_int, check_probability, check_real
from ..errors import InputError
from ..grid import GridResult, RunOptions, run_grid
from ..grid.axes import axis_values
from ..intervals import wilson_ci
from ..montecarlo import MonteCarloSummary
from .result import ELO_SCALE
from .simulate import Leaderboard, simulate_leaderboard

__all__ = ["ArenaPowerResult", "ArenaProblem", "arena_power", "votes_needed"]

ALLOCATIONS = ("uniform", "adaptive")
MEASURES = ("top1", "topk", "ranking", "pair", "width")
RESULT_COLUMNS = ("p_top1", "p_top1_low", "p_top1_high", "p_topk", "p_topk_low", "p_topk_high",
                  "p_ranking", "pair_power", "pair_low", "pair_high", "max_halfwidth", "n_failed",
                  "n_sims")


def _share(k: int, n: int) -> tuple[float, float, float]:
    low, high = wilson_ci(k, n)
    return k / n, low, high


@dataclass(frozen=True)
class ArenaPowerResult:
    """Simulated accuracy of one leaderboard budget (counts out of ``n_sims``)."""

    n_sims: int
    n_top1: int
    n_topk: int
    n_ranking: int
    pair: MonteCarloSummary | None
    max_halfwidth: float
    n_failed: int
    top_k: int

    def to_record(self) -> dict[str, Any]:
        t1, tk, rk = (_share(c, self.n_sims) for c in (self.n_top1, self.n_topk, self.n_ranking))
        pair = self.pair
        nan = math.nan
        rec = {"power": t1[0], "ci_low": t1[1], "ci_high": t1[2],
               "se": math.sqrt(t1[0] * (1 - t1[0]) / self.n_sims),
               "type_m": pair.type_m if pair else nan, "type_s": pair.type_s if pair else nan,
               "p_top1": t1[0], "p_top1_low": t1[1], "p_top1_high": t1[2],
               "p_topk": tk[0], "p_topk_low": tk[1], "p_topk_high": tk[2], "p_ranking": rk[0],
               "pair_power": pair.power if pair else nan,
               "pair_low": pair.ci.low if pair else nan, "pair_high": pair.ci.high if pair else nan,
               "max_halfwidth": self.max_halfwidth, "n_failed": self.n_failed, "n_sims": self.n_sims,
               "counts": [self.n_top1, self.n_topk, self.n_ranking], "top_k": self.top_k,
               "pair_mc": None if pair is None else {**pair.to_record(), "effect": pair.effect,
                                                     "type_m": None if math.isnan(pair.type_m) else pair.type_m}}
        return rec

    @classmethod
    def from_record(cls, r: Mapping[str, Any]) -> ArenaPowerResult:
        pm = r.get("pair_mc")
        pair = None if pm is None else MonteCarloSummary.from_record(pm, effect=float(pm["effect"]))
        c = r["counts"]
        return cls(int(r["n_sims"]), int(c[0]), int(c[1]), int(c[2]), pair, float(r["max_halfwidth"]),
                   int(r["n_failed"]), int(r["top_k"]))

    def summary(self) -> str:
        rec = self.to_record()
        return (f"P(correct top-1) {rec['p_top1']:.3f} [{rec['p_top1_low']:.3f}, {rec['p_top1_high']:.3f}], "
                f"P(correct top-{self.top_k}) {rec['p_topk']:.3f}, P(correct ranking) "
                f"{rec['p_ranking']:.3f}; {self.n_sims} replicates")

    def __repr__(self) -> str:
        return f"ArenaPowerResult(p_top1={self.n_top1 / self.n_sims:.3f}, n_sims={self.n_sims})"


@dataclass(frozen=True)
class ArenaProblem:
    """A leaderboard budget as a grid problem (axes: ``votes``, ``allocation``)."""

    scores: tuple[float, ...]
    tie_rate: float = 0.0
    top_k: int = 3
    compare: tuple[int, int] | None = None
    alpha: float = 0.05
    rounds: int = 10
    n_sims: int = 500

    name = "arena"
    result_columns = RESULT_COLUMNS

    def fingerprint(self) -> dict[str, Any]:
        return {"scores": list(self.scores), "tie_rate": self.tie_rate, "top_k": self.top_k,
                "compare": None if self.compare is None else list(self.compare), "alpha": self.alpha,
                "rounds": self.rounds, "n_sims": self.n_sims}

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> ArenaPowerResult:
        gen = as_generator(rng)
        truth = np.asarray(self.scores)
        board = Leaderboard(truth, self.tie_rate)
        order = np.argsort(-truth, kind="stable")
        z_crit, z95 = stats.norm.isf(self.alpha / 2), stats.norm.isf(0.025)
        top1 = topk = ranking = failed = 0
        diffs, sig, widths = [], [], []
        for _ in range(self.n_sims):
            rep = simulate_leaderboard(board, int(key["votes"]), str(key["allocation"]), self.rounds, gen)
            if rep is None:
                failed += 1
                diffs.append(0.0)
                sig.append(False)
                continue
            fitted = np.argsort(-rep.estimate, kind="stable")
            top1 += int(fitted[0] == order[0])
            topk += int(np.array_equal(fitted[: self.top_k], order[: self.top_k]))
            ranking += int(np.array_equal(fitted, order))
            widths.append(z95 * float(np.sqrt(np.max(np.diag(rep.vcov)))))
            if self.compare is not None:
                a, b = self.compare
                d = rep.estimate[a] - rep.estimate[b]
                v = rep.vcov[a, a] + rep.vcov[b, b] - 2 * rep.vcov[a, b]
                diffs.append(d)
                sig.append(abs(d) / math.sqrt(max(v, 1e-300)) >= z_crit)
        pair = None
        if self.compare is not None:
            a, b = self.compare
            pair = MonteCarloSummary.from_draws(np.array(diffs), np.array(sig, dtype=bool),
                                                effect=float(truth[a] - truth[b]))
        return ArenaPowerResult(self.n_sims, top1, topk, ranking, pair,
                                float(np.mean(widths)) if widths else math.nan, failed, self.top_k)

    def from_record(self, record: Mapping[str, Any]) -> ArenaPowerResult:
        return ArenaPowerResult.from_record(record)


def _scores(scores: Any, scale: str) -> tuple[tuple[str, ...], np.ndarray]:
    check_choice("scale", scale, ("logit", "elo"))
    if isinstance(scores, Mapping):
        names, values = tuple(map(str, scores)), list(scores.values())
    else:
        values = list(scores) if isinstance(scores, Sequence) or hasattr(scores, "__len__") else [scores]
        names = tuple(f"s{i + 1}" for i in range(len(values)))
    try:
        s = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        s = np.array([np.nan])
    if s.ndim != 1 or s.size < 2 or not np.all(np.isfinite(s)):
        raise InputError(f"scores must give two or more finite true scores (a list, or a dict of "
                         f"system name -> score); got {scores!r}.")
    return names, (s / ELO_SCALE if scale == "elo" else s)


def _problem(scores: Any, *, scale: str, tie_rate: float, top_k: int | None, compare: Any,
             alpha: float,
             rounds: int, n_sims: int) -> tuple[ArenaProblem, tuple[str, ...]]:
    names, s = _scores(scores, scale)
    tie_rate = check_real("tie_rate", tie_rate, min=0.0, max=1.0, max_open=True)
    top_k = min(3, s.size) if top_k is None else check_int("top_k", top_k, min=1, max=s.size)
    alpha = check_probability("alpha", alpha)
    rounds = check_int("rounds", rounds, min=1)
    n_sims = check_int("n_sims", n_sims, min=1)
    pair = None
    if compare is not None:
        if (not isinstance(compare, (list, tuple)) or len(compare) != 2
                or any(c not in names for c in compare) or compare[0] == compare[1]):
            raise InputError(f"compare must name two different systems among {list(names)}; got {compare!r}.")
        pair = (names.index(compare[0]), names.index(compare[1]))
    return ArenaProblem(tuple(s.tolist()), tie_rate, top_k, pair, alpha, rounds, n_sims), names


def arena_power(
    scores: Any,
    votes: Any,
    *,
    allocation: Any = "uniform",
    tie_rate: float = 0.0,
    top_k: int | None = None,
    compare: Sequence[str] | None = None,
    scale: str = "logit",
    alpha: float = 0.05,
    rounds: int = 10,
    n_sims: int = 500,
    rng: RNGLike = None,
    n_jobs: int = 1,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> GridResult:
    """Probability of a correct leaderboard, and power for one pair, against the number of votes.

    Parameters
    ----------
    scores : list or dict
        True scores of the K systems (dict: name -> score; list: named s1..sK).
    votes : int or list
        Total votes (a grid axis).
    allocation : {"uniform", "adaptive"} or list
        How votes are spread over pairs (a grid axis; see :mod:`nlpower.arena.simulate`).
    tie_rate : float
        Share of ties between equal systems (0: no ties, Bradley-Terry; else Davidson).
    top_k : int, optional
        ``p_topk`` is the probability that the top ``top_k`` come out in the right order
        (default 3, or K when there are fewer systems).
    compare : (str, str), optional
        Two systems whose score difference is tested (``pair_power``).
    scale : {"logit", "elo"}
        Units of ``scores`` (Elo: 400 / ln 10 per logit).
    alpha : float
        Two-sided level of the pair test.
    rounds : int
        Batches of the adaptive allocation.
    n_sims, rng, n_jobs, checkpoint, progress
        Replicates per cell and the grid runner's options.

    Returns
    -------
    GridResult
        One row per ``votes`` x ``allocation``: ``p_top1`` (also ``power``),
        ``p_topk``, ``p_ranking`` with Wilson intervals, ``pair_power``, ``max_halfwidth``.

    Examples
    --------
    >>> g = arena_power([0.0, 0.3, 0.6], [200, 800], n_sims=20, rng=1, progress=False)
    >>> g.to_frame()["votes"].tolist()
    [200, 800]
    """
    problem, _ = _problem(scores, scale=scale, tie_rate=tie_rate, top_k=top_k, compare=compare,
                          alpha=alpha, rounds=rounds, n_sims=n_sims)
    for v in axis_values("votes", votes):
        check_int("votes", v, min=1)
    for a in axis_values("allocation", allocation):
        check_choice("allocation", a, ALLOCATIONS)
    run = RunOptions(n_jobs=n_jobs, checkpoint=checkpoint, progress=progress)
    return run_grid(problem, {"votes": votes, "allocation": allocation}, rng=rng, run=run,
                    desc="arena power")


def votes_needed(result: GridResult, target: float = 0.8, measure: str = "top1") -> dict[str, float]:
    """Smallest number of votes whose simulated probability reaches ``target``, per allocation.

    Linear interpolation between the grid's vote totals that bracket the
    target (NaN when no total reaches it: extend the grid).  ``measure``:
    ``"top1"``, ``"topk"``, ``"ranking"``, ``"pair"``, or ``"width"``: the
    largest 95% half-width of the scores at most ``target`` (logit units).
    """
    check_choice("measure", measure, MEASURES)
    if measure == "width":
        target = check_real("target", target, min=0.0, min_open=True)
    else:
        target = check_probability("target", target)
    column = {"top1": "p_top1", "topk": "p_topk", "ranking": "p_ranking", "pair": "pair_power",
              "width": "max_halfwidth"}[measure]
    sign = -1.0 if measure == "width" else 1.0          # widths fall as votes grow
    target *= sign
    frame = result.to_frame()
    out: dict[str, float] = {}
    for alloc, part in frame.groupby("allocation", sort=False):
        part = part.sort_values("votes")
        v, p = part["votes"].to_numpy(float), sign * part[column].to_numpy(float)
        hit = np.flatnonzero(p >= target)
        if hit.size == 0:
            out[str(alloc)] = math.nan
        elif hit[0] == 0:
            out[str(alloc)] = float(v[0])
        else:
            i = hit[0]
            out[str(alloc)] = float(v[i - 1] + (target - p[i - 1]) * (v[i] - v[i - 1]) / (p[i] - p[i - 1]))
    return out
