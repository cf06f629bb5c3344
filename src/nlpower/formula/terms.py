"""Stage 3 of the formula layer: syntax tree -> terms (R/lme4 semantics).

Term algebra follows R's ``terms.formula``:

* ``a + b`` is the union of terms, ``a - b`` removes ``b``'s terms;
* ``a:b`` is the interaction (every term of ``a`` with every term of ``b``);
* ``a*b`` = ``a + b + a:b``; ``a/b`` = ``a + a:b`` (``b`` within ``a``);
  ``(a + b + c)^2`` = all main effects and two-way interactions;
* the intercept is implicit; ``0 +``, ``+ 0`` or ``- 1`` remove it, ``1 +`` keeps it;
* terms are ordered by degree (main effects, then two-way interactions, ...)
  and, within a degree, by first appearance; the variables inside an
  interaction are ordered by their first appearance in the expression, so
  ``x:system`` and ``system:x`` name the same term.

Random-effects terms ``(expr | g)`` and ``(expr || g)`` may only appear as
top-level summands of the right-hand side.  The grouping part is a column
``g``, an interaction ``a:b`` (one grouping factor with a level per observed
combination) or a nesting ``a/b`` (lme4: ``(1 | a/b)`` = ``(1 | b:a) + (1 | a)``).

``||`` is expanded with lme4's ``expandDoubleVerts`` semantics (lme4 1.1-31):
``(1 + x + f || g)`` becomes ``(1 | g) + (0 + x | g) + (0 + f | g)`` -- one
term per *term* of the expression, **not** one per model-matrix column.  For
a factor ``f`` the term ``(0 + f | g)`` has one column per level of ``f``
(full indicator coding, because the term has no intercept) and an
unstructured covariance over those columns.  So ``||`` makes the factor's
block independent of the intercept, but the levels of ``f`` stay correlated
with one another.  This is lme4's documented (and surprising) behaviour, and
the one Card et al. (2020) rely on for more than two systems.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import FormulaError
from .lexer import tokenize
from .parser import Bar, BinOp, Name, Node, Num, Paren, ParsedFormula

__all__ = ["Formula", "RandomTerm", "Terms", "build_formula", "format_name"]

Term = tuple[str, ...]

_PLAIN = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*\Z")


def format_name(name: str) -> str:
    """``name`` as it must be written in a formula (backticks when needed)."""
    if _PLAIN.match(name) and not (name.startswith(".") and len(name) > 1 and name[1].isdigit()):
        return name
    return f"`{name}`"


@dataclass(frozen=True)
class Terms:
    """A model-matrix specification: an intercept flag and ordered terms.

    Each term is a tuple of variable names (``("x",)``, ``("system", "x")``
    for the interaction ``system:x``).
    """

    intercept: bool
    terms: tuple[Term, ...]

    @property
    def variables(self) -> tuple[str, ...]:
        """Variables in order of first appearance."""
        out: dict[str, None] = {}
        for t in self.terms:
            out.update(dict.fromkeys(t))
        return tuple(out)

    @property
    def labels(self) -> tuple[str, ...]:
        """R's ``term.labels``: ``("x", "system", "system:x")``."""
        return tuple(":".join(format_name(v) for v in t) for t in self.terms)

    def to_string(self, explicit_intercept: bool = True) -> str:
        parts = _summands(self.terms)
        if self.intercept:
            if explicit_intercept or not parts:
                parts.insert(0, "1")
        else:
            parts.insert(0, "0")
        return " + ".join(parts).replace("+ - ", "- ")

    def __str__(self) -> str:
        return self.to_string()


def _summands(terms: tuple[Term, ...]) -> list[str]:
    """Printed summands that parse back to exactly ``terms``.

    Parsing sorts terms stably by degree and orders the variables inside an
    interaction by their first appearance, so the printed order must keep
    the within-degree order and make every interaction's variables first
    appear in the stored order.  Tries the stored order, then highest degree
    first; else prefixes ``a:b:c - a:b:c`` (a no-op in R's term algebra that
    declares the variable order).
    """

    def label(t: Term) -> str:
        return ":".join(format_name(v) for v in t)

    for cand in (list(terms), sorted(terms, key=len, reverse=True)):
        rank: dict[str, int] = {}
        for t in cand:
            for v in t:
                rank.setdefault(v, len(rank))
        if all(list(t) == sorted(t, key=rank.__getitem__) for t in terms):
            return [label(t) for t in cand]
    # topological order of the variables from the within-term orders
    before: dict[str, set[str]] = {}
    for t in terms:
        for k, v in enumerate(t):
            before.setdefault(v, set()).update(t[:k])
    order: list[str] = []
    while len(order) < len(before):
        v = next(v for v in before if v not in order and before[v] <= set(order))
        order.append(v)
    decl = label(tuple(order))
    return [decl, f"- {decl}"] + [label(t) for t in terms]


@dataclass(frozen=True)
class RandomTerm:
    """A random-effects term ``(expr | group)`` or ``(expr || group)``.

    ``group`` is a tuple of column names: one name for ``(1 | g)``, several
    for an interaction ``(1 | a:b)`` or, when ``nested``, for ``(1 | a/b)``.
    """

    expr: Terms
    group: tuple[str, ...]
    double_bar: bool = False
    nested: bool = False

    @property
    def group_name(self) -> str:
        return ("/" if self.nested else ":").join(self.group)

    def __str__(self) -> str:
        sep = "/" if self.nested else ":"
        group = sep.join(format_name(g) for g in self.group)
        return f"({self.expr} {'||' if self.double_bar else '|'} {group})"

    def expand(self) -> tuple[RandomTerm, ...]:
        """lme4 expansion into single-bar, non-nested terms.

        ``||`` first (``expandDoubleVerts``), then nesting (``expandSlash``),
        in lme4's order: ``(x || a/b)`` gives ``(1 | b:a)``, ``(1 | a)``,
        ``(0 + x | b:a)``, ``(0 + x | a)``.
        """
        if self.double_bar:
            exprs = ([Terms(True, ())] if self.expr.intercept else []) + [
                Terms(False, (t,)) for t in self.expr.terms
            ]
        else:
            exprs = [self.expr]
        if self.nested:
            # a/b/c -> c:b:a, b:a, a  (lme4's makeInteraction order and naming)
            groups = [tuple(reversed(self.group[:k])) for k in range(len(self.group), 0, -1)]
        else:
            groups = [self.group]
        return tuple(RandomTerm(e, g) for e in exprs for g in groups)


@dataclass(frozen=True)
class Formula:
    """A parsed lme4 formula.

    Attributes
    ----------
    response : str
        Response column.
    fixed : Terms
        Fixed-effects part (intercept flag and terms, R-ordered).
    random : tuple of RandomTerm
        Random-effects terms as written (before ``||`` and ``/`` expansion;
        see :meth:`expanded_random`).
    text : str
        The formula as given (not part of equality).
    positions : dict
        Character offset of the first occurrence of each column name (for
        error carets; not part of equality).

    ``str(formula)`` is a normalised formula that parses back to an equal
    :class:`Formula`.
    """

    response: str
    fixed: Terms
    random: tuple[RandomTerm, ...]
    text: str = field(default="", compare=False)
    positions: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __str__(self) -> str:
        parts = [self.fixed.to_string(explicit_intercept=False)]
        if self.fixed.intercept and not self.fixed.terms and self.random:
            parts = []
        parts += [str(r) for r in self.random]
        return f"{format_name(self.response)} ~ {' + '.join(parts)}"

    def __repr__(self) -> str:
        return f"Formula({str(self)!r})"

    @property
    def variables(self) -> tuple[str, ...]:
        """Every column the formula uses, response first, in order of appearance."""
        out: dict[str, None] = {self.response: None}
        out.update(dict.fromkeys(self.fixed.variables))
        for r in self.random:
            out.update(dict.fromkeys(r.expr.variables))
            out.update(dict.fromkeys(r.group))
        return tuple(out)

    @property
    def grouping_variables(self) -> tuple[str, ...]:
        out: dict[str, None] = {}
        for r in self.random:
            out.update(dict.fromkeys(r.group))
        return tuple(out)

    def expanded_random(self) -> tuple[RandomTerm, ...]:
        """Random terms after lme4's ``||`` and nesting expansion, in lme4 order."""
        return tuple(e for r in self.random for e in r.expand())


# ---------------------------------------------------------------------------
# term algebra


class _Algebra:
    def __init__(self, text: str) -> None:
        self.text = text
        self.positions: dict[str, int] = {}

    def err(self, msg: str, pos: int) -> FormulaError:
        return FormulaError(msg, self.text, pos)

    def names_in(self, node: Node | Bar, out: dict[str, None]) -> None:
        if isinstance(node, Name):
            out[node.name] = None
            self.positions.setdefault(node.name, node.pos)
        elif isinstance(node, BinOp):
            if node.left is not None:
                self.names_in(node.left, out)
            if not (node.op == "^"):
                self.names_in(node.right, out)
        elif isinstance(node, Paren):
            self.names_in(node.inner, out)
        elif isinstance(node, Bar):
            self.names_in(node.lhs, out)
            self.names_in(node.group, out)

    # An expression evaluates to an ordered list of terms; the empty term
    # stands for the intercept.  `zero` records an explicit 0.
    def expr(self, node: Node | Bar) -> list[frozenset[str]]:
        if isinstance(node, Name):
            self.positions.setdefault(node.name, node.pos)
            return [frozenset((node.name,))]
        if isinstance(node, Num):
            if node.text == "1":
                return [frozenset()]
            if node.text == "0":
                raise self.err("0 may only appear as '0 +' or '+ 0' to remove the intercept.",
                               node.pos)
            raise self.err(
                f"the number {node.text} has no meaning in a formula: only 1 (intercept) and "
                "0 (no intercept) may appear. To scale a variable, compute it in the data "
                "frame first.",
                node.pos,
            )
        if isinstance(node, Bar):
            raise self.err(
                "a random-effects term (... | g) may only be added to the model, not combined "
                "with other operators; write e.g. y ~ x + (1 | g).",
                node.pos,
            )
        if isinstance(node, Paren):
            return self.expr(node.inner)
        if node.op in ("+", "-"):
            return self.sum(node)
        assert node.left is not None
        left = self.expr(node.left)
        if node.op == "^":
            assert isinstance(node.right, Num)
            out = left
            for _ in range(int(node.right.text) - 1):
                out = _unique(out + [a | b for a in out for b in left])
            return out
        right = self.expr(node.right)
        if node.op == ":":
            return _unique([a | b for a in left for b in right])
        if node.op == "*":
            return _unique(left + right + [a | b for a in left for b in right])
        if node.op == "/":
            outer = frozenset().union(*left)
            return _unique(left + [outer | b for b in right])
        raise self.err(f"unknown operator {node.op!r}.", node.pos)  # pragma: no cover

    def summands(self, node: Node) -> list[tuple[str, Node | Bar, int]]:
        """Flatten a +/- chain into (sign, operand, position) in order."""
        if isinstance(node, BinOp) and node.op in ("+", "-"):
            head = [] if node.left is None else self.summands(node.left)
            return head + [(node.op, node.right, node.pos)]
        if isinstance(node, Paren) and isinstance(node.inner, Bar):
            return [("+", node.inner, node.pos)]
        return [("+", node, -1)]

    def sum(self, node: Node, implicit_intercept: bool = False,
            random: list[RandomTerm] | None = None) -> list[frozenset[str]]:
        terms: list[frozenset[str]] = [frozenset()] if implicit_intercept else []
        for sign, operand, pos in self.summands(node):
            if isinstance(operand, Paren) and isinstance(operand.inner, Bar):
                operand = operand.inner
            if isinstance(operand, Bar):
                if random is None or sign == "-":
                    raise self.err(
                        "random-effects terms (... | g) can only be added at the top level of "
                        "the formula, e.g. y ~ x + (1 | g).",
                        operand.pos if sign == "+" else pos,
                    )
                random.append(self.random_term(operand))
                continue
            if isinstance(operand, Num) and operand.text in ("0", "1"):
                has_int = (operand.text == "1") == (sign == "+")
                terms = [t for t in terms if t]
                if has_int:
                    terms.insert(0, frozenset())
                continue
            new = self.expr(operand)
            if sign == "+":
                terms = _unique(terms + new)
            else:
                drop = set(new)
                terms = [t for t in terms if t not in drop]
        return terms

    def terms_of(self, node: Node, implicit_intercept: bool,
                 random: list[RandomTerm] | None = None) -> Terms:
        order: dict[str, None] = {}
        self.names_in(node, order)
        if random is not None:
            # variable order of the fixed part ignores the random terms (lme4's nobars)
            order = {}
            for _sign, operand, _ in self.summands(node):
                inner = operand.inner if isinstance(operand, Paren) else operand
                if not isinstance(inner, Bar):
                    self.names_in(operand, order)
        rank = {v: i for i, v in enumerate(order)}
        raw = self.sum(node, implicit_intercept, random)
        intercept = frozenset() in raw
        body = [t for t in raw if t]
        # R: stable sort by degree; variables within a term by first appearance
        body.sort(key=len)
        return Terms(intercept, tuple(tuple(sorted(t, key=rank.__getitem__)) for t in body))

    def random_term(self, bar: Bar) -> RandomTerm:
        expr = self.terms_of(bar.lhs, implicit_intercept=True)
        if not expr.intercept and not expr.terms:
            raise self.err(
                "random-effects term has no columns (0 with nothing else); write e.g. "
                "(1 | g) or (0 + x | g).",
                bar.pos,
            )
        group, nested = self.group(bar.group)
        return RandomTerm(expr, group, bar.double, nested)

    def group(self, node: Node) -> tuple[tuple[str, ...], bool]:
        """Grouping factor: ``g``, ``a:b`` (interaction) or ``a/b`` (nesting)."""
        names: list[str] = []
        ops: set[str] = set()

        def walk(n: Node | Bar) -> None:
            if isinstance(n, Name):
                self.positions.setdefault(n.name, n.pos)
                if n.name in names:
                    raise self.err("a grouping factor names the same column twice.", n.pos)
                names.append(n.name)
            elif isinstance(n, Paren) and not isinstance(n.inner, Bar):
                walk(n.inner)
            elif isinstance(n, BinOp) and n.op in (":", "/") and n.left is not None:
                ops.add(n.op)
                walk(n.left)
                walk(n.right)
            else:
                pos = n.pos
                what = "a number" if isinstance(n, Num) else (
                    f"'{n.op}'" if isinstance(n, BinOp) else "this expression")
                raise self.err(
                    f"grouping factor after '|' must be a column name, an interaction a:b or a "
                    f"nesting a/b; got {what}. Write separate terms, e.g. (1 | a) + (1 | b).",
                    pos,
                )

        walk(node)
        if len(ops) > 1:
            raise self.err(
                "grouping factor mixes ':' and '/'; write the nesting out, e.g. "
                "(1 | a) + (1 | a:b:c).",
                node.pos,
            )
        return tuple(names), ("/" in ops and len(names) > 1)


def _unique(terms: list[frozenset[str]]) -> list[frozenset[str]]:
    return list(dict.fromkeys(terms))


def build_formula(parsed: ParsedFormula) -> Formula:
    """Give a syntax tree its R/lme4 meaning (see the module docstring)."""
    alg = _Algebra(parsed.text)
    alg.positions[parsed.response.name] = parsed.response.pos
    random: list[RandomTerm] = []
    fixed = alg.terms_of(parsed.rhs, implicit_intercept=True, random=random)
    rhs_vars = set(fixed.variables)
    for r in random:
        rhs_vars.update(r.expr.variables)
        rhs_vars.update(r.group)
    if parsed.response.name in rhs_vars:
        raise FormulaError(
            f"the response {parsed.response.name!r} also appears on the right-hand side; "
            "a column cannot be both the response and a predictor or grouping factor.",
            parsed.text, _find_after_tilde(parsed, parsed.response.name),
        )
    return Formula(parsed.response.name, fixed, tuple(random), parsed.text, alg.positions)


def _find_after_tilde(parsed: ParsedFormula, name: str) -> int:
    toks = tokenize(parsed.text)
    tilde = next(i for i, t in enumerate(toks) if t.kind == "op" and t.text == "~")
    return next(t.pos for t in toks[tilde:] if t.kind == "name" and t.text == name)
