"""Power over grids of designs and parameters, in parallel, with checkpoints.

:func:`power_grid` evaluates :func:`nlpower.power` on every cell of a
Cartesian product of *axes* -- design fields (``n_workers``, ``n_items``,
``workers_per_item``, ``items``, ``systems``), parameter fields (``effect``,
``sigma``, ``sd_item_slope``, ...) and, when ``params`` is a dict of named
parameter sets, a ``scenario`` axis -- and returns a :class:`GridResult`
with one tidy row per cell.  This is the machinery behind Card et al.
(2020), Figure 6 (App. H.3): two Table 16 scenarios x {3, 10} workers x
{50, 100, 500} items x effects {0.05, 0.10, 0.15, 0.20}.

Reproducibility: every cell draws from its own child
:class:`~numpy.random.SeedSequence`, derived from the root seed (``rng``) and
the cell's *key* (its axis values), never from its position or from the
order in which cells finish.  Results are therefore identical for any
``n_jobs``, for ``backend="loky"`` or ``"dask"``, after a resume from a
checkpoint, and when axis values are added, removed or reordered.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._rng import root_seed as as_seed_sequence
from .._validation import check_choice, check_int, closest_name
from ..errors import EngineUnavailableError, InputError
from . import checkpoint as _ckpt

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["FIGURE6_AXES", "GridCell", "GridResult", "cell_seed", "power_grid"]

#: The axes of Card et al. (2020), Figure 6.
FIGURE6_AXES: dict[str, tuple[Any, ...]] = {
    "n_workers": (3, 10),
    "n_items": (50, 100, 500),
    "effect": (0.05, 0.10, 0.15, 0.20),
}

DESIGN_FIELDS = ("n_workers", "n_items", "systems", "workers_per_item", "items")
ENGINES = ("auto", "fast", "native", "analytic", "lme4")
BACKENDS = ("loky", "dask")

#: Result columns of :meth:`GridResult.to_frame`, after the axis columns.
RESULT_COLUMNS = (
    "power", "ci_low", "ci_high", "se", "type_m", "type_s", "mean_estimate",
    "n_failed", "n_singular", "n_sims", "n_rejected", "test", "engine",
    "alternative", "alpha", "coding", "n_nonconverged", "rejection_rate",
)

CellFunction = Callable[..., Any]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, repr=False)
class GridCell:
    """One finished cell: its key (axis values), child seed and result record."""

    index: int
    key: Mapping[str, Any]
    spawn_key: tuple[int, ...]
    record: Mapping[str, Any]
    resumed: bool = False

    def __repr__(self) -> str:
        keys = ", ".join(f"{k}={v!r}" for k, v in self.key.items())
        return f"GridCell({keys}: power={self.record.get('power', float('nan')):.3f})"


@dataclass(frozen=True, repr=False)
class GridResult:
    """Power over a grid: one :class:`GridCell` per cell, in grid order.

    Attributes
    ----------
    columns : tuple of str
        Axis columns (``scenario`` first when present, then ``n_workers``,
        ``n_items``, ``effect``, then further axes in the order given).
    axes : dict
        Every axis with its values (one value for fixed arguments).
    cells : tuple of GridCell
    n_sims, alpha, test, alternative, engine
        The settings shared by every cell.
    seed : dict
        Root seed record (``entropy``, ``spawn_key``); with it, and the
        cell keys, every cell can be recomputed (see :func:`cell_seed`).
    version : str
        nlpower version that computed the grid.
    n_resumed : int
        Cells read back from a checkpoint rather than computed in this call.
    """

    columns: tuple[str, ...]
    axes: Mapping[str, tuple[Any, ...]]
    cells: tuple[GridCell, ...]
    n_sims: int
    alpha: float
    test: str
    alternative: str
    engine: str
    seed: Mapping[str, Any]
    version: str
    n_resumed: int = 0
    checkpoint: str | None = field(default=None)

    def __len__(self) -> int:
        return len(self.cells)

    def __repr__(self) -> str:
        shape = " x ".join(f"{c}[{len(self.axes[c])}]" for c in self.columns if len(self.axes[c]) > 1)
        return (f"GridResult({len(self.cells)} cells: {shape or 'single cell'}; "
                f"n_sims={self.n_sims}, test={self.test!r}, alternative={self.alternative!r})")

    def to_frame(self) -> pd.DataFrame:
        """Tidy frame, one row per cell: axis columns, then the result columns."""
        import pandas as pd

        rows = []
        for cell in self.cells:
            row = {c: cell.key[c] for c in self.columns}
            row.update({c: cell.record.get(c) for c in RESULT_COLUMNS})
            rows.append(row)
        return pd.DataFrame(rows, columns=[*self.columns, *RESULT_COLUMNS])

    def summary(self) -> str:
        """Text table of power with Wilson 95% Monte Carlo intervals per cell."""
        frame = self.to_frame()
        varying = [c for c in self.columns if len(self.axes[c]) > 1] or list(self.columns)
        fixed = [c for c in self.columns if c not in varying]
        table = frame[varying].copy()
        table["power"] = [f"{p:.3f}" for p in frame["power"]]
        table["95% CI"] = [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(frame["ci_low"], frame["ci_high"], strict=True)]
        table["type_m"] = [f"{m:.2f}" if _finite(m) else "-" for m in frame["type_m"]]
        table["type_s"] = [f"{s:.3f}" if _finite(s) else "-" for s in frame["type_s"]]
        if not all(_finite(p) for p in frame["power"]):  # effect 0: the rejection rate is the Type I error
            table["rejection rate"] = [f"{r:.3f}" for r in frame["rejection_rate"]]
        codings = sorted({str(c) for c in frame["coding"].dropna()}) or ["?"]
        engines = sorted({str(e) for e in frame["engine"].dropna()}) or [self.engine]
        lines = [
            f"Power grid: {len(self.cells)} cells, {self.n_sims} simulated experiments per cell",
            f"test={self.test!r}, alternative={self.alternative!r}, alpha={self.alpha:g}, "
            f"engine={'/'.join(engines)}, effect coding={'/'.join(codings)}",
        ]
        if fixed:
            lines.append("fixed: " + ", ".join(f"{c}={self.axes[c][0]!r}" for c in fixed))
        seed = f"seed: entropy={self.seed.get('entropy')!r}"
        if self.seed.get("spawn_key"):
            seed += f", spawn_key={tuple(self.seed['spawn_key'])}"
        lines.append(f"{seed}; nlpower {self.version}")
        if self.n_resumed:
            lines.append(f"{self.n_resumed} of {len(self.cells)} cells read from checkpoint {self.checkpoint}")
        lines.append("")
        lines.append(table.to_string(index=False))
        lines.append("")
        lines.append(f"failed fits: {int(frame['n_failed'].fillna(0).sum())}, "
                     f"singular fits: {int(frame['n_singular'].fillna(0).sum())} "
                     f"(of {int(frame['n_sims'].fillna(0).sum())} simulated experiments)")
        return "\n".join(lines)

    def plot(self, **kwargs: Any) -> Figure:
        """Figure 6 layout: see :func:`nlpower.plots.plot_grid`."""
        from ..plots import plot_grid

        return plot_grid(self, **kwargs)


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, numbers.Real) and math.isfinite(float(x))


# --------------------------------------------------------------------------- seeds


def _cell_token(key: Mapping[str, Any]) -> str:
    """Canonical text of a cell key (sorted JSON)."""
    return json.dumps(_ckpt.normalize(dict(key)), sort_keys=True, separators=(",", ":"))


def _key_words(key: Mapping[str, Any]) -> tuple[int, ...]:
    digest = hashlib.sha256(_cell_token(key).encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))


def cell_seed(rng: Any, key: Mapping[str, Any]) -> np.random.SeedSequence:
    """The child seed of the grid cell with axis values ``key`` under root ``rng``.

    ``SeedSequence(root.entropy, spawn_key=root.spawn_key + h)`` where ``h`` is
    four 32-bit words of the SHA-256 of the canonical JSON of ``key``.  So
    ``power(design, params, rng=cell_seed(2020, key), ...)`` reproduces one cell
    of ``power_grid(..., rng=2020)`` on its own.
    """
    root = as_seed_sequence(rng)
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *_key_words(key)))


# --------------------------------------------------------------------------- cell execution


def _get(res: Any, name: str, default: Any = None) -> Any:
    if isinstance(res, Mapping):
        return res.get(name, default)
    return getattr(res, name, default)


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def _record(res: Any) -> dict[str, Any]:
    """Flat, JSON-friendly record of a PowerResult (or of a mapping with its fields)."""
    ci = _get(res, "ci")
    if callable(ci):
        ci = ci()
    if ci is None:
        ci = (_get(res, "ci_low"), _get(res, "ci_high"))
    lo, hi = (getattr(ci, "low", None), getattr(ci, "high", None)) if hasattr(ci, "low") else ci
    engine = _get(res, "engine")
    return {
        "power": _num(_get(res, "power")),
        "ci_low": _num(lo),
        "ci_high": _num(hi),
        "se": _num(_get(res, "se")),
        "type_m": _num(_get(res, "type_m")),
        "type_s": _num(_get(res, "type_s")),
        "mean_estimate": _num(_get(res, "mean_estimate")),
        "n_failed": int(_get(res, "n_failed", 0) or 0),
        "n_singular": int(_get(res, "n_singular", 0) or 0),
        "n_sims": int(_get(res, "n_sims")),
        "n_rejected": int(_get(res, "n_rejected", -1)),
        "test": str(_get(res, "test")),
        "engine": None if engine is None else str(engine),
        "alternative": str(_get(res, "alternative")),
        "alpha": _num(_get(res, "alpha")),
        "coding": _get(res, "coding"),
        "n_nonconverged": int(_get(res, "n_nonconverged", 0) or 0),
        "rejection_rate": _num(_get(res, "rejection_rate", _get(res, "power"))),
    }


def _run_cell(fn: CellFunction, index: int, design: Any, params: Any,
              options: Mapping[str, Any], seed: np.random.SeedSequence) -> tuple[int, dict[str, Any]]:
    """Run one cell (module level so loky and dask can pickle it)."""
    return index, _record(fn(design, params, rng=seed, **options))


def _default_power() -> CellFunction:
    import importlib

    fn: CellFunction = importlib.import_module("nlpower.powersim").power
    return fn


# --------------------------------------------------------------------------- axes


def _is_axis(value: Any) -> bool:
    if isinstance(value, (str, bytes, Mapping)):
        return False
    return isinstance(value, (Sequence, np.ndarray, range)) or (
        isinstance(value, Iterable) and not isinstance(value, numbers.Number)
    )


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _axis_values(name: str, value: Any) -> tuple[Any, ...]:
    if not _is_axis(value):
        return (_plain(value),)
    values = tuple(_plain(v) for v in np.asarray(value, dtype=object).ravel()) \
        if isinstance(value, np.ndarray) else tuple(_plain(v) for v in value)
    if not values:
        raise InputError(f"{name}: an axis needs at least one value; got an empty {type(value).__name__}. "
                         f"Pass a list such as {name}=[...] or a single value.")
    seen: list[Any] = []
    for v in values:
        if v in seen:
            raise InputError(f"{name}: axis values must be distinct; {v!r} appears more than once in {list(values)!r}.")
        seen.append(v)
    return values


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
    return {f.name: _plain(getattr(p, f.name)) for f in dataclasses.fields(p)}


def _build_design(template: Any, values: Mapping[str, Any]) -> Any:
    if template is not None:
        if dataclasses.is_dataclass(template) and not isinstance(template, type):
            return dataclasses.replace(template, **values)
        kw = {f: getattr(template, f) for f in DESIGN_FIELDS if hasattr(template, f)}
        kw.update(values)
        return type(template)(**kw)
    from ..design import CrossedDesign

    return CrossedDesign(**values)


def _with_context(exc: InputError, key: Mapping[str, Any]) -> InputError:
    where = ", ".join(f"{k}={v!r}" for k, v in key.items())
    try:
        new = type(exc)(f"grid cell ({where}): {exc}")
    except TypeError:  # pragma: no cover - subclasses with other signatures
        return exc
    return new


# --------------------------------------------------------------------------- the grid


def power_grid(
    params: Any,
    *,
    n_workers: Any = None,
    n_items: Any = None,
    effect: Any = None,
    design: Any = None,
    n_sims: int = 200,
    alpha: float = 0.05,
    test: str = "satterthwaite",
    alternative: str = "two-sided",
    engine: str = "auto",
    REML: bool | None = None,
    likert: int | None = None,
    n_jobs: int = 1,
    backend: str = "loky",
    client: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    rng: Any = None,
    progress: bool = True,
    power_fn: CellFunction | None = None,
    **axes: Any,
) -> GridResult:
    """Power of every cell of a grid of designs x parameters (Card et al. 2020, Fig. 6).

    Parameters
    ----------
    params : LMMParams, dict of {str: LMMParams} or list of LMMParams
        Model parameters.  A dict (or list) adds a ``scenario`` axis named by
        its keys (``"params[0]"``, ... for a list), e.g.
        ``{"low variance": presets.low_variance(), "high variance": presets.high_variance()}``.
    n_workers, n_items, effect : int / float or list, optional
        A list makes an axis, a scalar fixes the value.  ``None`` takes the
        value from ``design`` (``n_workers``, ``n_items``; required when
        ``design`` is None) or from ``params`` (``effect``).  ``effect`` is
        beta1 in the coding of ``params`` (the paper's sum coding, x = +-1,
        by default).  :data:`FIGURE6_AXES` holds the paper's values.
    design : CrossedDesign, optional
        Template for design fields that are not given as arguments (for
        instance ``workers_per_item`` or ``items="nested"``).
    n_sims : int
        Simulated experiments per cell (the paper: 200).
    alpha, test, alternative, engine
        Passed to :func:`nlpower.power` for every cell.  The paper's rule is
        ``test="z", alternative="two-sided"``: power counts only sign-correct
        rejections, so a detection is t > 1.96 (App. H.3); ``"z"`` fits by ML.
        (``alternative="greater"`` would be t > 1.645 at ``alpha=0.05``.)
    REML, likert : optional
        Passed to :func:`nlpower.power` when given (fit criterion; Likert
        ratings with that many points).
    n_jobs : int
        Cells run in parallel (``-1``: all cores).  Results do not depend on it.
    backend : {"loky", "dask"}
        ``"loky"`` uses joblib processes; ``"dask"`` submits cells to
        ``client`` (a ``distributed.Client``), to the current default client,
        or to a temporary ``LocalCluster`` with ``n_jobs`` workers.
    client : distributed.Client, optional
        Dask client to use with ``backend="dask"``.
    checkpoint : path, optional
        JSON-lines file to which each finished cell is appended (fsync'd).
        If it exists, its cells are read back and only the rest are run; a
        file from a different grid raises :class:`~nlpower.errors.CheckpointError`.
        With ``rng=None`` a resumed run reuses the seed stored in the file.
    rng : seed, optional
        Root seed (anything ``numpy.random.default_rng`` accepts).  Each cell
        gets ``cell_seed(rng, key)``, derived from the cell's axis values.
    progress : bool
        Show a tqdm progress bar on stderr.
    power_fn : callable, optional
        Replaces :func:`nlpower.power` (same signature:
        ``fn(design, params, *, n_sims, alpha, test, alternative, engine, rng)``
        returning a ``PowerResult`` or a mapping with its fields).  Must be
        picklable for ``n_jobs > 1``.
    **axes
        Further axes or fixed values: any other design field
        (``workers_per_item``, ``items``, ``systems``) or parameter field
        (``sigma``, ``sd_item_slope``, ``beta0``, ...).

    Returns
    -------
    GridResult
        ``.to_frame()`` (one row per cell), ``.summary()``, ``.plot()``.

    Notes
    -----
    Cells are the Cartesian product of the axes in the order ``scenario``,
    ``n_workers``, ``n_items``, ``effect``, then ``**axes`` in the order given
    (the last varies fastest).  Monte Carlo intervals are Wilson 95% intervals
    from :func:`nlpower.power`.

    Examples
    --------
    >>> from nlpower import presets
    >>> grid = power_grid(  # doctest: +SKIP
    ...     {"low variance": presets.low_variance(), "high variance": presets.high_variance()},
    ...     n_workers=[3, 10], n_items=[50, 100, 500], effect=[0.05, 0.1, 0.15, 0.2],
    ...     n_sims=200, test="z", alternative="two-sided", rng=2020)
    >>> grid.to_frame()  # doctest: +SKIP
    """
    from .. import __version__

    # ---- validate settings once, at the boundary
    from .models import check_test_options  # the same checks as nlpower.power

    n_sims = check_int("n_sims", n_sims, min=1)
    alpha, test, alternative = check_test_options(alpha, test, alternative)
    check_choice("engine", engine, ENGINES)
    check_choice("backend", backend, BACKENDS)
    n_jobs = check_int("n_jobs", n_jobs, min=-1)
    if n_jobs == 0:
        raise InputError("n_jobs must be a positive number of parallel jobs, or -1 for all cores; got 0.")
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    if power_fn is not None and not callable(power_fn):
        raise InputError(f"power_fn must be a callable like nlpower.power; got {type(power_fn).__name__}.")
    if client is not None and backend != "dask":
        raise InputError(f"client is only used with backend='dask'; got backend={backend!r}. "
                         "Pass backend='dask' or drop client.")

    scenarios, has_scenario = _scenarios(params)
    pfields = _params_fields(next(iter(scenarios.values())))
    named: dict[str, Any] = {"n_workers": n_workers, "n_items": n_items, "effect": effect}
    for name, value in axes.items():
        if name not in DESIGN_FIELDS and name not in pfields:
            allowed = [*DESIGN_FIELDS, *pfields]
            close = closest_name(name, allowed)
            raise InputError(
                f"unknown grid axis {name}={value!r}. Axes can be design fields "
                f"({', '.join(DESIGN_FIELDS)}) or parameter fields ({', '.join(pfields)})."
                + (f" Did you mean {close!r}?" if close else "")
            )
        named[name] = value
    if design is None:
        for req in ("n_workers", "n_items"):
            if named[req] is None:
                raise InputError(f"{req} is required when design is None; pass e.g. {req}="
                                 f"{list(FIGURE6_AXES[req])!r}, or a CrossedDesign as design=.")
    else:
        for req in ("n_workers", "n_items"):
            if named[req] is None:
                named[req] = getattr(design, req)
    has_effect = "effect" in pfields
    if not has_effect:
        if effect is not None:
            raise InputError(
                f"effect={effect!r}: these parameters ({type(next(iter(scenarios.values()))).__name__}) "
                "have no single 'effect' field; give their own fields as axes instead "
                f"(one of {', '.join(pfields)})."
            )
        del named["effect"]
    elif named["effect"] is None:
        effects = {_plain(p.effect) for p in scenarios.values()}
        named["effect"] = effects.pop() if len(effects) == 1 else None

    axis_values: dict[str, tuple[Any, ...]] = {}
    if has_scenario:
        axis_values["scenario"] = tuple(scenarios)
    for name, value in named.items():
        if value is None:  # effect differs between scenarios: keep each scenario's own
            continue
        axis_values[name] = _axis_values(name, value)
    columns = tuple(axis_values)
    if has_effect and "effect" not in axis_values:
        columns = (*columns, "effect")

    # ---- cells, in deterministic Cartesian order
    root = as_seed_sequence(rng)
    header = _ckpt.read_header(checkpoint) if checkpoint is not None else None
    if rng is None and header is not None:
        stored = header.get("fingerprint", {}).get("seed", {})
        root = np.random.SeedSequence(stored.get("entropy"), spawn_key=tuple(stored.get("spawn_key", ())))
    seed = {"entropy": root.entropy, "spawn_key": tuple(int(k) for k in root.spawn_key)}

    combos = list(product(*axis_values.values()))
    tasks: list[tuple[int, dict[str, Any], Any, Any]] = []
    for index, combo in enumerate(combos):
        key = dict(zip(axis_values, combo, strict=True))
        scen = scenarios[key["scenario"]] if has_scenario else scenarios[""]
        p_over = {k: v for k, v in key.items() if k in pfields and k not in DESIGN_FIELDS}
        d_over = {k: v for k, v in key.items() if k in DESIGN_FIELDS}
        try:
            cell_params = dataclasses.replace(scen, **p_over) if p_over else scen
            cell_design = _build_design(design, d_over)
        except InputError as exc:
            raise _with_context(exc, key) from exc
        if has_effect and "effect" not in key:
            key["effect"] = _plain(cell_params.effect)
        key = {c: key[c] for c in columns}
        tasks.append((index, key, cell_design, cell_params))

    fn = power_fn if power_fn is not None else _default_power()
    options: dict[str, Any] = {"n_sims": n_sims, "alpha": alpha, "test": test,
                               "alternative": alternative, "engine": engine}
    if REML is not None:
        options["REML"] = REML
    if likert is not None:
        options["likert"] = likert
    fingerprint = {
        "axes": {k: list(v) for k, v in axis_values.items()},
        "scenarios": {k: _params_dict(p) for k, p in scenarios.items()},
        "design": None if design is None else {f: _plain(getattr(design, f, None)) for f in DESIGN_FIELDS},
        "n_sims": n_sims, "alpha": alpha, "test": test, "alternative": alternative,
        "engine": engine, "REML": REML, "likert": likert, "seed": seed, "version": __version__,
        "power_fn": _fn_name(fn),
    }

    # ---- resume
    finished: dict[int, GridCell] = {}
    ckpt = None
    if checkpoint is not None:
        ckpt, done = _ckpt.open_checkpoint(checkpoint, fingerprint)
        for index, key, _, _ in tasks:
            rec = done.get(_cell_token(key))
            if rec is not None:
                finished[index] = GridCell(index, key, tuple(cell_seed(root, key).spawn_key),
                                           rec["record"], resumed=True)
    n_resumed = len(finished)
    todo = [t for t in tasks if t[0] not in finished]
    by_index = {t[0]: t for t in tasks}

    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), initial=n_resumed, desc="power grid", unit="cell",
               disable=not progress, file=sys.stderr)

    def on_done(index: int, record: dict[str, Any]) -> None:
        key = by_index[index][1]
        cseed = cell_seed(root, key)
        finished[index] = GridCell(index, key, tuple(cseed.spawn_key), record)
        if ckpt is not None:
            ckpt.append(_cell_token(key), index, list(cseed.spawn_key), record)
        bar.update(1)

    jobs = [(i, d, p, cell_seed(root, k)) for i, k, d, p in todo]
    try:
        if backend == "dask":
            _run_dask(fn, jobs, options, n_jobs, client, on_done)
        elif n_jobs == 1 or len(jobs) <= 1:
            for i, d, p, s in jobs:
                try:
                    result = _run_cell(fn, i, d, p, options, s)
                except Exception as exc:
                    if hasattr(exc, "add_note"):  # Python >= 3.11
                        where = ", ".join(f"{k}={v!r}" for k, v in by_index[i][1].items())
                        exc.add_note(f"(in power_grid cell {where})")
                    raise
                on_done(*result)
        else:
            _run_loky(fn, jobs, options, n_jobs, on_done)
    finally:
        bar.close()
        if ckpt is not None:
            ckpt.close()

    cells = tuple(finished[i] for i in range(len(tasks)))
    engines = {str(c.record.get("engine")) for c in cells if c.record.get("engine") is not None}
    return GridResult(
        columns=columns,
        axes={c: tuple(dict.fromkeys(cell.key[c] for cell in cells)) for c in columns},
        cells=cells, n_sims=n_sims, alpha=alpha, test=test, alternative=alternative,
        engine=engines.pop() if len(engines) == 1 else engine,
        seed=seed, version=__version__, n_resumed=n_resumed,
        checkpoint=None if checkpoint is None else str(Path(checkpoint)),
    )


def _fn_name(fn: CellFunction) -> str:
    """Stable name of the cell function for the fingerprint (no memory addresses)."""
    target = fn if hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"


def _run_loky(fn: CellFunction, jobs: list[tuple[int, Any, Any, Any]], options: Mapping[str, Any],
              n_jobs: int, on_done: Callable[[int, dict[str, Any]], None]) -> None:
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered")
    for index, record in par(delayed(_run_cell)(fn, i, d, p, options, s) for i, d, p, s in jobs):
        on_done(index, record)


def _run_dask(fn: CellFunction, jobs: list[tuple[int, Any, Any, Any]], options: Mapping[str, Any],
              n_jobs: int, client: Any, on_done: Callable[[int, dict[str, Any]], None]) -> None:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - dask is installed in the dev env
        raise EngineUnavailableError(
            "backend='dask' needs dask.distributed, which is not installed. "
            "Install it with: pip install 'nlpower[dask]' (or use backend='loky')."
        ) from exc
    own_client = own_cluster = None
    if client is None:
        try:
            client = distributed.get_client()
        except ValueError:
            own_cluster = distributed.LocalCluster(n_workers=n_jobs, threads_per_worker=1,
                                                   processes=True, dashboard_address=None)
            client = own_client = distributed.Client(own_cluster)
    futures = [client.submit(_run_cell, fn, i, d, p, options, s, pure=False) for i, d, p, s in jobs]
    try:
        for fut in distributed.as_completed(futures):
            index, record = fut.result()
            on_done(index, record)
    finally:
        client.cancel([f for f in futures if not f.done()])
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
