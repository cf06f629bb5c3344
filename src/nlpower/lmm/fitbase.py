"""What every mixed-model fit has: :class:`MixedFit`, the base of ``LmmFit``, ``GlmmFit``, ``ClmmFit``.

A fit is a frozen snapshot: its estimates, the rows it was fitted on (a copy,
``data``), the typed optimiser summary (:class:`OptSummary`) and the
prepared structure it came from (``model``, for ``simulate``, ``refit`` and
``with_params``).  The shared API lives here once -- ``fixef``, ``ranef``
(with conditional variances), ``varcorr``, ``vcov``, ``loglik``/``aic``/
``bic``/``deviance``, ``summary``, ``to_frame``, ``predict``, ``simulate``,
``refit``, ``with_params``, ``converged``, ``singular``, ``optsum`` -- and a
family fills a few hooks (its residual row, its scale, how it refits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..errors import InputError
from ..mixed.layout import theta_layout
from .names import coef_aliases
from .setparams import set_fixef, set_theta, term_covariances
from .verbs import FitVerbs

__all__ = ["MixedFit", "OptSummary", "VarTerm", "check_n_draws", "numeric_response", "var_terms_at",
           "varcorr_frame"]


@dataclass(frozen=True, eq=False)
class VarTerm:
    """One random-effects term of the fit, for VarCorr: group name, columns, covariance."""

    grp: str          # lme4's (make.unique) name
    group: str        # the grouping factor
    cnames: tuple[str, ...]
    cov: np.ndarray   # (q, q) covariance matrix (sigma^2 Lambda Lambda')


def var_terms_at(layout: Any, theta: np.ndarray, scale: float = 1.0) -> tuple[VarTerm, ...]:
    """Each term's covariance ``scale^2 Lambda Lambda'`` with lme4's group names
    (``layout``: a :class:`~nlpower.mixed.layout.ThetaLayout`; ``scale``: sigma, or 1)."""
    covs = term_covariances(layout, np.asarray(theta, dtype=float), scale)
    return tuple(VarTerm(grp, t.group, tuple(t.cnames), c)
                 for t, grp, c in zip(layout.terms, layout.grp_names, covs, strict=True))


def varcorr_frame(terms: list[VarTerm], sigma: float | None,
                  residual: str = "Residual") -> pd.DataFrame:
    """R's ``as.data.frame(VarCorr(fit))``: variances, then covariances, per term.

    ``sigma``: the residual SD (its row is named ``residual``); ``None``: no residual row.
    """
    rows: list[tuple[Any, ...]] = []
    for t in terms:
        sd = np.sqrt(np.diag(t.cov))
        for i, c in enumerate(t.cnames):
            rows.append((t.grp, c, None, float(t.cov[i, i]), float(sd[i])))
        q = len(t.cnames)
        for j in range(q):
            for i in range(j + 1, q):
                cov = float(t.cov[i, j])
                den = sd[i] * sd[j]
                cor = cov / den if den > 0 else float("nan")
                rows.append((t.grp, t.cnames[j], t.cnames[i], cov, cor))
    if sigma is not None:
        rows.append((residual, None, None, sigma * sigma, sigma))
    return pd.DataFrame(rows, columns=["grp", "var1", "var2", "vcov", "sdcor"])


@dataclass(frozen=True)
class OptSummary:
    """What the optimiser and the post-fit checks found (MixedModels.jl's ``OptSummary``).

    Every family's and engine's fit has one (``fit.optsum``); code reads these
    typed fields, never the engine's ``optinfo`` dict.

    Attributes
    ----------
    optimizer : str
        E.g. ``"nlopt LN_BOBYQA"`` or ``"lme4 nloptwrap"``.
    n_evals : int
        Objective evaluations.
    message : str
        The optimiser's message.
    optimizer_converged : bool
        The optimiser met its own tolerances.
    converged : bool
        ``optimizer_converged`` and the gradient check passed (``fit.converged``;
        :func:`nlpower.lmm.checkconv.fit_converged`).
    check_messages : tuple of str
        Findings of lme4's ``checkConv`` (gradient, Hessian, singular fit), in
        lme4's wording; :func:`nlpower.lmm.checkconv.report_convergence` warns
        or raises on them.
    warnings : tuple of str
        Other warnings the engine reported (lme4: R's warnings).
    max_grad : float
        ``max_i min(|scaled_i|, |g_i|)`` at the optimum (nan when not computed).
    notes : tuple of str
        Structural facts the check recorded that are no finding and raise no
        warning (the native engine: the flat ridge of an ``(f || g)`` term).

    Examples
    --------
    >>> OptSummary.from_optinfo({"optimizer": "nlopt LN_BOBYQA", "n_evals": 40, "message": "ok",
    ...                          "converged": True}).optimizer_converged
    True
    """

    optimizer: str
    n_evals: int
    message: str
    optimizer_converged: bool
    converged: bool
    check_messages: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    max_grad: float = math.nan
    notes: tuple[str, ...] = ()

    @classmethod
    def from_optinfo(cls, optinfo: dict[str, Any]) -> OptSummary:
        """From an engine's ``optinfo`` (the one place its keys are read)."""
        check = optinfo.get("checkconv") or {}
        conv_messages = tuple(str(m) for m in optinfo.get("conv_messages", ()))
        messages = tuple(str(m) for m in check.get("messages", ())) + conv_messages
        warns = tuple(str(w) for w in optinfo.get("warnings", ()) if w not in conv_messages)
        converged = bool(optinfo.get("converged", True))
        if "optimizer_converged" in optinfo:
            opt_ok = bool(optinfo["optimizer_converged"])
        elif "nlopt_converged" in optinfo:
            opt_ok = bool(optinfo["nlopt_converged"])
        else:  # lme4: an optimiser warning that is not one of checkConv's messages
            opt_ok = not any("converge" in w for w in warns)
        mg = optinfo.get("max_grad", check.get("max_grad", math.nan))
        return cls(optimizer=str(optinfo.get("optimizer", "")),
                   n_evals=int(optinfo.get("n_evals", 0)), message=str(optinfo.get("message", "")),
                   optimizer_converged=opt_ok, converged=converged,
                   check_messages=messages, warnings=warns,
                   max_grad=float(mg) if mg is not None else math.nan,
                   notes=tuple(str(m) for m in check.get("notes", ())))


def check_n_draws(n: Any) -> int:
    """``n`` of ``simulate(n)``: a positive whole number, refused in words otherwise."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"n must be a positive integer (the number of responses to draw); "
                         f"got {n!r}.")
    return int(n)


def numeric_response(y: Any) -> Any:
    """``y`` of ``refit(y)``, refused in words when it is not numbers (text, dates, objects)."""
    arr = np.asarray(y)
    if arr.dtype.kind in "biuf":
        return y
    try:
        return np.asarray(arr, dtype=float)
    except (TypeError, ValueError):
        bad = next((v for v in arr.ravel() if not _is_number(v)), None)
        raise InputError(f"y must be numbers, one response per row of the design; got "
                         f"{str(bad)!r} ({arr.dtype}). Convert the response first (e.g. "
                         "pd.to_numeric), or pass what simulate() returns.") from None


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


@dataclass(frozen=True, eq=False, kw_only=True)
class MixedFit(FitVerbs):
    """A fitted mixed model of any family: the shared, frozen part.

    Attributes
    ----------
    formula, engine : the model and the engine that fitted it.
    fixef : Series of fixed-effects estimates (link or latent scale).
    vcov : DataFrame, covariance matrix of the estimates (``LmmFit``/``GlmmFit``:
        the fixed effects, lme4's ``vcov``; ``ClmmFit``: thresholds, fixed
        effects and ``theta``, ``ordinal``'s ``vcov``).
    theta, theta_names : relative covariance parameters in lme4's order.
    loglik, deviance : ``deviance = -2 loglik`` (a REML fit: the REML criterion).
    nobs, ngrps : observations; levels per grouping factor.
    converged, singular : the optimiser and gradient check passed; a variance
        component on its boundary.  ``optsum`` has the details.
    optinfo : the engine's raw record (read only by ``OptSummary.from_optinfo``).
    contrasts : coding of each factor of the fixed part.
    model : the prepared structure (``simulate``, ``refit``, ``with_params``).
    data : a copy of the rows of the user's data the model was fitted on.
    params_set : the parameters were set by ``with_params`` (the truth of a
        power study, not estimates; ``vcov``, ``ranef`` and the likelihood are
        still the original fit's).
    """

    formula: str
    engine: str
    fixef: pd.Series
    vcov: pd.DataFrame
    theta: np.ndarray
    theta_names: tuple[str, ...] = ()
    loglik: float
    deviance: float
    nobs: int
    ngrps: dict[str, int]
    converged: bool
    singular: bool
    optinfo: dict[str, Any]
    contrasts: dict[str, str] = field(default_factory=dict)
    var_terms: tuple[VarTerm, ...] = field(default=(), repr=False)
    ranef_tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    model: Any = field(default=None, repr=False)
    data: pd.DataFrame | None = field(default=None, repr=False)
    params_set: bool = False
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # a snapshot: later changes to the caller's frame do not reach the fit
        if isinstance(self.data, pd.DataFrame) and not self.data.attrs.get("_nlpower_snapshot"):
            snap = self.data.copy()
            snap.attrs["_nlpower_snapshot"] = True
            object.__setattr__(self, "data", snap)

    # -- the family's hooks --------------------------------------------------------------
    #: the residual row of ``varcorr()`` (None: the family has none)
    _residual_name: ClassVar[str | None] = None

    def _residual_sd(self) -> float:
        return 1.0

    def _scale(self) -> float:
        """The SD the random effects' ``Lambda`` is relative to (Gaussian: sigma)."""
        return 1.0

    def _n_extra(self) -> int:
        """Parameters besides ``fixef`` and ``theta`` (Gaussian: sigma; ordinal: thresholds)."""
        return 0

    def _fixef_offset(self) -> int:
        """Where the fixed effects start in ``vcov`` (ordinal: after the thresholds)."""
        return 0

    def _fit_again(self, model: Any, y: Any) -> MixedFit:
        raise NotImplementedError

    def _with(self, fixef: pd.Series, theta: np.ndarray, sigma: float) -> MixedFit:
        raise NotImplementedError

    def _coef_rows(self) -> pd.DataFrame:
        """Columns ``effect, term, estimate, std_error, statistic, p_value``."""
        raise NotImplementedError

    def _condvar_weights(self) -> tuple[np.ndarray, float]:
        """``(w, s2)``: ``Var(u | y) = s2 (Lambda'Z'WZ Lambda + I)^-1`` at the modes."""
        raise NotImplementedError

    # -- estimates ---------------------------------------------------------------------
    @property
    def optsum(self) -> OptSummary:
        """The typed optimiser summary (:class:`OptSummary`)."""
        if "optsum" not in self._cache:
            self._cache["optsum"] = OptSummary.from_optinfo(self.optinfo)
        return self._cache["optsum"]  # type: ignore[no-any-return]

    @property
    def se(self) -> pd.Series:
        """Standard errors of the fixed effects."""
        V = np.asarray(self.vcov, dtype=float)
        p = self.fixef.size
        a = self._fixef_offset()
        return pd.Series(np.sqrt(np.maximum(np.diag(V)[a:a + p], 0.0)), index=self.fixef.index,
                         name="se")

    @property
    def n_params(self) -> int:
        """Number of estimated parameters (lme4's ``attr(logLik(m), "df")``)."""
        return int(self.fixef.size + self.theta.size + self._n_extra())

    @property
    def aic(self) -> float:
        return -2.0 * self.loglik + 2.0 * self.n_params

    @property
    def bic(self) -> float:
        return -2.0 * self.loglik + math.log(self.nobs) * self.n_params

    def varcorr(self) -> pd.DataFrame:
        """Variance components as R's ``as.data.frame(VarCorr(fit))``.

        Columns ``grp, var1, var2, vcov, sdcor``: one row per variance
        (``var2`` missing, ``sdcor`` = SD), then per covariance (``sdcor`` =
        correlation), then the residual (Gaussian: ``Residual``; ordinal: the
        latent residual fixed by the link; GLMMs have none).
        """
        sd = self._residual_sd() if self._residual_name is not None else None
        return varcorr_frame(list(self.var_terms), sd, self._residual_name or "")

    def ranef(self, condvar: bool = False) -> Any:
        """Conditional modes of the random effects (lme4's ``ranef``).

        ``condvar=False``: one DataFrame per grouping factor (levels by
        columns).  ``condvar=True``: the long table of
        ``as.data.frame(ranef(fit, condVar = TRUE))``, columns ``grpvar,
        term, grp, condval, condsd``: the conditional SDs are the diagonal of
        ``s^2 Lambda (Lambda' Z' W Z Lambda + I)^{-1} Lambda'`` at the modes
        (Gaussian: ``s = sigma``, ``W = I``; GLMM: PIRLS's working weights;
        ordinal: ``-d^2 log p / d eta^2`` of each rating), lme4's ``condVar``.
        """
        tables = {k: v.copy() for k, v in self.ranef_tables.items()}
        if not condvar:
            return tables
        sds = self._condsd()
        rows = []
        for g, tab in tables.items():
            for c in tab.columns:
                sd = sds.get((g, str(c)))
                for i, lv in enumerate(tab.index):
                    rows.append((g, str(c), lv, float(tab[c].iloc[i]),
                                 float(sd[i]) if sd is not None else math.nan))
        return pd.DataFrame(rows, columns=["grpvar", "term", "grp", "condval", "condsd"])

    def _condsd(self) -> dict[tuple[str, str], np.ndarray]:
        from scipy import sparse

        from ..mixed.relfactor import relative_factor
        spec = self._structure("ranef(condvar=True)").spec
        lay = theta_layout(spec.re_terms)
        w, s2 = self._condvar_weights()
        n = spec.n
        blocks, lams, starts, Q = [], [], [], 0
        for t, off in zip(lay.terms, lay.term_offsets, strict=True):
            lam = relative_factor(np.asarray(self.theta, dtype=float)[off:], t.q)
            A = np.asarray(t.Z, dtype=float) @ lam            # (n, q): rows of Z Lambda
            cols = Q + np.asarray(t.codes)[:, None] * t.q + np.arange(t.q)[None, :]
            blocks.append((A, cols))
            lams.append(lam)
            starts.append(Q)
            Q += t.n_levels * t.q
        data = np.concatenate([a.ravel() for a, _ in blocks])
        rows = np.concatenate([np.repeat(np.arange(n), a.shape[1]) for a, _ in blocks])
        cols = np.concatenate([c.ravel() for _, c in blocks])
        ZL = sparse.csr_matrix((data, (rows, cols)), shape=(n, Q))
        P = (ZL.T @ sparse.diags(np.asarray(w, dtype=float)) @ ZL).toarray() + np.eye(Q)
        Pinv = np.linalg.inv(P)
        out: dict[tuple[str, str], np.ndarray] = {}
        for t, lam, s in zip(lay.terms, lams, starts, strict=True):
            var = np.empty((t.n_levels, t.q))
            for lv in range(t.n_levels):
                k = s + lv * t.q
                var[lv] = np.diag(lam @ Pinv[k:k + t.q, k:k + t.q] @ lam.T)
            for j, c in enumerate(t.cnames):
                out[(t.group, str(c))] = np.sqrt(np.maximum(s2 * var[:, j], 0.0))
        return out

    # -- the fit protocol: set parameters, simulate, refit ------------------------------
    def _structure(self, verb: str) -> Any:
        if self.model is None:
            raise InputError(f"{verb} needs the model structure, which this fit does not carry; "
                             "fit the model with nlpower.lmer, glmer or clmm.")
        return self.model

    def with_params(self, *, fixef: Mapping[str, float] | None = None,
                    sd: Mapping[str, Any] | None = None, sigma: float | None = None) -> Any:
        """A copy whose parameters are set (simr's ``fixef<-``, ``VarCorr<-``, ``sigma<-``).

        Parameters
        ----------
        fixef : mapping, optional
            Fixed effects by name, e.g. ``{"x": -0.05}`` (link or latent
            scale; lme4's names such as ``"system1"`` are aliases of
            ``"system[A]"``); the others keep their value.
        sd : mapping, optional
            Random-effect SDs by term (the ``grp`` of :meth:`varcorr`): a
            number for a one-column term, ``{column: sd}`` otherwise
            (:mod:`nlpower.lmm.setparams`).  Correlations are kept.
        sigma : float, optional
            Residual SD of a Gaussian model (the random-effect SDs stay as
            they are); refused by the other families, whose residual
            variance follows from the mean or the link.

        Examples
        --------
        >>> import pandas as pd, nlpower
        >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
        >>> m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
        >>> m2 = m.with_params(fixef={"Days": 5.0}, sd={"Subject": 30.0}, sigma=25.0)
        >>> float(m2.fixef["Days"]), m2.varcorr()["sdcor"].round(6).tolist()
        (5.0, [30.0, 25.0])
        """
        model = self._structure("with_params")
        scale = self._scale()
        new_scale = self._new_sigma(sigma)
        aliases = coef_aliases(model)
        theta = set_theta(theta_layout(model.spec.re_terms), np.asarray(self.theta), sd,
                          scale=scale, new_scale=new_scale, aliases=aliases)
        return self._with(set_fixef(self.fixef, fixef, aliases), theta, new_scale)

    def _new_sigma(self, sigma: Any) -> float:
        if sigma is not None:
            raise InputError(f"sigma: a {self._family_name()} model has no residual SD (its "
                             "variance follows from the mean or the link); set fixef= and sd= "
                             "only.")
        return 1.0

    def _family_name(self) -> str:
        return str(getattr(getattr(self.model, "family", None), "name", "non-Gaussian"))

    def simulate(self, n: int = 1, *, rng: Any = None) -> np.ndarray:
        """``n`` responses from the model at its parameters, shape ``(n, nobs)``.

        New random effects for every response (lme4's ``simulate(use.u =
        FALSE)``); the prepared model's ``simulate(n, rng=, params=self)``.
        """
        model = self._structure("simulate")
        return np.asarray(model.simulate(check_n_draws(n), rng=rng, params=self))

    def refit(self, y: Any) -> Any:
        """The same model fitted to response ``y`` (warm-started here): a new fit.

        This fit is unchanged (its structure is not shared with the new one
        where refitting would change it).
        """
        new = self._fit_again(self._structure("refit"), numeric_response(y))
        return replace(new, data=self.data)

    def predict(self, newdata: pd.DataFrame | None = None, *, re_form: Any = None,
                allow_new_levels: bool = False, type: str = "link") -> Any:
        """Predictions, as lme4's ``predict.merMod`` (:mod:`nlpower.lmm.predict`).

        ``newdata=None``: the fitted rows (with every random effect: the
        fitted values).  ``re_form``: ``None`` (every random effect), ``"NA"``
        (none: the population level) or a formula of random-effects terms;
        ``allow_new_levels``: a grouping level the fit has not seen gets
        random effects 0 instead of an error.  ``type``: ``"link"`` or
        ``"response"`` (the same for a Gaussian fit).

        Examples
        --------
        >>> import pandas as pd, nlpower
        >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
        >>> m = nlpower.lmer("Reaction ~ Days + (Days | Subject)", d)
        >>> new = pd.DataFrame({"Days": [0, 5], "Subject": [308, 999]})
        >>> m.predict(new, allow_new_levels=True).round(2).tolist()
        [253.66, 303.74]
        """
        from .._validation import check_choice
        from .predict import predict_newdata
        check_choice("type", type, ("link", "response"))
        rows = self.data if newdata is None else newdata
        if rows is None:
            raise InputError("predict needs the rows the model was fitted on; fit it with "
                             "nlpower.lmer(formula, data).")
        return predict_newdata(self, rows, re_form=re_form, allow_new_levels=allow_new_levels)

    # -- presentation ------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """Tidy table (broom.mixed style): fixed effects (and thresholds), then variance parameters.

        Columns ``effect`` (``"fixed"``, ``"threshold"``, ``"ran_pars"``),
        ``group``, ``term`` (``sd__x`` / ``cor__a.b`` for variance
        components), ``estimate``, ``std_error``, ``statistic`` (t or z),
        ``p_value`` (where the family's summary has one).
        """
        fixed = self._coef_rows()
        rows: list[dict[str, Any]] = [
            {"effect": r.effect, "group": None, "term": r.term, "estimate": r.estimate,
             "std_error": r.std_error, "statistic": r.statistic, "p_value": r.p_value}
            for r in fixed.itertuples(index=False)]
        for grp, v1, v2, sdcor in self.varcorr()[["grp", "var1", "var2", "sdcor"]].itertuples(
                index=False):
            if grp == "Residual":
                term = "sd__Observation"
            elif str(grp).startswith("Residual"):
                continue
            elif v2 is None or pd.isna(v2):
                term = f"sd__{v1!s}"
            else:
                term = f"cor__{v1!s}.{v2!s}"
            rows.append({"effect": "ran_pars", "group": grp, "term": term,
                         "estimate": float(sdcor), "std_error": np.nan, "statistic": np.nan,
                         "p_value": np.nan})
        return pd.DataFrame(rows, columns=["effect", "group", "term", "estimate", "std_error",
                                           "statistic", "p_value"])

    def _re_table(self) -> str:
        """The random-effects block of lme4's ``summary``."""
        rows = []
        for t in self.var_terms:
            sd = np.sqrt(np.diag(t.cov))
            for i, c in enumerate(t.cnames):
                cors = [f"{t.cov[i, j] / (sd[i] * sd[j]):.2f}" if sd[i] * sd[j] > 0 else "NaN"
                        for j in range(i)]
                rows.append([t.grp if i == 0 else "", c, _fmt(float(t.cov[i, i])),
                             _fmt(float(sd[i])), " ".join(cors)])
        if self._residual_name == "Residual":
            s = self._residual_sd()
            rows.append(["Residual", "", _fmt(s ** 2), _fmt(s), ""])
        df = pd.DataFrame(rows, columns=["Groups", "Name", "Variance", "Std.Dev.", "Corr"])
        if not any(r[4] for r in rows):
            df = df.drop(columns="Corr")
        return " " + df.to_string(index=False, justify="left").replace("\n", "\n ")

    def _flags(self) -> str:
        return ("" if self.converged else ", not converged") + (", singular" if self.singular
                                                                else "")


def _fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}" if math.isfinite(x) else "NaN"
