"""The inference verbs and displays every fit has, in one place (a mixin of the fit classes).

Each method hands the fit to :mod:`nlpower.inference` or :mod:`nlpower.display`
(imported when called: those modules read fits of every family).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FitVerbs"]


class FitVerbs:
    """``confint``, ``anova``, ``emmeans``, ``to_markdown``, ``to_latex`` and ``_repr_html_``."""

    #: the family's default interval method (lme4: profile for lmer; Wald where profiling
    #: a GLMM's or an ordinal fit's likelihood is not offered by default)
    default_confint: str = "wald"

    def confint(self, parm: Any = None, *, level: float = 0.95, method: str | None = None,
                n_boot: int = 500, rng: Any = None) -> Any:
        """Confidence intervals, lme4's ``confint``: :func:`nlpower.inference.confint`.

        ``method``: ``"profile"``, ``"wald"`` or ``"boot"`` (default: the
        family's, ``"profile"`` for ``lmer`` fits, ``"wald"`` otherwise).
        """
        from ..inference import confint
        return confint(self, parm, level=level, method=method or self.default_confint,
                       n_boot=n_boot, rng=rng)

    def anova(self, *others: Any, **kwargs: Any) -> Any:
        """LRT against nested fits (or Type III F tests): :func:`nlpower.inference.anova`."""
        from ..inference import anova
        return anova(self, *others, **kwargs)

    def emmeans(self, specs: Any, **kwargs: Any) -> Any:
        """Marginal means per level: :func:`nlpower.inference.emmeans` (``.contrast()``)."""
        from ..inference import emmeans
        return emmeans(self, specs, **kwargs)

    def to_markdown(self, digits: int = 4) -> str:
        """Fixed effects and variance components as Markdown tables."""
        from ..display import fit_markdown
        return fit_markdown(self, digits)

    def to_latex(self, digits: int = 4) -> str:
        """Fixed effects and variance components as booktabs LaTeX tables."""
        from ..display import fit_latex
        return fit_latex(self, digits)

    def _repr_html_(self) -> str:
        from ..display import fit_html
        return fit_html(self)
