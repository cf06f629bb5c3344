"""Power of any test by simulation: Card et al.'s (2020) recipe as a function (§2, Fig. 2).

The paper's algorithm for any setting: (1) write down a generative process
for the data with a true effect, (2) pick the test, (3) draw many data sets,
test each, and (4) count the rejections *whose estimate has the sign of the
true effect* -- that share is the power.  Among the significant results, the
mean of ``|estimate| / |effect|`` is the exaggeration factor (Type-M) and the
share with the wrong sign is Type-S (Gelman & Carlin 2014).

:func:`simulate_power` runs that recipe for a user's ``generate(rng, **params)``
and ``test(data)``; :func:`simulate_power_grid` runs it on every cell of a grid
of ``params`` through :func:`nlpower.grid.run_grid` (progress, checkpoints,
loky or Dask, the same results for any ``n_jobs``).  Replicate ``i`` draws
from the ``i``-th child of the cell's seed, so a result does not depend on
how the work is split.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._choices import Backend, OnError
from ._rng import RNGLike, root_seed, seed_record
from ._validation import check_int, check_real
from .errors import InputError
from .grid import GridResult, check_run_options, run_grid
from .montecarlo import MonteCarloSummary
from .powerresult import CallbackStudy, PowerResult, Replicates
from .powersim.batches import Precision, check_precision, run_batches

__all__ = ["SimulatedPowerResult", "SimulationProblem", "simulate_power", "simulate_power_grid"]

#: Record keys a grid frame shows after its axis columns.
RESULT_COLUMNS = ("power", "ci_low", "ci_high", "se", "type_m", "type_m_low", "type_m_high",
                  "type_s", "type_s_low", "type_s_high", "rejection_rate", "n_sims", "n_failed")


#: The result of :func:`simulate_power`: the one :class:`~nlpower.powerresult.PowerResult`
#: (``result.study`` is a :class:`~nlpower.powerresult.CallbackStudy`; ``result.estimates`` and
#: ``result.pvalues`` the kept draws, ``result.plot()`` Card et al.'s Fig. 1); the former name, kept.
SimulatedPowerResult = PowerResult


def _estimate_pvalue(out: Any) -> tuple[float, float]:
    """``test(data)``'s answer as (estimate, p-value): a pair, a mapping, or an object."""
    if isinstance(out, Mapping):
        return float(out["estimate"]), float(out["pvalue"])
    if hasattr(out, "pvalue"):
        est = getattr(out, "estimate", getattr(out, "statistic", None))
        if est is None:
            raise InputError("test(data) returned an object with .pvalue but neither .estimate "
                             "nor .statistic; return (estimate, pvalue) instead.")
        return float(est), float(out.pvalue)
    try:
        est, p = out
    except (TypeError, ValueError):
        raise InputError(f"test(data) must return (estimate, pvalue), a mapping with those keys, "
                         f"or an object with .estimate and .pvalue; got {type(out).__name__}.") \
            from None
    return float(est), float(p)


#: Default largest share of replicates whose test may fail before a run is refused.
MAX_FAILED = 0.5


def _replicate(i: int, child: np.random.SeedSequence) -> str:
    """Replicate ``i`` and how to draw its data set again."""
    return (f"replicate {i} (its data: generate(np.random.default_rng(np.random.SeedSequence("
            f"{child.entropy}, spawn_key={tuple(child.spawn_key)})), **params))")


def _generate(generate: Callable[..., Any], params: Mapping[str, Any],
              child: np.random.SeedSequence) -> Any:
    try:
        return generate(np.random.default_rng(child), **params)
    except TypeError as exc:
        if "argument" not in str(exc):
            raise
        raise InputError(
            f"generate(rng, **params) cannot take params {sorted(params)}: {exc}. generate's "
            "first argument is the rng and every key of params must be one of its keyword "
            "arguments; rename the keys or the arguments to match.") from exc


def _run(generate: Callable[..., Any], test: Callable[[Any], Any], params: Mapping[str, Any],
         n_sims: int, seq: np.random.SeedSequence,
         max_failed: float = MAX_FAILED,
         stop: Precision | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Every replicate's (estimate, p-value), checked; a test that raises is a failed replicate.

    Replicates run in the fixed batches of
    :func:`nlpower.powersim.batches.run_batches` (in this process), which
    stops early under ``stop``.  A p-value outside [0, 1] or a non-finite
    estimate beside a p-value is the user's error (named with the
    replicate's seed); more than ``max_failed`` of the replicates used
    failing, or all of them, raises with the first failure.
    """
    n0 = seq.n_children_spawned
    first: list[str] = []

    def child(i: int) -> np.random.SeedSequence:      # seq.spawn(n_sims)[i], made when needed
        return np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, n0 + i),
                                      pool_size=seq.pool_size)

    def compute(lo: int, hi: int) -> Replicates:
        est = np.full(hi - lo, np.nan)
        pval = np.full(hi - lo, np.nan)
        failed = np.zeros(hi - lo, dtype=bool)
        for j, i in enumerate(range(lo, hi)):
            kid = child(i)
            data = _generate(generate, params, kid)
            try:
                est[j], pval[j] = _estimate_pvalue(test(data))
            except InputError:
                raise
            except Exception as exc:  # a failed test is a non-rejection, counted (STYLE 6)
                failed[j] = True
                first.append(f"{_replicate(i, kid)}: test raised {type(exc).__name__}: {exc}")
                continue
            if math.isnan(pval[j]):
                failed[j] = True
                first.append(f"{_replicate(i, kid)}: test returned a NaN p-value")
                continue
            _check_answer(float(est[j]), float(pval[j]), i, kid)
        nan = np.full(hi - lo, np.nan)
        return Replicates(est, nan, nan, nan, pval, ~failed, np.zeros(hi - lo, dtype=bool), failed)

    reps = run_batches(n_sims, compute, run="simulate-power", local=True, stop=stop)
    n = int(reps.pvalue.shape[0])
    failed = int(reps.failed.sum())
    if failed and (failed == n or failed > max_failed * n):
        share = "every replicate" if failed == n else f"{failed} of {n} replicates"
        raise InputError(f"the test failed in {share} (more than max_failed={max_failed:g} of "
                         f"them), so the power would say nothing about the test. The first "
                         f"failure: {first[0]}. Fix the test, or raise max_failed if failures are "
                         "expected.")
    return reps.estimate, reps.pvalue, failed


def _check_answer(est: float, p: float, i: int, child: np.random.SeedSequence) -> None:
    """A p-value outside [0, 1] or a non-finite estimate is the user's error, named."""
    if not 0.0 <= p <= 1.0:
        raise InputError(f"test(data) returned the p-value {p!r} in {_replicate(i, child)}; "
                         "a p-value lies in [0, 1]. Fix the test (return NaN for a failed "
                         "test: it counts as a non-rejection).")
    if not math.isfinite(est):
        raise InputError(f"test(data) returned the estimate {est!r} with p-value {p:g} in "
                         f"{_replicate(i, child)}; an estimate must be finite (its sign decides "
                         "a correct rejection). Fix the test, or return a NaN p-value for a "
                         "failed test.")


def summarise(est: np.ndarray, pval: np.ndarray, n_failed: int, *, effect: float, alpha: float,
              params: Mapping[str, Any], seed: dict[str, Any],
              keep_draws: bool, n_max: int | None = None,
              precision: float | None = None, generate: Any = None, test: Any = None,
              elapsed: float | None = None) -> PowerResult:
    """Sign-correct power, Type-M/S and their MC intervals from per-simulation values
    (through :class:`nlpower.montecarlo.MonteCarloSummary`, as every power in nlpower)."""
    sig = np.nan_to_num(pval, nan=1.0) <= alpha
    mc = MonteCarloSummary.from_draws(est, sig, effect=effect, n_max=n_max, precision=precision)
    study = CallbackStudy(params=dict(params), generate_name="" if generate is None else
                          _name(generate), test_name="" if test is None else _name(test))
    return PowerResult(
        power=mc.power, se=mc.se, ci=mc.ci, n_sims=mc.n_sims, n_rejected=mc.n_rejected,
        rejection_rate=mc.rejection_rate, type_s=mc.type_s, type_m=mc.type_m, effect=effect,
        test="user", alpha=alpha, alternative="user", study=study, n_failed=n_failed,
        seed=seed, elapsed=elapsed, mc=mc, replicates=_draws(est, pval) if keep_draws else None)


def _draws(est: np.ndarray, pval: np.ndarray) -> Replicates:
    """Per-simulation estimates and p-values as the result's replicates (no fits: no SEs)."""
    nan = np.full(est.shape, np.nan)
    failed = np.isnan(pval)
    return Replicates(est, nan, nan, nan, pval, ~failed, np.zeros(est.shape, dtype=bool), failed)


def _check(generate: Any, test: Any, n_sims: Any, alpha: Any,
           max_failed: Any = MAX_FAILED) -> tuple[int, float, float]:
    for name, fn in (("generate", generate), ("test", test)):
        if not callable(fn):
            raise InputError(f"{name} must be a function; got {type(fn).__name__}. generate(rng, "
                             "**params) returns one data set, test(data) returns (estimate, pvalue).")
    return (check_int("n_sims", n_sims, min=1),
            check_real("alpha", alpha, min=0.0, max=1.0, min_open=True, max_open=True),
            check_real("max_failed", max_failed, min=0.0, max=1.0))


def _check_params(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
        raise InputError(f"params must be a mapping of generate's keyword-argument names to "
                         f"values, e.g. {{'n': 100}}; got {params!r}.")
    return dict(params)


def simulate_power(
    generate: Callable[..., Any],
    test: Callable[[Any], Any],
    *,
    effect: float,
    n_sims: int = 1000,
    alpha: float = 0.05,
    rng: RNGLike = None,
    params: Mapping[str, Any] | None = None,
    keep_draws: bool = True,
    max_failed: float = MAX_FAILED,
    precision: float | None = None,
) -> PowerResult:
    """Power, Type-M and Type-S of ``test`` on data from ``generate`` (Card et al. 2020, Fig. 2).

    Parameters
    ----------
    generate : callable
        ``generate(rng, **params)`` returns one simulated data set; ``rng`` is a
        ``numpy.random.Generator`` of its own for every data set.
    test : callable
        ``test(data)`` returns ``(estimate, pvalue)`` (or a mapping with those
        keys, or an object with ``.estimate``/``.statistic`` and ``.pvalue``).
        ``estimate`` is on the scale of ``effect``.  A test that raises, or
        gives a NaN p-value, counts as a non-rejection (``n_failed``); a
        p-value outside [0, 1], or a non-finite estimate beside a p-value,
        raises :class:`~nlpower.errors.InputError` naming the replicate and
        its seed.
    effect : float
        The true effect the generative process builds in: its sign defines a
        correct rejection, its size the Type-M ratio; 0 gives the Type I error.
    n_sims : int
        Simulated data sets.
    alpha : float
        Significance level.
    rng : seed or Generator
        Randomness (``nlpower._rng`` policy); data set ``i`` draws from the
        ``i``-th child of the seed.
    params : mapping, optional
        Keyword arguments of ``generate`` (recorded in the result).
    keep_draws : bool
        Keep the per-simulation estimates and p-values (for :meth:`plot`).
    max_failed : float
        Largest share of failed tests a run may have (default 0.5); a run
        with more, or where every test failed, raises with the first
        failure's message instead of returning a power.
    precision : float, optional
        Adaptive Monte Carlo precision (e.g. ``0.01``): stop at the first
        batch of 50 data sets after which the 95% Wilson interval of the
        rejection rate has half-width at most ``precision``; ``n_sims`` is
        the maximum, ``result.n_sims`` what was used and
        ``result.mc.stopped_early`` whether the rule stopped the run.  The
        first ``m`` data sets are those of any other run with the same
        ``rng``; the reported interval keeps its coverage
        (``docs/power.md``, "Adaptive precision").

    Returns
    -------
    PowerResult
        Of a :class:`~nlpower.powerresult.CallbackStudy` (``result.params``;
        ``result.estimates`` and ``result.pvalues`` with ``keep_draws``;
        ``docs/results.md``).

    Examples
    --------
    Card et al. (2020), Fig. 1: 65% of people prefer system B; is B preferred,
    by a two-sided binomial test on ``n`` raters?

    >>> from scipy import stats
    >>> def generate(rng, n):
    ...     return rng.binomial(n, 0.65), n
    >>> def test(data):
    ...     k, n = data
    ...     return k / n - 0.5, stats.binomtest(k, n).pvalue
    >>> r = simulate_power(generate, test, effect=0.15, params={"n": 100}, n_sims=400, rng=1)
    >>> r.power > 0.75
    True

    With ``precision=0.05`` the run stops once the interval is +-0.05 wide:

    >>> r = simulate_power(generate, test, effect=0.15, params={"n": 100}, n_sims=2000,
    ...                    rng=1, precision=0.05)
    >>> r.n_sims < 2000, r.n_sims % 50
    (True, 0)
    """
    n_sims, alpha, max_failed = _check(generate, test, n_sims, alpha, max_failed)
    effect = check_real("effect", effect)
    params = _check_params(params)
    precision = check_precision(precision)
    seq = root_seed(rng)
    stop = None if precision is None else Precision(precision, alpha)
    start = time.perf_counter()
    est, pval, failed = _run(generate, test, params, n_sims, seq, max_failed, stop)
    return summarise(est, pval, failed, effect=effect, alpha=alpha, params=params,
                     seed=seed_record(seq), keep_draws=keep_draws, n_max=n_sims,
                     precision=precision, generate=generate, test=test,
                     elapsed=time.perf_counter() - start)


def _name(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


@dataclass(frozen=True)
class SimulationProblem:
    """:func:`simulate_power` as a grid problem: one cell = one parameter combination.

    ``effect`` is a number, the name of a grid axis that holds the true effect,
    or a function of the cell's parameters.  Fixed extra keyword arguments of
    ``generate`` go in ``fixed``.
    """

    generate: Callable[..., Any]
    test: Callable[[Any], Any]
    effect: float | str | Callable[..., float]
    n_sims: int = 1000
    alpha: float = 0.05
    max_failed: float = MAX_FAILED
    precision: float | None = None

    name = "simulate"
    result_columns = RESULT_COLUMNS

    def fingerprint(self) -> dict[str, Any]:
        eff = self.effect if isinstance(self.effect, (int, float, str)) else _name(self.effect)
        out = {"generate": _name(self.generate), "test": _name(self.test), "effect": eff,
               "n_sims": self.n_sims, "alpha": self.alpha}
        return out if self.precision is None else {**out, "precision": self.precision}

    def effect_at(self, key: Mapping[str, Any]) -> float:
        """The true effect of the cell ``key`` (a finite number, or the user's error)."""
        where = ", ".join(f"{k}={v!r}" for k, v in key.items())
        try:
            if isinstance(self.effect, str):
                value = key[self.effect]
            elif callable(self.effect):
                value = self.effect(**key)
            else:
                value = self.effect
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise TypeError(f"it is {value!r}, not a number")
            value = float(value)
        except Exception as exc:
            raise InputError(f"effect at the cell ({where}) cannot be computed: "
                             f"{type(exc).__name__}: {exc}. effect must be a number, an axis "
                             "name, or a function of the cell's parameters returning a "
                             "number.") from exc
        if not math.isfinite(value):
            raise InputError(f"effect at the cell ({where}) is {value!r}; the true effect must "
                             "be finite (its sign defines a correct rejection). Fix the effect "
                             "function or the axis values.")
        return value

    def run_cell(self, key: Mapping[str, Any],
                 rng: np.random.SeedSequence) -> PowerResult:
        params = dict(key)
        effect = self.effect_at(key)  # before any replicate: a bad effect fails fast
        stop = None if self.precision is None else Precision(self.precision, self.alpha)
        start = time.perf_counter()
        est, pval, failed = _run(self.generate, self.test, params, self.n_sims, rng,
                                 self.max_failed, stop)
        return summarise(est, pval, failed, effect=effect, alpha=self.alpha,
                         params=params, seed=seed_record(rng), keep_draws=False,
                         n_max=self.n_sims, precision=self.precision, generate=self.generate,
                         test=self.test, elapsed=time.perf_counter() - start)

    def from_record(self, record: Mapping[str, Any]) -> PowerResult:
        return PowerResult.from_record(record, kind="callback")


def _check_shippable(problem: SimulationProblem) -> None:
    """Refuse, before any work, functions that cannot be sent to another process."""
    try:
        import cloudpickle as pickler  # what loky and Dask ship functions with
    except ImportError:  # pragma: no cover - loky falls back to pickle
        import pickle as pickler

    for name in ("generate", "test", "effect"):
        try:
            pickler.dumps(getattr(problem, name))
        except Exception as exc:
            raise InputError(
                f"{name} cannot be sent to another process ({type(exc).__name__}: {exc}), so it "
                "cannot run with n_jobs > 1 or Dask. Define it at module level without "
                "references to open files, locks or connections, or use n_jobs=1.") from None


def simulate_power_grid(
    generate: Callable[..., Any],
    test: Callable[[Any], Any],
    params: Mapping[str, Any],
    *,
    effect: float | str | Callable[..., float],
    n_sims: int = 1000,
    alpha: float = 0.05,
    rng: RNGLike = None,
    n_jobs: int = 1,
    backend: Backend = "loky",
    client: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_error: OnError = "raise",
    max_failed: float = MAX_FAILED,
    precision: float | None = None,
) -> GridResult:
    """:func:`simulate_power` on every combination of ``params`` (lists are axes).

    Runs on :func:`nlpower.grid.run_grid`: each cell's seed derives from ``rng``
    and the cell's parameters, so results are the same for any ``n_jobs``,
    backend (``"loky"`` or ``"dask"``) or after resuming from ``checkpoint``.
    ``effect`` is a number, the name of the axis holding the true effect, or
    ``effect(**params)``.  ``generate`` and ``test`` must be picklable for
    ``n_jobs > 1`` (module-level functions; loky also ships closures); a
    function that cannot be shipped is refused before any work.  An effect
    function that raises or returns a non-finite number, and the test's
    problems (:func:`simulate_power`, ``max_failed``), name their cell.
    Draw the grid with ``nlpower.plots.plot_grid(result)``.

    Examples
    --------
    >>> from scipy import stats
    >>> def generate(rng, n, share):
    ...     return rng.binomial(n, share), n
    >>> def test(data):
    ...     k, n = data
    ...     return k / n - 0.5, stats.binomtest(k, n).pvalue
    >>> g = simulate_power_grid(generate, test, {"n": [25, 100], "share": 0.65},
    ...                         effect=lambda n, share: share - 0.5, n_sims=200, rng=1,
    ...                         progress=False)
    >>> list(g.to_frame()["n"])
    [25, 100]
    """
    n_sims, alpha, max_failed = _check(generate, test, n_sims, alpha, max_failed)
    if not isinstance(params, Mapping) or not params:
        raise InputError("params must be a non-empty mapping of generate's keyword arguments to "
                         "a value or a list of values (an axis), e.g. {'n': [25, 100]}.")
    if isinstance(effect, str) and effect not in params:
        raise InputError(f"effect={effect!r} names no parameter; use one of "
                         f"{', '.join(map(repr, params))}, a number, or a function of them.")
    if not isinstance(effect, str) and not callable(effect):
        effect = check_real("effect", effect)
    _check_params(params)
    check_run_options(n_jobs, backend, client, on_error)
    problem = SimulationProblem(generate, test, effect, n_sims, alpha, max_failed,
                                check_precision(precision))
    if n_jobs != 1 or backend == "dask":
        _check_shippable(problem)
    return run_grid(problem, params, rng=rng, n_jobs=n_jobs, backend=backend, client=client,
                    checkpoint=checkpoint, progress=progress, on_error=on_error,
                    desc="simulated power grid")
