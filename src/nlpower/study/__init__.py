"""Power for any model: a fitted mixed model as the truth, any term as the test (simr's role).

* :class:`ModelDesign` / :func:`model_design` -- a fitted ``lmer``/``glmer``/
  ``clmm`` model with its parameters (``fit.with_params``) on a set of rows;
* :func:`extend` -- a larger design (simr's ``extend``);
* :func:`power_model` -- ``nlpower.power(fit, term=...)``: simulate, refit,
  test (simr's ``powerSim``);
* ``power_model(..., pairwise="system")`` -- all pairwise (or many-to-one)
  comparisons of a factor's levels with multiplicity control
  (:mod:`nlpower.study.multiple`);
* :func:`plan_model` -- the smallest number of levels of a factor that
  reaches a target power;
* :func:`power_curve` -- power against the number of levels of a factor
  (simr's ``powerCurve``), on the grid runner;
* :class:`Study` and its parts (:class:`Truth`, :class:`Analysis`,
  :class:`Test`), :class:`PlanOptions` -- a study as one value
  (:mod:`nlpower.study.spec`), which ``power``, ``power_grid``, ``mde``,
  ``plan``, :func:`power_curve` and :func:`plan_model` take.
"""

from __future__ import annotations

from typing import Any

from .design import ModelDesign, model_design
from .multiple import MultiplePowerResult
from .plan import ModelPlan, plan_model
from .power import power_curve, power_model
from .result import ModelPowerResult, PowerCurve
from .spec import Analysis, PlanOptions, Study, Test, Truth

__all__ = ["Analysis", "ModelDesign", "ModelPlan", "ModelPowerResult", "MultiplePowerResult",
           "PlanOptions", "PowerCurve", "Study", "Test", "Truth", "extend", "model_design",
           "plan_model", "power_curve", "power_model"]


def extend(model: Any, along: str | None = None, *, n: int | None = None,
           within: Any = None, values: Any = None) -> ModelDesign:
    """A fitted model's design extended along a factor or covariate, or within groups (simr's ``extend``).

    Returns a :class:`ModelDesign` with the model's parameters on the larger
    set of rows; :func:`nlpower.power` and :func:`nlpower.power_curve` take
    it like a fit.  See :meth:`ModelDesign.extend`.

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    >>> m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
    >>> big = nlpower.extend(m, along="Subject", n=40)
    >>> big.nobs, big.data.Subject.nunique()
    (400, 40)
    """
    return model_design(model).extend(along, n=n, within=within, values=values)
