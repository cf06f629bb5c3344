"""Tests of the lme4 formula language: tokenize -> parse -> terms."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nlpower.errors import FormulaError, InputError
from nlpower.formula import Formula, RandomTerm, Terms, parse, tokenize

# ---------------------------------------------------------------------------
# tokenizer


def test_tokenize_kinds_and_positions() -> None:
    toks = tokenize("y ~ x + (1 || g) + `my col`")
    assert [(t.kind, t.text, t.pos) for t in toks] == [
        ("name", "y", 0), ("op", "~", 2), ("name", "x", 4), ("op", "+", 6),
        ("op", "(", 8), ("number", "1", 9), ("op", "||", 11), ("name", "g", 14),
        ("op", ")", 15), ("op", "+", 17), ("name", "my col", 19), ("end", "", 27),
    ]


def test_tokenize_dotted_names() -> None:
    assert [t.text for t in tokenize("rating.z ~ sys_1 + .x")][:-1] == [
        "rating.z", "~", "sys_1", "+", ".x"]


# ---------------------------------------------------------------------------
# fixed part: term algebra


@pytest.mark.parametrize(
    ("formula", "intercept", "labels"),
    [
        ("y ~ x", True, ("x",)),
        ("y ~ 1 + x", True, ("x",)),
        ("y ~ 0 + x", False, ("x",)),
        ("y ~ x + 0", False, ("x",)),
        ("y ~ x - 1", False, ("x",)),
        ("y ~ -1 + x", False, ("x",)),
        ("y ~ 1", True, ()),
        ("y ~ 0", False, ()),
        ("y ~ a:b", True, ("a:b",)),
        ("y ~ a*b", True, ("a", "b", "a:b")),
        ("y ~ a*b*c", True, ("a", "b", "c", "a:b", "a:c", "b:c", "a:b:c")),
        ("y ~ a*b - a", True, ("b", "a:b")),
        ("y ~ a*b - a:b", True, ("a", "b")),
        ("y ~ a/b", True, ("a", "a:b")),
        ("y ~ (a + b)/c", True, ("a", "b", "a:b:c")),
        ("y ~ (a + b + c)^2", True, ("a", "b", "c", "a:b", "a:c", "b:c")),
        ("y ~ (a + b):c", True, ("a:c", "b:c")),
        ("y ~ a + a", True, ("a",)),
        ("y ~ a:a", True, ("a",)),
        # R sorts terms by degree and orders variables by first appearance
        ("y ~ a:b + c", True, ("c", "a:b")),
        ("y ~ x:system + system", True, ("system", "x:system")),
        ("y ~ system + x:system", True, ("system", "system:x")),
        ("y ~ b:a + a:b", True, ("b:a",)),
        ("y ~ (1 + a):b", True, ("b", "a:b")),
    ],
)
def test_fixed_terms(formula: str, intercept: bool, labels: tuple[str, ...]) -> None:
    f = parse(formula)
    assert f.response == "y"
    assert f.fixed.intercept is intercept
    assert f.fixed.labels == labels
    assert f.random == ()


def test_backticked_names() -> None:
    f = parse("`the rating` ~ `sys tem` + x")
    assert f.response == "the rating"
    assert f.fixed.terms == (("sys tem",), ("x",))
    assert str(f) == "`the rating` ~ `sys tem` + x"


# ---------------------------------------------------------------------------
# random part


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("y ~ (1 | g)", RandomTerm(Terms(True, ()), ("g",))),
        ("y ~ (x | g)", RandomTerm(Terms(True, (("x",),)), ("g",))),
        ("y ~ (1 + x | g)", RandomTerm(Terms(True, (("x",),)), ("g",))),
        ("y ~ (0 + x | g)", RandomTerm(Terms(False, (("x",),)), ("g",))),
        ("y ~ (x - 1 | g)", RandomTerm(Terms(False, (("x",),)), ("g",))),
        ("y ~ (x || g)", RandomTerm(Terms(True, (("x",),)), ("g",), double_bar=True)),
        ("y ~ (1 | a:b)", RandomTerm(Terms(True, ()), ("a", "b"))),
        ("y ~ (1 | a/b)", RandomTerm(Terms(True, ()), ("a", "b"), nested=True)),
        ("y ~ (1 | (g))", RandomTerm(Terms(True, ()), ("g",))),
    ],
)
def test_random_term_parsing(formula: str, expected: RandomTerm) -> None:
    f = parse(formula)
    assert f.random == (expected,)
    assert f.fixed == Terms(True, ())


def test_fixed_and_random_order() -> None:
    f = parse("rating ~ system + (1 + system | worker) + x + (1 | item)")
    assert f.fixed.labels == ("system", "x")
    assert [r.group for r in f.random] == [("worker",), ("item",)]
    assert f.variables == ("rating", "system", "x", "worker", "item")
    assert f.grouping_variables == ("worker", "item")


def test_double_bar_expansion_lme4() -> None:
    # lme4 expandDoubleVerts: one term per *term* of the expression
    f = parse("y ~ (1 + x + f || g)")
    assert [str(r) for r in f.expanded_random()] == [
        "(1 | g)", "(0 + x | g)", "(0 + f | g)"]
    f = parse("y ~ (0 + x + z || g)")
    assert [str(r) for r in f.expanded_random()] == ["(0 + x | g)", "(0 + z | g)"]
    f = parse("y ~ (x * z || g)")
    assert [str(r) for r in f.expanded_random()] == [
        "(1 | g)", "(0 + x | g)", "(0 + z | g)", "(0 + x:z | g)"]


def test_nesting_expansion_lme4_order_and_names() -> None:
    # lme4 expandSlash: (1 | a/b) -> (1 | b:a) + (1 | a); '||' is expanded first
    assert [str(r) for r in parse("y ~ (1 | a/b)").expanded_random()] == [
        "(1 | b:a)", "(1 | a)"]
    assert [r.group for r in parse("y ~ (1 | a/b/c)").expanded_random()] == [
        ("c", "b", "a"), ("b", "a"), ("a",)]
    assert [str(r) for r in parse("y ~ (x || a/b)").expanded_random()] == [
        "(1 | b:a)", "(1 | a)", "(0 + x | b:a)", "(0 + x | a)"]
    assert parse("y ~ (1 | a:b)").expanded_random()[0].group_name == "a:b"


# ---------------------------------------------------------------------------
# round trip


@pytest.mark.parametrize(
    "formula",
    [
        "y ~ x",
        "y ~ 0 + x",
        "y ~ 1",
        "y ~ 0",
        "y ~ (1 | g)",
        "y ~ 0 + (1 | g)",
        "rating ~ system + (1 + system || worker) + (1 | item)",
        "y ~ a*b*c - a:b:c + (x | g/h) + (0 + f || g:h)",
        "y ~ x:system + system",
        "y ~ (1 + a):b",
        "y ~ a:z + b:c + a:b - a:z",
        "y ~ `a b`:c + (`a b` | `g g`)",
    ],
)
def test_round_trip(formula: str) -> None:
    f = parse(formula)
    again = parse(str(f))
    assert again == f
    assert str(again) == str(f)
    assert f.text == formula
    assert repr(f) == f"Formula({str(f)!r})"


def test_round_trip_normal_form() -> None:
    assert str(parse("y~x*z+(1+x||g)")) == "y ~ x + z + x:z + (1 + x || g)"
    assert str(parse("y ~ -1 + x + (x - 1 | g)")) == "y ~ 0 + x + (0 + x | g)"


_VARS = st.sampled_from(["a", "b", "c", "x", "sys"])


def _expr(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _VARS
    sub = _expr(depth - 1)
    return st.one_of(
        _VARS,
        st.tuples(sub, st.sampled_from([" + ", ":", "*", "/", " - "]), sub).map(
            lambda t: f"({t[0]}{t[1]}{t[2]})"),
        st.tuples(sub, st.integers(1, 3)).map(lambda t: f"({t[0]})^{t[1]}"),
    )


_RANDOM = st.tuples(
    st.sampled_from(["", "1 + ", "0 + "]),
    _expr(1),
    st.sampled_from(["|", "||"]),
    st.sampled_from(["g", "h", "g:h", "g/h", "h/g/k"]),
).map(lambda t: f"({t[0]}{t[1]} {t[2]} {t[3]})")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.sampled_from(["", "0 + ", "1 + ", "-1 + "]),
    fixed=st.lists(_expr(2), min_size=0, max_size=3),
    random=st.lists(_RANDOM, min_size=0, max_size=3),
)
def test_random_formulas_round_trip(prefix: str, fixed: list[str], random: list[str]) -> None:
    rhs = " + ".join(fixed + random) or "1"
    text = f"y ~ {prefix}{rhs}"
    try:
        f = parse(text)
    except FormulaError as err:
        # the only legitimate failure of these generated formulas: an empty random term
        assert "has no columns" in str(err)
        assume(False)
        raise
    again = parse(str(f))
    assert again == f
    assert str(again) == str(f)
    # expansion gives only single-bar, non-nested terms
    for r in f.expanded_random():
        assert not r.double_bar and not r.nested
        assert r.expr.intercept or r.expr.terms


# ---------------------------------------------------------------------------
# errors: message and caret position


@pytest.mark.parametrize(
    ("formula", "position", "fragment"),
    [
        ("y x", 0, "has no '~'"),
        ("~ x", 0, "no response before '~'"),
        ("y ~ x ~ z", 6, "more than one '~'"),
        ("y ~", 3, "nothing after '~'"),
        ("y z ~ x", 2, "single column name"),
        ("1 ~ x", 0, "response must be a column name"),
        ("y ~ (1 | g", 4, "this '(' is never closed"),
        ("y ~ ((x)", 4, "this '(' is never closed"),
        ("y ~ x)", 5, "')' without a matching '('"),
        ("y ~ ()", 5, "empty term: nothing before ')'"),
        ("y ~ a + + b", 8, "empty term"),
        ("y ~ a +", 7, "formula ends where a term is expected"),
        ("y ~ a * ", 8, "formula ends where a term is expected"),
        ("y ~ (|g)", 5, "nothing before '|'"),
        ("y ~ (||g)", 5, "nothing before '||'"),
        ("y ~ (1|)", 7, "no grouping factor after '|'"),
        ("y ~ (1 | g | h)", 11, "only one '|'"),
        ("y ~ a %in% b", 6, "unknown operator '%in%'"),
        ("y ~ a $ b", 6, "unknown operator '$'"),
        ("y ~ a = b", 6, "unknown operator '='"),
        ("y ~ x | g", 6, "random-effects terms must be written in parentheses"),
        ("y ~ x y", 6, "expected an operator such as '+'"),
        ("y ~ (x y | g)", 7, "expected ')' or an operator"),
        ("log(y) ~ x", 0, "function calls such as log(...)"),
        ("y ~ factor(x)", 4, "function calls such as factor(...)"),
        ("y ~ .", 4, "'.' (all other columns) is not supported"),
        ("y ~ 2*x", 4, "the number 2 has no meaning"),
        ("y ~ x:0", 6, "0 may only appear as"),
        ("y ~ x^0", 6, "'^' must be followed by a positive integer"),
        ("y ~ x^z", 6, "'^' must be followed by a positive integer"),
        ("y ~ a:(1|g)", 8, "may only be added to the model"),
        ("y ~ x - (1|g)", 6, "can only be added at the top level"),
        ("y ~ (x + (1|g) | h)", 11, "can only be added at the top level"),
        ("y ~ (1 | a + b)", 11, "grouping factor after '|' must be a column name"),
        ("y ~ (1 | 1)", 9, "got a number"),
        ("y ~ (1 | a/b:c)", 10, "mixes ':' and '/'"),
        ("y ~ (1 | a:a)", 11, "names the same column twice"),
        ("y ~ (0 | g)", 7, "has no columns"),
        ("y ~ (x - x - 1 | g)", 15, "has no columns"),
        ("y ~ y + x", 4, "also appears on the right-hand side"),
        ("y ~ xy + (1 + y | g)", 14, "also appears on the right-hand side"),
        ("y ~ x + (1 | g/y)", 15, "also appears on the right-hand side"),
        ("y ~ `x", 4, "unterminated backtick"),
        ("y ~ ``", 4, "empty backtick"),
    ],
)
def test_syntax_errors_point_at_token(formula: str, position: int, fragment: str) -> None:
    with pytest.raises(FormulaError) as exc:
        parse(formula)
    err = exc.value
    assert err.position == position, str(err)
    assert fragment in str(err)
    # the message shows the formula and a caret under the offending character
    lines = str(err).splitlines()
    assert lines[-2] == f"  {formula}"
    assert lines[-1] == "  " + " " * position + "^"
    assert isinstance(err, InputError) and isinstance(err, ValueError)


def test_formula_must_be_a_string() -> None:
    with pytest.raises(FormulaError, match=r"formula must be a string.*got 3 \(int\)"):
        parse(3)  # type: ignore[arg-type]


def test_formula_dataclass_equality_ignores_text() -> None:
    # term order is column order, so it is part of equality
    assert parse("y ~ x+z") != parse("y ~ z + x")
    assert parse("y ~ x + z") == parse("y~x+z")
    assert parse("y ~ x") != parse("y ~ 0 + x")
    assert isinstance(parse("y ~ x"), Formula)


def test_multiline_formula_caret_lines_up() -> None:
    text = "y ~ x +\n    (1 |)"
    with pytest.raises(FormulaError) as exc:
        parse(text)
    assert exc.value.position == 16
    assert str(exc.value).splitlines()[-2:] == ["  y ~ x +     (1 |)", "  " + " " * 16 + "^"]
    f = parse("y ~ x +\n\t(1 | g)")
    assert f.text == "y ~ x +\n\t(1 | g)" and str(f) == "y ~ x + (1 | g)"


def test_formula_is_hashable() -> None:
    assert len({parse("y ~ x + (1 | g)"), parse("y~x+(1|g)")}) == 1
