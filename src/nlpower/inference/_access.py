"""What the inference verbs read from a fit of any family, in one place."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import InputError
from ..lmm.family import Family, get_family

Kind = Literal["gaussian", "glmm", "ordinal"]


def kind_of(fit: Any, *, where: str) -> Kind:
    """``"gaussian"`` (lmer), ``"glmm"`` (glmer) or ``"ordinal"`` (clmm); else an error.

    The fit's type, not its family: the verbs branch on it only where the fit
    objects really differ -- a clmm fit's parameters begin with its thresholds
    (``coef_table``, ``vcov``), its structure has no profile or bootstrap
    refits, and its category probabilities are its own -- and to compare
    likelihoods of one kind of response (``anova``).  What depends on the
    family (REML, sigma, degrees of freedom, the response scale) is asked of
    :func:`family_of`.
    """
    name = type(fit).__name__
    if name == "LmmFit" or (hasattr(fit, "REML") and hasattr(fit, "sigma")):
        return "gaussian"
    if name == "GlmmFit" or hasattr(fit, "nAGQ"):
        return "glmm"
    if name == "ClmmFit" or hasattr(fit, "thresholds"):
        return "ordinal"
    raise InputError(f"{where} takes a fit of nlpower.lmer, glmer or clmm; got a "
                     f"{name} ({fit!r:.80}).")


def family_of(fit: Any, *, where: str) -> Family:
    """The fit's family (its response module): ``has_sigma``, ``is_glm``, the link, ``mean_name``.

    The prepared model's family (every engine's fit carries it); else the
    family named by the fit (``glmer``'s ``family`` and ``link``).
    """
    kind = kind_of(fit, where=where)
    family = getattr(getattr(fit, "model", None), "family", None)
    if isinstance(family, Family):
        return family
    if kind == "ordinal":
        raise InputError(f"{where} needs the clmm fit's prepared structure; fit it with "
                         "nlpower.clmm.")
    return get_family(getattr(fit, "family", None), getattr(fit, "link", None))


def prepared_model(fit: Any, *, where: str) -> Any:
    """The prepared model behind ``fit`` (its structure, for refits): ``fit.model``."""
    model = getattr(fit, "model", None)
    if model is not None and hasattr(model, "spec"):
        return model
    raise InputError(f"{where} refits the model, and this {type(fit).__name__} (engine "
                     f"{getattr(fit, 'engine', '?')!r}) does not carry its prepared structure; "
                     "fit it with nlpower.lmer, glmer or clmm.")


def fixed(fit: Any) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(beta, vcov(beta), names)``; for clmm the fixed block of the full covariance."""
    if kind_of(fit, where="fixed effects") == "ordinal":
        m = fit.model
        a, p = m.n_alpha, m.p
        V = np.asarray(fit.core.vcov)[a:a + p, a:a + p]
        return np.asarray(fit.core.beta, dtype=float), V, list(m.fixef_names)
    return (fit.fixef.to_numpy(dtype=float), fit.vcov.to_numpy(dtype=float),
            [str(n) for n in fit.fixef.index])


def var_parameters(terms: Any, sigma: float | None) -> pd.DataFrame:
    """lme4's variance parameters: SDs and correlations in ``theta`` order, then sigma.

    ``terms``: the fit's :class:`~nlpower.lmm.result.VarTerm` s in lme4's
    order.  Columns ``name`` (``.sig01`` ..., ``.sigma``: ``confint``'s old
    names), ``term`` (``sd_(Intercept)|Subject``, ``cor_Days.(Intercept)|Subject``:
    its new names) and ``estimate``.
    """
    rows = []
    for t in terms:
        cov = np.asarray(t.cov, dtype=float)
        sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
        q = len(t.cnames)
        for j in range(q):
            for i in range(j, q):
                if i == j:
                    rows.append((f"sd_{t.cnames[i]}|{t.group}", float(sd[i])))
                else:
                    den = sd[i] * sd[j]
                    cor = float(cov[i, j] / den) if den > 0 else float("nan")
                    rows.append((f"cor_{t.cnames[i]}.{t.cnames[j]}|{t.group}", cor))
    names = [f".sig{k + 1:02d}" for k in range(len(rows))]
    if sigma is not None:
        names.append(".sigma")
        rows.append(("sigma", float(sigma)))
    return pd.DataFrame({"name": names, "term": [r[0] for r in rows],
                         "estimate": [r[1] for r in rows]})


def var_terms(fit: Any) -> list[Any]:
    """The fit's variance terms in lme4's order (``VarTerm``: group, cnames, cov)."""
    terms = getattr(fit, "var_terms", None)
    if terms is not None:
        return list(terms)
    from ..lmm.result import VarTerm
    m = fit.model
    out = []
    if m.rs is not None:
        for k, t in enumerate(m.rs.terms):
            out.append(VarTerm(grp=t.group, group=t.group, cnames=tuple(t.cnames),
                               cov=fit._term_cov(k)))
    return out
