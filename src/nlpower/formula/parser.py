"""Stage 2 of the formula layer (parse): tokens -> syntax tree.

A recursive-descent parser for the lme4 formula language with R's operator
precedence (loosest first)::

    ~            formula := NAME '~' sum
    | ||         only inside parentheses: (sum | group)
    + -          sum     := [+|-] prod ((+|-) prod)*
    * /          prod    := inter ((*|/) inter)*
    :            inter   := power (: power)*
    ^            power   := atom [^ NUMBER]
                 atom    := NAME | NUMBER | '(' sum [(| or ||) sum] ')'

The tree is purely syntactic; :mod:`nlpower.formula.terms` gives it meaning
(term algebra, intercepts, random terms).  Function calls (``log(y)``,
``factor(x)``, ``I(x^2)``), the ``.`` shorthand and ``%in%`` are not part of
the language: create the column in the data frame first.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FormulaError
from .lexer import Token, tokenize

__all__ = ["Bar", "BinOp", "Name", "Node", "Num", "Paren", "ParsedFormula", "parse_tokens"]


@dataclass(frozen=True)
class Name:
    """A variable (column) name."""

    name: str
    pos: int


@dataclass(frozen=True)
class Num:
    """A number (only 0 and 1 mean something in a formula)."""

    text: str
    pos: int


@dataclass(frozen=True)
class BinOp:
    """``left op right`` for op in ``+ - * / : ^``; ``left`` is None for unary ``+``/``-``."""

    op: str
    left: Node | None
    right: Node
    pos: int


@dataclass(frozen=True)
class Bar:
    """``lhs | group`` (``double`` for ``||``): a random-effects term's inside."""

    lhs: Node
    group: Node
    double: bool
    pos: int


@dataclass(frozen=True)
class Paren:
    """A parenthesised expression (``inner`` may be a :class:`Bar`)."""

    inner: Node | Bar
    pos: int


Node = Name | Num | BinOp | Paren


@dataclass(frozen=True)
class ParsedFormula:
    """Syntax tree of ``response ~ rhs``."""

    text: str
    response: Name
    rhs: Node


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.open_parens: list[int] = []

    # -- helpers ---------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def error(self, message: str, pos: int) -> FormulaError:
        return FormulaError(message, self.text, pos)

    def at_op(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def advance(self) -> Token:
        tok = self.tok
        self.i += 1
        return tok

    # -- grammar ---------------------------------------------------------------
    def formula(self) -> ParsedFormula:
        tilde = [t for t in self.tokens if t.kind == "op" and t.text == "~"]
        if not tilde:
            raise self.error(
                "formula has no '~': write it as 'response ~ predictors', e.g. "
                "'rating ~ system + (1 | worker) + (1 | item)'.",
                0,
            )
        if len(tilde) > 1:
            raise self.error("formula has more than one '~'; write 'response ~ predictors'.",
                             tilde[1].pos)
        if self.tok.kind == "op" and self.tok.text == "~":
            raise self.error(
                "formula has no response before '~': write 'response ~ predictors' "
                "(one-sided formulas are not supported here).",
                self.tok.pos,
            )
        if self.tok.kind != "name":
            raise self.error(
                f"the response must be a column name; got {self.tok.text!r}.", self.tok.pos
            )
        response = Name(self.tok.text, self.tok.pos)
        self.advance()
        if self.at_op("("):
            raise self.error(
                f"function calls such as {response.name}(...) are not supported in formulas; "
                "compute the column in the data frame first.",
                response.pos,
            )
        if not self.at_op("~"):
            raise self.error(
                "the response must be a single column name followed by '~'; "
                f"got {self.tok.text!r} here.",
                self.tok.pos,
            )
        self.advance()
        if self.tok.kind == "end":
            raise self.error("formula has nothing after '~'; write e.g. 'y ~ 1'.", self.tok.pos)
        rhs = self.sum(top=True)
        self.expect_end()
        return ParsedFormula(self.text, response, rhs)

    def expect_end(self) -> None:
        tok = self.tok
        if tok.kind == "end":
            return
        if tok.kind == "op" and tok.text == ")":
            raise self.error("unbalanced parentheses: ')' without a matching '('.", tok.pos)
        if tok.kind == "op" and tok.text in ("|", "||"):
            raise self.error(
                f"'{tok.text}' outside parentheses: random-effects terms must be written "
                f"in parentheses, e.g. (1 {tok.text} g).",
                tok.pos,
            )
        raise self.error(
            f"unexpected {tok.text!r}: expected an operator such as '+' between terms.",
            tok.pos,
        )

    def sum(self, top: bool = False) -> Node:
        node: Node | None = None
        if self.at_op("+", "-"):
            op = self.advance()
            operand = self.prod()
            node = BinOp(op.text, None, operand, op.pos)
        else:
            node = self.prod()
        while self.at_op("+", "-"):
            op = self.advance()
            right = self.prod()
            node = BinOp(op.text, node, right, op.pos)
        return node

    def prod(self) -> Node:
        node = self.inter()
        while self.at_op("*", "/"):
            op = self.advance()
            node = BinOp(op.text, node, self.inter(), op.pos)
        return node

    def inter(self) -> Node:
        node = self.power()
        while self.at_op(":"):
            op = self.advance()
            node = BinOp(":", node, self.power(), op.pos)
        return node

    def power(self) -> Node:
        node = self.atom()
        if self.at_op("^"):
            op = self.advance()
            if self.tok.kind != "number" or not self.tok.text.isdigit() or int(self.tok.text) < 1:
                raise self.error(
                    "'^' must be followed by a positive integer, e.g. (a + b + c)^2.",
                    self.tok.pos,
                )
            node = BinOp("^", node, Num(self.tok.text, self.tok.pos), op.pos)
            self.advance()
        return node

    def atom(self) -> Node:
        tok = self.tok
        if tok.kind == "name":
            self.advance()
            if self.at_op("(") and tok.text == "offset":
                raise self.error("offset(...) is not written in the formula: pass the column "
                                 "to glmer as offset='col' (on the link scale, e.g. the log "
                                 "of an exposure).", tok.pos)
            if self.at_op("("):
                raise self.error(
                    f"function calls such as {tok.text}(...) are not supported in formulas; "
                    "compute the column in the data frame first (factors: make the column "
                    "a pandas Categorical or strings).",
                    tok.pos,
                )
            if tok.text == ".":
                raise self.error(
                    "'.' (all other columns) is not supported; name the columns explicitly.",
                    tok.pos,
                )
            return Name(tok.text, tok.pos)
        if tok.kind == "number":
            self.advance()
            return Num(tok.text, tok.pos)
        if tok.kind == "op" and tok.text == "(":
            self.advance()
            self.open_parens.append(tok.pos)
            if self.at_op("|", "||"):
                raise self.error(
                    f"random-effects term has nothing before '{self.tok.text}': write "
                    f"(1 {self.tok.text} g) for a random intercept.",
                    self.tok.pos,
                )
            inner: Node | Bar = self.sum()
            if self.at_op("|", "||"):
                bar = self.advance()
                if self.at_op(")") or self.tok.kind == "end":
                    raise self.error(
                        f"random-effects term has no grouping factor after '{bar.text}': "
                        f"write e.g. (1 {bar.text} worker).",
                        self.tok.pos,
                    )
                group = self.sum()
                if self.at_op("|", "||"):
                    raise self.error(
                        f"a random-effects term has only one '|' or '||'; got another "
                        f"'{self.tok.text}' here.",
                        self.tok.pos,
                    )
                assert not isinstance(inner, Bar)
                inner = Bar(inner, group, bar.text == "||", bar.pos)
            if not self.at_op(")"):
                if self.tok.kind == "end":
                    raise self.error(
                        "unbalanced parentheses: this '(' is never closed.", tok.pos
                    )
                raise self.error(
                    f"unexpected {self.tok.text!r} inside parentheses: expected ')' or an "
                    "operator such as '+'.",
                    self.tok.pos,
                )
            self.advance()
            self.open_parens.pop()
            return Paren(inner, tok.pos)
        # nothing usable where a term must start
        if tok.kind == "end":
            raise self.error(
                "formula ends where a term is expected (empty term after an operator).",
                tok.pos,
            )
        if tok.text == ")":
            if self.open_parens:
                raise self.error("empty term: nothing before ')'.", tok.pos)
            raise self.error("unbalanced parentheses: ')' without a matching '('.", tok.pos)
        if tok.text in ("|", "||"):
            raise self.error(
                f"empty term before '{tok.text}'; random-effects terms look like (1 | g).",
                tok.pos,
            )
        raise self.error(
            f"empty term: expected a column name, 0, 1 or '(' but got {tok.text!r}.", tok.pos
        )


def parse_tokens(formula: str) -> ParsedFormula:
    """Parse ``formula`` into a :class:`ParsedFormula` syntax tree.

    Raises
    ------
    FormulaError
        On any syntax error, with a caret at the offending token.
    """
    return _Parser(formula).formula()
