"""CLI errors speak CLI: the library's ``rating=`` is printed as ``--rating`` (issue 14).

One rule in ``nlpower.cli.main``'s error handler, for every subcommand:
:func:`nlpower.cli.messages.speak_cli` with the chosen subparser's flags.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import nlpower.cli.accuracy as cli_accuracy
import nlpower.cli.bleu as cli_bleu
import nlpower.cli.compare as cli_compare
import nlpower.cli.fit as cli_fit
import nlpower.cli.power as cli_power
import nlpower.cli.replicability as cli_replicability
from nlpower.cli import build_parser, main
from nlpower.cli.messages import chosen_parsers, cli_flags, flag_names, speak_cli
from nlpower.errors import InputError

PILOT = Path(__file__).resolve().parents[1] / "fixtures" / "pilot_ratings.csv"


@pytest.fixture
def flags() -> dict[str, tuple[str, bool]]:
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--rating", default="rating")
    p.add_argument("--scale", nargs=2, type=float)
    p.add_argument("--n-sims", type=int)
    p.add_argument("--json", dest="json_out")
    p.add_argument("--sep")
    p.add_argument("-a", "--a")
    return flag_names(p)


def test_flag_names_map_dest_to_first_long_option(flags):
    assert flags["rating"] == ("--rating", False)
    assert flags["scale"] == ("--scale", True)      # nargs=2
    assert flags["n_sims"] == ("--n-sims", False)
    assert flags["json_out"] == ("--json", False)
    assert "file" not in flags and "help" not in flags  # positionals and -h are not rewritten


@pytest.mark.parametrize("library, cli", [
    ("source: column not found: rating='score'. Pass rating='y'.",
     "source: column not found: --rating 'score'. Pass --rating 'y'."),
    ("read_ratings(..., rating=, sep=)", "read_ratings(..., --rating, --sep)"),
    ("Pass scale=(lo, hi).", "Pass --scale lo hi."),
    ("scale must be a pair (lo, hi); got (5, 1).", "--scale must be a pair (lo, hi); got (5, 1)."),
    ("n_sims must be >= 1; got 0.", "--n-sims must be >= 1; got 0."),
    ("rating column 'score' has 2 non-numeric values", "--rating column 'score' has 2 non-numeric values"),
    ("read_ratings: pass sep=';'.", "read_ratings: pass --sep ';'."),
    ("the argument 'rating' is wrong; see `sep`", "the argument '--rating' is wrong; see `--sep`"),
])
def test_speak_cli_rewrites_argument_names(flags, library, cli):
    assert speak_cli(library, flags) == cli


@pytest.mark.parametrize("message", [
    "did you mean 'rating'? The columns are 'rating', 'sep'.",   # quoted values are columns
    "could not read '/data/rating=3.csv'",                        # part of a path
    "my_rating=3 and x.rating=4 and rating==5",                   # part of a name, or ==
    "ratings are rescaled to [0, 1]",                             # a longer word
    "a formula must name the response",                           # the article, not --a
    "the rating scale is odd",                                    # not leading, not an assignment
])
def test_speak_cli_leaves_other_text_alone(flags, message):
    assert speak_cli(message, flags) == message


def test_speak_cli_without_flags_is_the_identity():
    assert speak_cli("rating=1", {}) == "rating=1"


def test_fit_error_names_the_flag(capsys):
    assert main(["fit", str(PILOT), "--rating", "score", "--scale", "1", "5"]) == 2
    err = capsys.readouterr().err
    assert "--rating 'score'" in err and "rating='score'" not in err
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--baseline", "Z"]) == 2
    assert "error: --baseline 'Z' is not one of the systems" in capsys.readouterr().err


def test_power_and_nested_subcommand_errors_name_flags(capsys):
    assert main(["power", "--preset", "high-variance", "--workers", "3", "--items", "10",
                 "--effect", "0.1", "--n-sims", "0"]) == 2
    assert "nlpower power: error: --n-sims must be >= 1" in capsys.readouterr().err
    # accuracy power: flags of the inner subparser
    assert main(["accuracy", "power", "--n", "100", "--delta", "0.02", "--agreement", "1.5"]) == 2
    assert "error: --agreement must be <= 1" in capsys.readouterr().err


def test_chosen_parsers_follow_nested_subcommands():
    parser = build_parser()
    args = parser.parse_args(["accuracy", "mde", "--n", "10"])
    assert [p.prog for p in chosen_parsers(parser, args)] == ["nlpower accuracy",
                                                             "nlpower accuracy mde"]
    assert cli_flags(parser, args)["table9"] == ("--table9", False)


# every subcommand gets the rewrite: a library error naming one of its dests
SUBCOMMANDS = [
    (cli_fit, "run_fit", ["fit", "x.csv"], "duplicates", "--duplicates"),
    (cli_power, "run_power", ["power", "--preset", "high-variance", "--workers", "3", "--items",
                              "10", "--effect", "0.1"], "n_sims", "--n-sims"),
    (cli_power, "run_grid", ["grid"], "workers_per_item", "--workers-per-item"),
    (cli_accuracy, "run_power", ["accuracy", "power", "--n", "10", "--delta", "0.1"], "agreement",
     "--agreement"),
    (cli_bleu, "run_power", ["bleu", "power", "--n", "100", "--delta", "1"], "n_resamples",
     "--n-resamples"),
    (cli_compare, "run_compare", ["compare", "a.csv", "b.csv"], "n_resamples", "--n-resamples"),
    (cli_replicability, "run_replicability", ["replicability", "0.01", "0.2"], "method",
     "--method"),
]


@pytest.mark.parametrize("module, func, argv, dest, flag", SUBCOMMANDS,
                         ids=[" ".join(a[:2]) for _, _, a, _, _ in SUBCOMMANDS])
def test_every_subcommand_speaks_cli(monkeypatch, capsys, module, func, argv, dest, flag):
    def boom(args):
        raise InputError(f"{dest} must be fine; got {dest}=3. Pass {dest}=4.")

    monkeypatch.setattr(module, func, boom)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"error: {flag} must be fine; got {flag} 3. Pass {flag} 4." in err, err
