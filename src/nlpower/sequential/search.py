"""``cheapest_design``: the crossed sequential design with the smallest simulated expected cost.

The candidates are every combination of a number of looks, an alpha-spending
function and a maximum design (``CrossedDesign(n_workers, n_items)``); one
look is the fixed design.  Each maximum design is one grid cell per effect:
its replicates are drawn once at the full design and analysed at every item
count any candidate looks at (the union of their looks), so all numbers of
looks and spending functions are judged on the same replicates (common
random numbers).  A candidate is feasible at a maximum design when its
simulated power reaches the target; its cost there is the expected number of
ratings bought (under the alternative, or a mix with the null).  The
cheapest feasible (candidate, maximum design) is then simulated again on
fresh replicates, under the null and the alternative, so the Type I error,
power and expected cost reported for the choice are not the ones it was
chosen on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._choices import Backend
from .._rng import RNGLike, root_seed
from .._validation import check_int, check_probability, check_real
from ..design import CrossedDesign
from ..errors import InputError
from ..grid import RunOptions, run_grid
from ..grid.axes import axis_values
from .calibrate import calibrated_alpha, rebuild
from .design import GroupSequentialDesign, group_sequential
from .outcomes import LookStatistics, check_outcome, outcome_of
from .search_result import DesignSearchResult, candidate_label
from .simulate import _operating, look_items, statistics_at, with_effect

__all__ = ["SearchCell", "SearchProblem", "candidate_designs", "cheapest_design"]

CANDIDATE_KEYS = ("power", "rejection_rate", "expected_items", "expected_ratings", "max_ratings",
                  "n_failed")


def candidate_designs(looks: Sequence[int], spending: Sequence[Any], *, alpha: float, power: float,
                      futility: Any = None, weight_null: float = 0.0,
                      shortlist: int | None = None) -> list[GroupSequentialDesign]:
    """The boundaries to search: the fixed design first, then each (looks, spending).

    ``spending`` entries are a name or ``("hsd", gamma)``.  With ``shortlist``,
    only the ``shortlist`` sequential designs cheapest on the i.i.d. scale
    (:func:`~nlpower.sequential.compare_designs`) are kept.
    """
    out = [group_sequential(1, alpha=alpha, beta=1 - power)]
    seen = set()
    for k in looks:
        k = check_int("looks", k, min=1, max=20)
        for sp in spending:
            name, gamma = (sp, -4.0) if isinstance(sp, str) else (sp[0], float(sp[1]))
            if k == 1 or (k, name, gamma if name == "hsd" else None) in seen:
                continue
            seen.add((k, name, gamma if name == "hsd" else None))
            out.append(group_sequential(k, alpha=alpha, beta=1 - power, spending=name,  # type: ignore[arg-type]
                                        gamma=gamma,
                                        futility=futility))
    if shortlist is not None and len(out) > 1:
        shortlist = check_int("shortlist", shortlist, min=1)
        w = weight_null
        cost = [(1 - w) * d.expected_cost(1.0) + w * d.expected_cost(0.0) for d in out[1:]]
        keep = sorted(np.argsort(cost, kind="stable")[:shortlist].tolist())
        out = [out[0], *(out[1 + j] for j in keep)]
    return out


@dataclass(frozen=True)
class SearchCell:
    """One maximum design at one effect: every candidate's operating characteristics."""

    effect: float
    n_sims: int
    candidates: tuple[Mapping[str, Any], ...]   # one dict per candidate (CANDIDATE_KEYS), None if infeasible

    def to_record(self) -> dict[str, Any]:
        fixed = self.candidates[0]
        nan = math.nan
        return {"power": fixed["power"] if fixed else nan, "ci_low": nan, "ci_high": nan,
                "se": nan, "type_m": nan, "type_s": nan, "n_sims": self.n_sims,
                "effect": self.effect, "candidates": [dict(c) if c else None for c in self.candidates]}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SearchCell:
        return cls(float(record["effect"]), int(record["n_sims"]),
                   tuple(record["candidates"]))


@dataclass(frozen=True)
class SearchProblem:
    """Maximum designs as grid cells (axes ``n_workers``, ``n_items``, ``effect``)."""

    params: Any
    candidates: tuple[GroupSequentialDesign, ...]
    analysis: str
    n_sims: int
    #: null replicates per maximum design for calibrated boundaries (0: the spending functions' own)
    calibrate: int = 0

    name = "sequential-search"
    result_columns = ("power", "n_sims")

    def fingerprint(self) -> dict[str, Any]:
        out = {"params": repr(self.params), "analysis": self.analysis, "n_sims": self.n_sims,
               "candidates": [repr(c) for c in self.candidates]}
        return {**out, "calibrate": self.calibrate} if self.calibrate else out

    def _calibrated(self, design: CrossedDesign, formula: str, union: np.ndarray,
                    rng: np.random.SeedSequence) -> Any:
        """Null statistics at every look of ``union`` from a seed of their own (or None)."""
        if not self.calibrate:
            return None
        seed = np.random.SeedSequence(rng.entropy, spawn_key=(*rng.spawn_key, 0xCA1))
        return statistics_at(design, with_effect(self.params, 0.0), formula, self.analysis, union,
                             self.calibrate, seed).z

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> SearchCell:
        from ..powersim.models import design_formula

        design = CrossedDesign(int(key["n_workers"]), int(key["n_items"]))
        params = with_effect(self.params, float(key["effect"]))
        looks = [look_items(design.n_items, c.information_rates) for c in self.candidates]
        ok = [len(set(m.tolist())) == m.size for m in looks]
        union = np.array(sorted({int(v) for m, good in zip(looks, ok, strict=True) if good for v in m}))
        formula = design_formula(design, params if outcome_of(params) == "gaussian" else None)
        stats = statistics_at(design, params, formula, self.analysis, union, self.n_sims, rng)
        null = self._calibrated(design, formula, union, rng)
        where = {int(m): j for j, m in enumerate(union)}
        out: list[Mapping[str, Any] | None] = []
        for c, m, good in zip(self.candidates, looks, ok, strict=True):
            if not good:
                out.append(None)
                continue
            idx = [where[int(v)] for v in m]
            sub = LookStatistics(stats.estimate[:, idx], stats.z[:, idx], stats.truth,
                                 stats.ratings[idx])
            alpha = calibrated_alpha(null[:, idx], c)[0] if null is not None else c.alpha
            r = _operating(sub, c if null is None else rebuild(c, alpha), m, design.n_items)
            out.append({"power": r.mc.power, "rejection_rate": r.mc.rejection_rate,
                        "expected_items": r.expected_items, "expected_ratings": r.expected_ratings,
                        "max_ratings": r.max_ratings, "n_failed": r.n_failed, "alpha": alpha})
        return SearchCell(float(key["effect"]), self.n_sims, tuple(out))  # type: ignore[arg-type]

    def from_record(self, record: Mapping[str, Any]) -> SearchCell:
        return SearchCell.from_record(record)


def cheapest_design(
    params: Any,
    *,
    effect: float,
    workers: Any,
    items: Any,
    power: float = 0.8,
    alpha: float = 0.025,
    looks: Sequence[int] = (2, 3, 4),
    spending: Sequence[Any] = ("obf", "pocock", ("hsd", -2.0)),
    futility: Any = None,
    weight_null: float = 0.0,
    shortlist: int | None = None,
    analysis: str | None = None,
    calibrate: int | None = None,
    n_sims: int = 500,
    confirm_sims: int | None = None,
    rng: RNGLike = None,
    n_jobs: int = 1,
    backend: Backend = "loky",
    progress: bool = True,
) -> DesignSearchResult:
    """The crossed group-sequential design with the smallest simulated expected cost at a power.

    Every candidate (the fixed design, each ``looks`` x ``spending``) is simulated on the same
    replicates of every maximum design; the cheapest in expected ratings reaching ``power`` is
    confirmed on fresh replicates beside the cheapest fixed design.  The rule in full:
    ``docs/sequential.md``, "The cheapest crossed design".

    Parameters
    ----------
    params : LMMParams, LikertParams or HeadToHeadParams
        The outcome and its parameters, as for :func:`sequential_power`.
    effect : float
        The effect to power for (> 0; latent scale for Likert, logit for head-to-head).
    workers, items : int or list of int
        Workers and items of the maximum designs searched (every worker rates every item).
    power : float, default 0.8
        Target power.
    alpha : float, default 0.025
        One-sided Type I error.
    looks : sequence of int, default (2, 3, 4)
        Numbers of looks (besides the fixed design) to combine with ``spending``.
    spending : sequence, default ("obf", "pocock", ("hsd", -2.0))
        Alpha-spending functions: a name, or ``("hsd", gamma)``.
    futility : None, or a beta-spending name
        Non-binding futility boundaries of every sequential candidate.
    weight_null : float, default 0.0
        Weight of the expected cost under the null in the cost.
    shortlist : int, optional
        Keep only the ``shortlist`` sequential candidates cheapest on the
        i.i.d. information scale (:func:`compare_designs`) before simulating.
    analysis : str, optional
        The analysis of Likert ratings (``"lmm"`` or ``"clmm"``), as for :func:`sequential_power`.
    calibrate : int, optional
        Null replicates per maximum design on which every candidate's boundaries are first
        calibrated to hold ``alpha`` (:func:`calibrate_boundaries`).
    n_sims : int, default 500
        Replicates per maximum design and effect in the search.
    confirm_sims : int, optional
        Fresh replicates per effect for the chosen design and the cheapest
        fixed one (default ``n_sims``).
    rng : seed, optional
    n_jobs : int, default 1
        Cells in parallel (:func:`nlpower.grid.run_grid`); results do not depend on it.
    backend : {"loky", "dask"}
    progress : bool, default True

    Returns
    -------
    DesignSearchResult

    Examples
    --------
    >>> from nlpower import presets
    >>> r = cheapest_design(presets.low_variance(0.0), effect=0.3, workers=4, items=[12, 16],
    ...                     looks=[2], spending=["obf"], n_sims=20, rng=1, progress=False)
    >>> r.to_frame().columns[:5].tolist()
    ['candidate', 'looks', 'spending', 'gamma', 'n_workers']
    """
    power, alpha, weight_null, effect = _checked_targets(power, alpha, weight_null, effect,
                                                         futility)
    n_sims = check_int("n_sims", n_sims, min=1)
    confirm_sims = n_sims if confirm_sims is None else check_int("confirm_sims", confirm_sims, min=1)
    ws = [check_int("workers", w, min=2) for w in axis_values("workers", workers)]
    ns = [check_int("items", n, min=2) for n in axis_values("items", items)]
    analysis = check_outcome(CrossedDesign(ws[0], ns[0]), params, analysis, None)
    cands = tuple(candidate_designs(looks, spending, alpha=alpha, power=power, futility=futility,
                                    weight_null=weight_null, shortlist=shortlist))
    calibrate = 0 if calibrate is None else check_int("calibrate", calibrate, min=20)
    problem = SearchProblem(params, cands, analysis, n_sims, calibrate)
    effects = [0.0, effect] if weight_null > 0 else [effect]
    root = root_seed(rng)
    grid = run_grid(problem, {"n_workers": ws, "n_items": ns, "effect": effects}, rng=root,
                    run=RunOptions(n_jobs=n_jobs, backend=backend, progress=progress),
                    desc="sequential design search")
    return DesignSearchResult.build(
        grid, cands, params=params, effect=effect, target=power, weight_null=weight_null,
        analysis=analysis, confirm=_confirmer(params, analysis, effect, confirm_sims, root,
                                              n_jobs, backend, progress))


def _checked_targets(power: Any, alpha: Any, weight_null: Any, effect: Any, futility: Any
                     ) -> tuple[float, float, float, float]:
    """:func:`cheapest_design`'s ``(power, alpha, weight_null, effect)``, checked (and
    ``futility``: a spending function's name, or None)."""
    power = check_probability("power", power)
    alpha = check_probability("alpha", alpha)
    weight_null = check_probability("weight_null", weight_null, open=False)
    effect = check_real("effect", effect)
    if not effect > 0:
        raise InputError(f"effect={effect!r}: give the (positive) effect the design is powered for.")
    if futility is not None and not isinstance(futility, str):
        raise InputError("futility must be None or a beta-spending function name (obf, pocock, hsd) "
                         f"when designs with different numbers of looks are compared; got {futility!r}.")
    return power, alpha, weight_null, effect


def _confirmer(params: Any, analysis: str, effect: float, n_sims: int, root: Any, n_jobs: int,
               backend: Backend, progress: bool) -> Any:
    """Fresh replicates of one (maximum design, boundaries) under the null and at ``effect``."""
    from .power import sequential_power

    def confirm(design: CrossedDesign, boundaries: GroupSequentialDesign) -> Any:
        label = candidate_label(boundaries)
        child = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 0x5EC, design.n_workers,
                                                                design.n_items, _label_word(label)))
        return sequential_power(design, params, boundaries, effect=[0.0, effect],
                                analysis=None if outcome_of(params) == "gaussian" else analysis,
                                n_sims=n_sims, rng=child, n_jobs=n_jobs, backend=backend,
                                progress=progress)
    return confirm


def _label_word(label: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.sha256(label.encode()).digest()[:4], "little")
