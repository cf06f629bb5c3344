"""Stage 1 of the formula layer (tokenize): split an lme4 formula into tokens.

Tokens are names (R-style identifiers ``[A-Za-z._][A-Za-z0-9._]*``, or any
text between backticks for column names with spaces), non-negative integer
numbers, and the operators of the lme4 formula language::

    ~  +  -  *  /  :  ^  |  ||  (  )

Every token records its 0-based character offset, so that later stages can
point a caret at the offending token (see :class:`nlpower.errors.FormulaError`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import FormulaError

__all__ = ["OPERATORS", "Token", "tokenize"]

#: Operators the formula language understands, longest first.
OPERATORS: tuple[str, ...] = ("||", "~", "+", "-", "*", "/", ":", "^", "|", "(", ")")

_NAME = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*")
_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")
_UNKNOWN_OP = re.compile(r"%[^%]*%|[^\sA-Za-z0-9_.`]+")
_ALLOWED = "~ + - * / : ^ | || ( )"


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` is ``"name"``, ``"number"``, ``"op"`` or ``"end"``."""

    kind: str
    text: str
    pos: int

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r}, {self.pos})"


def tokenize(formula: str) -> list[Token]:
    """Split ``formula`` into tokens, ending with an ``"end"`` token.

    Raises
    ------
    FormulaError
        On characters that are not part of the formula language (``%in%``,
        ``$``, ``=`` ...) or an unterminated backtick, with a caret at the
        offending character.

    Examples
    --------
    >>> [t.text for t in tokenize("y ~ x + (1 | g)")]
    ['y', '~', 'x', '+', '(', '1', '|', 'g', ')', '']
    """
    tokens: list[Token] = []
    i, n = 0, len(formula)
    while i < n:
        c = formula[i]
        if c.isspace():
            i += 1
            continue
        if c == "`":
            j = formula.find("`", i + 1)
            if j < 0:
                raise FormulaError(
                    "unterminated backtick-quoted name: close it with a second '`'.",
                    formula, i,
                )
            if j == i + 1:
                raise FormulaError("empty backtick-quoted name ``.", formula, i)
            tokens.append(Token("name", formula[i + 1 : j], i))
            i = j + 1
            continue
        m = _NUMBER.match(formula, i)
        if m and c.isdigit():
            tokens.append(Token("number", m.group(), i))
            i = m.end()
            continue
        m = _NAME.match(formula, i)
        if m:
            tokens.append(Token("name", m.group(), i))
            i = m.end()
            continue
        for op in OPERATORS:
            if formula.startswith(op, i):
                tokens.append(Token("op", op, i))
                i += len(op)
                break
        else:
            m = _UNKNOWN_OP.match(formula, i)
            bad = m.group() if m else c
            raise FormulaError(
                f"unknown operator {bad!r} in formula. Allowed operators: {_ALLOWED}; "
                "names with other characters must be quoted with backticks, e.g. `my col`.",
                formula, i,
            )
    tokens.append(Token("end", "", n))
    return tokens
