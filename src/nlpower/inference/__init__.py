"""Inference verbs for fitted mixed models, with the semantics of lme4, lmerTest and emmeans.

* :func:`confint` -- Wald, profile and bootstrap intervals (``confint.merMod``);
* :func:`anova` -- likelihood-ratio tests of nested fits of any family (``anova.merMod``),
  and with one Gaussian fit the Type III F table with Satterthwaite or Kenward-Roger
  denominator df (lmerTest's ``anova``);
* :func:`emmeans` -- estimated marginal means per level of a factor, and
  :func:`pairs` / :meth:`MarginalMeans.contrast` their pairwise or vs-baseline
  contrasts with a multiplicity adjustment (``emmeans``/``pairs``).

Every verb returns an :class:`InferenceTable` (``to_frame``, ``summary``,
``to_markdown``, ``to_latex``, HTML display in notebooks).
"""

from __future__ import annotations

from .anova import anova
from .confint import confint
from .emm import MarginalMeans, emmeans, pairs
from .table import InferenceTable

__all__ = ["InferenceTable", "MarginalMeans", "anova", "confint", "emmeans", "pairs"]
