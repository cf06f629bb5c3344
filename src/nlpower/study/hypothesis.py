"""What a power study tests: a coefficient, a contrast, a multi-df term or a model comparison.

``term=`` names

* a coefficient of the fixed part (``"x"``, ``"systemB"``, ``"system[A]"``;
  lme4's ``"system1"`` is an alias of ``"system[A]"``): one df;
* a contrast of coefficients (``"systemB - systemC"``, ``"x + 0.5 * x:z"``;
  ``+``/``-`` between terms need spaces around them): one df;
* a term of the formula whose columns are several coefficients (a factor
  ``"system"`` with three or more levels, an interaction of factors): a
  model comparison with and without it (likelihood ratio), as simr's
  ``fixed("system", "lr")``.

``compare=`` names the reduced model, simr's ``fcompare``: ``"~ . - x"``
(the formula without the fixed term ``x``) or a whole formula.

A one-df hypothesis has a signed true value (``L' beta``), so power counts
only rejections with the right sign (Card et al. 2020); a comparison has
none, and its power is the rejection rate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import closest_name
from ..errors import InputError
from ..formula import parse, term_columns
from ..lmm.names import canonical

__all__ = ["Hypothesis", "resolve"]


@dataclass(frozen=True, eq=False)
class Hypothesis:
    """A resolved ``term=`` / ``compare=``.

    Attributes
    ----------
    label : str
        As the user wrote it (for summaries).
    L : ndarray or None
        The contrast over the analysis model's coefficients (one df), or None.
    reduced : str or None
        The formula of the reduced model (comparisons and multi-df terms).
    effect : float
        The true ``L' beta`` (NaN for comparisons).
    """

    label: str
    L: np.ndarray | None
    reduced: str | None
    effect: float

    @property
    def one_df(self) -> bool:
        return self.L is not None


_SPLIT = re.compile(r"\s+([+-])\s+")
_COEF = re.compile(r"^\s*([+-]?\s*(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*\*\s*(.+?)\s*$", re.I)


def _contrast(text: str, names: tuple[str, ...], aliases: Mapping[str, str]
              ) -> np.ndarray | None:
    """``L`` of ``"a - b"`` / ``"2 * a + b"`` over ``names``; None when ``text`` is not one."""
    pieces = _SPLIT.split(" " + text.strip())
    signs = ["+"] + pieces[1::2]
    parts = pieces[0::2]
    if parts and not parts[0].strip():          # a leading sign
        parts, signs = parts[1:], signs[1:]
    L = np.zeros(len(names))
    for sign, part in zip(signs, parts, strict=True):
        m = _COEF.match(part)
        coef, name = (float(m.group(1).replace(" ", "")), m.group(2)) if m else (1.0, part.strip())
        if name.startswith("-"):
            coef, name = -coef, name[1:].strip()
        found = canonical(name, names, aliases)
        if found is None:
            return None
        L[names.index(found)] += coef if sign == "+" else -coef
    return L if np.any(L) else None


def _reduced_formula(formula: str, compare: str) -> str:
    """The reduced model: ``~ . - x`` edits the formula; ``~ a + b`` (no random terms) replaces
    its fixed part and keeps its random terms (simr's ``fcompare``); a formula with random
    terms is taken as it is."""
    text = compare.strip()
    if "~" not in text:
        raise InputError(f"compare must be a formula of the reduced model, e.g. '~ . - x' or "
                         f"'y ~ 1 + (1 | g)'; got {compare!r}.")
    lhs, _, rhs = text.partition("~")
    rhs = rhs.strip()
    if rhs.startswith("."):
        head, _, full = formula.partition("~")
        return f"{head.strip()} ~ {full.strip()} {rhs[1:].strip()}"
    out = f"{lhs.strip() or parse(formula).response} ~ {rhs}"
    if not parse(out).random:
        bars = [str(t) for t in parse(formula).random]
        out = " + ".join([out, *bars])
    return out


def _refuse_random(text: str, formula: str) -> None:
    """A random-effects term or grouping factor named as ``term``: say how it is tested."""
    f = parse(formula)
    squeeze = text.replace(" ", "")
    for t in f.random:
        if squeeze in (str(t).replace(" ", ""), t.group_name, f"({t.group_name})"):
            others = [str(o) for o in f.random if o is not t]
            reduced = " + ".join([f"{f.response} ~ {f.fixed}", *others])
            raise InputError(
                f"term {text!r} names the random-effects term {str(t)!r}; term= tests fixed "
                "effects. To test a random effect, compare the model with one without it by a "
                f"likelihood ratio: compare={reduced!r} (conservative at the boundary, as "
                "simr's rcompare).")


def resolve(term: str | None, compare: str | None, *, formula: str, names: tuple[str, ...],
            truth: pd.Series, aliases: Mapping[str, str] | None = None) -> Hypothesis:
    """The :class:`Hypothesis` of ``term``/``compare`` for the analysis model (module docstring).

    ``aliases``: lme4's names of sum-coded columns (``ModelSpec.aliases``),
    accepted for the coefficients they name.

    Examples
    --------
    >>> names = ("(Intercept)", "s[a]", "s[b]", "x")
    >>> truth = pd.Series([0.0, 0.2, -0.1, 0.3], index=names)
    >>> h = resolve("s[a] - s[b]", None, formula="y ~ s + x", names=names, truth=truth)
    >>> h.L.tolist(), round(h.effect, 3)
    ([0.0, 1.0, -1.0, 0.0], 0.3)
    >>> resolve("s", None, formula="y ~ s + x", names=names, truth=truth).reduced
    'y ~ s + x - s'
    >>> resolve("s1 - s2", None, formula="y ~ s + x", names=names, truth=truth,
    ...         aliases={"s1": "s[a]", "s2": "s[b]"}).L.tolist()     # lme4's names
    [0.0, 1.0, -1.0, 0.0]
    """
    if (term is None) == (compare is None):
        raise InputError("power of a fitted model needs exactly one of term= (a coefficient, a "
                         "contrast such as 'systemB - systemC', or a term of the formula) and "
                         "compare= (the reduced model, e.g. '~ . - x').")
    if compare is not None:
        if not isinstance(compare, str):
            raise InputError(f"compare must be a formula string; got {compare!r}.")
        reduced = _reduced_formula(formula, compare)
        parse(reduced)      # the formula layer's own error for a bad formula
        return Hypothesis(compare, None, reduced, float("nan"))
    if not isinstance(term, str) or not term.strip():
        raise InputError(f"term must be a coefficient name, a contrast or a formula term; got "
                         f"{term!r}.")
    text = term.strip()
    L: np.ndarray | None
    single = canonical(text, names, aliases or {})
    if single is not None:
        L = np.zeros(len(names))
        L[names.index(single)] = 1.0
    else:
        L = _contrast(text, names, aliases or {})
    if L is not None:
        beta = np.array([float(truth.get(n, 0.0)) for n in names])
        return Hypothesis(text, L, None, float(L @ beta))
    labels = parse(formula).fixed.terms
    cols = term_columns(formula, names).get(text, [])
    if cols:
        if len(cols) == 1:
            L = np.zeros(len(names))
            L[cols[0]] = 1.0
            beta = np.array([float(truth.get(n, 0.0)) for n in names])
            return Hypothesis(text, L, None, float(L @ beta))
        return Hypothesis(text, None, f"{formula} - {text}", float("nan"))
    _refuse_random(text, formula)
    spaced = re.sub(r"\s*([+-])\s*", r" \1 ", text).strip()
    if spaced != text and _contrast(spaced, names, aliases or {}) is not None:
        raise InputError(f"term {text!r} is not a coefficient of {formula!r}; as a contrast "
                         f"write it with spaces around + and - ({spaced!r}): level names may "
                         "contain '-'.")
    hint = closest_name(text, list(names) + [":".join(t) for t in labels])
    raise InputError(f"term {text!r} is not a coefficient, a contrast of coefficients or a term "
                     f"of {formula!r}" + (f"; did you mean {hint!r}?" if hint else "") +
                     f" (coefficients: {', '.join(names)}).")
