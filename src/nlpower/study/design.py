"""A fitted model as the truth of a power study: structure, parameters, and the rows it runs on.

:class:`ModelDesign` is what simr keeps inside a ``merMod``: the formula and
family of a fitted ``lmer``/``glmer``/``clmm`` model, its parameters (as
fitted, or set with ``fit.with_params``), and the rows of data it generates
responses for -- the pilot's own, or the pilot's extended along a grouping
factor or a covariate (:meth:`ModelDesign.extend`, simr's ``extend``).

The design is rebuilt through the same model frames as the fitters
(:func:`~nlpower.lmm.frame.model_frame`, ``glmm_frame``, ``ordinal_frame``)
and prepared by an engine (:func:`~nlpower.lmm.get_engine`), so a simulated
response is exactly what the model says and the analysis refits it on the
same structure.  The response column of the rows is a placeholder (the
pilot's values, or for binary and ordinal models a pattern that uses every
category), replaced by each simulated response.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .._validation import closest_name
from ..errors import InputError
from ..formula import parse
from ..glmm import GlmmFit, glmm_frame
from ..lmm import LmmFit, get_engine, model_frame
from ..lmm.family import Family, Gaussian, Ordinal, get_family
from ..lmm.fitbase import check_n_draws
from ..lmm.setparams import check_dispersion, set_fixef, set_theta
from ..mixed.layout import theta_layout
from ..ordinal import ClmmFit
from ..ordinal.api import ordinal_frame

__all__ = ["ModelDesign", "model_design"]

#: hidden columns of a GLMM design that carry the pilot's prior weights and offset
WEIGHTS, OFFSET = ".nlpower_weights", ".nlpower_offset"


@dataclass(frozen=True, eq=False)
class ModelDesign:
    """A mixed model with known parameters on a set of rows: what a power study simulates.

    Build it with :func:`model_design` (``nlpower.power`` does this for a
    fitted model); :meth:`extend` and :meth:`first` give other designs.

    Attributes
    ----------
    formula : str
        The model (lme4 syntax).
    family : Family
        Gaussian, binomial, Poisson, negative binomial (its ``theta``: the true
        dispersion) or ordinal (cumulative link).
    data : DataFrame
        The rows responses are simulated for.
    fixef : Series
        True fixed effects (link or latent scale).
    theta : ndarray
        True relative covariance parameters, lme4's order.
    sigma : float
        Residual SD (1 for non-Gaussian families).
    alpha : ndarray
        Ordinal threshold parameters (empty for other families).
    options : dict
        What the model frame needs beside the formula: ``contrasts``,
        ``nAGQ`` (GLMMs also ``laplace``), and for ordinal models ``levels``.
    """

    formula: str
    family: Family
    data: pd.DataFrame = field(repr=False)
    fixef: pd.Series
    theta: np.ndarray
    sigma: float = 1.0
    alpha: np.ndarray = field(default_factory=lambda: np.zeros(0))
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def nobs(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        fx = ", ".join(f"{k}={v:.4g}" for k, v in self.fixef.items())
        return (f"ModelDesign({self.formula!r}, {self.family.name}: {fx}; "
                f"{self.nobs} rows)")

    # -- structure -------------------------------------------------------------------
    def prepare(self, formula: str | None = None, *, engine: str = "native",
                drop: str | None = None) -> Any:
        """The engine's prepared model of ``formula`` (default: the design's) on these rows.

        ``drop``: a coefficient (column of the fixed part) left out (the null
        model of a one-df likelihood-ratio test).
        """
        spec, data, options = self.frame(formula)
        if drop is not None:
            keep = [j for j, c in enumerate(spec.fixef_names) if c != drop]
            spec = replace(spec, X=spec.X[:, keep],
                           fixef_names=tuple(spec.fixef_names[j] for j in keep))
        return get_engine(engine).prepare(spec, data=data, **options)  # type: ignore[arg-type]

    def frame(self, formula: str | None = None, data: pd.DataFrame | None = None
              ) -> tuple[Any, Any, dict[str, Any]]:
        """``(spec, rows, options)``: the model frame of ``formula`` on ``data`` (default: the
        design's rows) and what the family's fitter takes beside it."""
        f = self.formula if formula is None else formula
        rows = self.data if data is None else data
        used = set(parse(f).variables)
        contrasts = {k: v for k, v in dict(self.options.get("contrasts") or {}).items()
                     if k in used} or None
        return design_frame(self.family, f, rows, contrasts, self.options)

    def start(self, names: Sequence[str] | None = None, *, same_random: bool = True) -> Any:
        """Warm start at the truth for a model with fixed effects ``names`` (None: these)."""
        beta = (self.fixef.to_numpy() if names is None else
                np.array([float(self.fixef.get(n, 0.0)) for n in names]))
        return self.family.warm_start(self.theta, beta, self.alpha) if same_random else None

    def simulate(self, n: int = 1, *, rng: Any = None, model: Any = None) -> np.ndarray:
        """``n`` responses at the true parameters, shape ``(n, nobs)`` (new random effects each).

        ``model``: a prepared model of this design (:meth:`prepare`), to reuse.
        """
        n = check_n_draws(n)
        m = self.prepare() if model is None else model
        # every family's prepared model reads theta, fixef and (where it has them) sigma, alpha
        return np.asarray(m.simulate(n, rng=rng, params=self))

    def with_params(self, *, fixef: Mapping[str, float] | None = None,
                    sd: Mapping[str, Any] | None = None, sigma: float | None = None,
                    dispersion: float | None = None) -> ModelDesign:
        """The design with parameters set, as ``fit.with_params`` (:mod:`nlpower.lmm.setparams`);
        ``dispersion``: the family's own parameter (negative binomial ``theta``)."""
        family = self.family.with_dispersion(check_dispersion(dispersion))
        spec = self.prepare().spec
        lay = theta_layout(spec.re_terms)
        if sigma is not None and not self.family.has_sigma:
            raise InputError(f"sigma: a {self.family.name} model has no residual SD; set fixef= "
                             "and sd= only.")
        new_sigma = self.sigma if sigma is None else float(sigma)
        if not new_sigma > 0:
            raise InputError(f"sigma must be a finite number > 0; got {sigma!r}.")
        theta = set_theta(lay, self.theta, sd, scale=self.sigma, new_scale=new_sigma,
                          aliases=spec.aliases)
        return replace(self, fixef=set_fixef(self.fixef, fixef, spec.aliases), theta=theta,
                       sigma=new_sigma,
                       family=family)

    # -- other designs -----------------------------------------------------------------
    def extend(self, along: str | None = None, *, n: int | None = None,
               within: str | Sequence[str] | None = None,
               values: Sequence[Any] | None = None) -> ModelDesign:
        """The design extended to ``n`` levels ``along`` a variable, or ``n`` rows ``within`` groups.

        simr's ``extend``: ``along="worker", n=40`` gives 40 workers, new
        worker ``k`` rating what pilot worker ``k mod W`` rated (the
        within-level layout kept); a numeric ``along`` (e.g. ``"x"``) takes
        the values ``1..n`` (or ``values``); ``within="worker + system"``
        repeats every combination's rows until each has ``n`` replicates.
        Parameters are unchanged.
        """
        from .extension import extend_rows
        return replace(self, data=extend_rows(self.data, self.formula, along=along, n=n,
                                              within=within, values=values))

    def first(self, along: str, n: int) -> ModelDesign:
        """The rows of the first ``n`` levels (in order of appearance) of ``along``: a power curve's point."""
        col = _column(self.data, along)
        levels = pd.unique(col)
        if not 1 <= n <= len(levels):
            raise InputError(f"breaks: {n} levels of {along!r} asked for; the design has "
                             f"{len(levels)} (extend it first: nlpower.extend(model, along="
                             f"{along!r}, n=...)).")
        keep = col.isin(levels[:n]).to_numpy()
        return replace(self, data=self.data.loc[keep].reset_index(drop=True))


@functools.singledispatch
def design_frame(family: Family, formula: str, rows: pd.DataFrame, contrasts: Any,
                 options: Mapping[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """``(spec, rows, fitter options)`` of ``formula`` on ``rows`` for ``family`` (by its type).

    GLM families (any ``family.is_glm``): ``glmm_frame`` with the design's
    hidden prior weights and offset columns; a family of another kind
    registers its own (``design_frame.register``).

    Examples
    --------
    >>> from nlpower.lmm.family import Poisson
    >>> d = pd.DataFrame({"y": [0, 1, 2, 3], "g": list("aabb")})
    >>> spec, rows, options = design_frame(Poisson(), "y ~ (1 | g)", d, None, {})
    >>> spec.n, sorted(options)
    (4, ['family', 'nAGQ', 'offset', 'weights'])
    """
    if not family.is_glm:
        raise InputError(f"family={family!r}: no model frame is registered for this family "
                         "(register one with nlpower.study.design.design_frame.register).")
    cols = set(map(str, rows.columns))
    spec, wt, off, _ = glmm_frame(formula, rows, family,
                                  weights=WEIGHTS if WEIGHTS in cols else None,
                                  offset=OFFSET if OFFSET in cols else None,
                                  contrasts=contrasts)
    laplace = options.get("laplace", "expected")
    extra = {} if laplace == "expected" else {"laplace": laplace}
    return spec, rows, {"family": family, "weights": wt, "offset": off,
                        "nAGQ": int(options.get("nAGQ", 1)), **extra}


@design_frame.register
def _(family: Gaussian, formula: str, rows: pd.DataFrame, contrasts: Any,
      options: Mapping[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    return model_frame(formula, rows, contrasts=contrasts), rows, {}


@design_frame.register
def _(family: Ordinal, formula: str, rows: pd.DataFrame, contrasts: Any,
      options: Mapping[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    spec, response, fitted = ordinal_frame(formula, rows, contrasts=contrasts, warn=False)
    return spec, fitted, {"family": family, "response": response,
                          "nAGQ": int(options.get("nAGQ", 1))}


def _column(data: pd.DataFrame, name: str) -> pd.Series:
    if name not in data.columns:
        hint = closest_name(name, list(map(str, data.columns)))
        raise InputError(f"no column {name!r} in the model's data" +
                         (f"; did you mean {hint!r}?" if hint else
                          f" (columns: {', '.join(map(str, data.columns))})."))
    return data[name]


def _placeholder(data: pd.DataFrame, response: str, family: Family, levels: Sequence[Any]
                 ) -> pd.DataFrame:
    """The response column replaced by a pattern that every model frame accepts."""
    d = data.copy()
    y = family.placeholder(len(d), levels)
    if y is not None:
        d[response] = y
    return d


def model_design(model: Any) -> ModelDesign:
    """The :class:`ModelDesign` of a fitted ``lmer``/``glmer``/``clmm`` model (or a design).

    Raises
    ------
    InputError
        Not a fitted model, or a fit that does not carry its data (fit with
        :func:`nlpower.lmer`, :func:`nlpower.glmer` or :func:`nlpower.clmm`).
    """
    if isinstance(model, ModelDesign):
        return model
    if not isinstance(model, (LmmFit, GlmmFit, ClmmFit)):
        raise InputError(f"expected a fitted model (nlpower.lmer / glmer / clmm) or a "
                         f"ModelDesign; got {type(model).__name__}. For the paper's "
                         "design-and-parameters power use nlpower.power(CrossedDesign(...), params).")
    data = model.data
    if not isinstance(data, pd.DataFrame):
        raise InputError("this fit does not carry the rows it was fitted on; fit the model with "
                         "nlpower.lmer, nlpower.glmer or nlpower.clmm and pass that fit.")
    response = parse(model.formula).response if hasattr(model, "formula") else ""
    if isinstance(model, LmmFit):
        return ModelDesign(model.formula, get_family("gaussian"), data.copy(), model.fixef.copy(),
                           np.asarray(model.theta, dtype=float).copy(), float(model.sigma),
                           options={"contrasts": dict(model.contrasts)})
    if isinstance(model, GlmmFit):
        d = data.copy()
        m = model.model
        wt = np.asarray(m.wt if hasattr(m, "wt") else m.native.wt, dtype=float)
        if not np.all(wt == 1.0):
            d[WEIGHTS] = wt
        off = model._offset()
        if np.any(off != 0):
            d[OFFSET] = off
        fam = get_family(model.family, model.link).with_dispersion(model.dispersion)
        d = _placeholder(d, response, fam, ())
        return ModelDesign(model.formula, fam, d, model.fixef.copy(),
                           np.asarray(model.theta, dtype=float).copy(),
                           options={"contrasts": dict(model.contrasts), "nAGQ": model.nAGQ,
                                    "laplace": model.optinfo.get("laplace", "expected")})
    if isinstance(model, ClmmFit):
        m = model.model
        fam = Ordinal(m.link.name, m.thr.kind)  # type: ignore[arg-type]
        levels = list(model.categories)
        d = _placeholder(data, response, fam, levels)
        return ModelDesign(model.formula, fam, d, model.fixef.copy(),
                           np.asarray(model.theta, dtype=float).copy(),
                           alpha=np.asarray(model.core.alpha, dtype=float).copy(),
                           options={"contrasts": dict(m.spec.contrasts), "nAGQ": int(m.nAGQ),
                                    "levels": levels})
    raise InputError(f"expected a fitted model (nlpower.lmer / glmer / clmm) or a ModelDesign; "
                     f"got {type(model).__name__}. For the paper's design-and-parameters power "
                     "use nlpower.power(CrossedDesign(...), params).")
