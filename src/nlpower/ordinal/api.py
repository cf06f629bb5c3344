"""``clmm``: the public entry point (formula + data -> prepared model -> fit)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..errors import InputError
from ..formula import Formula, parse
from ..lmm.engine import _FITTERS, get_engine
from ..lmm.family import Ordinal
from ..lmm.frame import FrameColumns, _check_inputs, frame_columns, spec_from_columns
from ..lmm.structure import ModelSpec
from .model import ClmmModel
from .response import OrdinalResponse, ordinal_response
from .result import ClmmFit

__all__ = ["clmm", "native_ordinal", "ordinal_frame", "prepare_clmm", "prepare_spec"]

ENGINES = ("native", "ordinal")
_NATIVE = "nlpower.ordinal.api:native_ordinal"      # the native engine's ordinal fitter


def ordinal_frame(formula: str, data: pd.DataFrame, *,
                  contrasts: Mapping[str, str] | None = None, warn: bool = True,
                  levels: Any = None) -> tuple[ModelSpec, OrdinalResponse, pd.DataFrame]:
    """The structure of ``formula`` on ``data``, its ordinal response and the rows fitted.

    Returns ``(spec, response, frame)``: ``spec.y`` holds the category codes,
    ``response`` their labels (unused categories listed), ``frame`` the
    formula's columns of the complete rows (what an R-backed fitter sends to R
    and what ``predict`` codes new data against).  This is what every engine's
    ordinal fitter is given (``prepare(spec, data=frame, family=...,
    response=response)``).  ``levels``: the scores of the rating scale
    (:func:`~.response.ordinal_response`).
    """
    spec, r, rows = _frame_parts(formula, data, contrasts, warn, levels)
    return spec, r, rows()


def _frame_parts(formula: str, data: pd.DataFrame, contrasts: Mapping[str, str] | None,
                 warn: bool, levels: Any
                 ) -> tuple[ModelSpec, OrdinalResponse, Callable[[], pd.DataFrame]]:
    """:func:`ordinal_frame` with the rows fitted left to be taken when first needed.

    A native fit never reads them (only ``predict`` and the R engine do), and
    taking them costs a tenth of a tiny fit.  The callable holds a shallow
    copy of ``data`` (copy-on-write: later edits of ``data`` do not reach it),
    which is also where the columns are read from.
    """
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"data must be a pandas DataFrame with one row per rating; got "
                         f"{type(data).__name__}.")
    f, contrasts_in = _check_inputs(_parse(formula) if isinstance(formula, str) else formula,
                                    data, contrasts)
    snapshot = data.copy(deep=False)
    cols = frame_columns(f, snapshot)    # unknown columns, missing rows dropped (with a warning)
    yv = cols.values[f.response]
    # integer scores go in as they are stored; other columns as a Series
    y = yv if isinstance(yv, np.ndarray) and yv.dtype.kind in "iu" else cols[f.response]
    r: OrdinalResponse = ordinal_response(y, f.response, warn=warn, levels=levels)
    spec = spec_from_columns(f, cols, contrasts_in, cols.names, y=r.codes.astype(float))
    return spec, r, functools.partial(_rows_fitted, snapshot, f, cols)


@functools.lru_cache(maxsize=64)
def _parse(formula: str) -> Formula:
    """:func:`~nlpower.formula.parse`, remembered (a power run fits one formula many times)."""
    return parse(formula)


def _rows_fitted(data: pd.DataFrame, f: Formula, cols: FrameColumns) -> pd.DataFrame:
    """The formula's columns of the rows fitted, indexed 0 .. n-1 (what ``predict`` codes against)."""
    out = data.take([k for k, c in enumerate(data.columns) if str(c) in f.variables], axis=1)
    if cols.rows is not None:
        out = out.take(cols.rows)
    idx = out.index
    if not (isinstance(idx, pd.RangeIndex) and idx.start == 0 and idx.step == 1):
        out = out.reset_index(drop=True)
    return out


def prepare_clmm(formula: str, data: pd.DataFrame, *, link: str = "logit",
                 threshold: str = "flexible", nAGQ: int = 1,
                 contrasts: Mapping[str, str] | None = None,
                 warn: bool = True, levels: Any = None) -> ClmmModel:
    """Build the native :class:`~.model.ClmmModel` of ``formula`` on ``data`` (no fit)."""
    family = Ordinal(link, threshold)  # type: ignore[arg-type]
    spec, r, frame = ordinal_frame(formula, data, contrasts=contrasts, warn=warn, levels=levels)
    return native_ordinal(spec, data=frame, family=family, nAGQ=nAGQ, response=r)


def prepare_spec(spec: ModelSpec, family: Ordinal, *, nAGQ: int = 1) -> ClmmModel:
    """The :class:`~.model.ClmmModel` of a structure whose ``y`` holds integer scores.

    The engine protocol's entry (``get_engine("native").prepare(spec, family=Ordinal())``).

    Examples
    --------
    >>> import pandas as pd
    >>> from nlpower.lmm.frame import model_frame
    >>> d = pd.DataFrame({"y": [1, 2, 3, 2, 3, 1, 2, 3], "g": list("aabbccdd")})
    >>> prepare_spec(model_frame("y ~ (1 | g)", d), Ordinal()).levels
    ('1', '2', '3')
    """
    r = ordinal_response(np.asarray(spec.y), spec.response)
    return ClmmModel(spec.with_response(r.codes.astype(float)), family, r, nAGQ=nAGQ)


def native_ordinal(spec: ModelSpec, *, data: Any = None, family: Ordinal | None = None,
                   nAGQ: int = 1, response: OrdinalResponse | None = None) -> ClmmModel:
    """The native engine's fitter for the ordinal family (the engine registry's entry).

    ``response``: the labels of the codes in ``spec.y`` (from
    :func:`ordinal_frame`; default: ``spec.y``'s distinct values, in order).
    ``data``: the rows fitted (kept for ``predict``; optional).
    """
    fam = family if family is not None else Ordinal()
    if response is None:
        model = prepare_spec(spec, fam, nAGQ=nAGQ)
    else:
        model = ClmmModel(spec, fam, response, nAGQ=nAGQ)
    model.data = data
    return model


def clmm(formula: str, data: pd.DataFrame, *, link: str = "logit", threshold: str = "flexible",
         nAGQ: int = 1, engine: str = "native", start: Any = None,
         control: dict[str, Any] | None = None, contrasts: Mapping[str, str] | None = None,
         checkconv: Any = None, levels: Any = None) -> ClmmFit:
    """Fit a cumulative link mixed model (``ordinal::clmm``) by maximum likelihood.

    ``P(Y <= j | b) = F(theta_j - x'beta - z'b)`` with ``F`` the inverse link
    (logistic, normal or Gumbel-min CDF) and ``b ~ N(0, Sigma)`` per level of
    each grouping factor (lme4-style terms: crossed, nested, slopes, ``||``).

    Parameters
    ----------
    formula : str
        ``"rating ~ system + (1 + system | worker) + (1 | item)"``.  The
        intercept is absorbed by the thresholds.
    data : pandas.DataFrame
        One row per rating.  The response is an *ordered* ``Categorical`` or
        integer scores; categories nobody used are dropped (thresholds either
        side merge) and listed in ``fit.unused_categories``.
    link : {"logit", "probit", "cloglog"}
    threshold : {"flexible", "equidistant", "symmetric"}
        ``ordinal``'s threshold structures (equidistant and symmetric need
        at least 3 categories).
    nAGQ : int
        1: Laplace approximation; > 1: adaptive Gauss-Hermite with that many
        nodes (one scalar random-effect term only).
    engine : {"native", "ordinal"}
        The engine (:func:`nlpower.lmm.get_engine`): ``"native"``, this
        package's fitter; ``"ordinal"``, R's ``ordinal::clmm`` through rpy2
        (the reference; needs R and rpy2; :mod:`nlpower.ordinal.rclmm`).
    start : array, optional
        ``(alpha, beta, theta)``: thresholds, fixed effects, random-effect
        parameters (native engine; R chooses its own start).
    control : dict, optional
        Native: ``maxiter``, ``gtol``, ``ftol`` (L-BFGS-B).  ``ordinal``:
        passed to ``clmm.control``.
    contrasts : dict, optional
        Factor codings as :func:`nlpower.lmm.lmer`.
    checkconv : dict or str, optional
        lme4-style convergence-check policies (``nlpower.lmm.checkconv``);
        default: warn.
    levels : sequence of int, optional
        For integer scores: the scores of the rating scale, e.g.
        ``range(1, 6)`` for Likert 1-5, so that scores nobody gave are
        reported in ``fit.unused_categories`` (default: the distinct scores
        in the data).  A score outside ``levels`` is an error.

    Returns
    -------
    ClmmFit

    Raises
    ------
    InputError
        Unordered or non-integer responses, scores outside ``levels``, a
        single category, too few categories for the thresholds, unknown
        columns (``FormulaError``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import nlpower
    >>> rng = np.random.default_rng(1)
    >>> d = pd.DataFrame({"judge": np.repeat(np.arange(12), 20), "x": rng.normal(size=240)})
    >>> latent = 0.8 * d.x + np.repeat(rng.normal(size=12), 20) + rng.logistic(size=240)
    >>> d["rating"] = np.digitize(latent, [-2.0, -0.5, 0.5, 2.0]) + 1
    >>> fit = nlpower.clmm("rating ~ x + (1 | judge)", d)
    >>> fit.converged, round(float(fit.fixef["x"]), 1)
    (True, 0.8)
    """
    eng = get_engine(check_choice("engine", engine, ENGINES))
    family = Ordinal(link, threshold)  # type: ignore[arg-type]
    spec, response, rows = _frame_parts(formula, data, contrasts, True, levels)
    if engine == "native" and _FITTERS.get(("native", "ordinal")) == _NATIVE:
        # the rows fitted are taken if predict or a user reads model.data
        model: Any = native_ordinal(spec, family=family, nAGQ=nAGQ, response=response)
        model.data = rows
    else:
        model = eng.prepare(spec, data=rows(), family=family, nAGQ=nAGQ, response=response)
    fit = cast(ClmmFit, model.fit(start=start, control=control, checkconv=checkconv))
    fit.warn_diagnostics(checkconv)
    return fit
