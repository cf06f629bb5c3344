"""``--outcome``, ``--levels``, ``--analysis`` of ``nlpower power`` (a thin edge, no statistics).

``--outcome likert --levels K`` maps the chosen Table 16 scenario (or pilot)
to ``K``-point ratings (:mod:`nlpower.outcomes`) and passes ``--analysis`` on;
``--outcome preference`` computes the exact power of a one-judgement
head-to-head test (:func:`nlpower.preference.power`) from ``--judges``,
``--p-win`` and ``--p-draw``.
"""

from __future__ import annotations

import argparse
from typing import Any

from .output import write_json

OUTCOMES = ("gaussian", "likert", "preference")


def add_outcome_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--outcome", choices=OUTCOMES, default="gaussian",
                   help="what is rated: gaussian (default, the paper's ratings), likert (--levels "
                        "points from a latent threshold model) or preference (one judgement per "
                        "person: --judges, --p-win, --p-draw)")
    p.add_argument("--levels", type=int, default=None, metavar="K",
                   help="Likert points for --outcome likert (e.g. 5)")
    p.add_argument("--analysis", choices=("lmm", "clmm"), default="lmm",
                   help="analysis of --outcome likert: lmm (the paper's LMM on [0, 1], default) "
                        "or clmm (cumulative link mixed model)")
    p.add_argument("--judges", type=int, default=None, metavar="N",
                   help="--outcome preference: number of judgements")
    p.add_argument("--p-win", type=float, default=None,
                   help="--outcome preference: probability that a judge prefers system B")
    p.add_argument("--p-draw", type=float, default=0.0,
                   help="--outcome preference: probability of a draw (default: 0)")
    p.add_argument("--ties", choices=("exclude", "split"), default="exclude",
                   help="--outcome preference: draws dropped (default) or split half and half")


def outcome_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`nlpower.power` for ``--outcome gaussian|likert``."""
    if args.outcome == "gaussian":
        if args.levels is not None:
            args.parser.error("--levels is for --outcome likert")
        return {}
    return {"outcome": args.outcome, "levels": args.levels, "analysis": args.analysis}


def run_preference(args: argparse.Namespace) -> int:
    """``nlpower power --outcome preference``: exact one-judgement head-to-head power."""
    if args.judges is None or args.p_win is None:
        args.parser.error("--outcome preference needs --judges N and --p-win P")
    from ..preference import power as preference_power

    res = preference_power(args.judges, args.p_win, p_draw=args.p_draw, ties=args.ties,
                           alpha=args.alpha, alternative=args.alternative)
    print(res.summary())
    write_json(args, res.to_record())
    return 0
