"""``nlpower mde``: the smallest effect a design detects with the target power.

A thin edge over :func:`nlpower.mde` (a Table 16 scenario or a pilot rating
file for the variance components; ``--outcome likert --levels K`` or
``--outcome preference --sd-worker ... --sd-item ...`` for the other
outcomes, whose MDE is searched on the simulated power curve); no statistics
live here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._choices import Alternative, Coding, MDEMethod, RatingsTest, allowed
from ..errors import InputError
from .agreement_args import (
    add_agreement_arguments,
    agreement_params,
    agreement_record,
    check_agreement_flags,
)
from .outcome_args import (
    add_outcome_arguments,
    check_outcome_flags,
    outcome_kwargs,
    own_params,
)
from .output import write_json
from .ratings_args import add_pilot_arguments, add_ratings_arguments


def register(subparsers: Any) -> None:
    """Add the ``mde`` subcommand."""
    p = subparsers.add_parser(
        "mde", help="minimum detectable effect of one design (analytic, optionally simulated)",
        description="The smallest positive effect (beta1 in --coding) that a crossed worker x "
                    "item design detects with --target-power, under a Table 16 scenario "
                    "(--preset) or the variance components of a pilot rating file (--ratings).")
    p.add_argument("--preset", choices=("high-variance", "low-variance"), default=None,
                   help="Table 16 variance scenario (or give a pilot with --ratings)")
    p.add_argument("--workers", type=int, required=True, help="number of workers")
    p.add_argument("--items", type=int, required=True, help="number of items")
    p.add_argument("--workers-per-item", type=int, default=None, metavar="K",
                   help="each item is rated by K of the workers (default: all, fully crossed)")
    p.add_argument("--target-power", type=float, default=0.8, help="target power")
    p.add_argument("--coding", choices=allowed(Coding), default="sum",
                   help="coding the effect is reported in (sum: the paper's x = +-1)")
    p.add_argument("--test", choices=allowed(RatingsTest), default=None,
                   help="test of the effect (default: the analysis's first -- satterthwaite for "
                        "lmm, z for clmm and glmer)")
    p.add_argument("--alternative", choices=allowed(Alternative), default="two-sided",
                   help="alternative hypothesis (less: use greater, the MDE is the same in size)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level")
    p.add_argument("--method", choices=allowed(MDEMethod), default="analytic",
                   help="analytic, or simulation (also simulates --n-sims replicates at the MDE); "
                        "--outcome likert and preference always search the simulated power")
    p.add_argument("--n-sims", type=int, default=1000, metavar="N",
                   help="replicates for --method simulation (likert, preference: per evaluation "
                        "of the simulated power curve)")
    p.add_argument("--seed", type=int, default=None,
                   help="root seed for --method simulation (default: fresh entropy, printed)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the result as JSON ('-' = stdout)")
    add_outcome_arguments(p)
    add_ratings_arguments(p, required=False)
    add_pilot_arguments(p)
    add_agreement_arguments(p)
    p.set_defaults(func=run_mde, parser=p)


def run_mde(args: argparse.Namespace) -> int:
    from ..design import CrossedDesign
    from ..powersim import mde
    from .power import _scenarios, pilot_params

    check_outcome_flags(args)
    check_agreement_flags(args)
    kw = {} if args.workers_per_item is None else {"workers_per_item": args.workers_per_item}
    design = CrossedDesign(args.workers, args.items, **kw)
    params = own_params(args)
    if params is None and args.agreement is not None:
        params = agreement_params(args, 1.0, args.coding)
    elif params is None:
        if (args.preset is None) == (args.ratings is None):
            raise InputError("give either --preset (a Table 16 scenario), --ratings FILE (a "
                             "pilot whose variance components are used) or --agreement A (a "
                             "target agreement), not both or neither.")
        if args.ratings is not None:
            params = pilot_params(args, 1.0, args.coding, solved=True)
        else:
            params = next(iter(_scenarios(args.preset).values()))
            if args.coding != params.coding:
                params = params.to_coding(args.coding)
    result = mde(design, params, target_power=args.target_power, alpha=args.alpha,
                 test=args.test, alternative=args.alternative, method=args.method,
                 n_sims=args.n_sims, rng=args.seed, **outcome_kwargs(args))
    print(result.summary())
    record = result.to_frame().iloc[0].to_dict()
    record["design"] = {"n_workers": args.workers, "n_items": args.items,
                        "workers_per_item": args.workers_per_item}
    record.update(agreement_record(args))
    write_json(args, record)
    if args.method == "analytic" and args.outcome == "gaussian" and not args.seed_given:
        args.seed = None  # nothing was drawn: no seed line to repeat
    return 0
