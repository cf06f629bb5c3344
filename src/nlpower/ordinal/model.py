"""The prepared cumulative link (mixed) model: structure once, response per fit.

Stages (STYLE 1): :func:`~.response.ordinal_response` (codes) ->
:class:`ClmmModel` (threshold design, fixed design without the intercept,
random-effects blocks) -> :meth:`ClmmModel.refit` (clm start, L-BFGS-B over
``(alpha, beta, theta)`` of the Laplace/AGQ log-likelihood -- scaled by the
start's Hessian where one scalar term makes it one batch, :mod:`.scaling`;
Newton steps on small one-scalar-term data -- conditional
modes warm-started) -> Hessian by forward differences of the analytic gradient
(``vcov``, checkConv)
-> :class:`~.result.ClmmFit`.

Parameters follow ``ordinal``: ``P(Y <= j) = F(theta_j - eta)``, no
intercept in ``eta`` (the thresholds absorb it), random-effect SDs on the
latent scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize

from ..errors import InputError
from ..lmm.checkconv import CheckConvControl, ConvCheck, check_conv, hessian_from_gradient
from ..lmm.engine import LikelihoodOnly
from ..lmm.family import Ordinal
from ..lmm.structure import ModelSpec
from ..mixed.native._blas import single_threaded
from ._dense import inv_and_cond, solve
from .clm import bound_derivatives, clm_newton, stacked_bounds, stacked_design
from .hessian import fd_hessian
from .objective import Evaluation, evaluate, gradient
from .response import OrdinalResponse
from .scalar import ScalarTerm
from .scaling import HandOff, start_scaling
from .staged import EarlyStop, intercepts_start
from .structure import ReStructure
from .thresholds import make_thresholds

__all__ = ["ClmmCore", "ClmmModel", "FitState"]

#: smallest SD a fit starts from (warm starts from singular fits included)
_MIN_START_SD = 0.2

#: how far from the anchor (the last gradient's or Newton batch's point, max-norm) the
#: first-order prediction of the modes starts an evaluation's Newton steps
_ANCHOR_RADIUS = 1.0


@dataclass(frozen=True, eq=False)
class ClmmCore:
    """The essentials of one ordinal fit (what a power replicate reads).

    ``alpha`` are the threshold parameters (``thresholds`` the ``K - 1``
    cut points), ``beta`` the fixed effects, ``theta`` the random-effect
    Cholesky parameters (for scalar terms: the SDs), ``vcov`` the inverse
    Hessian of ``-loglik`` over ``(alpha, beta, theta)``.
    """

    alpha: np.ndarray
    thresholds: np.ndarray
    beta: np.ndarray
    theta: np.ndarray
    vcov: np.ndarray
    loglik: float
    converged: bool
    singular: bool
    n_evals: int
    message: str
    check: ConvCheck | None = field(default=None, repr=False)
    u: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    cond_H: float = math.nan

    @property
    def deviance(self) -> float:
        return -2.0 * self.loglik

    @property
    def vcov_beta(self) -> np.ndarray:
        a, p = self.alpha.size, self.beta.size
        return self.vcov[a:a + p, a:a + p]

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.vcov_beta), 0.0))

    @property
    def params(self) -> np.ndarray:
        return np.concatenate([self.alpha, self.beta, self.theta])

    def __repr__(self) -> str:
        flags = ("" if self.converged else ", not converged") + (", singular" if self.singular else "")
        return (f"ClmmCore(loglik={self.loglik:.4f}, beta={np.array2string(self.beta, precision=4)}, "
                f"theta={np.array2string(self.theta, precision=4)}{flags})")


class FitState:
    """The warm starts of one fit: nothing of it outlives the fit or reaches another.

    ``u``: the last conditional modes (the next evaluation's start);
    ``inner``: their :class:`~.laplace.InnerResult` (its factor seeds the
    next modes' chord steps); ``last``: the last finite
    :class:`~.objective.Evaluation` (a gradient at the same point reads it);
    ``anchor``: ``(x_a, u*(x_a), d u*/dx)`` of the last gradient or Newton
    batch, the modes' first-order predictor; ``grad``: ``(evaluation,
    gradient)`` of the last gradient (asked again at the same point -- the
    optimiser's first call after the scaling, the finish's at the optimiser's
    end -- it is not recomputed).
    """

    __slots__ = ("anchor", "grad", "inner", "last", "u")

    def __init__(self, u: np.ndarray):
        self.u = u
        self.inner: Any = None
        self.last: Evaluation | None = None
        self.anchor: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.grad: tuple[Evaluation, np.ndarray] | None = None


class ClmmModel(LikelihoodOnly):
    """A cumulative link mixed model prepared for fitting (``engine="native"``).

    Parameters
    ----------
    spec : ModelSpec
        The structure (its ``y`` holds the category codes).
    family : Ordinal
        Link and threshold structure.
    response : OrdinalResponse
        Category labels of the codes.
    nAGQ : int
        1: Laplace; > 1: adaptive Gauss-Hermite (one scalar random term only).
    """

    engine = "native"

    def __init__(self, spec: ModelSpec, family: Ordinal, response: OrdinalResponse, *,
                 nAGQ: int = 1):
        self.spec = spec
        self.family = family
        self.link = family.link
        self.response = response
        self.levels = response.levels
        self.thr = make_thresholds(response.levels, family.threshold)
        names = list(spec.fixef_names)
        keep = [k for k, nm in enumerate(names) if nm != "(Intercept)"]
        self.X = np.ascontiguousarray(spec.X[:, keep])
        self.fixef_names = tuple(names[k] for k in keep)
        self.rs = ReStructure(spec.re_terms) if spec.re_terms else None
        self._scalar: ScalarTerm | None = None
        if self.rs is not None and len(self.rs.blocks) == 1 and self.rs.blocks[0].q == 1:
            b0 = self.rs.blocks[0]
            self._scalar = ScalarTerm(b0.codes, b0.Z[:, 0], b0.L)
        if not isinstance(nAGQ, int | np.integer) or nAGQ < 1:
            raise InputError(f"nAGQ must be a positive integer (1: Laplace); got {nAGQ!r}.")
        if nAGQ > 1 and (self.rs is None or len(self.rs.blocks) != 1 or self.rs.blocks[0].q != 1):
            raise InputError(
                f"nAGQ={nAGQ} (adaptive Gauss-Hermite) needs exactly one scalar random-effect term "
                "such as (1 | judge); use nAGQ=1 (the Laplace approximation) for this model.")
        self.nAGQ = int(nAGQ)
        self.n_alpha = self.thr.n_alpha
        self.p = self.X.shape[1]
        self.n_theta = self.rs.n_theta if self.rs else 0
        self.lower = np.concatenate([np.full(self.n_alpha + self.p, -np.inf),
                                     self.rs.lower if self.rs else np.zeros(0)])
        self.n_u = self.rs.n_u if self.rs else 0
        self._state = FitState(np.zeros(self.n_u))
        self.n_evals = 0
        self._data: Any = None       # the rows fitted, or a callable that takes them (.data)
        self.set_response(np.asarray(spec.y))

    def __repr__(self) -> str:
        return (f"ClmmModel({self.spec.formula!r}, {self.family!r}, n={self.spec.n}, "
                f"categories={len(self.levels)}, nAGQ={self.nAGQ})")

    @property
    def data(self) -> Any:
        """The rows fitted (a DataFrame; ``None`` when the model was built from a structure)."""
        if callable(self._data):
            self._data = self._data()
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        self._data = value

    # -- response --------------------------------------------------------------------
    def set_response(self, y: np.ndarray) -> None:
        """Use category codes ``y`` (0 .. K-1) as the response."""
        y = np.asarray(y).astype(np.intp, copy=False)
        K = len(self.levels)
        if y.shape != (self.spec.n,) or y.min() < 0 or y.max() >= K:
            raise InputError(f"y must be {self.spec.n} category codes in 0..{K - 1}.")
        self.y = y
        self.new_state()
        self.JJ, self.open = stacked_design(self.thr.jacobian, y)
        self.Bu, self.Bl = bound_derivatives(self.JJ, self.open, self.X)

    def new_state(self, u: np.ndarray | None = None) -> FitState:
        """Start a fit: warm starts from ``u`` (default: modes of 0), nothing of earlier fits."""
        self._state = FitState(np.zeros(self.n_u) if u is None or u.size != self.n_u
                               else np.array(u, dtype=float))
        return self._state

    # -- parameters ------------------------------------------------------------------
    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, p = self.n_alpha, self.p
        return x[:a], x[a:a + p], x[a + p:]

    def bounds(self, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """``[upper, lower]`` of each observation without random effects (``(2, n)``)."""
        return stacked_bounds(self.JJ, self.open, alpha, self.X @ beta)

    def _to_opt(self, x: np.ndarray) -> np.ndarray:
        """Flexible thresholds are optimised as the first one and log increments."""
        if self.thr.kind != "flexible" or self.n_alpha < 2:
            return x.copy()
        a = x[:self.n_alpha]
        d = np.diff(a)
        return np.concatenate([[a[0]], np.log(np.maximum(d, 1e-8)), x[self.n_alpha:]])

    def _from_opt(self, z: np.ndarray) -> np.ndarray:
        if self.thr.kind != "flexible" or self.n_alpha < 2:
            return z
        a = np.cumsum(np.concatenate([[z[0]], np.exp(np.minimum(z[1:self.n_alpha], 50.0))]))
        return np.concatenate([a, z[self.n_alpha:]])

    # -- objective -------------------------------------------------------------------
    def nll(self, x: np.ndarray) -> float:
        """``-loglik`` (Laplace or AGQ) at ``x = (alpha, beta, theta)``, from the fit's warm start.

        :func:`~.objective.evaluate` from the modes' start of :meth:`_start_modes`;
        the point is kept (:class:`FitState`) for :meth:`nll_grad` at the same ``x``.
        """
        x = np.asarray(x, dtype=float)
        st = self._state
        if st.last is not None and np.array_equal(x, st.last.x):
            return st.last.value
        self.n_evals += 1
        st.last = None
        general = self._scalar is None and st.inner is not None
        ev = evaluate(self, x.copy(), self._start_modes(x),
                      factor0=st.inner.factor if general else None)
        if ev.inner is not None and np.isfinite(ev.inner.h):
            st.u, st.inner = ev.inner.u, ev.inner
        if math.isfinite(ev.value):
            st.last = ev
        return ev.value

    def _start_modes(self, x: np.ndarray) -> np.ndarray:
        """The modes' start at ``x``: the last modes, or their first-order prediction.

        ``u*(x_a) + (d u*/dx)(x - x_a)`` from the anchor ``x_a`` (the last
        gradient's, or the last Newton batch's) within ``_ANCHOR_RADIUS`` of
        it (max-norm): one or two Newton steps fewer for the small steps of
        line searches and of the Hessian's differences.
        """
        st = self._state
        anchor = st.anchor
        if self.rs is None or anchor is None or anchor[1].size != st.u.size:
            return st.u
        if np.max(np.abs(x - anchor[0])) > _ANCHOR_RADIUS:
            return st.u
        return anchor[1] + anchor[2] @ (x - anchor[0])

    def nll_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``-loglik`` and its gradient (analytic for the Laplace approximation)."""
        f = self.nll(x)
        if not np.isfinite(f):
            return f, np.full(np.size(x), np.nan)
        if self.rs is None:
            from ..lmm.checkconv import gradient as fd_gradient
            return f, fd_gradient(self.nll, np.asarray(x, dtype=float), f, 1e-5)[0]
        st = self._state
        ev = st.last
        assert ev is not None
        if st.grad is not None and st.grad[0] is ev:
            return f, st.grad[1].copy()
        g, du = gradient(self, ev, want_du=self._scalar is None)
        if du is not None:
            st.anchor = (ev.x, ev.inner.u.copy(), du)
        st.grad = (ev, g.copy())
        return f, g

    def modes(self, x: np.ndarray) -> np.ndarray:
        """Conditional modes ``u*`` (spherical) at ``x``."""
        if self.rs is None:
            return np.zeros(0)
        self.nll(x)
        return self._state.u.copy()

    # -- fitting ---------------------------------------------------------------------
    def start(self) -> np.ndarray:
        """clm estimates (no random effects) and random-effect SDs of 1.

        With one scalar term, two Newton steps of the clm fit, the SD from the levels' one-step effects ``b_l =
        score_l / info_l`` at the clm fit, ``s^2 = mean(b_l^2 - 1 / info_l)``
        (at least 0.2^2), and thresholds and fixed effects scaled from the
        marginal to the conditional scale, ``sqrt(1 + c s^2)`` (``c = 1`` for
        the probit; ``(16 sqrt(3) / (15 pi))^2 = 0.346`` for the logit, Zeger,
        Liang & Albert 1988; unscaled for the cloglog).
        """
        at: list[Any] = []
        # one scalar term: two Newton steps of clm are enough for the start below
        alpha, beta, _ = clm_newton(self.link, self.thr, self.y, self.X,
                                    maxit=2 if self._scalar is not None else 100,
                                    design=(self.JJ, self.open, self.Bu, self.Bl), parts_out=at)
        theta = self.rs.start_theta(1.0) if self.rs else np.zeros(0)
        if self._scalar is not None:
            t = self._scalar
            cp = at[0]                    # the parts at (alpha, beta), as clm_newton left them
            score = np.bincount(t.codes, weights=t.z * (cp.f_lo - cp.f_up) / cp.p, minlength=t.L)
            info = np.bincount(t.codes, weights=t.z * t.z * cp.w, minlength=t.L)
            pos = info > 0
            var = max(float(np.mean((score[pos] / info[pos]) ** 2 - 1.0 / info[pos])),
                      _MIN_START_SD ** 2) if pos.any() else 1.0
            c = {"logit": 0.346, "probit": 1.0}.get(self.link.name, 0.0)
            alpha, beta = alpha * math.sqrt(1.0 + c * var), beta * math.sqrt(1.0 + c * var)
            theta = np.array([math.sqrt(var)])
        return np.concatenate([alpha, beta, theta])

    def refit(self, y: Any = None, *, REML: bool = False, start: Any = None,
              control: dict[str, Any] | None = None, checkconv: Any = None,
              hessian: bool = True, curvature: np.ndarray | None = None) -> ClmmCore:
        """Fit response ``y`` (category codes; ``None``: the current one) reusing the structure.

        ``start``: parameters ``(alpha, beta, theta)`` or a previous :class:`ClmmCore`
        (warm start: the power replicates' case).  ``curvature``: a Hessian of
        ``-loglik`` over ``(alpha, beta, theta)`` near ``start`` (a power
        replicate's reference Hessian, :func:`~.scaling.reference_hessian`)
        that scales the optimiser's coordinates (:mod:`.scaling`).
        ``hessian=False`` skips the Hessian (no ``vcov``, no checkConv
        Hessian).  Dense algebra runs single-threaded (OpenBLAS's threads only
        cost time at these sizes).
        """
        self.check_REML(REML)
        with single_threaded():
            return self._refit(y, start, control, checkconv, hessian, curvature)

    def _refit(self, y: Any, start: Any, control: dict[str, Any] | None, checkconv: Any,
               hessian: bool, curvature: np.ndarray | None = None) -> ClmmCore:
        if y is not None:
            self.set_response(np.asarray(y))
        ctl = dict(control or {})
        unknown = set(ctl) - {"maxiter", "gtol", "ftol"}
        if unknown:
            raise InputError(f"control has unknown keys {sorted(unknown)}; allowed: 'maxiter', "
                             "'gtol', 'ftol'.")
        self.n_evals = 0
        # a fit depends on its start only, not on the last fit
        self.new_state(start.u if isinstance(start, ClmmCore) else None)
        if isinstance(start, ClmmCore):
            start = start.params
        x0 = self.start() if start is None else np.asarray(start, dtype=float).copy()
        if x0.size != self.n_alpha + self.p + self.n_theta:
            raise InputError(f"start must have {self.n_alpha + self.p + self.n_theta} values "
                             f"(thresholds, fixed effects, random-effect parameters); got {x0.size}.")
        if self.rs is None:
            return self._refit_clm(checkconv)
        # an SD at exactly 0 is a stationary point of the Laplace likelihood (it is even
        # in each scalar SD): a start there -- a singular previous fit -- would never leave it
        th0 = x0[self.n_alpha + self.p:]
        diag = self.rs.lower == 0.0
        th0[diag] = np.maximum(th0[diag], _MIN_START_SD)
        if start is None and self.nAGQ == 1:
            x0 = intercepts_start(self, x0)
        # the optimiser's own start point (through its coordinates): its value is the one here
        x0 = self._from_opt(self._to_opt(x0))
        if not np.isfinite(self.nll(x0)):
            x0 = self._from_opt(self._to_opt(self.start()))
        if start is None and not ctl and self._batch_newton():
            # one scalar term, small data: Newton steps, each Hessian one batch of points
            from .newton import canonical_theta, newton_steps
            xq, ok, end = newton_steps(self, x0)
            at = (xq.copy(), *end) if ok and end is not None else None   # (an SD < 0: not x)
            xq = canonical_theta(self, xq)
            if at is not None and np.all(xq[self.n_alpha + self.p:] > 1e-3):
                return self._finish(xq, True, "quasi-Newton steps", checkconv, hessian, at)
            self._state.anchor = None         # (the batches' modes are of other points)
        x, ok, message = self._optimise(x0, ctl, curvature)
        return self._finish(x, ok, message, checkconv, hessian)

    def _optimise(self, x0: np.ndarray, ctl: dict[str, Any], curvature: np.ndarray | None = None
                  ) -> tuple[np.ndarray, bool, str]:
        """L-BFGS-B from ``x0``: the end point, whether it converged, its message.

        In coordinates where the start's Hessian is the unit matrix when the
        model evaluates that Hessian's points in one batch (one scalar term:
        :mod:`.scaling`) or the caller gives it (``curvature``: a power
        replicate's reference Hessian), else in the fitter's own.  In the
        scaled coordinates L-BFGS-B hands over to the finish's Newton steps
        once the start's Hessian predicts a step under ``1e-4``
        (:class:`~.scaling.HandOff`).
        """
        assert self.rs is not None
        z0 = self._to_opt(x0)
        co = start_scaling(self, z0, curvature)
        bounds = co.bounds(self.rs.lower == 0.0)
        k0 = z0.size - self.n_theta
        hand = HandOff(co, k0, self.rs.lower == 0.0) if co.T is not None else None

        def fw(w: np.ndarray) -> tuple[float, np.ndarray]:
            z = co.to_z(w)
            v, g = self.nll_grad(self._from_opt(z))
            if not np.isfinite(v) or not np.all(np.isfinite(g)):
                return 1e300, np.zeros_like(w)
            gw = co.gradient(self._grad_to_opt(z, g))
            if hand is not None:
                hand.seen(w, gw)
            return v, gw

        # maxcor 30: for the tens of parameters of (x || g) terms a longer memory of
        # curvature pairs saves about a third of the evaluations (each a sparse factorisation)
        opts = {"maxiter": int(ctl.get("maxiter", 1000)), "ftol": float(ctl.get("ftol", 1e-14)),
                "gtol": float(ctl.get("gtol", 1e-8)), "maxcor": 30}
        stop = EarlyStop(k0, self.rs.lower, co.to_z)
        vector = not ctl and any(t.q > 1 for t in self.rs.terms)
        res = optimize.minimize(fw, co.start(), method="L-BFGS-B", jac=True, bounds=bounds,
                                options=opts, callback=hand or (stop if vector else None))
        for _ in range(3):        # an SD stopped at 0 by a saddle: step off and go on
            z1 = self._off_boundary(co.to_z(res.x), float(res.fun))
            if z1 is None:
                break
            res = optimize.minimize(fw, co.from_z(z1), method="L-BFGS-B", jac=True,
                                    bounds=bounds, options=opts)
        x = self._from_opt(co.to_z(res.x))
        x[self.n_alpha + self.p:] = np.where(
            (self.rs.lower == 0.0) & (x[self.n_alpha + self.p:] < 1e-6), 0.0,
            x[self.n_alpha + self.p:])
        # L-BFGS-B's "ABNORMAL" line-search ends at the noise floor are judged by checkConv
        if hand is not None and hand.stopped:
            return x, True, "L-BFGS-B, then Newton steps"
        return x, bool(res.success) or stop.stopped or "ABNORMAL" in str(res.message), str(
            res.message)

    def _batch_newton(self) -> bool:
        """One scalar term, Laplace, small data: Newton steps with batched Hessians."""
        from .newton import BATCH_LIMIT
        k = self.n_alpha + self.p + self.n_theta
        return self._scalar is not None and self.nAGQ == 1 and self.spec.n * (k + 1) <= BATCH_LIMIT

    def _off_boundary(self, z: np.ndarray, f: float) -> np.ndarray | None:
        """A point with lower ``-loglik`` next to an SD at 0 (``None``: 0 is a minimum there).

        The gradient in a scalar SD vanishes at 0, so the optimiser cannot see
        that the likelihood rises away from it; try SDs of 0.1 and 0.5.
        """
        assert self.rs is not None
        k0 = z.size - self.n_theta
        best, best_f = None, f - 1e-6
        for j in np.flatnonzero((self.rs.lower == 0.0) & (z[k0:] < 1e-6)):
            for sd in (0.1, 0.5):
                zz = z.copy()
                zz[k0 + j] = sd
                v = self.nll(self._from_opt(zz))
                if v < best_f:
                    best, best_f = zz, v
        return best

    def _grad_to_opt(self, z: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.thr.kind != "flexible" or self.n_alpha < 2:
            return g
        a = self.n_alpha
        ga = g[:a]
        tail = np.cumsum(ga[::-1])[::-1]          # sum_{j >= k} g_alpha_j
        gz = g.copy()
        gz[0] = tail[0]
        gz[1:a] = np.exp(np.minimum(z[1:a], 50.0)) * tail[1:]
        return gz

    def _refit_clm(self, checkconv: Any) -> ClmmCore:
        alpha, beta, ok = clm_newton(self.link, self.thr, self.y, self.X)
        x = np.concatenate([alpha, beta])
        return self._finish(x, ok, "Newton (clm)" if ok else "Newton (clm) did not converge",
                            checkconv, True)

    def _finish(self, x: np.ndarray, opt_ok: bool, message: str, checkconv: Any,
                hessian: bool, at: Any = None) -> ClmmCore:
        """Newton polish, checkConv and ``vcov`` at ``x``.

        ``at``: ``(x_e, f, g, H)`` where the steps ended (``-loglik``, its
        gradient and, from Newton's batches, its Hessian, else ``None``), used
        when ``x_e`` is ``x``.
        """
        at_x = at is not None and np.array_equal(at[0], x)
        f = at[1] if at_x else self.nll(x)
        k = x.size
        ctl = CheckConvControl.coerce(checkconv)
        vcov = np.full((k, k), np.nan)
        check: ConvCheck | None = None
        cond = math.nan
        singular = bool(np.any(x[self.lower == 0.0] < 1e-4)) if self.rs else False
        if hessian:
            free = np.ones(k, dtype=bool)
            if singular:
                free = ~((self.lower == 0.0) & (x < 1e-4))
                # a zero SD: its term's other parameters are not identified either
                free[self.n_alpha + self.p:] &= x[self.n_alpha + self.p:] != 0.0
            x0 = x.copy()

            def full(zf: np.ndarray) -> np.ndarray:
                z = x0.copy()
                z[free] = zf
                return z

            def devgrad(zf: np.ndarray) -> np.ndarray:        # lme4's checkConv scale
                return 2.0 * self.nll_grad(full(zf))[1][free]

            def hess(xf: np.ndarray, g: np.ndarray) -> np.ndarray:
                if at_x and at[3] is not None and free.all() and np.array_equal(at[0], full(xf)):
                    return 2.0 * at[3]         # Newton's last Hessian, at this very point
                # one scalar term: the shifted points in one batch (the same differences)
                H = fd_hessian(self, full(xf), g, free=free, scale=2.0)
                return H if H is not None else hessian_from_gradient(devgrad, xf, delta=1e-4,
                                                                     g=g)

            xf = x[free]
            g = 2.0 * at[2] if at_x and free.all() else devgrad(xf)
            H = hess(xf, g)
            for _ in range(3):        # Newton polish of the optimiser's end point
                if np.max(np.abs(g)) < 1e-8:
                    break
                try:
                    step = solve(H, g)
                except np.linalg.LinAlgError:
                    break
                if 0.0 <= float(g @ step) < 1e-12:    # the deviance would fall by < 1e-12:
                    opt_ok = True                     # the gradient is the modes' noise
                    break
                xn = xf - step
                if np.any(xn[self.lower[free] == 0.0] < 0.0):
                    break
                fn = self.nll(full(xn))
                if not fn <= f + 1e-10:
                    break
                xf, f = xn, fn
                x = full(xf)
                opt_ok = True
                g = devgrad(xf)
                if np.max(np.abs(step)) > 1e-3:     # a small step leaves H as it was
                    H = hess(xf, g)
            check = check_conv(lambda zf: 2.0 * self.nll(full(zf)), xf, 2.0 * f,
                               self.lower[free], ctl, given_gradient=g, given_hessian=H)
            if singular:
                check = ConvCheck(True, check.code, ("boundary (singular) fit: see "
                                                     "help('isSingular')", *check.messages),
                                  check.max_grad, g, H, check.n_evals, check.raw_grad_failed)
            Hn = 0.5 * H
            try:
                Hinv, cond = inv_and_cond(Hn)
                if free.all():
                    vcov = Hinv
                else:
                    vcov[np.ix_(free, free)] = Hinv
            except np.linalg.LinAlgError:
                pass
        f = self.nll(x)
        u = self._state.u.copy()
        converged = opt_ok and (check is None or check.ok)
        a, p = self.n_alpha, self.p
        return ClmmCore(alpha=x[:a], thresholds=self.thr.theta(x[:a]), beta=x[a:a + p],
                        theta=x[a + p:], vcov=vcov, loglik=-f, converged=converged,
                        singular=singular, n_evals=self.n_evals, message=message, check=check,
                        u=u, cond_H=cond)

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None,
            control: dict[str, Any] | None = None, checkconv: Any = None) -> Any:
        """Fit and build the full :class:`~.result.ClmmFit`."""
        from .result import ClmmFit
        core = self.refit(y, REML=REML, start=start, control=control, checkconv=checkconv)
        return ClmmFit.from_core(self, core)

    # -- simulation ------------------------------------------------------------------
    def simulate(self, n: int = 1, *, rng: Any, params: Any = None) -> np.ndarray:
        """``n`` new responses (codes, ``(n, n_obs)``): new random effects, latent draws.

        ``params``: a fit, a :class:`ClmmCore`, ``{"alpha", "beta", "theta"}``
        (:func:`~nlpower.lmm.simparams.sim_params`) or the flat ``(alpha, beta, theta)``.
        """
        from .simulate import simulate_codes
        return simulate_codes(self, n, rng=rng, params=params)
