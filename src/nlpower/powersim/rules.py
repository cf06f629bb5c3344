"""Tests of the system effect as objects: the one registry of test rules.

A :class:`TestRule` says everything the four power pipelines need about a
test -- whether it needs a fit of the null model, its df method, its
reference distribution (critical value, p-value), which REML setting it
needs, which outcome families it is defined for -- and computes its
statistic on each path:

* the balanced fast path (:meth:`TestRule.balanced`, from the balanced
  fits of all replicates at once);
* the simulate path (:meth:`TestRule.general`, per replicate, from the
  prepared models of :mod:`nlpower.lmm.engine`);
* the analytic path and assurance (:meth:`TestRule.power`, the probability
  of a sign-correct rejection given the estimate's SE and df).

``get_test(name)`` is the only place a test name is looked up; the
pipelines call the rule's methods and never compare names.  Adding a test is
adding one rule to :data:`TESTS`.

=================  =========  ==============  ===========  =========  ==============
rule               statistic  df              reference    null fit   families
=================  =========  ==============  ===========  =========  ==============
``satterthwaite``  Wald t     Satterthwaite   t            no         Gaussian
``kenward-roger``  Wald t     Kenward-Roger   t            no         Gaussian
``z``              Wald z     --              normal       no         any
``lrt``            signed LR  --              normal       yes        any
``pblrt``          signed LR  --              bootstrap    yes        any
``calibrated``     Wald t     Satterthwaite   bootstrap    no         Gaussian
=================  =========  ==============  ===========  =========  ==============

A term with several degrees of freedom, or a comparison of nested models,
is tested by the rule :meth:`TestRule.comparison` dispatches to (the LRT's
chi^2 with the difference in parameters as df, :data:`LRT_COMPARISON`);
several contrasts from one fit by :meth:`TestRule.wald_many`.

Every rule runs on both simulated-power paths except ``calibrated`` (the
balanced fast path only: ``TestRule.paths``, checked by
:meth:`TestRule.check_path`); what the few-workers size warning advises is
``TestRule.size_advice``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .. import _dist as stats
from .._validation import check_choice
from ..errors import InputError, NlpowerWarning, SizeWarning
from ..intervals import wilson_ci
from ..lmm import PreparedModel
from ..lmm.ddf import term_covariances, term_slots
from ..lmm.kenward_roger import covariance_basis, kr_state
from ..lmm.result import FitCore
from ..lmm.structure import ModelSpec
from .balanced_fit import BalancedFit, kr_df, null_deviance
from .calibrated import calibrated_pvalues
from .fastpath import BalancedStats
from .pblrt import GeneralPBLRT, pb_lrt_pvalues

__all__ = ["CALIBRATED", "FEW_WORKERS", "LRT_COMPARISON", "PATHS", "TESTS", "CalibratedRule",
           "GeneralState", "ModelComparison", "TestRule",
           "check_path", "contrast", "get_test", "size_check", "size_message"]

#: above this many ratings the general-path Kenward-Roger test warns about its cost
KR_DENSE_WARN_N = 1000

#: The power paths a rule can run on (``TestRule.paths``), as messages name them.
#: name -> (what it is, where it applies).
PATHS = {"balanced": ("the exact balanced fast path",
                      "fully crossed two-system designs, Gaussian ratings, method='auto'"),
         "simulate": ("the simulate path", "every design")}

#: What the few-workers size warning advises by default (``TestRule.size_advice``).
USE_CALIBRATED = ("Use test='calibrated' (balanced designs; about n_resamples closed-form fits per "
                  "replicate), or plan for more workers.")


@dataclass
class GeneralState:
    """What a rule keeps across the replicates of one simulate-path run."""

    model: PreparedModel
    null_model: PreparedModel | None
    j: int
    L: np.ndarray
    start: Any
    n_resamples: int
    boot: GeneralPBLRT | None = None
    kr: KRTest | None = None
    #: the null model's warm start (None: ``start``); ``cold_null``: no warm start
    null_start: Any = None
    cold_null: bool = False


@dataclass(frozen=True)
class TestRule:
    """One test of a fixed effect (``beta_j = 0``).

    Attributes
    ----------
    name : str
        The ``test=`` value.
    statistic : {"wald", "lr"}
        Wald ``beta / se``, or the signed root of the likelihood ratio.
    df_method : {"satterthwaite", "kenward-roger", "none"}
        The denominator df of a Wald t statistic (``"none"``: df = inf).
    reference : {"t", "normal", "bootstrap"}
        The distribution p-values and critical values come from.
    default_REML : bool
        The fit criterion when ``REML=None``.
    REML : {"either", "required", "refused"}
    families : tuple of str, optional
        Outcome families the test is defined for (``None``: any).
    analytic : {"nct", "normal"} or None
        The analytic power approximation's distribution of the statistic
        (noncentral t with the df, or normal); ``None``: none (then
        ``approximation`` names the rule assurance uses instead).
    paths : tuple of {"balanced", "simulate"}
        The simulated-power paths the test runs on (:data:`PATHS`).
    size_advice : str
        What the warning says to do when the test does not hold alpha on a
        design with few workers (:func:`~nlpower.powersim.rules.size_message`).

    Examples
    --------
    >>> rule = get_test("z")
    >>> rule.needs_null, rule.reference
    (False, 'normal')
    >>> round(float(rule.pvalue(np.array([1.96]), np.array([np.inf]), "two-sided")[0]), 4)
    0.05
    """

    name: str
    statistic: Literal["wald", "lr"]
    df_method: Literal["satterthwaite", "kenward-roger", "none"]
    reference: Literal["t", "normal", "bootstrap"]
    default_REML: bool
    REML: Literal["either", "required", "refused"] = "either"
    families: tuple[str, ...] | None = None
    analytic: Literal["nct", "normal"] | None = "nct"
    approximation: str | None = None
    two_sided_only: bool = False
    paths: tuple[str, ...] = ("balanced", "simulate")
    size_advice: str = field(default=USE_CALIBRATED, repr=False)
    doc: str = field(default="", repr=False)

    @property
    def needs_null(self) -> bool:
        """The statistic needs a fit of the model without the effect."""
        return self.statistic == "lr"

    @property
    def bootstrap(self) -> bool:
        return self.reference == "bootstrap"

    # -- validation ----------------------------------------------------------------------
    def resolve_REML(self, REML: Any) -> bool:
        """``REML`` (``None``: the rule's default), checked against what the test needs."""
        if REML is None:
            return self.default_REML
        if not isinstance(REML, (bool, np.bool_)):
            raise InputError(f"REML must be True, False or None (default for the test); got "
                             f"{REML!r}.")
        if REML and self.REML == "refused":
            raise InputError(
                f"test={self.name!r} compares ML fits with and without the effect; REML "
                "likelihoods of models with different fixed effects are not comparable. Use "
                "REML=False (or None).")
        if not REML and self.REML == "required":
            raise InputError(
                f"test={self.name!r} is defined at a REML fit (pbkrtest refuses ML fits); got "
                "REML=False. Use REML=True (or None), or test='satterthwaite' for ML fits.")
        return bool(REML)

    def check(self, *, alpha: float, alternative: str, method: str, n_resamples: int) -> None:
        """Options this test cannot run with (the message says what to use instead)."""
        if self.bootstrap and (1.0 / (n_resamples + 1.0)) > alpha:
            need = math.ceil(1.0 / alpha - 1.0 - 1e-9)
            raise InputError(
                f"n_resamples={n_resamples} cannot reject at alpha={alpha:g}: the smallest parametric-"
                f"bootstrap p-value is 1/(n_resamples + 1) = {1.0 / (n_resamples + 1.0):.4g}. Use "
                f"n_resamples >= {need} (99 or more recommended).")
        if self.two_sided_only and alternative != "two-sided":
            raise InputError(
                f"test={self.name!r} is two-sided (the likelihood ratio has no sign, as in "
                f"pbkrtest's PBmodcomp); got alternative={alternative!r}. Use "
                "alternative='two-sided' (power still counts only sign-correct rejections).")
        if self.analytic is None and method == "analytic":
            raise InputError(
                f"test={self.name!r} has no analytic approximation; got method='analytic'. Use "
                "method='auto' (the balanced fast path when exact) or 'simulate'.")
        if method in PATHS:
            self.check_path(method, method=method)

    def check_path(self, how: str, *, method: str | None = None) -> None:
        """Refuse a path the test does not run on (before any replicate runs).

        ``how``: the path a design needs (``"balanced"`` or ``"simulate"``; the
        analytic path is :attr:`analytic`'s, checked by :meth:`check`);
        ``method``: the ``method=`` that asked for it, if the user did.
        """
        if how not in PATHS or how in self.paths:
            return
        where = " and ".join(PATHS[p][0] for p in self.paths)
        scope = "; ".join(PATHS[p][1] for p in self.paths)
        there = [r.name for r in TESTS.values() if how in r.paths and r.bootstrap]
        use = f"test={there[0]!r}" if there else "another test"
        raise InputError(
            f"test={self.name!r} runs on {where} only ({scope}); "
            + (f"got method={method!r}. Use method='auto' on such a design, or {use} on others."
               if method is not None else f"this design needs the {how} path. Use {use} here."))

    def check_family(self, family: Any) -> None:
        """Raise :class:`~nlpower.errors.InputError` if the test is not defined for ``family``."""
        name = getattr(family, "name", family)
        if self.families is not None and name not in self.families:
            others = [r.name for r in TESTS.values() if r.families is None]
            raise InputError(
                f"test={self.name!r} is defined for the {', '.join(self.families)} family only "
                f"(its df come from the linear mixed model); got the {name} family. Use one of "
                f"{', '.join(map(repr, others))}.")

    # -- the reference distribution ---------------------------------------------------------
    def pvalue(self, statistic: np.ndarray, df: np.ndarray, alternative: str) -> np.ndarray:
        """p-values of the statistics (t with ``df`` or standard normal).

        ``"lr"`` statistics are signed roots, so the two-sided p is the
        chi^2(1) p-value.  Bootstrap p-values come from the bootstrap; here
        they are the chi^2 ones.
        """
        s = np.asarray(statistic, dtype=float)
        if self.reference == "t":
            dist_sf = lambda v: stats.t.sf(v, np.asarray(df, dtype=float))  # noqa: E731
        else:
            dist_sf = stats.norm.sf
        with np.errstate(invalid="ignore"):
            if alternative == "two-sided":
                return np.minimum(1.0, 2.0 * dist_sf(np.abs(s)))
            if alternative == "greater":
                return np.asarray(dist_sf(s))
            return np.asarray(dist_sf(-s))

    def power(self, effect: float, se: Any, df: Any, *, alpha: float, alternative: str,
              normal: bool = False) -> Any:
        """Probability of a sign-correct rejection given the estimate's SE and df.

        ``P(T > c)`` with ``c`` the critical value of the test and ``T``
        noncentral t (``analytic="nct"``; normal where ``df`` is infinite or
        ``normal=True`` for a normal-reference test) or ``N(ncp, 1)``; at
        ``effect == 0`` the probability of any rejection (the size).  ``se``
        and ``df`` may be arrays (one power each).

        Examples
        --------
        >>> round(get_test("lrt").power(0.2, 0.1, np.inf, alpha=0.05, alternative="two-sided"), 4)
        0.516
        """
        scalar = np.ndim(se) == 0 and np.ndim(df) == 0
        se_a = np.atleast_1d(np.asarray(se, dtype=float))
        df_a = np.broadcast_to(np.asarray(df, dtype=float), se_a.shape)
        two = alternative == "two-sided"
        q = 1.0 - alpha / 2.0 if two else 1.0 - alpha
        crit = (stats.t.ppf(q, df_a) if self.reference == "t"
                else np.full(se_a.shape, stats.norm.ppf(q)))
        use_t = self.analytic == "nct" and (self.reference == "t" or not normal)
        nct = np.isfinite(df_a) if use_t else np.zeros(se_a.shape, dtype=bool)
        if effect == 0:
            out = np.asarray(stats.norm.sf(crit), dtype=float)
            if nct.any():
                out[nct] = stats.t.sf(crit[nct], df_a[nct])
            out = 2.0 * out if two else out
        elif not (two or (alternative == "greater") == (effect > 0)):
            out = np.zeros(se_a.shape)
        else:
            ncp = abs(effect) / se_a
            out = np.asarray(stats.norm.sf(crit - ncp), dtype=float)
            if nct.any():
                out[nct] = stats.nct.sf(crit[nct], df_a[nct], ncp[nct])
        return float(out[0]) if scalar else out

    def approximate(self) -> TestRule:
        """The rule whose :meth:`power` approximates this one (itself, or e.g. LRT for PB-LRT)."""
        return self if self.approximation is None else get_test(self.approximation)

    # -- the balanced fast path -------------------------------------------------------------
    def balanced(self, st: BalancedStats, fit: BalancedFit,
                 gens: Sequence[np.random.Generator], n_resamples: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(statistic, df, bootstrap p or None)`` of every replicate from the balanced fits.

        Kenward-Roger: pbkrtest's adjusted covariance equals the unadjusted one
        on this design, and its df is the expected-mean-square df at the fitted
        variances (:func:`~nlpower.powersim.balanced_fit.kr_df`).  PB-LRT's
        bootstrap continues each replicate's stream.
        """
        p_boot = None
        if self.bootstrap:
            p_boot, lr = pb_lrt_pvalues(st, n_resamples, gens)
            stat = np.sign(fit.beta1) * np.sqrt(lr)
        elif self.statistic == "lr":
            lr = np.maximum(null_deviance(st) - fit.deviance, 0.0)
            stat = np.sign(fit.beta1) * np.sqrt(lr)
        else:
            stat = fit.t
        if self.df_method == "kenward-roger":
            df = kr_df(fit.variances, st.n_workers, st.n_items)
        elif self.df_method == "satterthwaite":
            df = fit.df
        else:
            df = np.full(st.n_sims, np.inf)
        return stat, df, p_boot

    # -- the simulate path ------------------------------------------------------------------
    def general_state(self, spec: ModelSpec, model: PreparedModel,
                      null_model: PreparedModel | None, j: int, start: Any, n_resamples: int,
                      *, L: np.ndarray | None = None, null_start: Any = None,
                      cold_null: bool = False) -> GeneralState:
        """What :meth:`general` keeps across one run's replicates (built once; ``spec``: the model's).

        ``L``: a contrast over the coefficients instead of coefficient ``j``
        (Wald tests only); ``null_start``: the null model's warm start when it
        differs from ``start`` (other coefficients), ``cold_null``: none.
        """
        if L is None:
            L = np.zeros(spec.p)
            L[j] = 1.0
        elif (self.statistic == "lr" or self.bootstrap) and np.count_nonzero(L) != 1:
            raise InputError(f"test={self.name!r} compares models; a contrast of coefficients "
                             "is tested by a Wald test (test='z', 'satterthwaite' or "
                             "'kenward-roger').")
        st = GeneralState(model, null_model, j, np.asarray(L, dtype=float), start, n_resamples,
                          null_start=null_start, cold_null=cold_null)
        if self.bootstrap:
            assert null_model is not None
            st.boot = GeneralPBLRT.build(model, null_model, j)
        if self.df_method == "kenward-roger":
            st.kr = KRTest(spec)
        return st

    def general(self, state: GeneralState, core: FitCore, y: np.ndarray,
                gen: np.random.Generator, failures: tuple[type[BaseException], ...],
                null_core: Any = None) -> tuple[float, float, float, float, float]:
        """``(estimate, se, statistic, df, bootstrap p or nan)`` of one replicate's fit ``core``.

        ``null_core``: the null model's fit of ``y`` when the caller has it already (a
        batch of replicates fitted together); otherwise the null model is refitted here.
        """
        b, var = contrast(state.L, core)
        sd = math.sqrt(var)
        p_boot = math.nan
        if self.statistic == "lr":
            assert state.null_model is not None
            start0 = None if state.cold_null else (
                state.start if state.null_start is None else state.null_start)
            core0 = (null_core if null_core is not None else
                     state.null_model.refit(y, REML=False, start=start0))
            lr = max(float(core0.deviance - core.deviance), 0.0)
            if state.boot is not None:
                p_boot = state.boot.pvalue(lr, core0, state.n_resamples, gen, failures)
            return b, sd, math.copysign(math.sqrt(lr), b), math.inf, p_boot
        if state.kr is not None:
            est, se, df = state.kr.test(core, state.L)
            return est, se, est / se, df, p_boot
        df = (float(state.model.satterthwaite_df(core, state.L))
              if self.df_method == "satterthwaite" else math.inf)
        return b, sd, b / sd, df, p_boot


    # -- several contrasts, several degrees of freedom -----------------------------------
    def wald_many(self, model: PreparedModel, core: FitCore, L: np.ndarray, alternative: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(estimate, se, df, p)`` of each row of ``L`` from one fit (Wald z or Satterthwaite t)."""
        est = L @ core.beta
        se = np.sqrt(np.einsum("kp,pq,kq->k", L, core.vcov_beta, L))
        df = (np.array([float(model.satterthwaite_df(core, Lc)) for Lc in L])
              if self.df_method == "satterthwaite" else np.full(L.shape[0], np.inf))
        return est, se, df, self.pvalue(est / se, df, alternative)

    def comparison(self) -> ModelComparison:
        """The rule's test of a comparison of nested models with any number of df.

        Only the likelihood ratio compares models: its chi^2 with the difference
        in parameters as df (:data:`LRT_COMPARISON`).
        """
        if self.statistic != "lr" or self.bootstrap:
            raise InputError(f"a term with several degrees of freedom (or a model comparison) "
                             f"is tested by test='lrt', not {self.name!r}.")
        return LRT_COMPARISON


@dataclass(frozen=True)
class ModelComparison:
    """A test of nested models: statistic ``deviance0 - deviance`` against chi^2 with ``q`` df."""

    name: str

    def statistic(self, core: Any, core0: Any) -> float:
        """The likelihood ratio of one replicate's full fit ``core`` and null fit ``core0``."""
        return max(float(core0.deviance - core.deviance), 0.0)

    def statistics(self, deviance: np.ndarray, deviance0: np.ndarray) -> np.ndarray:
        """The likelihood ratios of a batch of fits."""
        return np.maximum(deviance0 - deviance, 0.0)

    def pvalue(self, statistic: Any, q: Any) -> Any:
        """The chi^2(``q``) upper tail of ``statistic``."""
        from scipy.special import chdtrc
        return chdtrc(q, statistic)


#: The likelihood-ratio test of a multi-df term or a model comparison (``TestRule.comparison``).
LRT_COMPARISON = ModelComparison("lrt")


def contrast(L: np.ndarray, core: Any) -> tuple[float, float]:
    """``(L beta, L V L')`` of a fit; a unit ``L`` reads its coefficient (no 0 * inf elsewhere)."""
    nz = np.flatnonzero(L)
    if nz.size == 1 and L[nz[0]] == 1.0:
        j = int(nz[0])
        return float(core.beta[j]), float(core.vcov_beta[j, j])
    return float(L @ core.beta), float(L @ core.vcov_beta @ L)


class KRTest:
    """Kenward-Roger t test of one coefficient at REML fits of a fixed structure.

    The covariance basis (:func:`nlpower.lmm.kenward_roger.covariance_basis`)
    and the terms' slots in ``theta`` are built once; :meth:`test` turns a
    fit's ``theta`` and ``sigma`` into each term's covariance
    (:func:`nlpower.lmm.ddf.term_covariances`) and runs
    :func:`~nlpower.lmm.kenward_roger.kr_state` (dense ``n x n`` algebra).
    """

    def __init__(self, spec: ModelSpec) -> None:
        if spec.n > KR_DENSE_WARN_N:
            # measured (shared 2-core machine): 8 s per replicate at n = 1200, 21 s at 2000,
            # 85 s at 4000 -- growing as n^2; (n / 500)^2 s is within 1.5x of each
            warnings.warn(
                f"test='kenward-roger' on the general path uses dense n x n algebra "
                f"(kr_state) with n = {spec.n} ratings: expect about "
                f"{(spec.n / 500) ** 2:.0f} s per replicate. Where the REML fit is interior "
                "Kenward-Roger equals test='satterthwaite', which costs milliseconds.",
                NlpowerWarning, stacklevel=5)
        self.spec = spec
        self.basis = covariance_basis(spec)
        self.slots = term_slots(spec)

    def test(self, core: FitCore, L: np.ndarray) -> tuple[float, float, float]:
        """``(estimate, KR standard error, KR df)`` of the contrast ``L`` at the REML fit ``core``."""
        covs = term_covariances(self.slots, core.theta, core.sigma)
        state = kr_state(self.spec, core.beta, covs, core.sigma, self.basis)
        est, se, df, _ = state.t_test(L)
        return est, se, df


_GAUSSIAN = ("gaussian",)

#: The registry: every ``test=`` of the mixed-model power functions.
TESTS: dict[str, TestRule] = {
    "satterthwaite": TestRule("satterthwaite", "wald", "satterthwaite", "t", default_REML=True,
                              families=_GAUSSIAN,
                              doc="Wald t with Satterthwaite df (lmerTest)"),
    "kenward-roger": TestRule("kenward-roger", "wald", "kenward-roger", "t", default_REML=True,
                              REML="required", families=_GAUSSIAN,
                              doc="Wald t on the KR-adjusted covariance with KR df (pbkrtest)"),
    "z": TestRule("z", "wald", "none", "normal", default_REML=False,
                  size_advice=USE_CALIBRATED[:-1] + "; test='z' stays available to reproduce "
                                                    "the paper's Figure 6.",
                  doc="Wald z, the paper's t > 1.96 rule"),
    "lrt": TestRule("lrt", "lr", "none", "normal", default_REML=False, REML="refused",
                    analytic="normal", doc="likelihood ratio against chi^2_1"),
    "pblrt": TestRule("pblrt", "lr", "none", "bootstrap", default_REML=False, REML="refused",
                      analytic=None, approximation="lrt", two_sided_only=True,
                      doc="parametric-bootstrap likelihood ratio (pbkrtest's PBmodcomp)"),
}


@dataclass(frozen=True)
class CalibratedRule(TestRule):
    """``test="calibrated"``: the Satterthwaite test with its critical value from the fitted null."""

    def balanced(self, st: BalancedStats, fit: BalancedFit,
                 gens: Sequence[np.random.Generator], n_resamples: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        return fit.t, fit.df, calibrated_pvalues(st, n_resamples, gens)


CALIBRATED = CalibratedRule(
    "calibrated", "wald", "satterthwaite", "bootstrap", default_REML=True, REML="required",
    families=("gaussian",), analytic=None, approximation="satterthwaite", two_sided_only=True,
    paths=("balanced",),
    size_advice="With so few workers no test here holds alpha exactly; plan for more workers.",
    doc="Satterthwaite p prepivoted by a parametric bootstrap from the REML null fit")


TESTS[CALIBRATED.name] = CALIBRATED


def get_test(name: Any) -> TestRule:
    """The :class:`TestRule` called ``name`` (did-you-mean on a misspelling).

    Examples
    --------
    >>> get_test("kenward-roger").df_method
    'kenward-roger'
    """
    if isinstance(name, TestRule):
        return name
    return TESTS[check_choice("test", name, tuple(TESTS))]


#: Below this many workers ``power`` measures the Type I error of the design (balanced path).
FEW_WORKERS = 10


def check_path(test: str, how: str) -> None:
    """Refuse a test off the paths it runs on (``TestRule.paths``; before any replicate runs)."""
    get_test(test).check_path(how)


def size_message(test: str, alpha: float, n_workers: int, n_type1: int, n_sims: int) -> str:
    """The plain warning when ``test`` rejects too often at effect 0 on a design."""
    rate = n_type1 / n_sims
    lo, hi = wilson_ci(n_type1, n_sims)
    return (f"test={test!r} does not hold alpha={alpha:g} on this design with {n_workers} "
            f"workers: its Type I error measured here is {rate:.3f} (95% CI {lo:.3f}-{hi:.3f}, "
            f"{n_sims} replicates at effect 0), so the power counts rejections a level-{alpha:g} "
            f"test would not make. {get_test(test).size_advice}")


def size_check(test: str, alpha: float, n_workers: int, n_type1: int | None, n_sims: int
               ) -> str | None:
    """Warn (and return the message) when the measured Type I error is above ``alpha``.

    "Above" means the Wilson 95% interval of the rejection rate at effect 0 lies
    entirely above ``alpha``.
    """
    if n_type1 is None or n_sims <= 0 or math.isnan(alpha):
        return None
    if wilson_ci(n_type1, n_sims)[0] <= alpha:
        return None
    msg = size_message(test, alpha, n_workers, n_type1, n_sims)
    warnings.warn(msg, SizeWarning, stacklevel=3)
    return msg
