"""A property-based sweep of bad inputs: the rating reader and the CLI's numeric flags.

Whatever bytes a rating file holds and whatever text a numeric flag gets, the
answer is a result or the package's own refusal (an ``NlpowerError``; on the
command line exit code 2 and one ``error:`` line) -- never another exception
or a traceback.  The sweep is small (30 examples per test, 150 in all, seconds)
so it runs with the rest of the suite; the targeted tests in
``test_bad_inputs_files.py`` pin each cause.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from nlpower.cli import main  # noqa: E402
from nlpower.errors import NlpowerError  # noqa: E402
from nlpower.ratings import read_ratings  # noqa: E402

SWEEP = settings(max_examples=30, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])

#: Cells a hostile rating file is made of: numbers at the edges, words, quotes, separators.
CELLS = st.one_of(
    st.sampled_from(["", "nan", "NaN", "inf", "-inf", "1e308", "-1e308", "1e-320", "0", "3",
                     "5", "True", "None", "\"", "\"a,b\"", ";", "\t", "é", "\x00", "1,5"]),
    st.integers(-10**20, 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)


def _rows(draw_cells: list[list[str]]) -> str:
    header = "worker,item,system,rating"
    return "\n".join([header, *(",".join(r) for r in draw_cells)]) + "\n"


@pytest.mark.filterwarnings("ignore::UserWarning")  # dropped rows, doubtful scales: not the point
@SWEEP
@given(rows=st.lists(st.lists(CELLS, min_size=4, max_size=4), min_size=1, max_size=8))
@example(rows=[["", "", "", "1,5"]])  # found by this sweep: more fields than the header
def test_rating_reader_answers_any_csv_with_a_result_or_its_own_error(tmp_path_factory, rows):
    path = Path(tmp_path_factory.mktemp("csv")) / "r.csv"
    path.write_text(_rows(rows), encoding="utf-8", errors="surrogatepass")
    try:
        read_ratings(path, scale=(1, 5))
    except NlpowerError:
        pass


@SWEEP
@given(data=st.binary(max_size=300),
       suffix=st.sampled_from([".csv", ".tsv", ".json", ".jsonl", ".csv.gz", ".parquet"]))
def test_rating_reader_answers_any_bytes_with_its_own_error(tmp_path_factory, data, suffix):
    path = Path(tmp_path_factory.mktemp("bytes")) / f"r{suffix}"
    path.write_bytes(data)
    try:
        read_ratings(path)
    except NlpowerError:
        pass


#: Text a user might type for a number.
NUMBERS = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1", "1e308", "1e-320", "abc", "",
                     "True", "0x10", "1_000", " 3", "3.", "-0", "2.5"]),
    st.integers(-10**6, 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True, width=32).map(repr),
)


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own refusal of a malformed flag
            code = int(exc.code or 0)
    return code, err.getvalue()


@SWEEP
@given(workers=NUMBERS, items=NUMBERS, effect=NUMBERS, alpha=NUMBERS)
def test_power_numeric_flags_get_a_result_or_one_error_line(workers, items, effect, alpha):
    code, err = _run(["power", "--preset", "high-variance", "--method", "analytic", "--quiet",
                      "--workers", workers, "--items", items, "--effect", effect,
                      "--alpha", alpha, "--seed", "1"])
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert "error:" in err


@SWEEP
@given(n=NUMBERS, delta=NUMBERS, agreement=NUMBERS, alpha=NUMBERS)
def test_accuracy_numeric_flags_get_a_result_or_one_error_line(n, delta, agreement, alpha):
    code, err = _run(["accuracy", "power", "--test", "mcnemar-normal", "--n", n, "--delta", delta,
                      "--agreement", agreement, "--alpha", alpha])
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert "error:" in err


@SWEEP
@given(workers=st.lists(NUMBERS, min_size=1, max_size=3).map(",".join),
       items=st.lists(NUMBERS, min_size=1, max_size=2).map(",".join),
       effects=st.lists(NUMBERS, min_size=1, max_size=3).map(",".join), n_sims=NUMBERS)
def test_grid_list_flags_get_a_result_or_one_error_line(workers, items, effects, n_sims):
    code, err = _run(["grid", "--preset", "low-variance", "--method", "analytic", "--quiet",
                      "--workers", workers, "--items", items, "--effects", effects,
                      "--n-sims", n_sims, "--seed", "1"])
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert "error:" in err
