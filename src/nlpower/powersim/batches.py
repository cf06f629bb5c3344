"""Replicates in fixed batches: the unit of checkpoints within a long run.

A replicate loop hands :func:`run_batches` a function that computes the
replicates ``start:stop`` and returns their
:class:`~nlpower.powersim.result.Replicates`; the driver calls it batch by
batch, appends each finished batch to the current batch file
(:mod:`nlpower.grid.batchfile`: a grid cell's, or the file of
``power(..., checkpoint=)``) and, on a resumed run, reads the finished
batches back instead of computing them.  The result is the same bit for bit
whether a run was interrupted or not, with or without a checkpoint, for any
``n_jobs``, because:

- batches are fixed: replicates ``[0, 50), [50, 100), ...``
  (:data:`BATCH_SIZE`; the last one shorter) -- they depend on nothing but
  ``n_sims``, never on ``n_jobs`` or on where a run was resumed;
- each replicate draws from its own child seed, and a batch's fits start
  from the truth or from fits of the same batch -- never from a fit of
  another batch (a replicate loop that warm-starts from the previous fit
  starts each batch afresh);
- stored values are the per-replicate floats themselves (JSON numbers read
  back to the same bits).

A run is named in the file by :func:`run_id` (what it computes: the loop, its
options and its replicates' seeds or responses), so the main and effect-0
runs of a cell, or two analyses of the same Likert replicates, keep their
batches apart.

Adaptive precision (:class:`Precision`): a run can stop before ``n_sims``
once its rejection rate is known well enough -- the half-width of the
Wilson interval of the share of replicates with ``p <= alpha`` at most
``precision``.  The rule is checked at batch boundaries, in batch order,
and on nothing but the replicates of the batches before the boundary, so a
run stops after the same batch for any ``n_jobs`` and on resume (with
``n_jobs > 1`` batches are computed in waves of ``n_jobs``, and batches of
the last wave beyond the stopping boundary are dropped).  ``n_sims`` is the
maximum; a run that never meets the rule uses all of it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import __version__
from .._rng import RNGLike, root_seed, seed_record
from ..errors import InputError
from ..grid.batchfile import BatchFile, active, current, digest, read_fingerprint
from ..intervals import wilson_ci
from .result import Replicates

__all__ = ["BATCH_SIZE", "Precision", "batch_bounds", "by_rows", "check_precision",
           "checkpoint_root", "checkpointed", "concat", "current_precision", "open_run_checkpoint",
           "options_identity", "replicate_jobs", "reporting_batches", "run_batches", "run_id",
           "seeds_identity", "stop_early", "stopping"]

#: Replicates per batch (the last batch of a run holds the rest).
BATCH_SIZE = 50

_FLOATS = ("estimate", "se", "statistic", "df", "pvalue")
_FLAGS = ("converged", "singular", "failed")

#: Computes the replicates ``start:stop`` of a run.
ComputeBatch = Callable[[int, int], Replicates]

#: Processes for the batches of the replicate loops run in this context (:func:`replicate_jobs`).
_JOBS: ContextVar[int] = ContextVar("nlpower_replicate_jobs", default=1)


@contextmanager
def replicate_jobs(n_jobs: int) -> Iterator[None]:
    """Compute the batches of the replicate loops run inside in ``n_jobs`` loky processes.

    No number changes: a batch depends on nothing outside its replicates
    (module docstring), and finished batches are stored in order by this
    process.  ``-1`` means every core.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or not (
            n_jobs >= 1 or n_jobs == -1):
        raise InputError(f"n_jobs must be a positive integer (processes for the replicates) or "
                         f"-1 (every core); got {n_jobs!r}.")
    token = _JOBS.set(int(n_jobs) if n_jobs != -1 else (os.cpu_count() or 1))
    try:
        yield
    finally:
        _JOBS.reset(token)


@dataclass(frozen=True)
class Precision:
    """The adaptive-precision stopping rule of a run of replicates (module docstring).

    A run stops at the first batch boundary where the Wilson interval
    (``confidence_level``) of its rejection rate -- the share of replicates
    with ``p <= alpha``, failed ones (NaN p-values) counting as
    non-rejections -- has half-width at most ``half_width``.

    A rule that watches several rates of the same replicates (the
    comparisons of :mod:`nlpower.study.multiple`) overrides
    :meth:`rejections` to return one count per rate, each additive over
    replicates; :meth:`met` then asks every interval to be narrow enough.

    Examples
    --------
    >>> rule = Precision(0.05, alpha=0.05)
    >>> rule.met(20, 100), rule.met(200, 1000)
    (False, True)
    """

    half_width: float
    alpha: float
    confidence_level: float = 0.95

    def rejections(self, reps: Replicates) -> Any:
        """Replicates of ``reps`` with ``p <= alpha`` (an int; an array of counts in subclasses)."""
        return int(np.sum(np.nan_to_num(reps.pvalue, nan=1.0) <= self.alpha))

    def half_width_of(self, k: int, n: int) -> float:
        """Half-width of the Wilson interval of ``k`` rejections in ``n`` replicates."""
        lo, hi = wilson_ci(k, n, self.confidence_level)
        return (hi - lo) / 2.0

    def met(self, k: Any, n: int) -> bool:
        """Whether ``k`` rejections (or every count of an array) in ``n`` replicates are precise enough."""
        return n > 0 and all(self.half_width_of(int(c), n) <= self.half_width
                             for c in np.atleast_1d(k))


def check_precision(precision: Any) -> float | None:
    """``precision`` validated at a public boundary: None, or a half-width in (0, 0.5)."""
    if precision is None:
        return None
    if isinstance(precision, bool) or not isinstance(precision, (int, float, np.integer,
                                                                 np.floating)) \
            or not 0.0 < float(precision) < 0.5:
        raise InputError(
            f"precision must be None (run all n_sims replicates) or the target half-width of "
            f"the power's 95% interval, a number strictly between 0 and 0.5 (e.g. 0.01); got "
            f"{precision!r}.")
    return float(precision)


#: Told the replicates of each batch the runs in this context finish (:func:`reporting_batches`).
_DONE: ContextVar[Callable[[int], Any] | None] = ContextVar("nlpower_batches_done", default=None)


@contextmanager
def reporting_batches(update: Callable[[int], Any]) -> Iterator[None]:
    """Call ``update(n)`` with the ``n`` replicates of each batch the runs inside finish
    (computed or read back): a progress bar of a caller that does not see the loop.  The
    numbers do not change."""
    token = _DONE.set(update)
    try:
        yield
    finally:
        _DONE.reset(token)


#: The stopping rule of the replicate loops run in this context (:func:`stopping`).
_STOP: ContextVar[Precision | None] = ContextVar("nlpower_precision", default=None)


@contextmanager
def stopping(precision: float | None, alpha: float) -> Iterator[None]:
    """Run the replicate loops inside with the rule ``Precision(precision, alpha)`` (None: none).

    ``precision`` is validated already (:func:`check_precision`); the rule
    applies to each run of replicates (a main run and its effect-0 run stop
    on their own).
    """
    token = _STOP.set(None if precision is None else Precision(precision, alpha))
    try:
        yield
    finally:
        _STOP.reset(token)


def current_precision() -> Precision | None:
    """The stopping rule set by the innermost :func:`stopping` (None outside any)."""
    return _STOP.get()


def stop_early(reps: Replicates, stop: Precision | None = None,
               batch_size: int | None = None) -> Replicates:
    """The replicates a batch-by-batch run under ``stop`` would have used.

    For loops that compute every replicate at once in milliseconds (the
    balanced fast path): the first replicates up to the first batch boundary
    where the rule is met -- the same replicates, and so the same numbers, as
    :func:`run_batches` would give.  ``stop`` defaults to the current rule.
    """
    rule = stop if stop is not None else _STOP.get()
    n_sims = reps.pvalue.shape[0]
    if rule is None:
        return reps
    k: Any = 0
    n = 0
    for lo, hi in batch_bounds(n_sims, batch_size):
        k += rule.rejections(_rows(reps, lo, hi))
        n = hi
        if rule.met(k, n):
            break
    return reps if n == n_sims else _rows(reps, 0, n)


def _rows(reps: Replicates, lo: int, hi: int) -> Replicates:
    return Replicates(**{f.name: getattr(reps, f.name)[lo:hi]
                         for f in dataclasses.fields(Replicates) if f.name != "extra"},
                      extra={k: v[lo:hi] for k, v in reps.extra.items()})


def _compute(compute: ComputeBatch, lo: int, hi: int, n_sims: int) -> Replicates:
    try:
        return compute(lo, hi)
    except Exception as exc:
        exc.add_note(f"(in the batch of replicates {lo}-{hi - 1} of {n_sims})")
        raise


def batch_bounds(n_sims: int, size: int | None = None) -> list[tuple[int, int]]:
    """The fixed batches ``[(start, stop), ...]`` of a run of ``n_sims`` replicates.

    Examples
    --------
    >>> batch_bounds(120)
    [(0, 50), (50, 100), (100, 120)]
    """
    step = BATCH_SIZE if size is None else size       # looked up now: tests shrink BATCH_SIZE
    return [(lo, min(lo + step, n_sims)) for lo in range(0, n_sims, step)]


def _to_columns(reps: Replicates) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {k: [float(v) for v in getattr(reps, k)] for k in _FLOATS}
    cols.update({k: [bool(v) for v in getattr(reps, k)] for k in _FLAGS})
    cols.update({k: [float(v) for v in a] for k, a in reps.extra.items()})
    return cols


def _from_columns(cols: Mapping[str, Sequence[Any]], n: int) -> Replicates | None:
    try:
        arrays = {k: np.asarray(cols[k], dtype=float) for k in _FLOATS}
        flags = {k: np.asarray(cols[k], dtype=bool) for k in _FLAGS}
    except (KeyError, TypeError, ValueError):
        return None
    try:
        extra = {k: np.asarray(v, dtype=float) for k, v in cols.items()
                 if k not in _FLOATS and k not in _FLAGS}
    except (TypeError, ValueError):
        return None
    if any(a.shape != (n,) for a in (*arrays.values(), *flags.values(), *extra.values())):
        return None
    return Replicates(**arrays, **flags, extra=extra)


def concat(parts: Sequence[Replicates]) -> Replicates:
    """The replicates of consecutive batches as one :class:`Replicates`."""
    extra = {k: np.concatenate([p.extra[k] for p in parts]) for k in parts[0].extra}
    return Replicates(**{f.name: np.concatenate([getattr(p, f.name) for p in parts])
                         for f in dataclasses.fields(Replicates) if f.name != "extra"},
                      extra=extra)


def seeds_identity(seeds: Sequence[np.random.SeedSequence]) -> dict[str, Any]:
    """What identifies a run's replicate seeds: the first child's entropy and spawn key, and how many."""
    if not seeds:
        return {"n": 0}
    first = seeds[0]
    entropy = first.entropy
    return {"entropy": int(entropy) if isinstance(entropy, (int, np.integer)) else entropy,
            "spawn_key": [int(k) for k in first.spawn_key], "n": len(seeds)}


def options_identity(options: Any) -> Any:
    """The options of a run as they enter its numbers (``keep_replicates`` dropped)."""
    opts = _fields(options)
    if isinstance(opts, dict):
        opts.pop("keep_replicates", None)  # changes what is kept, not a number
        opts.pop("precision", None)        # changes where a run stops, not a replicate
    return opts


def run_id(kind: str, **identity: Any) -> str:
    """A short name of one replicate loop in a batch file: ``kind`` and what determines its numbers."""
    return f"{kind}:{digest({'kind': kind, **identity})[:16]}"


def run_batches(n_sims: int, compute: ComputeBatch, *, run: str,
                checkpoint: BatchFile | None = None,
                on_read: Callable[[int], Any] | None = None,
                batch_size: int | None = None, stop: Precision | None = None,
                local: bool = False) -> Replicates:
    """All ``n_sims`` replicates of one run, computed (or read back) batch by batch.

    Parameters
    ----------
    n_sims : int
        Replicates of the run (the most it uses under a stopping rule).
    compute : callable
        ``compute(start, stop) -> Replicates`` of replicates ``start:stop``;
        it must depend on nothing outside that range (module docstring).
    run : str
        The run's name in the batch file (:func:`run_id`).
    checkpoint : BatchFile, optional
        Where finished batches go; default the current one
        (:func:`nlpower.grid.batchfile.current`: a grid cell's), else none.
    on_read : callable, optional
        Called with the number of replicates of each batch read back from the
        checkpoint (a progress bar's ``update``; ``compute`` reports its own).
    batch_size : int, optional
        Replicates per batch (default :data:`BATCH_SIZE`) (fixed for a run: part of what ``run`` names).  A
        loop whose model fits many responses at once takes larger batches.
    stop : Precision, optional
        Stop at the first batch boundary where the rule is met (module
        docstring); default the current rule (:func:`stopping`), else none.
    local : bool, default False
        Compute every batch in this process and keep no batch file (for
        loops of user functions, which may not travel to other processes).

    Examples
    --------
    >>> import numpy as np
    >>> def compute(lo, hi):
    ...     z = np.arange(lo, hi, dtype=float)
    ...     no = np.zeros(hi - lo, dtype=bool)
    ...     return Replicates(z, z, z, z, z, no, no, no)
    >>> run_batches(120, compute, run="demo").estimate[[0, 119]]
    array([  0., 119.])

    With a stopping rule: when every replicate rejects (p-values 0) the
    interval is narrow after the first batch:

    >>> def rejecting(lo, hi):
    ...     z = np.arange(lo, hi, dtype=float)
    ...     no = np.zeros(hi - lo, dtype=bool)
    ...     return Replicates(z, z, z, z, np.zeros(hi - lo), no, no, no)
    >>> run_batches(120, rejecting, run="demo", stop=Precision(0.05, 0.05)).estimate.shape
    (50,)
    """
    store = None if local else checkpoint if checkpoint is not None else current()
    rule = stop if stop is not None else _STOP.get()
    bounds = batch_bounds(n_sims, batch_size)
    stored: dict[int, Replicates] = {}
    for b, (lo, hi) in enumerate(bounds):
        cols = None if store is None else store.get(run, b, lo, hi)
        reps = None if cols is None else _from_columns(cols, hi - lo)
        if reps is not None:
            stored[b] = reps
    jobs = 1 if local else _JOBS.get()
    done = _DONE.get()
    parts: list[Replicates] = []
    k: Any = 0
    n = 0
    b = 0
    while b < len(bounds):
        if b in stored:
            wave = [stored[b]]
            if on_read is not None:
                on_read(bounds[b][1] - bounds[b][0])
        else:      # the next unfinished batches: all of them, or one wave under a rule
            todo: list[int] = []
            while b + len(todo) < len(bounds) and b + len(todo) not in stored and (
                    rule is None or len(todo) < jobs):
                todo.append(b + len(todo))
            wave = []
            for c, reps in zip(todo, _computed(compute, [bounds[c] for c in todo], n_sims, jobs),
                               strict=True):
                if store is not None:
                    store.put(run, c, *bounds[c], _to_columns(reps))
                wave.append(reps)
        for reps in wave:
            parts.append(reps)
            if done is not None:
                done(reps.pvalue.shape[0])
            b += 1
            if rule is not None:
                k += rule.rejections(reps)
                n += reps.pvalue.shape[0]
                if rule.met(k, n):
                    b = len(bounds)
                    break
    if not parts:
        return compute(0, 0)
    return parts[0] if len(parts) == 1 else concat(parts)


def _computed(compute: ComputeBatch, bounds: Sequence[tuple[int, int]], n_sims: int,
              jobs: int) -> Iterator[Replicates]:
    """The batches ``bounds``, in order, in up to ``jobs`` loky processes."""
    jobs = min(jobs, len(bounds))
    if jobs > 1:
        from joblib import Parallel, delayed
        done: Any = Parallel(n_jobs=jobs, backend="loky", return_as="generator")(
            delayed(_compute)(compute, lo, hi, n_sims) for lo, hi in bounds)
        yield from done
    else:
        for lo, hi in bounds:
            yield _compute(compute, lo, hi, n_sims)


def by_rows(analyse: Callable[..., Replicates], kind: str, design: Any, y: np.ndarray,
            params: Any, opts: Any) -> Replicates:
    """``analyse(design, y[start:stop], params, opts)`` batch by batch, as one run.

    For a replicate loop over responses simulated beforehand (``y``: one row
    per replicate) that builds its models afresh on every call: each batch
    is one call, so no batch sees another's fits.  The run is named by
    ``kind``, the options, the parameters and a digest of ``y`` itself.
    """
    y = np.asarray(y)
    run = run_id(kind, options=options_identity(opts), params=repr(params),
                 y=hashlib.sha256(np.ascontiguousarray(y).tobytes()).hexdigest(),
                 shape=list(y.shape))
    return run_batches(y.shape[0], lambda lo, hi: analyse(design, y[lo:hi], params, opts), run=run)


def _fields(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"type": type(obj).__name__,
                **{f.name: _fields(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, (list, tuple)):
        return [_fields(v) for v in obj]
    if isinstance(obj, Mapping):
        return {str(k): _fields(v) for k, v in obj.items()}
    return obj if isinstance(obj, (str, int, float, bool, type(None))) else repr(obj)


def checkpoint_root(checkpoint: Any, rng: RNGLike) -> np.random.SeedSequence:
    """The root seed of a run with ``checkpoint=``: ``root_seed(rng)``, or the file's seed.

    With ``rng=None`` and an existing checkpoint the run resumes with the seed
    stored in the file (as a grid does); otherwise :func:`nlpower._rng.root_seed`.
    """
    if rng is None and isinstance(checkpoint, (str, os.PathLike)):
        stored = (read_fingerprint(checkpoint) or {}).get("seed")
        if isinstance(stored, dict) and "entropy" in stored:
            return np.random.SeedSequence(stored["entropy"],
                                          spawn_key=tuple(stored.get("spawn_key", ())))
    return root_seed(rng)


@contextmanager
def checkpointed(checkpoint: Any, *, design: Any, params: Any, options: Any,
                 rng: RNGLike) -> Iterator[np.random.SeedSequence]:
    """Run a block with the batch file of ``checkpoint`` current; yields the run's root seed.

    Without a checkpoint nothing changes (a grid cell's current file stays
    current).  For replicate loops reached through several layers (the
    Likert and head-to-head outcomes): ``with checkpointed(...) as root:
    run(..., rng=root)``.
    """
    root = checkpoint_root(checkpoint, rng)
    if checkpoint is None:
        yield root
        return
    bf = open_run_checkpoint(checkpoint, design=design, params=params, options=options,
                             seed=seed_record(root))
    with active(bf):
        yield root


def open_run_checkpoint(path: Any, *, design: Any, params: Any, options: Any,
                        seed: Mapping[str, Any]) -> BatchFile:
    """The batch file of one :func:`nlpower.power` run (``checkpoint=path``).

    Its fingerprint holds the design, the parameters, the options, the root
    seed and the package version; a file written for anything else raises
    :class:`~nlpower.errors.CheckpointError` naming what differs.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"checkpoint must be a file path (str or os.PathLike), e.g. 'run.ckpt'; "
                         f"got {type(path).__name__}.")
    fingerprint = {"problem": "power", "design": _fields(design), "params": _fields(params),
                   "options": options_identity(options), "seed": dict(seed), "version": __version__}
    return BatchFile(path, fingerprint)
