"""Command-line interface: ``nlpower fit | power | grid | bleu | compare | replicability | ...``.

A thin edge: each subcommand parses arguments, calls the library and
prints or writes what it returns.  No statistics live here.

One rule for every subcommand, applied here: output paths are checked before
any work (:func:`nlpower.cli.output.check_output_paths`); a run without
``--seed`` draws one, and every run with a seed prints it; ``--json -``
writes the JSON to standard output and everything else to standard error;
library errors are printed in the words of the command line.  The library
is imported by the subcommand that runs, so ``--version`` and ``--help``
stay fast; and when the command line names a subcommand, only that
subcommand's module is imported and registered.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from .. import __version__
from ..errors import NlpowerError
from .messages import cli_flags, speak_cli
from .output import check_output_paths, fresh_seed

#: Subcommand modules of ``nlpower.cli``, each with ``register(subparsers)``, in the order
#: of ``--help``.
COMMANDS = ("fit", "power", "plan", "mde", "study", "elicit", "accuracy", "bleu", "compare",
            "replicability", "arena", "sequential")

#: The module that registers each subcommand (``power`` registers ``power`` and ``grid``).
MODULE_OF = {**{name: name for name in COMMANDS}, "grid": "power"}


class HelpFormatter(argparse.HelpFormatter):
    """Every option's default in ``--help``, unless its help already states it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if ("default" in text or action.default in (None, False, argparse.SUPPRESS)
                or not action.option_strings):
            return text
        default = action.default
        if isinstance(default, (list, tuple)):
            default = ",".join(str(v) for v in default)
        return f"{text} (default: {default})"


class Parser(argparse.ArgumentParser):
    """argparse, with advice for a value that starts with '-' (a column named like a flag)."""

    def error(self, message: str) -> Any:
        flag = re.match(r"argument (-[^:/ ]+)(?:/[^:]*)?: expected one argument$", message)
        if flag:
            message += (" (if the value starts with '-', e.g. a column named like a flag, "
                        f"write it after '=': {flag.group(1)}=VALUE)")
        super().error(message)


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _subparsers(sub)
    return out


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or only of ``command``'s module when it is named."""
    parser = Parser(
        prog="nlpower", description="Statistical power for NLP evaluation."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = (MODULE_OF[command],) if command in MODULE_OF else COMMANDS
    for name in modules:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    for each in _subparsers(parser):
        each.formatter_class = HelpFormatter
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # the subcommand is the first word that is not an option (the top level has no valued option)
    words = [a for a in argv if not a.startswith("-")]
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(argv)
    if args.version:
        print(__version__)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    args.argv = argv
    args.flags = cli_flags(parser, args)
    args.seed_given = vars(args).get("seed") is not None  # --shard needs a seed typed by the user
    if getattr(args, "grid_command", None) == "merge":
        args.seed = None  # the merged grid's own seed is printed by the merge
    elif "seed" in vars(args) and args.seed is None:
        args.seed = fresh_seed()
    to_stdout = any(str(getattr(args, d, None)) == "-" for d in ("json", "json_out"))
    try:
        check_output_paths(args, args.flags)
        if not to_stdout:
            return _run(args)
        args.stdout = sys.stdout  # the JSON alone on standard output; the rest on stderr
        with contextlib.redirect_stdout(sys.stderr):
            return _run(args)
    except NlpowerError as exc:
        # the library names keyword arguments (rating=); the user typed flags (--rating)
        message = speak_cli(str(exc), cli_flags(parser, args))
        print(f"nlpower {args.command}: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. nlpower ... | head: the reader left; say nothing more
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stdout for the rest of the process
        return 0
    except KeyboardInterrupt:
        with _second_ctrl_c_ignored():  # a second Ctrl-C must not cut the message short
            print(_interrupted(args), file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        # a warning is one line in the words of the command line, without the source path
        # (formatwarning, so a caller recording warnings still receives them unchanged)
        warnings.formatwarning = lambda message, *rest, **kw: (
            f"warning: {speak_cli(str(message), args.flags)}\n")
        code = int(args.func(args) or 0)
    seed: Any = vars(args).get("seed")
    if seed is not None:
        print(f"seed: {seed} (repeat with --seed {seed})")
    return code


@contextlib.contextmanager
def _second_ctrl_c_ignored() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals cannot be changed here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted(args: argparse.Namespace) -> str:
    """One line after Ctrl-C: what was saved and how to go on."""
    checkpoint = getattr(args, "checkpoint", None)
    if checkpoint is not None:
        return (f"nlpower {args.command}: interrupted. Finished cells are saved in {checkpoint}; "
                "run the same command again to resume.")
    hint = " (add --checkpoint FILE to make a grid resumable)" if args.command == "grid" else ""
    return f"nlpower {args.command}: interrupted; nothing was saved{hint}."


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
