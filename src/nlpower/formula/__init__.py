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
