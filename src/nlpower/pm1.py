"""Per-system random effects -> the +-1 coded model: the package's one such conversion.

:func:`pm1_random_effects` maps a grouping factor's intercept SD and its two
per-system SDs (lme4's ``(system || g)``, Card et al. 2020, Tables 14-15) to
the intercept and slope SDs of :class:`~nlpower.params.LMMParams`, with one
policy (``unequal=``) for the intercept-slope covariance that model cannot
hold.  Re-exported by :mod:`nlpower.params`.  Algebra in ``docs/model.md``.
"""

from __future__ import annotations

import math
import warnings

from ._choices import UnequalSDs, check_choice
from .errors import InputError, NlpowerWarning

__all__ = ["EXACT_SD_TOL", "MATERIAL_REL", "MATERIAL_SD", "ConversionWarning",
           "pm1_random_effects"]


# the policies of pm1_random_effects: "raise" tolerance on the two SDs; "warn" when
# each system's variance changes by >= MATERIAL_REL (SD ratio ~1.3) and >= MATERIAL_SD^2
EXACT_SD_TOL = 1e-12
MATERIAL_REL = 0.25
MATERIAL_SD = 0.01


class ConversionWarning(NlpowerWarning):
    """A conversion to simulation parameters that loses information (see :func:`pm1_random_effects`)."""


def pm1_random_effects(sd_intercept: float, sd_minus: float, sd_plus: float,
                       cov: float = 0.0, *, group: str, unequal: UnequalSDs = "raise",
                       systems: tuple[str, str] | None = None,
                       where: str = "to_lmm_params") -> tuple[float, float]:
    """``(sd, sd_slope)`` of a grouping factor in the +-1 coded model, from per-system effects.

    A worker's (or item's) effects under the system coded x = -1 and x = +1
    have total covariance ``v_m = sd_intercept^2 + sd_minus^2``, ``v_p =
    sd_intercept^2 + sd_plus^2``, ``c = sd_intercept^2 + cov`` (lme4's
    ``(system || g)``, Tables 14-15).  In +-1 coding (intercept ``(u_p + u_m)/2``,
    slope ``(u_p - u_m)/2``)::

        sd^2       = (v_m + v_p + 2 c) / 4
        sd_slope^2 = (v_m + v_p - 2 c) / 4
        cov(intercept, slope) = (v_p - v_m) / 4

    :class:`LMMParams` has no intercept-slope covariance, so it is dropped
    (each system's variance becomes ``(v_m + v_p) / 2``); when it is not zero
    the policy ``unequal`` decides:

    * ``"raise"``: :class:`~nlpower.errors.InputError` unless
      ``|sd_minus - sd_plus| <= EXACT_SD_TOL`` (1e-12) --
      :meth:`MultiSystemParams.to_lmm_params` with ``exact=True``;
    * ``"warn"``: drop it, with a :class:`ConversionWarning` when that is
      material: ``|v_p - v_m| / (v_p + v_m) >= MATERIAL_REL`` (0.25) and
      ``sqrt(|v_p - v_m| / 2) >= MATERIAL_SD`` (0.01) --
      :meth:`~nlpower.ratings.RatingsFit.to_params`;
    * ``"ignore"``: drop it silently -- ``to_lmm_params(exact=False)``.

    ``cov`` NaN means the covariance is not identified (no level of the
    factor was rated under both systems): the whole variance ``(v_m + v_p) / 2``
    goes to the intercept and ``sd_slope = 0`` (exact for simulating a design
    with the factor nested in systems), with a :class:`ConversionWarning`
    under ``"warn"`` and an error under ``"raise"``.

    ``systems`` (x = -1, x = +1) and ``where`` (the caller) label the messages.

    Examples
    --------
    >>> pm1_random_effects(0.0, 0.2, 0.2, group="item")   # equal SDs: exact
    (0.14142135623730953, 0.14142135623730953)
    """
    check_choice("unequal", unequal, UnequalSDs)
    s0, sm, sp, cv = float(sd_intercept), float(sd_minus), float(sd_plus), float(cov)
    vm, vp = s0 * s0 + sm * sm, s0 * s0 + sp * sp
    minus, plus = systems if systems is not None else ("the baseline", "the other system")
    if not math.isfinite(cv):
        text = (f"{where}: no {group} rated both {plus!r} and {minus!r}, so how the {group} "
                f"effect differs between the two systems is not identified; the {group} variance "
                f"({(vm + vp) / 2:.4g}) is put in the intercept and sd_{group}_slope = 0. This is "
                f"exact for simulating a design with {group}s nested in systems; for a paired "
                f"design set sd_{group}_slope yourself.")
        if unequal == "raise":
            raise InputError(text)
        if unequal == "warn":
            warnings.warn(text, ConversionWarning, stacklevel=3)
        return math.sqrt(max((vm + vp) / 2, 0.0)), 0.0
    # the formulas above with the shared s0^2 cancelled by hand: no loss of precision
    # when s0 is much larger than the per-system SDs
    v_int = max(s0 * s0 + (sm * sm + sp * sp + 2 * cv) / 4, 0.0)
    v_slope = max((sm * sm + sp * sp - 2 * cv) / 4, 0.0)
    if unequal == "raise" and not math.isclose(sm, sp, rel_tol=0.0, abs_tol=EXACT_SD_TOL):
        raise InputError(
            f"the per-system {group} SDs differ ({sm} vs {sp}), so the +-1 coded model has "
            f"an intercept-slope covariance of {(sp**2 - sm**2) / 4:.4g}, which LMMParams "
            "cannot represent. Pass exact=False to drop it, or simulate with "
            "MultiSystemParams."
        )
    if unequal == "warn":
        diff = sp * sp - sm * sm                                 # v_p - v_m
        rel = abs(diff) / (vp + vm) if vp + vm > 0 else 0.0
        if rel >= MATERIAL_REL and math.sqrt(abs(diff) / 2) >= MATERIAL_SD:
            den = math.sqrt(v_int * v_slope)
            rho = diff / 4 / den if den > 0 else 0.0
            warnings.warn(
                f"{where}: the {group} effects of {plus!r} and {minus!r} have different SDs "
                f"({math.sqrt(max(vp, 0)):.3f} vs {math.sqrt(max(vm, 0)):.3f}), which in +-1 "
                f"coding is an intercept-slope correlation of {rho:.2f}; the paper's model "
                f"(LMMParams) has none, so it is dropped and both systems get {group} SD "
                f"{math.sqrt(max((vm + vp) / 2, 0)):.3f}. In a balanced, fully crossed "
                "paired design the sampling variance of the effect depends only on the slope "
                "SDs, which are kept; per-system variances are not.",
                ConversionWarning, stacklevel=3,
            )
    return math.sqrt(v_int), math.sqrt(v_slope)
