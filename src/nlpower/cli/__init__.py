"""Command-line interface: ``nlpower fit | power | grid | bleu | compare | replicability | ...``.

A thin edge: each subcommand parses arguments, calls the library and
prints or writes what it returns.  No statistics live here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import NlpowerError
from . import accuracy, bleu, compare, fit, power, replicability

#: Subcommand modules, each with ``register(subparsers)``, in the order of ``--help``.
COMMANDS = (fit, power, accuracy, bleu, compare, replicability)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nlpower", description="Statistical power for NLP evaluation."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from .. import __version__

        print(__version__)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except NlpowerError as exc:
        print(f"nlpower {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(_interrupted(args), file=sys.stderr)
        return 130


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
