"""Power over grids of designs and parameters, in parallel, with checkpoints.

:func:`power_grid` evaluates :func:`nlpower.power` on every cell of a
Cartesian product of *axes* -- design fields (``n_workers``, ``n_items``,
``workers_per_item``, ``items``, ``systems``), parameter fields (``effect``,
``sigma``, ``sd_item_slope``, ...) and, when ``params`` is a dict of named
parameter sets, a ``scenario`` axis -- and returns a :class:`GridResult`
with one tidy row per cell.  This is the machinery behind Card et al.
(2020), Figure 6 (App. H.3): two Table 16 scenarios x {3, 10} workers x
{50, 100, 500} items x effects {0.05, 0.10, 0.15, 0.20}.

The grid itself -- key-derived seeds, backends, checkpoints, progress and
the failure policy -- is the problem-agnostic runner :mod:`nlpower.grid`;
this module only turns the human-rating arguments into a
:class:`RatingsProblem` and its axes.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import __version__
from .._choices import Alternative, Backend, Coding, EngineName, OnError, PowerMethod, RatingsTest
from .._records import nan_to_none
from .._rng import RNGLike
from .._validation import closest_name
from ..convert import is_pilot_fit
from ..design import CrossedDesign
from ..errors import InputError, SizeWarning
from ..grid import GridResult, RunOptions, run_grid
from ..grid.axes import axis_values, cell_keys, plain
from ..study.spec import Study, Test, from_keywords, grid_parts, resolve_study
from .models import Params
from .options import PowerOptions, power_options, same_value
from .result import PowerResult
from .rules import FEW_WORKERS, get_test
from .run import power
from .simoptions import SimOptions, with_sim

__all__ = ["FIGURE6_AXES", "ComparisonCell", "RatingsProblem", "grid_of_study", "power_grid"]

#: The axes of Card et al. (2020), Figure 6.
FIGURE6_AXES: dict[str, tuple[Any, ...]] = {
    "n_workers": (3, 10),
    "n_items": (50, 100, 500),
    "effect": (0.05, 0.10, 0.15, 0.20),
}

DESIGN_FIELDS = ("n_workers", "n_items", "systems", "workers_per_item", "items")

#: Result columns of a ratings grid's frame, after the axis columns.
RESULT_COLUMNS = (
    "power", "ci_low", "ci_high", "se", "type_m", "type_s", "mean_estimate",
    "n_failed", "n_singular", "n_sims", "n_rejected", "test", "method", "engine",
    "alternative", "alpha", "coding", "n_nonconverged", "rejection_rate",
    "type_s_ci_low", "type_s_ci_high", "type_m_ci_low", "type_m_ci_high",
)

PowerFunction = Callable[..., PowerResult]


@dataclass(frozen=True)
class RatingsProblem:
    """Power of a human-rating study (:func:`nlpower.power`) as a grid problem.

    A cell's key holds ``scenario`` (when ``params`` named several), design
    fields (``n_workers``, ``n_items``, ...) and parameter fields
    (``effect``, ``sigma``, ...); the rest comes from the scenario's
    parameters and the ``design`` template.
    """

    scenarios: Mapping[str, Params]
    design: CrossedDesign | None
    options: PowerOptions  # validated once, for every cell
    power_fn: PowerFunction | None = None
    effect_per_scenario: bool = False
    replicate_progress: bool = False  # a per-replicate bar inside each cell (serial runs only)
    #: options the caller left at None (the test's default REML, no Likert, n_resamples 99):
    #: not in the fingerprint and not passed to a custom power_fn
    unset: frozenset[str] = frozenset()
    #: analysis given as a list: per-analysis columns even for one analysis
    compare: bool = False
    #: some cells have few workers, where power() measures the Type I error: type1 columns
    few_workers: bool = False

    @property
    def given_options(self) -> dict[str, Any]:
        """The grid's analysis options as the caller gave them (fingerprint, ``power_fn``)."""
        o = self.options
        full = {"n_sims": o.n_sims, "alpha": o.alpha, "test": o.test,
                "alternative": o.alternative, "method": o.method, "engine": o.engine,
                "REML": o.REML, "likert": o.likert, "n_resamples": o.n_resamples}
        out: dict[str, Any] = {k: v for k, v in full.items()
                               if k not in self.unset and v is not None}
        # outcome options only when not the Gaussian defaults (a Gaussian grid's fingerprint,
        # and so its checkpoints, stay as they were)
        if o.null:
            out["null"] = True
        if o.precision is not None:    # where each cell stops: part of its numbers
            out["precision"] = o.precision
        if o.outcome != "gaussian":
            out.update(outcome=o.outcome, levels=o.levels,
                       analysis=o.analysis if len(o.analyses) == 1 else list(o.analyses))
        return out

    name = "ratings"

    @property
    def several(self) -> bool:
        """Analyses compared on the same replicates (``analysis=[...]``): a :class:`ComparisonCell`."""
        return self.compare or len(self.options.analyses) > 1

    @property
    def result_columns(self) -> tuple[str, ...]:
        cols = ComparisonCell.columns(self.options.analyses) if self.several else \
            (*RESULT_COLUMNS, *(("type1", "type1_ci_low", "type1_ci_high")
                                if self.options.null or self.few_workers else ()))
        return ("effect", *cols) if self.effect_per_scenario else cols

    def fingerprint(self) -> dict[str, Any]:
        fn = self.power_fn or power
        return {
            "scenarios": {k: _params_dict(p) for k, p in self.scenarios.items()},
            "design": None if self.design is None
            else {f: plain(getattr(self.design, f, None)) for f in DESIGN_FIELDS},
            **self.given_options,
            "power_fn": f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}",
        }

    def cell(self, key: Mapping[str, Any]) -> tuple[CrossedDesign, Params]:
        """The design and parameters of the cell ``key`` (errors name the cell)."""
        scen = self.scenarios[key["scenario"]] if "scenario" in key else next(iter(self.scenarios.values()))
        fields = {f.name for f in dataclasses.fields(scen)}
        p_over = {k: v for k, v in key.items() if k in fields and k not in DESIGN_FIELDS}
        d_over = {k: v for k, v in key.items() if k in DESIGN_FIELDS}
        try:
            params = dataclasses.replace(scen, **p_over) if p_over else scen
            design = _build_design(self.design, d_over)
        except InputError as exc:
            where = ", ".join(f"{k}={v!r}" for k, v in key.items())
            raise type(exc)(f"grid cell ({where}): {exc}") from exc
        return design, params

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence
                 ) -> PowerResult | ComparisonCell:
        with warnings.catch_warnings():  # said once for the whole grid, by power_grid
            warnings.simplefilter("ignore", SizeWarning)
            return self._run_cell(key, rng)

    def _run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence
                  ) -> PowerResult | ComparisonCell:
        design, params = self.cell(key)
        if self.power_fn is not None:
            return self.power_fn(design, params, rng=rng, **self.given_options)
        if not self.several:
            return power(design, params, rng=rng, options=self.options,
                         progress=self.replicate_progress)
        model = self.options.kind.model
        out = model.run(design, model.as_params(params, self.options, effect=None, coding="sum",
                                                contrast=None),
                        self.options, rng=rng, progress=self.replicate_progress)
        return ComparisonCell.from_results(getattr(out, "results", {self.options.analysis: out}))

    def from_record(self, record: Mapping[str, Any]) -> PowerResult | ComparisonCell:
        return ComparisonCell(dict(record)) if self.several else PowerResult.from_record(record)


#: Per-analysis columns of a :class:`ComparisonCell` (``power_lmm``, ``type1_clmm``, ...).
_PER_ANALYSIS = ("power", "ci_low", "ci_high", "type1", "type1_ci_low", "type1_ci_high",
                 "type_m", "type_s", "n_failed", "n_singular")


@dataclass(frozen=True)
class ComparisonCell:
    """A cell whose analyses share their replicates: ``power_<analysis>``, ``type1_<analysis>``...

    ``power``, ``ci_low``, ``ci_high``, ``se``, ``type_m``, ``type_s`` are the
    first analysis's (so a comparison grid plots like any other).
    """

    record: dict[str, Any]

    @staticmethod
    def columns(analyses: tuple[str, ...]) -> tuple[str, ...]:
        return ("power", "ci_low", "ci_high", "n_sims",
                *(f"{k}_{a}" for a in analyses for k in (*_PER_ANALYSIS, "effect", "test")))

    @classmethod
    def from_results(cls, results: Mapping[str, PowerResult]) -> ComparisonCell:
        first = next(iter(results.values()))
        rec: dict[str, Any] = {"power": nan_to_none(first.power),
                               "ci_low": nan_to_none(first.ci.low),
                               "ci_high": nan_to_none(first.ci.high), "se": nan_to_none(first.se),
                               "type_m": nan_to_none(first.type_m),
                               "type_s": nan_to_none(first.type_s), "n_sims": first.n_sims,
                               "seed_entropy": first.seed.get("entropy"), "version": __version__}
        for a, r in results.items():
            t1 = r.type1_ci
            vals = (r.power, r.ci.low, r.ci.high, r.type1, None if t1 is None else t1.low,
                    None if t1 is None else t1.high, r.type_m, r.type_s, r.n_failed,
                    r.n_singular)
            rec.update({f"{k}_{a}": nan_to_none(v) for k, v in zip(_PER_ANALYSIS, vals,
                                                                    strict=True)})
            rec[f"effect_{a}"] = r.effect
            rec[f"test_{a}"] = r.test
        return cls(rec)

    def to_record(self) -> dict[str, Any]:
        return dict(self.record)


def _params_fields(params: Any) -> tuple[str, ...]:
    if dataclasses.is_dataclass(params) and not isinstance(params, type):
        return tuple(f.name for f in dataclasses.fields(params))
    raise InputError(
        f"params must be an LMMParams (e.g. nlpower.presets.high_variance()), or a dict / list of them; "
        f"got {type(params).__name__}."
    )


def _scenarios(params: Any) -> tuple[dict[str, Any], bool]:
    """{name: params} and whether there is a scenario axis."""
    if isinstance(params, Mapping):
        if not params:
            raise InputError("params: an empty dict gives no scenarios; pass at least one LMMParams.")
        out = {}
        for name, p in params.items():
            if not isinstance(name, str):
                raise InputError(f"params: scenario names must be strings; got {name!r} ({type(name).__name__}).")
            _params_fields(p)
            out[name] = p
        return out, True
    if isinstance(params, (list, tuple)):
        if not params:
            raise InputError("params: an empty list gives no scenarios; pass at least one LMMParams.")
        for p in params:
            _params_fields(p)
        return {f"params[{i}]": p for i, p in enumerate(params)}, True
    _params_fields(params)
    return {"": params}, False


def _params_dict(p: Any) -> dict[str, Any]:
    return {f.name: plain(getattr(p, f.name)) for f in dataclasses.fields(p)}


def _build_design(template: CrossedDesign | None, values: Mapping[str, Any]) -> CrossedDesign:
    if template is None:
        return CrossedDesign(**values)
    return dataclasses.replace(template, **values)

def power_grid(
    params: Any, *, n_workers: Any = None, n_items: Any = None, effect: Any = None,
    design: Any = None, n_sims: int = 200, alpha: float = 0.05, test: RatingsTest | None = None,
    alternative: Alternative = "two-sided", method: PowerMethod = "auto",
    engine: EngineName = "native", REML: bool | None = None, likert: int | None = None,
    n_resamples: int | None = None, null: bool = False, outcome: str = "gaussian",
    levels: int | None = None, analysis: Any = None, options: PowerOptions | None = None,
    run: RunOptions | None = None, n_jobs: int = 1, backend: Backend = "loky", client: Any = None,
    checkpoint: str | os.PathLike[str] | None = None, rng: RNGLike = None, progress: bool = True,
    on_error: OnError = "raise", coding: Coding = "sum", contrast: Any = None,
    power_fn: PowerFunction | None = None, shard: str | tuple[int, int] | None = None,
    precision: float | None = None, sim: SimOptions | None = None, **axes: Any,
) -> GridResult:
    """Power of every cell of a grid of designs x parameters (Card et al. 2020, Fig. 6).

    ``power_grid(study, n_workers=..., sim=...)`` is the same call with a Study.  Each keyword
    in full: ``docs/power.md``, "Keywords of power, power_grid, mde and plan".

    Parameters
    ----------
    params : LMMParams, LikertParams, HeadToHeadParams, a dict or list of them, RatingsFit, or Study
        The parameters; a dict (or list) adds a ``scenario`` axis named by its keys.
    n_workers, n_items, effect : int / float or list, optional
        A list makes an axis, a scalar fixes the value; ``None`` takes it from ``design`` or
        ``params`` (``effect`` in their coding).
    design : CrossedDesign, optional
        Template for design fields not given as arguments (``workers_per_item=``, ...).
    n_sims : int, default 200
    alpha : float, default 0.05
    test, REML, likert, n_resamples, contrast : as in nlpower.power, optional
        Passed to :func:`nlpower.power` for every cell when given.
    alternative : {"two-sided", "greater", "less"}
    method : {"auto", "balanced", "simulate", "analytic"}
    engine : {"native", "lme4"}
    null : bool, default False
        Also simulate every cell at effect 0 (``type1`` columns).
    outcome : {"gaussian", "likert", "preference"}, default "gaussian"
    levels : int, optional
    analysis : str or list of str (each run on the same replicates), optional
    options : PowerOptions, optional
        All analysis options at once; then those keywords stay at their defaults.
    run : RunOptions, optional
        All scheduling options at once (:class:`nlpower.grid.RunOptions`).
    n_jobs : int, default 1
        Cells in parallel (``-1``: all cores); no result depends on it.
    backend : {"loky", "dask"}
        joblib processes, or Dask (``client``, the default client or a local cluster).
    client : distributed.Client, optional
    checkpoint : path, optional
        A JSON-lines file of finished cells; a rerun resumes.
    rng : seed, optional
        Root seed; each cell's seed derives from its axis values.
    progress : bool, default True
    on_error : {"raise", "warn", "record"}
        A cell that raises stops the grid, or is kept as a failed cell (with a warning).
    coding : {"sum", "half", "treatment"}, default "sum"
    power_fn : callable, optional
        Replaces :func:`nlpower.power` (same signature; picklable for ``n_jobs > 1``).
    shard : "i/N", optional
        Run only shard ``i`` of ``N`` (needs ``checkpoint`` and a fixed ``rng``).
    precision : float, optional
        Adaptive Monte Carlo precision of every cell (:func:`nlpower.power`).
    sim : SimOptions, optional
        The shared simulation options as one object.
    **axes
        Further axes or fixed values: design fields (``systems``, ...) or parameter fields
        (``sigma``, ``sd_item_slope``, ...).

    Returns
    -------
    GridResult
        ``.to_frame()`` (one row per cell), ``.summary()``, ``.plot()``.

    Examples
    --------
    >>> from nlpower import presets
    >>> grid = power_grid(
    ...     {"low variance": presets.low_variance(), "high variance": presets.high_variance()},
    ...     n_workers=[3, 10], n_items=100, effect=0.1, n_sims=100, test="z", rng=2020,
    ...     progress=False)
    >>> grid.to_frame()[["scenario", "n_workers", "power"]].round(2).to_dict("list")
    {'scenario': ['low variance', 'low variance', 'high variance', 'high variance'], 'n_workers': [3, 10, 3, 10], 'power': [0.98, 1.0, 0.51, 0.73]}
    """
    n_sims, alpha, alternative, rng, n_jobs, precision, progress, checkpoint = with_sim(
        sim, power_grid, n_sims=n_sims, alpha=alpha, alternative=alternative, rng=rng,
        n_jobs=n_jobs, precision=precision, progress=progress, checkpoint=checkpoint)
    keywords = {"test": test, "method": method, "engine": engine, "REML": REML, "likert": likert,
                "n_resamples": n_resamples, "outcome": outcome, "levels": levels,
                "analysis": analysis, "coding": coding, "contrast": contrast}
    defaults = {n: p.default for n, p in inspect.signature(power_grid).parameters.items()}
    study = resolve_study("power_grid", params, None, keywords, defaults,
                          build=lambda: from_keywords(design, params, keywords))
    if study is params:
        effect = grid_parts(study, design, effect)
    return grid_of_study(
        study, n_workers=n_workers, n_items=n_items, effect=effect, n_sims=n_sims, alpha=alpha,
        alternative=alternative, null=null, options=options, run=run, n_jobs=n_jobs,
        backend=backend, client=client, checkpoint=checkpoint, rng=rng, progress=progress,
        on_error=on_error, power_fn=power_fn, shard=shard, precision=precision, axes=axes)


def grid_of_study(study: Study, *, n_workers: Any, n_items: Any, effect: Any, n_sims: int,
                  alpha: float, alternative: Any, null: bool, options: PowerOptions | None,
                  run: RunOptions | None, n_jobs: int, backend: Any, client: Any,
                  checkpoint: Any, rng: RNGLike, progress: bool, on_error: Any,
                  power_fn: PowerFunction | None, shard: Any, precision: float | None,
                  axes: Mapping[str, Any]) -> GridResult:
    """:func:`power_grid` of a :class:`~nlpower.study.spec.Study` (both spellings run this)."""
    truth, a, t = study.truth, study.analysis, study.test
    params, design = truth.params, study.design
    test, method, engine, REML = t.rule, a.method, a.engine, a.REML
    likert, outcome, levels, analysis = truth.likert, truth.outcome, truth.levels, a.model
    coding, contrast = truth.coding, truth.contrast
    # a Study's default bootstrap size is the grid's "not given" (its fingerprint stays the same)
    n_resamples = None if t.n_resamples in (None, Test.n_resamples) else t.n_resamples
    opt_kw: dict[str, Any] = {"n_sims": n_sims, "alpha": alpha, "test": test,
                              "alternative": alternative, "method": method, "engine": engine,
                              "REML": REML, "likert": likert, "n_resamples": n_resamples, "null": null,
                              "outcome": outcome, "levels": levels, "analysis": analysis,
                              "precision": precision}
    run_kw: dict[str, Any] = {"n_jobs": n_jobs, "backend": backend, "client": client,
                              "checkpoint": checkpoint, "progress": progress,
                              "on_error": on_error, "shard": shard}
    validated = _given_or_built(
        "options", options, PowerOptions, opt_kw, "power_options(...)",
        lambda: power_options(**{**opt_kw, "n_resamples": 99 if n_resamples is None else n_resamples},
                              keep_replicates=False))
    run = _given_or_built("run", run, RunOptions, run_kw, "RunOptions(...)",
                          lambda: RunOptions(**run_kw))
    kind = validated.kind
    kind.refuse([k for k, v in (("coding", coding), ("contrast", contrast))
                 if not same_value(v, _keyword_default(k))])
    if is_pilot_fit(params):  # variances from the pilot; effects (in coding) from the user
        head = effect[0] if isinstance(effect, (list, tuple)) and effect else effect
        params = kind.model.as_params(params, validated, effect=head, coding=coding,
                                      contrast=contrast)
    if power_fn is not None and not callable(power_fn):
        raise InputError(f"power_fn must be a callable like nlpower.power; got {type(power_fn).__name__}.")

    scenarios, has_scenario = _scenarios(params)
    first = next(iter(scenarios.values()))
    pfields = _params_fields(first)
    named: dict[str, Any] = {"n_workers": n_workers, "n_items": n_items, "effect": effect}
    for name, value in axes.items():
        if name not in DESIGN_FIELDS and name not in pfields:
            close = closest_name(name, [*DESIGN_FIELDS, *pfields])
            raise InputError(
                f"unknown grid axis {name}={value!r}. Axes can be design fields "
                f"({', '.join(DESIGN_FIELDS)}) or parameter fields ({', '.join(pfields)})."
                + (f" Did you mean {close!r}?" if close else "")
            )
        named[name] = value
    for req in ("n_workers", "n_items"):
        if named[req] is None:
            if design is None:
                raise InputError(f"{req} is required when design is None; pass e.g. {req}="
                                 f"{list(FIGURE6_AXES[req])!r}, or a CrossedDesign as design=.")
            named[req] = getattr(design, req)
    effect_per_scenario = False
    if "effect" not in pfields:
        if effect is not None:
            raise InputError(
                f"effect={effect!r}: these parameters ({type(first).__name__}) "
                "have no single 'effect' field; give their own fields as axes instead "
                f"(one of {', '.join(pfields)})."
            )
        del named["effect"]
    elif named["effect"] is None:
        effects = {plain(p.effect) for p in scenarios.values()}
        if len(effects) == 1:
            named["effect"] = effects.pop()
        else:  # each scenario keeps its own effect, reported as a result column
            del named["effect"]
            effect_per_scenario = True

    grid_axes: dict[str, Any] = {"scenario": list(scenarios)} if has_scenario else {}
    grid_axes.update(named)
    unset = frozenset(k for k, v in (("REML", REML), ("likert", likert), ("n_resamples", n_resamples))
                      if v is None) if options is None else frozenset()
    problem = RatingsProblem(scenarios=scenarios, design=design, options=validated,
                             power_fn=power_fn, effect_per_scenario=effect_per_scenario,
                             replicate_progress=run.progress and run.in_process, unset=unset,
                             compare=isinstance(analysis, (list, tuple)) or analysis == "both",
                             few_workers=any(   # text or floats: refused by _check_cells
                                 isinstance(w, (int, np.integer)) and w < FEW_WORKERS
                                 for w in axis_values("n_workers", grid_axes["n_workers"])))
    _check_cells(problem, grid_axes)
    result = run_grid(problem, grid_axes, rng=rng, run=run)
    _warn_size_once(result)
    return result


def _warn_size_once(result: GridResult) -> None:
    """One warning for every cell whose test does not hold alpha (each cell's own is silenced)."""
    frame = result.to_frame()
    if "type1_ci_low" not in frame.columns or frame.empty:
        return
    bad = frame[frame["type1_ci_low"].astype(float) > frame["alpha"].astype(float)]
    if bad.empty:
        return
    test, alpha = str(bad["test"].iloc[0]), float(bad["alpha"].iloc[0])
    workers = ", ".join(str(w) for w in sorted(set(bad["n_workers"])))
    lo, hi = float(bad["type1"].min()), float(bad["type1"].max())
    warnings.warn(
        f"test={test!r} does not hold alpha={alpha:g} in {len(bad)} of {len(frame)} cells (those "
        f"with {workers} workers): their Type I error measured at effect 0 is {lo:.3f}-{hi:.3f}, "
        f"so their power counts rejections a level-{alpha:g} test would not make. "
        f"{get_test(test).size_advice} Their curves are dotted in the grid's plot().",
        SizeWarning, stacklevel=4)


def _check_cells(problem: RatingsProblem, axes: Mapping[str, Any]) -> None:
    """Build every cell's design and parameters once, so a bad cell fails before any runs."""
    model = problem.options.kind.model
    for key in cell_keys({k: axis_values(k, v) for k, v in axes.items()}):
        _, params = problem.cell(key)
        if problem.power_fn is None:
            model.as_params(params, problem.options, effect=None, coding="sum", contrast=None)


def _keyword_default(name: str) -> Any:
    """The default of :func:`power_grid`'s keyword ``name`` (its signature is the one source)."""
    return inspect.signature(power_grid).parameters[name].default


def _given_or_built(name: str, given: Any, cls: type, keywords: Mapping[str, Any], how: str,
                    build: Callable[[], Any]) -> Any:
    """``given`` (a prebuilt ``cls``) when no keyword of it differs from its default, else built."""
    if given is None:
        return build()
    if not isinstance(given, cls):
        raise InputError(f"{name} must be a {cls.__name__} from {how}; got {type(given).__name__}.")
    changed = [k for k, v in keywords.items() if not same_value(v, _keyword_default(k))]
    if changed:
        raise InputError(f"pass either {name}= (a {cls.__name__}) or its keywords, not both; got "
                         f"{name}= and {', '.join(changed)}. Build it with {how} instead.")
    return given
