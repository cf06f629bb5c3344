"""Library messages in the words of the command line: ``rating=`` becomes ``--rating``.

The library's errors name keyword arguments (``pass sep=';'``, ``scale must be a
pair (lo, hi)``); under ``nlpower fit`` the user typed flags, so
:func:`speak_cli` rewrites the argument names that are flags of the chosen
subcommand -- each optional action's ``dest`` to its first long option -- and
leaves everything else as the library wrote it.  One generic rule for every
subcommand (used by :func:`nlpower.cli.main`'s error handler), no statistics.

Rewritten:

* ``dest=value`` -> ``--flag value`` (``scale=(1, 5)`` -> ``--scale 1 5`` for a
  flag taking several values; ``worker=, item=`` -> ``--worker, --item``);
* the message's leading word when it is a dest followed by ``must``, ``is``,
  ``has``, ``column``, a quoted value, ``(`` or ``:`` (``scale must be ...``,
  ``baseline 'Z' is not ...``), also after a ``where:`` prefix -- so the
  article in ``a formula ...`` stays an article even where ``--a`` is a flag;
* a dest quoted as an argument (```rating```, ``argument 'rating'``);
* a library argument a flag feeds under another name (:data:`LIBRARY_NAMES`:
  ``rng=`` is ``--seed``, ``n must be >= 1`` under ``nlpower power --judges``
  is ``--judges must be >= 1``).

Not rewritten: a dest inside a longer name or a path (``n_sims=`` in
``my_n_sims=``, ``/tmp/worker=3.csv``), ``==``, and quoted *values*
(``did you mean 'rating'?`` names a column, not the flag).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

__all__ = ["LIBRARY_NAMES", "PYTHON_TO_CLI", "chosen_parsers", "cli_flags", "cli_sd", "cli_words",
           "moot_with_sd",
           "flag_names", "speak_cli"]

#: Advice written for Python users, in the words of the command line (applied first).
PYTHON_TO_CLI: tuple[tuple[str, str], ...] = (
    (r"\(nlpower\.plan\(as_params\(fit, effect=\.\.\.\), \.\.\.\)\)",
     "(nlpower mde --ratings FILE, or nlpower power --ratings FILE)"),
    (r"read RatingsFit\.identifiable\(\)",
     "see the identified quantities (nlpower fit --full)"),
    (r"compare fits with identifiable\(\)",
     "compare fits by their identified quantities (nlpower fit --full)"),
    (r"pass nlpower\.paired\.sample_size\(\.\.\.\) or retrospective_power\(\.\.\.\)",
     "pass --power normal --planned-effect D"),
    (r"plan with sample_size or retrospective_power",
     "plan with --power normal --planned-effect D"),
    (r"\(NaN in identifiable\(\)\)", "(NaN among the identified quantities of nlpower fit --full)"),
    (r"via nlpower\.accuracy\.power\b\.?", "with nlpower accuracy power --delta D."),
    (r"use nlpower\.accuracy\.power\(\.\.\.\)", "use nlpower accuracy power"),
    (r"refit with bradley_terry\(\.\.\., n_boot=1000\)", "run again with --n-boot 1000"),
    (r"\bpair=\('([^']*)', '([^']*)'\)", r"--pair '\1,\2'"),
    (r"Fit a pilot with nlpower\.fit_ratings\(nlpower\.read_ratings\(path, scale=\(lo, hi\)\)\)\.",
     "Give the pilot with --ratings FILE --scale LO HI."),
)


#: Library arguments a flag feeds under another name, ``{library name: dest}``, wherever the
#: subcommand has that flag: ``rng=`` is ``--seed``; ``n`` of :func:`nlpower.preference.power`
#: is ``nlpower power --judges`` (the only subcommand with ``--judges``); ``a=``/``b=`` of
#: :func:`nlpower.pilot.fit_judgements` are ``--first``/``--second``; ``outcome=`` and
#: ``rectifier=`` of :func:`nlpower.judge.fit` are ``nlpower fit --judge-outcome`` and
#: ``--judge-rectifier`` (a subcommand with its own ``--outcome`` keeps it).
LIBRARY_NAMES: dict[str, str] = {"rng": "seed", "n": "judges", "a": "first", "b": "second",
                                 "outcome": "judge_outcome", "rectifier": "judge_rectifier"}


def cli_words(message: str) -> str:
    """``message`` with Python-only advice (:data:`PYTHON_TO_CLI`) said as commands."""
    for pattern, replacement in PYTHON_TO_CLI:
        message = re.sub(pattern, replacement, message)
    return message


def chosen_parsers(parser: argparse.ArgumentParser,
                   args: argparse.Namespace) -> list[argparse.ArgumentParser]:
    """The subparsers ``args`` went through, outermost first (``accuracy``, then ``power``)."""
    chain: list[argparse.ArgumentParser] = []
    current: argparse.ArgumentParser | None = parser
    while current is not None:
        nxt = None
        for action in current._actions:  # argparse keeps its subparsers only here
            if isinstance(action, argparse._SubParsersAction):
                sub = action.choices.get(getattr(args, action.dest, None) or "")
                if isinstance(sub, argparse.ArgumentParser):
                    nxt = sub
        if nxt is not None:
            chain.append(nxt)
        current = nxt
    return chain


def cli_flags(parser: argparse.ArgumentParser,
              args: argparse.Namespace) -> dict[str, tuple[str, bool]]:
    """:func:`flag_names` of the chosen subcommand(s); the innermost wins a shared dest."""
    out: dict[str, tuple[str, bool]] = {}
    for sub in chosen_parsers(parser, args):
        out.update(flag_names(sub))
    for library, dest in LIBRARY_NAMES.items():
        if dest in out:
            out.setdefault(library, out[dest])
    return out


def flag_names(parser: argparse.ArgumentParser) -> dict[str, tuple[str, bool]]:
    """``{dest: (first long option, takes several values?)}`` of the optional actions."""
    out: dict[str, tuple[str, bool]] = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or action.dest in ("help", argparse.SUPPRESS):
            continue
        several = (isinstance(action.nargs, int) and action.nargs > 1) or action.nargs == "+"
        out.setdefault(action.dest, (longs[0], several))
    return out


_BOUNDARY = r"(?<![\w./\\-])"


def speak_cli(message: str, flags: dict[str, tuple[str, bool]]) -> str:
    """``message`` with the argument names in ``flags`` written as command-line flags.

    Python-only advice (``nlpower.accuracy.power``, ``RatingsFit.identifiable()``)
    is said as commands first (:func:`cli_words`).
    """
    message = cli_words(message)
    if not flags:
        return message
    names = "|".join(sorted((re.escape(d) for d in flags), key=len, reverse=True))

    def tuple_value(match: re.Match[str]) -> str:
        flag, several = flags[match.group(1)]
        inner = match.group(2)
        if several:
            return f"{flag} {' '.join(p.strip() for p in inner.split(','))}"
        return f"{flag} ({inner})"

    def assignment(match: re.Match[str]) -> str:
        flag = flags[match.group(1)][0]
        after = match.string[match.end():match.end() + 1]
        return flag if after in ("", " ", ",", ";", ")", ".") else f"{flag} "

    # scale=(1, 5) -> --scale 1 5 (several values) / --x (a, b)
    text = re.sub(rf"{_BOUNDARY}({names})=\(([^()]*)\)", tuple_value, message)
    # worker='rater' -> --worker 'rater'; worker=, -> --worker,
    text = re.sub(rf"{_BOUNDARY}({names})=(?!=)", assignment, text)
    # the leading word (after an optional "where: " prefix)
    text = re.sub(rf"^((?:[\w.]+: )?)({names})(?=:| must | is | has | column | '| \"| \()",
                  lambda m: m.group(1) + flags[m.group(2)][0], text)
    # `rating` and argument 'rating'
    text = re.sub(rf"`({names})`", lambda m: f"`{flags[m.group(1)][0]}`", text)
    text = re.sub(rf"\b(argument|parameter|option) '({names})'",
                  lambda m: f"{m.group(1)} '{flags[m.group(2)][0]}'", text)
    return text


def cli_sd(text: str, flags: Any = None) -> str:
    """The library's advice in flags: ``sd={'item_slope': S}`` as ``--sd item_slope=S``, and
    argument names as their flags (``max_workers=100`` as ``--max-workers 100``)."""
    text = re.sub(r"sd=\{'(\w+)': ([^}]+)\}", r"--sd \1=\2", text)
    return text if flags is None else speak_cli(text, flags)


def moot_with_sd(message: str, sd: Any) -> bool:
    """True for a warning that an SD is set to 0 (``... sd_item_slope = 0``) when ``--sd``
    sets that SD: the warning no longer holds."""
    given = {f"sd_{str(k).removeprefix('sd_')}" for k in (sd or {})}
    return any(f"{name} = 0" in message for name in given)
