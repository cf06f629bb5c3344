"""Sharded grids on the command line: ``grid ... --shard I/N`` and ``grid merge SHARD...``.

A thin edge over :func:`nlpower.grid.run_grid` (``shard=``) and
:func:`nlpower.grid.merge`: a cluster array job runs one shard into its own
checkpoint file; ``nlpower grid merge`` joins the files into the grid one
machine computes, and writes its CSV, plot or merged checkpoint.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from .output import save_figure, write_csv

if TYPE_CHECKING:
    from ..grid import GridResult

__all__ = ["add_shard_argument", "check_shard", "print_shard_note", "register_merge", "run_merge"]


def add_shard_argument(parser: argparse.ArgumentParser) -> None:
    """``--shard I/N`` on a grid verb."""
    parser.add_argument(
        "--shard", default=None, metavar="I/N",
        help="run only shard I of N (1 <= I <= N), e.g. one array job of a cluster: cells "
             "I, I+N, I+2N, ... in grid order, with the seeds of the whole grid. Needs "
             "--checkpoint (this shard's file) and --seed; join the files with "
             "'nlpower grid merge' (default: the whole grid)")


def check_shard(args: argparse.Namespace) -> None:
    """``--shard`` needs ``--checkpoint`` and ``--seed`` (checked before any work)."""
    if getattr(args, "shard", None) is None:
        return
    seed = args.seed if getattr(args, "seed_given", True) else None
    if args.checkpoint is None or seed is None:
        raise InputError(
            f"--shard {args.shard} writes its cells to --checkpoint FILE (one file per shard) "
            "and needs --seed S (the same for every shard); add "
            + " and ".join(f for f, v in (("--checkpoint", args.checkpoint), ("--seed", seed))
                           if v is None) + "."
        )


def print_shard_note(args: argparse.Namespace, result: GridResult) -> None:
    """After a shard: where its cells are and how to join the shards."""
    if getattr(args, "shard", None) is not None:
        print(f"shard {args.shard}: {len(result.cells)} cell(s) saved in {args.checkpoint}; when every "
              "shard has run, join them with: nlpower grid merge FILE... --out grid.csv")


def register_merge(grid_parser: argparse.ArgumentParser) -> None:
    """``nlpower grid merge SHARD...`` as a subcommand of the grid verb."""
    sub = grid_parser.add_subparsers(dest="grid_command", metavar="{merge}",
                                     help="'merge': join the checkpoint files of a sharded grid")
    m = sub.add_parser(
        "merge", help="join the checkpoint files of a sharded grid (--shard I/N)",
        description="Join the checkpoint files written by 'nlpower grid ... --shard I/N' into "
                    "the grid one machine computes (same cells, seeds and numbers); print it and "
                    "write its CSV, plot or one merged checkpoint.")
    m.add_argument("shards", nargs="+", type=Path, metavar="SHARD",
                   help="checkpoint files of the shards (any order)")
    m.add_argument("--out", type=Path, default=None, metavar="CSV", help="write the grid as CSV")
    m.add_argument("--plot", type=Path, default=None, metavar="PNG", help="draw the grid")
    m.add_argument("--checkpoint", type=Path, default=None, metavar="FILE",
                   help="also write one merged checkpoint (a new file)")
    m.set_defaults(func=run_merge)


def run_merge(args: argparse.Namespace) -> int:
    from ..grid import merge

    result = merge(args.shards, out=args.checkpoint)
    entropy = result.seed.get("entropy")
    args.seed = entropy if isinstance(entropy, int) and not result.seed.get("spawn_key") else None
    print(f"merged {len(args.shards)} checkpoint files: {len(result.cells)} cells")
    print(result.summary())
    if args.out is not None:
        write_csv(args, result.to_frame())
    if args.checkpoint is not None:
        print(f"wrote {args.checkpoint}")
    if args.plot is not None:
        save_figure(result.plot(), args.plot)
    sys.stdout.flush()
    return 0
