"""The lme4 formula language: tokenize -> parse -> terms.

Stages: :mod:`~nlpower.formula.lexer` (``tokenize``),
:mod:`~nlpower.formula.parser` (``parse_tokens``: syntax tree),
:mod:`~nlpower.formula.terms` (``build_formula``: R term algebra, lme4's
random-term expansion).

>>> from nlpower.formula import parse
>>> f = parse("rating ~ system + (1 + system || worker) + (1 | item)")
>>> f.response, f.fixed.labels
('rating', ('system',))
>>> [str(r) for r in f.expanded_random()]
['(1 | worker)', '(0 + system | worker)', '(1 | item)']
>>> str(f)
'rating ~ system + (1 + system || worker) + (1 | item)'

See :mod:`nlpower.formula.terms` for the semantics (R term algebra, lme4's
``||`` and ``/`` expansion) and ``docs/formula.md`` for the user guide.
Model matrices are built from a :class:`Formula` by
:func:`nlpower.lmm.frame.model_frame`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from ..errors import FormulaError
from .lexer import Token, tokenize
from .parser import ParsedFormula, parse_tokens
from .terms import Formula, RandomTerm, Terms, build_formula, format_name

__all__ = [
    "Formula",
    "ParsedFormula",
    "RandomTerm",
    "Terms",
    "Token",
    "build_formula",
    "format_name",
    "parse",
    "parse_tokens",
    "term_columns",
    "tokenize",
]


def parse(formula: str) -> Formula:
    """Parse an lme4 formula into a :class:`Formula`.

    Parameters
    ----------
    formula : str
        E.g. ``"rating ~ system + (1 + system | worker) + (1 | item)"``.

    Returns
    -------
    Formula
        Response, fixed-effects terms and random-effects terms (before
        ``||``/nesting expansion; see :meth:`Formula.expanded_random`).
        ``str()`` of the result is a normalised formula that parses back to
        an equal :class:`Formula`.

    Raises
    ------
    FormulaError
        On syntax errors, with a caret under the offending token.
    """
    if not isinstance(formula, str):
        raise FormulaError(
            f"formula must be a string such as 'rating ~ system + (1 | worker)'; "
            f"got {formula!r} ({type(formula).__name__})."
        )
    # newlines and tabs become spaces (same offsets) so error carets line up
    flat = "".join(" " if c.isspace() else c for c in formula)
    f = build_formula(parse_tokens(flat))
    return dataclasses.replace(f, text=formula, positions=f.positions)


#: a ``:`` that joins the parts of a column name (not one inside a level's ``[...]``)
_PARTS = re.compile(r":(?![^\[]*\])")


def term_columns(formula: str, names: Sequence[str]) -> dict[str, list[int]]:
    """The coefficients of each term of the fixed part (R's ``assign``), by position in ``names``.

    A coefficient belongs to the term whose variables begin its ``:``-separated
    parts in order (``system[A]:x`` or ``systemB:x`` to ``system:x``; a ``:``
    inside ``[...]`` is part of a level), the longest such match when
    several do; the intercept belongs to none.  Terms without coefficients
    are left out.

    Examples
    --------
    >>> term_columns("y ~ s * x + (1 | g)",
    ...              ["(Intercept)", "s[a]", "s[b]", "x", "s[a]:x", "s[b]:x"])
    {'s': [1, 2], 'x': [3], 's:x': [4, 5]}
    """
    terms = [tuple(t) for t in parse(formula).fixed.terms]
    out: dict[str, list[int]] = {":".join(t): [] for t in terms}
    for j, name in enumerate(names):
        parts = _PARTS.split(str(name))
        best: tuple[int, str] | None = None
        for t in terms:
            if len(t) == len(parts) and all(p.startswith(v) for p, v in zip(parts, t, strict=True)):
                score = sum(len(v) for v in t)
                if best is None or score > best[0]:
                    best = (score, ":".join(t))
        if name != "(Intercept)" and best is not None:
            out[best[1]].append(j)
    return {k: v for k, v in out.items() if v}
