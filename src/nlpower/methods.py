"""The paragraph a paper's methods section needs, for power, plan and assurance results.

Each function writes what a reader needs to repeat the calculation: the
model and its variance components (and where they came from), the test and
alpha, the design and its size, how power was computed (replicates, Monte
Carlo error, adaptive precision) and the result.  ``format="latex"`` escapes
the text for LaTeX.  The results call these as ``result.methods()``.
"""

from __future__ import annotations

import math
from typing import Any

from ._choices import check_choice

__all__ = ["assurance_methods", "model_power_methods", "plan_methods", "power_methods",
           "simulated_power_methods"]

_TESTS = {
    "satterthwaite": "a Wald t test with Satterthwaite degrees of freedom (as lmerTest)",
    "kenward-roger": "a t test on the Kenward-Roger adjusted covariance with Kenward-Roger "
                     "degrees of freedom (as pbkrtest)",
    "z": "a Wald z test",
    "lrt": "a likelihood-ratio test (chi-squared, 1 df) of ML fits with and without the effect",
    "pblrt": "a parametric-bootstrap likelihood-ratio test (as pbkrtest's PBmodcomp)",
    "calibrated": "a Satterthwaite t test calibrated by a parametric bootstrap from the null fit",
}


_FAMILIES = {"gaussian": "linear mixed model", "binomial": "binomial generalised linear mixed model",
             "poisson": "Poisson generalised linear mixed model",
             "negative_binomial": "negative binomial generalised linear mixed model",
             "ordinal": "cumulative link mixed model"}


def _latex(text: str) -> str:
    """Plain methods text as LaTeX: the specials escaped, alpha and comparisons as maths."""
    for a, b in (("\\", "\\textbackslash{}"), ("%", "\\%"), ("_", "\\_"), ("&", "\\&"),
                 ("#", "\\#"), ("~", "\\textasciitilde{}"), ("alpha", "$\\alpha$"),
                 ("<=", "$\\leq$"), (">=", "$\\geq$")):
        text = text.replace(a, b)
    return text


def _done(parts: list[str], format: str) -> str:
    check_choice("format", format, ("text", "latex"))
    text = " ".join(p for p in parts if p)
    return _latex(text) if format == "latex" else text


def _design(design: Any) -> str:
    k = design.raters_per_item
    who = ("every worker rated every item" if k == design.n_workers
           else f"each item was rated by {k} of the {design.n_workers} workers")
    both = ("the outputs of both systems" if design.items == "paired"
            else "one system's output (items nested in systems)")
    return (f"The design had {design.n_workers} workers and {design.n_items} items; {who}, "
            f"seeing {both} ({design.n_ratings} ratings in total).")


def _model(params: Any, source: str | None) -> str:
    """The data-generating model and its variance components."""
    where = f" ({source})" if source else ""
    if params is None:
        return ("The variance components are not recorded in this result; state them and their "
                "source.")
    name = type(params).__name__
    if name == "LMMParams":
        return (f"Ratings were modelled by a linear mixed model with crossed random "
                f"intercepts and system slopes for workers and items (no correlations; "
                f"rating ~ x + (1 + x || worker) + (1 + x || item)), {params.coding} coding of the "
                f"system contrast x, intercept {params.beta0:g}, and standard deviations "
                f"{params.sd_worker:g} (worker intercept), {params.sd_worker_slope:g} (worker "
                f"slope), {params.sd_item:g} (item intercept), {params.sd_item_slope:g} (item "
                f"slope) and {params.sigma:g} (residual){where}.")
    if name == "LikertParams":
        cuts = ", ".join(f"{t:.3g}" for t in params.thresholds)
        return (f"Ratings on a {params.levels}-point scale were modelled by a latent "
                f"{params.link} threshold model (thresholds {cuts}; latent scale "
                f"{params.scale:g}; standard deviations {params.sd_worker:g} worker intercept, "
                f"{params.sd_worker_slope:g} worker slope, {params.sd_item:g} item intercept, "
                f"{params.sd_item_slope:g} item slope){where}.")
    if name == "HeadToHeadParams":
        return (f"Repeated head-to-head judgements were modelled by a logistic crossed model "
                f"(logit of the share preferring B {params.effect:.3g}; worker SD "
                f"{params.sd_worker:g}, item SD {params.sd_item:g}, position effect "
                f"{params.position:g}; probability of a draw {params.p_draw:g}, draws excluded)"
                f"{where}.")
    return f"The data were modelled by {params!r}{where}."


def _power_sentences(res: Any) -> list[str]:
    test = _TESTS.get(res.test, f"the {res.test} test")
    if res.n_resamples is not None and res.test in ("pblrt", "calibrated"):
        test += f" with {res.n_resamples} bootstrap samples"
    side = _side(res.alternative)
    if res.method == "analytic":
        return [f"Power was computed analytically from the noncentral t distribution of the "
                f"effect's test at the true parameters (no Monte Carlo error), for a {side} test "
                f"at alpha = {res.alpha:g}, {test}, at a true effect of {res.effect:g} "
                f"({res.coding} coding; a difference of {res.mean_difference:.4g} between the "
                f"system means): power {res.power:.3f}."]
    fit = ("with the closed-form fits of the balanced design, which equal lme4's"
           if res.method == "balanced" else f"with nlpower's {res.engine} engine")
    crit = "REML" if res.REML else "maximum likelihood"
    out = [f"Each of {res.n_sims} simulated data sets was fitted by {crit}, {fit}, and the "
           f"effect tested {side} at alpha = {res.alpha:g} by {test}; power is the share of data "
           f"sets with p <= alpha and an estimate of the true sign (Card et al. 2020)."]
    if res.effect != 0:
        out.append(f"At a true effect of {res.effect:g} ({res.coding} coding; a difference of "
                   f"{res.mean_difference:.4g} between the system means) power was "
                   f"{res.power:.3f} (Monte Carlo SE {res.se:.3f}; 95% Wilson interval "
                   f"{res.ci.low:.3f}-{res.ci.high:.3f}).")
    else:
        out.append(f"At a true effect of 0 the rejection rate (Type I error) was "
                   f"{res.rejection_rate:.3f}.")
    out.append(_adaptive(res.mc, res.n_sims))
    if res.type1 is not None and res.type1_ci is not None and res.effect != 0:
        out.append(f"At effect 0 the same design rejected at rate {res.type1:.3f} (95% interval "
                   f"{res.type1_ci.low:.3f}-{res.type1_ci.high:.3f}, {res.n_type1_sims} "
                   "replicates).")
    return out


def _adaptive(mc: Any, n_sims: int, batch: int = 50) -> str:
    """The sentence on adaptive precision (empty without it)."""
    if mc is None or mc.precision is None:
        return ""
    how = (f"it stopped after {n_sims} of at most {mc.n_max}" if mc.stopped_early
           else f"it used all {n_sims}")
    return (f"The number of replicates was adaptive: simulation stopped, in batches of "
            f"{batch}, once the 95% interval of the rejection rate had half-width at most "
            f"{mc.precision:g}; {how} replicates.")


def _side(alternative: str) -> str:
    return {"two-sided": "two-sided", "greater": "one-sided (greater)",
            "less": "one-sided (less)"}.get(alternative, alternative)


def _power_line(mc: Any, what: str) -> str:
    """Power with its Monte Carlo SE and interval, or the rejection rate at effect 0 / NaN."""
    if mc.effect != 0 and math.isfinite(mc.effect):
        ci = mc.ci
        return (f"At a true value of {mc.effect:.4g} for {what} power was {mc.power:.3f} "
                f"(Monte Carlo SE {mc.se:.3f}; 95% Wilson interval {ci.low:.3f}-{ci.high:.3f}; "
                f"{mc.n_rejected} of {mc.n_sims} replicates).")
    lo, hi = mc.proportion_ci().low, mc.proportion_ci().high
    if mc.effect == 0:
        return (f"At a true value of 0 for {what} the rejection rate (Type I error) was "
                f"{mc.rejection_rate:.3f} (95% Wilson interval {lo:.3f}-{hi:.3f}).")
    return (f"Power, the rejection rate of {what}, was {mc.rejection_rate:.3f} (95% Wilson "
            f"interval {lo:.3f}-{hi:.3f}; {mc.n_significant} of {mc.n_sims} replicates).")


def _parameters(parameters: Any, source: str | None) -> str:
    """The true parameters of an any-model power study (``ModelPowerResult.parameters``)."""
    if not parameters:
        return ("The parameters the data were simulated from are not recorded in this result; "
                "state them and their source.")
    where = f" ({source})" if source else ""
    how = ("those of the fitted model with values set with with_params"
           if parameters.get("params_set") else "the estimates of the fitted model"
           if parameters.get("varcorr") else "those of the model design")
    fixef = ", ".join(f"{k} {v:.4g}" for k, v in parameters.get("fixef", {}).items())
    sds = [f"{g} {a}" + (f" SD {v:.4g}" if not b else f"-{b} correlation {v:.3g}")
           for g, a, b, v in parameters.get("varcorr", ())]
    text = f"The true parameters were {how}{where}: fixed effects {fixef}"
    if sds:
        text += "; " + ", ".join(sds)
    elif parameters.get("theta"):
        text += ("; relative covariance parameters (lme4's theta) "
                 + ", ".join(f"{t:.4g}" for t in parameters["theta"]))
    if parameters.get("sigma") is not None:
        text += f"; residual SD {parameters['sigma']:.4g}"
    return text + "."


def model_power_methods(res: Any, *, source: str | None = None, format: str = "text") -> str:
    """Methods paragraph of a :class:`~nlpower.study.result.ModelPowerResult` (any-model power)."""
    from . import __version__
    test = _TESTS.get(res.test, f"the {res.test} test")
    refit = ("" if res.analysis == res.formula
             else f" by the analysis model {res.analysis}")
    parts = [f"We estimated statistical power by simulation with nlpower "
             f"{res.version or __version__} (as simr's powerSim).",
             f"Responses were simulated from the {_FAMILIES.get(res.family, res.family)} "
             f"{res.formula} on the design of the data ({res.nobs} observations).",
             _parameters(getattr(res, "parameters", None), source),
             f"Each of {res.n_sims} simulated data sets was refitted{refit} with nlpower's "
             f"{res.engine} engine and {res.hypothesis} tested {_side(res.alternative)} at "
             f"alpha = {res.alpha:g} by {test}; power is the share of data sets with "
             f"p <= alpha" + (" and an estimate of the true sign." if math.isfinite(res.effect)
                              else "."),
             _power_line(res.mc, res.hypothesis),
             _adaptive(res.mc, res.n_sims, batch=200)]
    if res.n_failed:
        parts.append(f"{res.n_failed} refits failed and were counted as non-detections.")
    return _done(parts, format)


def simulated_power_methods(res: Any, *, model: str | None = None, test: str | None = None,
                            format: str = "text") -> str:
    """Methods paragraph of a :class:`~nlpower.simpower.SimulatedPowerResult`.

    ``simulate_power`` runs the user's own simulator and test, which the
    result cannot describe: ``model`` and ``test`` are sentences-worth of
    text saying what they are (a placeholder asks for them otherwise).
    """
    from . import __version__
    where = ", ".join(f"{k} = {v!r}" for k, v in res.params.items())
    model = model or "a user-supplied simulator (describe the model and its parameters here)"
    test = test or "a user-supplied test (name it here)"
    parts = [f"We estimated statistical power by simulation with nlpower "
             f"{res.version or __version__}: each of {res.n_sims} data sets was generated from "
             f"{model}" + (f" (parameters: {where})" if where else "") + f" and tested by {test} at "
             f"alpha = {res.alpha:g}; power is the share of data sets with p <= alpha and an "
             f"estimate of the sign of the true effect."]
    if res.effect != 0:
        parts.append(f"At a true effect of {res.effect:g} power was {res.power:.3f} (Monte "
                     f"Carlo SE {res.se:.3f}; 95% Wilson interval {res.ci.low:.3f}-"
                     f"{res.ci.high:.3f}); Type-M {res.type_m:.3g}, Type-S {res.type_s:.3g}.")
    else:
        parts.append(f"At a true effect of 0 the rejection rate (Type I error) was "
                     f"{res.rejection_rate:.3f} (95% Wilson interval {res.rejection_ci.low:.3f}-"
                     f"{res.rejection_ci.high:.3f}).")
    parts.append(_adaptive(res.mc, res.n_sims))
    if res.n_failed:
        parts.append(f"{res.n_failed} simulations failed (the test raised or gave no p-value) "
                     "and were counted as non-rejections.")
    return _done(parts, format)


def power_methods(res: Any, *, source: str | None = None, format: str = "text") -> str:
    """Methods paragraph of a :class:`~nlpower.powersim.result.PowerResult`.

    ``source`` says where the variance components came from (e.g. "Card et
    al. 2020, Table 16, high variance", or "a pilot of 120 ratings").
    """
    from . import __version__
    return _done([f"We estimated statistical power with nlpower {res.version or __version__}.",
                  _model(res.params, source), _design(res.design), *_power_sentences(res),
                  *_notes(res.notes)], format)


def _notes(notes: Any) -> list[str]:
    return [n[0].upper() + n[1:] + ("" if n.endswith(".") else ".") for n in notes if n]


def plan_methods(res: Any, *, source: str | None = None, format: str = "text") -> str:
    """Methods paragraph of a :class:`~nlpower.powersim.planning.PlanResult`."""
    how = ("simulated power (common random numbers across designs)" if res.outcome != "gaussian"
           else "analytic power")
    test = _TESTS.get(res.test, f"the {res.test} test")
    parts = [f"We chose the design with nlpower as the cheapest number of workers and items "
             f"whose {how} reached {res.target_power:g} for an effect of {res.effect:g} "
             f"({res.coding} coding), tested {res.alternative} at alpha = {res.alpha:g} by "
             f"{test}.",
             _model(res.params, source),
             f"The chosen design has {res.n_workers} workers and {res.n_items} items "
             f"({res.design.n_ratings} ratings, cost {res.cost:g}) with power {res.power:.3f}."]
    sim = res.simulated
    if sim is not None:
        parts.append(f"Simulating it ({sim.n_sims} replicates) gave power {sim.power:.3f} (Monte "
                     f"Carlo SE {sim.se:.3f}; 95% interval {sim.ci.low:.3f}-{sim.ci.high:.3f}).")
    return _done([*parts, *_notes(res.notes)], format)


def assurance_methods(res: Any, *, format: str = "text") -> str:
    """Methods paragraph of a :class:`~nlpower.pilot.result.AssuranceResult`."""
    sds = ", ".join(f"{k} {v:.3g}" for k, v in res.sd_point.items())
    ups = ", ".join(f"{k} {v:.3g}" for k, v in res.sd_upper.items())
    pw = ("analytically" if res.n_sims == 0
          else f"by simulation ({res.n_sims} replicates per draw)")
    parts = [f"The variance components were estimated from a pilot ({res.pilot}; standard "
             f"deviations {sds}).",
             f"For {res.design} and an effect of {res.effect:g} ({res.coding} coding), tested "
             f"{res.alternative} at alpha = {res.alpha:g} by "
             f"{_TESTS.get(res.test, 'the ' + res.test + ' test')}, power at the pilot's "
             f"estimates was {res.power:.3f}.",
             f"Because those estimates are uncertain we report assurance, the mean power over "
             f"{res.n_boot} draws of the variance components from their sampling distribution "
             f"({res.method}), each computed {pw}: {res.assurance:.3f} (Monte Carlo SE "
             f"{res.se:.3f}); the design reached power {res.target_power:g} in "
             f"{100 * res.prob_target:.0f}% of the draws.",
             f"At the upper {res.confidence_level:.0%} confidence bounds of the standard "
             f"deviations ({ups}) power was {res.safeguard_power:.3f} (safeguard power)."]
    if math.isnan(res.se):
        parts[2] = parts[2].replace(" (Monte Carlo SE nan)", "")
    return _done(parts, format)
