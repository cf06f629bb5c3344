"""Post-fit convergence checks with lme4's semantics (``lme4:::checkConv``).

After the optimiser, lme4 1.1-31 evaluates the gradient and Hessian of the
profiled deviance at the optimum by central differences
(``lme4:::deriv12``, step ``1e-4``) and runs three checks, each with its own
action (``lmerControl(check.conv.*)``):

* **singular** (``check.conv.singular``, tol ``1e-4``): a diagonal element of
  ``theta`` (a relative SD) below ``tol``: a boundary fit.  lme4 skips the
  two derivative checks for singular fits (the gradient need not vanish on a
  bound) and so does this module.
* **gradient** (``check.conv.grad``, tol ``2e-3``): the scaled gradient
  ``H^{-1/2}``-style ``solve(chol(H), g)``; the check fails when
  ``max_i min(|scaled_i|, |g_i|) > tol`` ("Model failed to converge with
  max|grad| = ...") or when ``H`` has no Cholesky factor ("unable to evaluate
  scaled gradient").
* **Hessian** (``check.conv.hess``, tol ``1e-6``, ``lme4:::checkHess``):
  eigenvalues of ``H``: negative ones (below ``-tol``) mean a saddle or an
  unfinished fit; eigenvalues within ``tol`` of 0 mean a numerically singular
  Hessian (parameters not uniquely determined); a very large eigenvalue
  (``max * tol > 1``) or eigenvalue ratio (``min / max < tol``) means a
  nearly unidentifiable model.

Policies are ``"ignore"``, ``"warning"`` (:class:`~nlpower.errors.ConvergenceWarning`
or :class:`~nlpower.errors.SingularFitWarning`) and ``"error"``
(:class:`ConvergenceError`), lme4's ``"ignore"/"warning"/"stop"``.  lme4's
default for the singular check is ``"message"``; here it is ``"warning"``.

Only what a policy asks for is computed: the gradient costs ``2k``
deviance evaluations, the Hessian ``2k^2`` (:func:`deriv12`) -- or, given an
analytic gradient (``grad=``), one call and ``2k`` calls
(:func:`hessian_from_gradient`).  When ``max|g| <= tol`` the
gradient check passes without the Hessian (``min(|scaled|, |g|) <= |g|``),
so a power simulation that checks only the gradient pays ``2k`` evaluations
per replicate.

The result (:class:`ConvCheck`) is recorded on a fit as
``fit.optinfo["checkconv"]`` (a plain dict from :meth:`ConvCheck.to_dict`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
from scipy.linalg import lapack

from .._validation import check_choice
from ..errors import ConvergenceWarning, FitError, InputError, SingularFitWarning
from ..mixed.fdiff import DERIV_STEP, cold, gradient_hessian, value_gradient, value_hessian

#: What a failed check does: nothing, a warning, or an exception (lme4's "stop").
CheckLevel: TypeAlias = Literal["ignore", "warning", "error"]
CHECK_LEVELS: tuple[str, ...] = ("ignore", "warning", "error")

#: lme4 1.1-31's ``lmerControl()`` tolerances.
GRAD_TOL = 2e-3
HESS_TOL = 1e-6
SINGULAR_TOL = 1e-4


class ConvergenceError(FitError):
    """A convergence check with policy ``"error"`` failed (lme4's ``action = "stop"``)."""


@dataclass(frozen=True)
class CheckConvControl:
    """Which checks run and what a failure does (lme4's ``check.conv.*``).

    Examples
    --------
    >>> CheckConvControl(grad="error", hess="ignore").grad
    'error'
    """

    singular: str = "warning"
    grad: str = "warning"
    hess: str = "warning"
    grad_tol: float = GRAD_TOL
    hess_tol: float = HESS_TOL
    singular_tol: float = SINGULAR_TOL

    def __post_init__(self) -> None:
        for name in ("singular", "grad", "hess"):
            check_choice(f"checkconv {name}", getattr(self, name), CHECK_LEVELS)
        for name in ("grad_tol", "hess_tol", "singular_tol"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise InputError(f"checkconv {name} must be a positive number; got {v!r}.")

    @classmethod
    def coerce(cls, value: Any) -> CheckConvControl:
        """From ``None`` (defaults), a level for all three checks, a dict, or an instance."""
        if value is None:
            return _DEFAULT_CONTROL if cls is CheckConvControl else cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            check_choice("checkconv", value, CHECK_LEVELS)
            return cls(singular=value, grad=value, hess=value)
        if isinstance(value, dict):
            unknown = set(value) - set(cls.__dataclass_fields__)
            if unknown:
                raise InputError(
                    f"checkconv has unknown setting(s) {sorted(unknown)}; allowed: "
                    f"{', '.join(cls.__dataclass_fields__)}.")
            return cls(**value)
        raise InputError(
            f"checkconv must be None, one of {', '.join(map(repr, CHECK_LEVELS))}, a dict of "
            f"settings or a CheckConvControl; got {value!r}.")


#: the defaults (``coerce(None)``: frozen, so one instance serves every fit)
_DEFAULT_CONTROL = CheckConvControl()

#: Power simulations: the singular flag and lme4's gradient check, no Hessian (2k evaluations).
REPLICATE_CONTROL = CheckConvControl(singular="ignore", grad="ignore", hess="ignore")


@dataclass(frozen=True, eq=False)
class ConvCheck:
    """Outcome of the checks: ``ok`` unless a gradient or Hessian check failed.

    ``code`` follows lme4: 0 fine, -1 gradient, -3 negative Hessian
    eigenvalues, -4 singular Hessian, 2/3 nearly unidentifiable.
    """

    singular: bool
    code: int
    messages: tuple[str, ...]
    max_grad: float                   # max_i min(|scaled_i|, |g_i|); nan when not computed
    gradient: np.ndarray | None = field(default=None, repr=False)
    hessian: np.ndarray | None = field(default=None, repr=False)
    n_evals: int = 0
    raw_grad_failed: bool = False      # no scaled gradient and max|g| > tol
    #: structural facts that are no finding (e.g. the flat ridge of an ``(f || g)`` term, whose
    #: check then ran in the identified parameters: :mod:`nlpower.lmm.native.ridge`)
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """The optimum is stationary: the gradient check passed (a ``converged`` fit).

        The Hessian findings (negative or zero eigenvalues, near
        unidentifiability) and a singular fit are reported in ``messages``
        and warned about per policy, as lme4 does, but do not make a fit
        "not converged": on the flat ridges of ``(f || g)`` terms the Hessian
        is singular by construction and finite differences put its zero
        eigenvalues on either side of 0.  Where the scaled gradient cannot be
        formed (``H`` not positive definite) the raw gradient must be within
        tolerance.
        """
        if self.code == -5:
            return False
        return not (any(m.startswith("Model failed to converge with") for m in self.messages)
                    or self.raw_grad_failed)

    @property
    def grad_failed(self) -> bool:
        return self.code == -1

    def to_dict(self) -> dict[str, Any]:
        return {"singular": self.singular, "code": self.code, "raw_grad_failed": self.raw_grad_failed, "messages": list(self.messages),
                "max_grad": self.max_grad, "ok": self.ok, "n_evals": self.n_evals,
                "gradient": None if self.gradient is None else self.gradient.tolist(),
                "notes": list(self.notes)}


def gradient(fn: Callable[[np.ndarray], float], x: np.ndarray, fx: float,
             delta: float = DERIV_STEP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Central-difference gradient (lme4's ``deriv12`` step); also ``f(x +- delta e_j)``."""
    g, fadd, fsub = value_gradient(cold(fn), x, delta)[:3]
    return g, fadd, fsub


def deriv12(fn: Callable[[np.ndarray], float], x: np.ndarray, fx: float,
            delta: float = DERIV_STEP) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian by central differences, as ``lme4:::deriv12`` (no bounds).

    :func:`~nlpower.mixed.fdiff.value_hessian` with the four-point
    off-diagonal rule (``2k + 2k(k-1)`` evaluations): the forward rule's
    ``O(d)`` error produced spurious negative eigenvalues on the flat ridges
    of ``(f || g)`` terms.
    """
    g, H, _ = value_hessian(cold(fn), x, fx, delta, cross="central")
    return g, H


def _check_hess(H: np.ndarray, tol: float) -> tuple[int, list[str]]:
    """``lme4:::checkHess``."""
    if not np.all(np.isfinite(H)):
        return -6, ["Problem with Hessian check (infinite or missing values?)"]
    # LAPACK directly (numpy.linalg's checks cost more than these k x k problems)
    evd, _, info = lapack.dsyevd(H, compute_v=0, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError("Eigenvalues did not converge")
    evd = evd[::-1]
    negative = int(np.sum(evd < -tol))
    if negative:
        return -3, [f"Model failed to converge: degenerate Hessian with {negative} negative "
                    "eigenvalues"]
    zero = int(np.sum(np.abs(evd) < tol))
    chol_ok = lapack.dpotrf(H, lower=1)[1] == 0
    if zero or not chol_ok:
        return -4, ["Hessian is numerically singular: parameters are not uniquely determined"]
    code, msgs = 0, []
    if evd[0] * tol > 1:
        code, msgs = 2, ["Model is nearly unidentifiable: very large eigenvalue - Rescale "
                         "variables?"]
    if evd[-1] / evd[0] < tol:
        code = 3
        msgs.append("Model is nearly unidentifiable: large eigenvalue ratio - Rescale variables?")
    return code, msgs


def hessian_from_gradient(grad: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                          delta: float = DERIV_STEP, g: np.ndarray | None = None) -> np.ndarray:
    """Hessian by differences of an analytic gradient, symmetrised.

    Central differences (``2k`` gradient calls); forward differences from
    ``g``, the gradient at ``x``, when it is given (``k`` calls).  The
    convergence check uses central differences: on the flat ridges of
    ``(f || g)`` terms the forward error (``d/2`` times the third
    derivatives) exceeds the near-zero eigenvalue that decides lme4's
    Hessian verdict, and they drop its degenerate-Hessian finding
    (``benchmarks/checkconv_hessian.py``).

    Examples
    --------
    >>> grad = lambda x: np.array([2 * x[0] + x[1], x[0] + 6 * x[1]])   # f = x0^2 + x0 x1 + 3 x1^2
    >>> np.round(hessian_from_gradient(grad, np.array([0.3, -0.2])), 6)
    array([[2., 1.],
           [1., 6.]])
    """
    return gradient_hessian(cold(grad), x, delta, g=g)[0]


#: forward differences are kept when the smallest eigenvalue of their Hessian is at least this
#: times the largest: their error (``DERIV_STEP / 2`` times third derivatives, ~1e-4 relative)
#: cannot then put an eigenvalue on the other side of a verdict of :func:`_check_hess`
FORWARD_MIN_RATIO = 1e-3


def _forward_decides(H: np.ndarray, tol: float) -> bool:
    """Whether a forward-difference ``H`` is far enough from every Hessian verdict."""
    if not np.all(np.isfinite(H)):
        return False
    evd, _, info = lapack.dsyevd(H, compute_v=0, lower=1)
    if info != 0 or not evd[0] > 0:
        return False
    big = float(evd[-1])
    return bool(evd[0] >= FORWARD_MIN_RATIO * big and abs(big * tol - 1.0) > 1e-2)


def check_hessian(grad: Callable[[np.ndarray], np.ndarray], x: np.ndarray, g: np.ndarray,
                  delta: float = DERIV_STEP, tol: float = HESS_TOL) -> tuple[np.ndarray, int]:
    """The check's Hessian from an analytic gradient: forward differences where they decide.

    Forward differences from ``g``, the gradient at ``x`` (``k`` calls);
    where that Hessian is positive definite with its eigenvalues at least
    ``FORWARD_MIN_RATIO`` times the largest (and its largest not near ``1 /
    tol``) its error cannot change a verdict of lme4's ``checkHess`` and it is
    returned.  Else -- a near-singular Hessian, e.g. on the flat ridge of an
    ``(f || g)`` term, where the sign of a near-zero eigenvalue decides the
    finding -- the backward differences are added (``k`` calls more) and the
    result is the central-difference Hessian of :func:`hessian_from_gradient`,
    bit for bit.  Returns ``(H, gradient calls)``.

    Examples
    --------
    >>> grad = lambda x: np.array([2 * x[0] + x[1], x[0] + 6 * x[1]])   # f = x0^2 + x0 x1 + 3 x1^2
    >>> x = np.array([0.3, -0.2])
    >>> H, n = check_hessian(grad, x, grad(x))
    >>> np.round(H, 6).tolist(), n
    ([[2.0, 1.0], [1.0, 6.0]], 2)
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    gp = []
    for i in range(k):
        xi = x.copy()
        xi[i] += delta
        gp.append(np.asarray(grad(xi), dtype=float))
    H = np.empty((k, k))
    for i in range(k):
        H[:, i] = (gp[i] - g) / delta
    H = 0.5 * (H + H.T)
    if _forward_decides(H, tol):
        return H, k
    for i in range(k):
        xi = x.copy()
        xi[i] -= delta
        H[:, i] = (gp[i] - np.asarray(grad(xi), dtype=float)) / (2.0 * delta)
    return 0.5 * (H + H.T), 2 * k


def check_conv(fn: Callable[[np.ndarray], float], theta: Any, fval: float, lower: Any,
               control: Any = None, *,
               grad: Callable[[np.ndarray], np.ndarray] | None = None,
               given_gradient: np.ndarray | None = None,
               given_hessian: np.ndarray | None = None, forward: bool = False) -> ConvCheck:
    """Run lme4's ``checkConv`` on the profiled deviance ``fn`` at its optimum ``theta``.

    Parameters
    ----------
    fn : callable
        The objective (ML deviance or REML criterion) as a function of ``theta``.
    theta, fval : the optimum and ``fn(theta)``.
    lower : lower bounds of ``theta`` (0 marks a diagonal element, an SD).
    control : CheckConvControl, dict, level or None
        Policies and tolerances (:meth:`CheckConvControl.coerce`).
    grad : callable, optional
        The analytic gradient of ``fn``.  When given, the gradient is
        ``grad(theta)`` and the Hessian central differences of ``grad``
        (:func:`hessian_from_gradient`, ``2k`` calls instead of ``2k^2``
        evaluations); ``n_evals`` then counts gradient calls.
    given_gradient, given_hessian : array, optional
        The gradient at ``theta`` and a Hessian computed at (or within
        ``DERIV_STEP`` of) it -- the optimiser's last Newton step -- used
        instead of new ones.
    forward : bool
        With ``grad``: the Hessian by :func:`check_hessian` (forward
        differences, central ones only where the verdict needs them).

    Returns
    -------
    ConvCheck
        Never raises or warns; :func:`apply_policy` does that.

    Examples
    --------
    >>> f = lambda th: float((th[0] - 1.0) ** 2 + 3.0 * th[1] ** 2)
    >>> check_conv(f, np.array([1.0, 0.0]), 0.0, np.array([0.0, -np.inf])).ok
    True
    """
    ctl = CheckConvControl.coerce(control)
    th = np.asarray(theta, dtype=float)
    lo = np.asarray(lower, dtype=float)
    bcoefs = lo == 0
    singular = bool(np.any(th[bcoefs] < ctl.singular_tol))
    code, msgs, max_grad = 0, [], math.nan
    raw_failed = False
    if singular:
        msgs.append("boundary (singular) fit: see help('isSingular')")
        return ConvCheck(singular, 0, tuple(msgs), max_grad)
    if ctl.grad == "ignore" and ctl.hess == "ignore":
        return ConvCheck(singular, 0, tuple(msgs), max_grad)
    k = th.size
    if given_gradient is not None:
        g = np.asarray(given_gradient, dtype=float)
        n_evals = 0
    elif grad is not None:
        g = np.asarray(grad(th), dtype=float)
        n_evals = 1
    else:
        g = gradient(fn, th, fval)[0]
        n_evals = 2 * k
    H: np.ndarray | None = None
    if not np.all(np.isfinite(g)):
        return ConvCheck(singular, -5, ("Gradient contains NAs",), math.nan, g, None, n_evals)
    need_h = ctl.hess != "ignore" or (ctl.grad != "ignore" and np.max(np.abs(g)) > ctl.grad_tol)
    if need_h and given_hessian is not None:
        H = np.asarray(given_hessian, dtype=float)
    elif need_h and grad is not None and forward:
        H, n_h = check_hessian(grad, th, g, tol=ctl.hess_tol)
        n_evals += n_h
    elif need_h and grad is not None:
        H = hessian_from_gradient(grad, th)
        n_evals += 2 * k
    elif need_h:
        g, H = deriv12(fn, th, fval)
        n_evals += 2 * k + 2 * k * (k - 1)
    if ctl.grad != "ignore":
        if H is None:
            max_grad = float(np.max(np.abs(g)))
        else:
            Lh, info = lapack.dpotrf(H, lower=1)      # H = L L' (R's chol: R = L')
            scgrad = lapack.dtrtrs(Lh, g, lower=1, trans=1)[0] if info == 0 else None
            if scgrad is None or not np.all(np.isfinite(scgrad)):
                code = -1
                msgs.append("unable to evaluate scaled gradient")
                max_grad = float(np.max(np.abs(g)))
                raw_failed = max_grad > ctl.grad_tol
            else:
                mingrad = np.minimum(np.abs(scgrad), np.abs(g))
                max_grad = float(np.max(mingrad))
                if max_grad > ctl.grad_tol:
                    code = -1
                    msgs.append(f"Model failed to converge with max|grad| = {max_grad:.6g} "
                                f"(tol = {ctl.grad_tol:g}, component {int(np.argmax(mingrad)) + 1})")
    if ctl.hess != "ignore" and H is not None:
        hcode, hmsgs = _check_hess(H, ctl.hess_tol)
        if hcode != 0:
            code = hcode if code == 0 or hcode < 0 else code
            msgs.extend(hmsgs)
    return ConvCheck(singular, code, tuple(msgs), max_grad, g, H, n_evals, raw_failed)


def apply_policy(check: ConvCheck | Any, control: Any = None, *, where: str = "lmer",
                 stacklevel: int = 3) -> None:
    """Warn or raise for ``check`` as ``control`` says (lme4's ``switch(cc, warning=, stop=)``).

    ``check``: a :class:`ConvCheck`, its :meth:`~ConvCheck.to_dict`, or its messages.

    Raises
    ------
    ConvergenceError
        A failed check whose policy is ``"error"``.
    """
    ctl = CheckConvControl.coerce(control)
    if isinstance(check, ConvCheck):
        messages = list(check.messages)
    elif isinstance(check, dict):
        messages = list(check.get("messages", []))
    else:
        messages = list(check)
    cls: type[Warning]
    for msg in messages:
        if msg.startswith("boundary (singular)"):
            level, cls = ctl.singular, SingularFitWarning
        elif "Hessian" in msg or "unidentifiable" in msg:
            level, cls = ctl.hess, ConvergenceWarning
            msg = _hessian_text(msg)
        else:
            level, cls = ctl.grad, ConvergenceWarning
        if level == "ignore":
            continue
        text = f"{where}: {msg}"
        if level == "error":
            raise ConvergenceError(text + " (policy 'error'; set checkconv={...: 'warning'} to "
                                   "continue with this fit).")
        warnings.warn(text, cls, stacklevel=stacklevel)


def _kind(msg: str) -> str:
    """``"singular"``, ``"hess"`` or ``"grad"``: which check (and policy) a finding belongs to."""
    if msg.startswith("boundary (singular)"):
        return "singular"
    if "Hessian" in msg or "unidentifiable" in msg:
        return "hess"
    return "grad"


def fit_converged(optimizer_converged: bool, messages: Any) -> bool:
    """The one convergence rule: the optimiser met its tolerances and the gradient check passed.

    ``messages``: the checks' findings (lme4's wording).  A Hessian finding
    (negative or zero eigenvalues, near unidentifiability) or a singular fit
    does not make a fit "not converged" (:attr:`ConvCheck.ok` says why); a
    gradient finding ("Model failed to converge with max|grad| ...",
    "Gradient contains NAs") or an optimiser's convergence warning does.
    The native engines compute it from the :class:`ConvCheck`, the R
    engines from R's messages, with this function.

    Examples
    --------
    >>> fit_converged(True, ["Model failed to converge: degenerate  Hessian with 1 negative "
    ...                      "eigenvalues"])
    True
    >>> fit_converged(True, ["Model failed to converge with max|grad| = 0.01 (tol = 0.002)"])
    False
    """
    return bool(optimizer_converged) and not any(
        _kind(str(m)) == "grad" and ("converge" in str(m) or "NA" in str(m)) for m in messages)


_HINTS = {"glmer": "try control={'maxeval': ...} or rescale predictors.",
          "clmm": "try control={'maxiter': 5000}."}
_LMER_HINT = ("Try more evaluations or another optimiser through control= (the engine's "
              "settings, see lmer), or rescale predictors.")


def _hessian_text(msg: str) -> str:
    """A Hessian finding in words that do not contradict ``fit.converged`` (lme4 prefixes some
    with "Model failed to converge:", though the gradient check decides convergence)."""
    prefix = "Model failed to converge: "
    if msg.startswith(prefix):
        msg = " ".join(msg[len(prefix):].split())
        return (f"{msg} at the optimum (lme4 counts this as a convergence failure): a saddle "
                "point or a flat ridge of the likelihood; standard errors and correlations may "
                "be unreliable. fit.converged is decided by the optimiser and the gradient "
                "check.")
    return msg


def report_convergence(fit: Any, checkconv: Any = None, *, where: str = "lmer",
                       stacklevel: int = 3) -> None:
    """The one convergence policy of ``lmer``, ``glmer``, ``clmm`` and ``fit_ratings``.

    Reads ``fit.optsum`` (every family and engine fills it) and warns or
    raises as ``checkconv`` says (:class:`CheckConvControl`; default: warn):

    * the optimiser stopped before its tolerances: a
      :class:`~nlpower.errors.ConvergenceWarning` ("did not converge");
    * each finding of the checks, per its policy: gradient (``grad``),
      Hessian (``hess``; said without "failed to converge": such a fit has
      ``converged`` True, :func:`fit_converged`), singular fit
      (``singular``, a :class:`~nlpower.errors.SingularFitWarning`; from
      ``fit.singular`` when the engine ran no check);
    * a fit that is not ``converged`` is always said to be so.

    So a warning that says a fit did not converge comes with
    ``fit.converged`` False, and ``fit.converged`` False always comes with
    such a warning (unless ``grad="ignore"``).

    Raises
    ------
    ConvergenceError
        A failed check whose policy is ``"error"``.
    """
    ctl = CheckConvControl.coerce(checkconv)
    opt = fit.optsum
    tag = f"{where} ({fit.engine})"
    hint = _HINTS.get(where, _LMER_HINT)
    said = False
    if not opt.optimizer_converged:
        why = "; ".join(m for m in dict.fromkeys([opt.message, *opt.warnings]) if m)
        warnings.warn(f"{tag}: the optimiser did not converge ({why}); the estimates may be "
                      f"inaccurate. {hint}", ConvergenceWarning, stacklevel=stacklevel)
        said = True
    messages = list(opt.check_messages)
    if fit.singular and not any(_kind(m) == "singular" for m in messages):
        messages.insert(0, "boundary (singular) fit: see help('isSingular')")
    for msg in messages:
        kind = _kind(msg)
        level = getattr(ctl, kind)
        if level == "ignore":
            continue
        if kind == "hess":
            msg = _hessian_text(msg)
        elif kind == "grad" and not fit.converged:
            said = True
        text = f"{tag}: {msg}"
        if level == "error":
            raise ConvergenceError(text + " (policy 'error'; set checkconv={...: 'warning'} to "
                                   "continue with this fit).")
        warnings.warn(text, SingularFitWarning if kind == "singular" else ConvergenceWarning,
                      stacklevel=stacklevel)
    if not fit.converged and not said and ctl.grad != "ignore":
        why = "; ".join(m for m in opt.check_messages if _kind(m) == "grad") or opt.message
        warnings.warn(f"{tag}: the fit did not converge ({why}); the estimates may be "
                      f"inaccurate. {hint}", ConvergenceWarning, stacklevel=stacklevel)


_CHECKS = (("grad", "check.conv.grad", "grad_tol"), ("hess", "check.conv.hess", "hess_tol"),
           ("singular", "check.conv.singular", "singular_tol"))


def lmer_control_checks(ctrl: dict[str, Any], checkconv: Any) -> dict[str, Any]:
    """``lmerControl`` arguments with the ``check.conv.*`` of ``checkconv`` (None: lme4's own).

    How the lme4 engine takes ``fit(checkconv=)``; a ``check.conv.*`` key
    already in ``ctrl`` (the user's ``control``) wins.

    lme4 records a check's findings only when it runs, and stops on
    ``"stop"``; so ``"error"`` is sent as ``"warning"`` and the caller
    raises (:func:`nlpower.lmm.checkconv.apply_policy`), as for the native engine.
    """
    if checkconv is None:
        return ctrl
    cc = CheckConvControl.coerce(checkconv)
    out = dict(ctrl)
    for field_, key, tol in _CHECKS:
        level = getattr(cc, field_)
        out.setdefault(key, {"action": "ignore" if level == "ignore" else "warning",
                             "tol": float(getattr(cc, tol))})
    return out



__all__ = ["CHECK_LEVELS", "GRAD_TOL", "HESS_TOL", "REPLICATE_CONTROL", "SINGULAR_TOL",
           "CheckConvControl", "CheckLevel", "ConvCheck", "ConvergenceError", "apply_policy",
           "check_conv", "check_hessian", "deriv12", "fit_converged", "gradient", "lmer_control_checks",
           "report_convergence"]
