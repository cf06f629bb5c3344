"""``nlpower fit`` flags for an LLM judge (``--judge``) and agreement (``--agreement``), and
``nlpower plan --judge-r``.

A thin edge: the statistics are :func:`nlpower.judge.fit`,
:func:`nlpower.agreement.krippendorff_alpha`, :func:`nlpower.agreement.icc` and
:func:`nlpower.judge.judge_plan`.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InputError
from .output import write_json


def add_fit_arguments(p: argparse.ArgumentParser) -> None:
    """The judge and agreement flags of ``nlpower fit``."""
    g = p.add_argument_group("LLM judge and agreement")
    g.add_argument("--judge", default=None, metavar="FILE",
                   help="judge scores on all items (one row per item, system and score, the "
                        "item and system columns named as in FILE or by --judge-item and "
                        "--judge-system; several rows per "
                        "item and system are averaged): estimate the system differences by "
                        "prediction-powered inference (PPI++) with a crossed worker x item "
                        "rectifier, beside the human-only and judge-only estimates; ratings and "
                        "judge scores are used as given (no --scale rescaling): put both on the "
                        "scale you want the differences on")
    g.add_argument("--judge-score", default="score", metavar="COL",
                   help="score column of the judge file (default: score)")
    g.add_argument("--judge-item", default=None, metavar="COL",
                   help="item column of the judge file (default: the --item name)")
    g.add_argument("--judge-system", default=None, metavar="COL",
                   help="system column of the judge file (default: the --system name)")
    g.add_argument("--judge-rectifier", choices=("crossed", "iid"), default="crossed",
                   help="crossed (default: mixed model with worker and item effects) or iid "
                        "(item means as independent labels, ppi-python's estimator)")
    g.add_argument("--judge-outcome", choices=("gaussian", "binary"), default="gaussian",
                   help="gaussian (default) or binary (0/1 human labels, e.g. preferences)")
    g.add_argument("--agreement", action="store_true",
                   help="also report Krippendorff's alpha (interval, bootstrap CI over outputs) "
                        "and the McGraw & Wong ICCs per system")


def run_judge(args: argparse.Namespace) -> int:
    """``nlpower fit FILE --judge JUDGE``: the prediction-powered table."""
    from ..judge import fit
    from ..ratings.files import read_table

    human = read_table(args.file, "ratings", sep=args.sep, encoding=args.encoding)
    judge = read_table(args.judge, "judge", options=False)
    renames = {}
    for flag, own, name in (("--judge-item", args.judge_item, args.item),
                            ("--judge-system", args.judge_system, args.system)):
        if own is not None and own != name:
            if own not in judge.columns:
                raise InputError(f"{flag} {own!r} is not a column of the judge file; columns are "
                                 f"{list(map(str, judge.columns))}.")
            renames[own] = name
    judge = judge.drop(columns=[c for c in renames.values() if c in judge.columns])
    res = fit(human, judge.rename(columns=renames), worker=args.worker, item=args.item,
              system=args.system,
              rating=args.rating, score=args.judge_score, baseline=args.baseline,
              outcome=args.judge_outcome, rectifier=args.judge_rectifier)
    print(res.summary())
    if args.json_out:
        write_json(args, {"lambda": res.lam, "rectifier": res.rectifier,
                          "estimates": res.to_frame().to_dict(orient="records")},
                   path=args.json_out)
    return 0


def agreement_text(fit: Any) -> str:
    """Krippendorff's alpha and the ICCs of a :class:`~nlpower.ratings.RatingsFit`."""
    from ..agreement import icc, krippendorff_alpha

    parts = []
    if getattr(fit, "data", None) is not None:
        parts.append(krippendorff_alpha(fit.data, level="interval", n_boot=1000,
                                        rng=0).summary())
    parts.append(icc(fit).summary())
    return "\n".join(parts)


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    """``nlpower plan --judge-r R``: the plan with an LLM judge beside the human-only one."""
    g = p.add_argument_group("LLM judge (with --preset or --agreement)")
    g.add_argument("--judge-r", type=float, default=None, metavar="R",
                   help="correlation of an LLM judge's per-item system difference with the true "
                        "one: also print the cheapest design with the judge scoring every item "
                        "(PPI++, closed form; any workers per item) beside the human-only one")
    g.add_argument("--n-unlabelled", type=int, default=1000, metavar="N",
                   help="items scored by the judge only")
    g.add_argument("--cost-per-judge-call", type=float, default=0.0, metavar="C",
                   help="cost of one judge score (one output)")


def check_plan_arguments(args: argparse.Namespace) -> None:
    """The judge flags need parameters (``--preset`` / ``--agreement``) and Gaussian ratings."""
    from ..errors import InputError

    extra = [flag for dest, flag in (("n_unlabelled", "--n-unlabelled"),
                                     ("cost_per_judge_call", "--cost-per-judge-call"))
             if getattr(args, dest) != args.parser.get_default(dest)]
    if args.judge_r is None:
        if extra:
            verb, it = ("describe", "them") if len(extra) > 1 else ("describes", "it")
            raise InputError(f"{', '.join(extra)} {verb} an LLM judge: give --judge-r R too, "
                             f"or drop {it}.")
        return
    if args.ratings is not None or args.outcome != "gaussian":
        raise InputError("--judge-r plans from parameters (--preset or --agreement A) of "
                         "Gaussian ratings; with a pilot file, estimate the judge's quality "
                         "with nlpower fit --judge and plan in Python (nlpower.judge.judge_plan).")


def print_judge_plan(args: argparse.Namespace, params: Any) -> dict[str, Any]:
    """The judge plan beside the human-only plan (``{}`` without ``--judge-r``)."""
    if args.judge_r is None:
        return {}
    from ..judge import judge_plan

    tab = judge_plan(params, judge_r=args.judge_r, n_unlabelled=args.n_unlabelled,
                     target_power=args.target_power, alpha=args.alpha,
                     cost_per_rating=args.cost_per_rating, cost_per_worker=args.cost_per_worker,
                     cost_per_judge_call=args.cost_per_judge_call)
    print(f"\nwith an LLM judge (judge_r {args.judge_r:g}, {args.n_unlabelled} judge-only items; "
          "PPI++, closed form, any workers per item) beside humans only:")
    print(tab.round(3).to_string())
    print(layout_note(tab))
    return {"judge_plan": tab.reset_index(names="plan").to_dict(orient="records")}


def layout_note(tab: Any) -> str:
    """The sentence that sets the judge table's layouts apart from the fully crossed plan."""
    if tab["layout"].str.startswith("every worker").all():
        return "layout: every worker rates every item in these rows too, as in the plan above."
    return ("layout: the plan above is fully crossed (every worker rates every item); these "
            "rows rate each item by a few of many workers (the layout column): 'human only' "
            "here and the plan above are two layouts reaching the same target power, hence "
            "two costs.")
