"""``nlpower replicability``: counting and identification over N datasets (Dror et al. 2017).

A thin edge over :func:`nlpower.replicability`; no statistics live here.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

from .._choices import ReplicabilityMethod, allowed
from ..errors import InputError
from .output import write_json


def register(subparsers: Any) -> None:
    """Add the ``replicability`` subcommand."""
    p = subparsers.add_parser(
        "replicability", help="on how many of N datasets is A better? (Dror et al. 2017)",
        description="Replicability analysis of one comparison over N datasets: k_hat, the "
                    "number of datasets on which A beats B with P(k_hat > k) <= alpha, from "
                    "partial-conjunction p-values, and the datasets Holm identifies. Give one "
                    "one-sided p-value per dataset (optionally name=p), or --file.")
    p.add_argument("pvalues", nargs="*", metavar="P",
                   help="p-values, e.g. 0.01 0.2 0.03, or named: books=0.01 dvd=0.2")
    p.add_argument("--file", type=Path, default=None, metavar="FILE",
                   help="p-values from a file: one per line, or 'name p' / 'name,p' per line")
    p.add_argument("--alpha", type=float, default=0.05, help="error bound (default: 0.05)")
    p.add_argument("--method", choices=allowed(ReplicabilityMethod), default="bonferroni",
                   help="partial-conjunction combination: bonferroni (any dependence, default) "
                        "or fisher (independent datasets only)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the result as JSON ('-' = stdout)")
    p.set_defaults(func=run_replicability)


def run_replicability(args: argparse.Namespace) -> int:
    from ..partial_conjunction import parse_pvalues, read_pvalues, replicability

    if bool(args.pvalues) == (args.file is not None):
        raise InputError("give the p-values either on the command line or with --file "
                         "(exactly one of them).")
    pvalues = read_pvalues(args.file) if args.file is not None else parse_pvalues(args.pvalues)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # the summary states Fisher's independence note
        result = replicability(pvalues, alpha=args.alpha, method=args.method)
    print(result.summary())
    if args.json is not None:
        write_json(args, result.to_frame().to_dict(orient="records"))
    return 0
