"""``nlpower elicit``: variance components from a target agreement, and plans from them.

A thin edge over :func:`nlpower.agreement.elicit`, :func:`nlpower.plan`,
:func:`nlpower.judge.judge_plan` and :func:`nlpower.agreement.items_needed`.
"""

from __future__ import annotations

import argparse
from typing import Any

from .agreement_args import add_split_arguments
from .messages import flag_names
from .output import write_json


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "elicit",
        help="variance components from a target agreement (alpha or ICC), and a plan",
        description=(
            "Turn 'annotators agree at alpha = 0.6' into the crossed model's variance "
            "components under a stated split (default: the shares of the paper's high-variance "
            "scenario), then plan the cheapest design for --effect (analytic, like nlpower "
            "plan), and with --judge-r also the plan with an LLM judge scoring every item "
            "beside the human-only plan."),
    )
    p.add_argument("agreement", type=float, help="target agreement in (0, 1)")
    add_split_arguments(p)
    p.add_argument("--effect", type=float, default=None,
                   help="beta1 under +-1 coding (half the mean difference); with it, plan")
    p.add_argument("--power", type=float, default=0.8, dest="target_power",
                   help="target power (default 0.8)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level")
    p.add_argument("--judge-r", type=float, default=None, metavar="R",
                   help="correlation of an LLM judge's per-item system difference with the "
                        "true one: also plan with the judge (1000 judge-only items)")
    p.add_argument("--cost-per-rating", type=float, default=1.0)
    p.add_argument("--cost-per-worker", type=float, default=0.0)
    p.add_argument("--cost-per-judge-call", type=float, default=0.0)
    p.add_argument("--items-table", action="store_true",
                   help="print items needed against alpha for the paper's effect sizes "
                        "(10 workers, fully crossed)")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the results as JSON")
    p.set_defaults(func=run, flags=flag_names(p), parser=p)


def run(args: argparse.Namespace) -> int:
    from ..agreement import AgreementSplit, elicit, implied_agreement, items_needed

    split = AgreementSplit(*args.split) if args.split else None
    params = elicit(args.agreement, measure=args.measure, k=args.k, total_sd=args.total_sd,
                    split=split, effect=args.effect or 0.0)
    print(f"parameters: {params!r}")
    print(f"implied: alpha = {implied_agreement(params):.3f}, "
          f"ICC(C,1) = {implied_agreement(params, 'ICC(C,1)'):.3f}")
    record: dict[str, Any] = {"params": {k: getattr(params, k) for k in params.sds},
                              "effect": params.effect}
    if args.effect:
        record.update(_plans(args, params))
    if args.items_table:
        tab = items_needed(measure="alpha", total_sd=args.total_sd, split=split,
                           target_power=args.target_power, alpha=args.alpha)
        print("\nItems needed (10 workers, fully crossed) against alpha and effect:")
        print(tab.to_string())
        if tab.isna().to_numpy().any():
            print(f"NaN: 20000 items do not reach power {args.target_power:g} with 10 workers "
                  "(their worker x system variance puts a floor under the standard error); "
                  "plan workers and items together with nlpower plan --agreement A --effect E.")
        record["items_needed"] = tab.reset_index().to_dict(orient="records")
    write_json(args, record)
    return 0


def _plans(args: argparse.Namespace, params: Any) -> dict[str, Any]:
    from ..judge import judge_plan
    from ..powersim import plan
    from .judge_args import layout_note

    costs = {"cost_per_rating": args.cost_per_rating, "cost_per_worker": args.cost_per_worker}
    res = plan(params, effect=args.effect, target_power=args.target_power, alpha=args.alpha,
               **costs)
    print(f"\nplan (nlpower plan: every worker rates every item): {res.n_workers} workers x "
          f"{res.n_items} items, "
          f"power {res.power:.3f}, cost {res.cost:g}")
    out: dict[str, Any] = {"plan": {"n_workers": res.n_workers, "n_items": res.n_items,
                                    "power": res.power, "cost": res.cost}}
    if args.judge_r is not None:
        tab = judge_plan(params, judge_r=args.judge_r, target_power=args.target_power,
                         alpha=args.alpha, cost_per_judge_call=args.cost_per_judge_call, **costs)
        print("\nany workers per item, with an LLM judge (PPI++) beside humans only (closed form):")
        print(tab.round(3).to_string())
        print(layout_note(tab))
        out["judge_plan"] = tab.reset_index(names="plan").to_dict(orient="records")
    return out
