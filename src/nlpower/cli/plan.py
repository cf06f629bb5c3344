"""``nlpower plan``: from a pilot rating file to the cheapest design, with assurance.

A thin edge: :func:`nlpower.ratings.read_ratings` -> :func:`nlpower.ratings.fit_ratings`
(``--family ordinal``: the cumulative link mixed model of the Likert scores)
-> :func:`nlpower.pilot.plan_with_assurance` -> print.  Without a pilot,
``--preset`` (Gaussian, or ``--outcome likert --levels K``) or ``--outcome
preference --p-win ...`` plans from parameters with :func:`nlpower.plan`
(simulated power for the non-Gaussian outcomes).  No statistics live here.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path
from typing import Any

from .._choices import Alternative, AssuranceMethod, Coding, RatingsTest, allowed
from ..errors import InputError
from .agreement_args import (
    add_agreement_arguments,
    agreement_params,
    agreement_record,
    check_agreement_flags,
)
from .judge_args import add_plan_arguments, check_plan_arguments, print_judge_plan
from .messages import cli_sd, moot_with_sd, speak_cli
from .outcome_args import (
    add_outcome_arguments,
    check_outcome_flags,
    outcome_kwargs,
    own_params,
)
from .output import save_figure, write_json
from .ratings_args import (
    add_judgement_columns,
    add_pilot_arguments,
    add_ratings_arguments,
    contrast_of,
    fit_from_args,
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "plan",
        help="cheapest design for a target power, from a pilot rating file (with assurance)",
        description=(
            "Fit Card et al.'s model to a pilot rating file (one row per rating), then find the "
            "cheapest number of workers and items that detects --effect with --target-power: at "
            "the pilot's estimated SDs, and at their upper confidence bounds (the safeguard "
            "design), each with its assurance (mean power over the pilot's sampling "
            "distribution). The effect is yours, never the pilot's estimate."
        ),
    )
    p.add_argument("--preset", choices=("high-variance", "low-variance"), default=None,
                   help="plan under a Table 16 scenario instead of a pilot (the cheapest design "
                        "at those SDs; no assurance)")
    add_ratings_arguments(p, required=False)
    p.add_argument("--family", choices=("gaussian", "ordinal"), default="gaussian",
                   help="model of the pilot (as in nlpower fit): gaussian (Card et al.'s LMM of "
                        "ratings on [0, 1], default) or ordinal (clmm of the Likert scores; "
                        "--effect is then on the latent logit scale, and power is simulated)")
    p.add_argument("--analysis", choices=("clmm", "lmm", "glmer"), default=None,
                   help="with --family ordinal or --outcome likert: analysis of the planned study, "
                        "clmm (default for --family ordinal) or lmm (the paper's LMM of rescaled "
                        "ratings; much faster; default for --outcome likert); glmer: --outcome "
                        "preference (its only analysis)")
    p.add_argument("--n-sims", type=int, default=None,
                   help="with --family ordinal: simulated replicates per bootstrap draw "
                        "(default: 10); with --outcome likert/preference: per design evaluated "
                        "(default: 500)")
    p.add_argument("--effect", type=float, default=None,
                   help="smallest effect worth detecting (required; --outcome preference: "
                        "defaults to the logit of --p-win), in --coding (sum: half the mean "
                        "difference on the [0, 1] scale); --family ordinal and --outcome likert: "
                        "latent scale; --outcome preference: logit of the share preferring B")
    p.add_argument("--coding", choices=allowed(Coding), default="sum",
                   help="coding of --effect (default: sum, the paper's x = +-1)")
    add_pilot_arguments(p)
    p.add_argument("--target-power", type=float, default=0.8, help="target power (default: 0.8)")
    p.add_argument("--cost-per-rating", type=float, default=1.0, help="cost of one rating (default: 1)")
    p.add_argument("--cost-per-worker", type=float, default=0.0,
                   help="fixed cost per worker, e.g. recruiting (default: 0)")
    p.add_argument("--min-workers", type=int, default=2, help="fewest workers searched (default: 2)")
    p.add_argument("--max-workers", type=int, default=None,
                   help="most workers (a cap; default: 50, searched further, with a note, while "
                        "the cheapest design is at the edge)")
    p.add_argument("--max-items", type=int, default=5000, help="most items searched (default: 5000)")
    p.add_argument("--workers-per-item", type=int, default=None, metavar="K",
                   help="each item rated by K of the workers (default: all, fully crossed)")
    p.add_argument("--confidence-level", type=float, default=0.8,
                   help="one-sided level of the SDs' upper bounds for the safeguard design (default: 0.8)")
    p.add_argument("--method", choices=allowed(AssuranceMethod), default="bootstrap",
                   help="the pilot's sampling distribution: bootstrap (parametric, default) or asymptotic")
    p.add_argument("--n-boot", type=int, default=None,
                   help="bootstrap refits / draws (default: 200 for a Gaussian pilot, 50 for an "
                        "ordinal or head-to-head one, whose draws' power is simulated)")
    p.add_argument("--test", choices=allowed(RatingsTest), default=None,
                   help="test of the effect (default: satterthwaite, or z for --analysis clmm; "
                        "the paper: z)")
    p.add_argument("--alternative", choices=allowed(Alternative), default="two-sided",
                   help="alternative hypothesis (default: two-sided)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default: 0.05)")
    p.add_argument("--seed", type=int, default=None, help="root seed (default: fresh entropy, printed)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write both plans and their assurance as JSON ('-' = stdout)")
    p.add_argument("--plot", type=Path, default=None, metavar="PNG",
                   help="draw the plan's power curve: power against items for the chosen "
                        "number of workers (with a pilot: the plan at its point estimates)")
    add_outcome_arguments(p, analysis=False)
    j = p.add_argument_group(
        "head-to-head pilot (--judgements FILE: one row per judgement; --worker and --item name "
        "its worker and item columns)")
    j.add_argument("--judgements", type=Path, default=None, metavar="FILE",
                   help="pilot file of head-to-head judgements (A / B / tie): plans repeated "
                        "judgements of the pair with assurance (--effect: logit of the share "
                        "preferring B, or --p-win)")
    add_judgement_columns(j)
    j.add_argument("--position", action="store_true",
                   help="also fit the effect of display order")
    add_agreement_arguments(p)
    add_plan_arguments(p)
    p.set_defaults(func=run_plan, parser=p)


def run_plan(args: argparse.Namespace) -> int:
    from ..pilot import plan_with_assurance

    if args.judgements is not None:
        return _plan_judgements(args)
    # --effect is read by every outcome; --preset / --ratings are refused below in plan's words
    check_outcome_flags(args, own=("effect", "preset", "ratings"))
    check_agreement_flags(args)
    check_plan_arguments(args)
    if args.outcome != "gaussian":
        return _plan_outcome(args)
    if args.levels is not None:
        raise InputError("--levels is for --outcome likert (planning K-point ratings from "
                         "--preset); a Likert pilot file is planned with --family ordinal.")
    if args.effect is None:
        args.parser.error("--effect is required: the smallest effect worth detecting.")
    if args.agreement is not None:
        return _plan_preset(args)
    if (args.preset is None) == (args.ratings is None):
        raise InputError("give either --ratings FILE (a pilot: plans with assurance), --preset "
                         "(a Table 16 scenario) or --agreement A (a target agreement), not both "
                         "or neither.")
    if args.preset is not None:
        return _plan_preset(args)
    if args.family == "gaussian" and (args.analysis is not None or args.n_sims is not None):
        raise InputError("--analysis and --n-sims are for --family ordinal; a Gaussian pilot is "
                         "planned with analytic power.")
    fit = fit_from_args(args, family=args.family)
    extra = {} if args.family == "gaussian" else {"analysis": args.analysis,
                                                   "n_sims": args.n_sims}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = plan_with_assurance(
            fit, effect=args.effect, coding=args.coding, target_power=args.target_power,
            cost_per_rating=args.cost_per_rating, cost_per_worker=args.cost_per_worker,
            confidence_level=args.confidence_level, method=args.method, n_boot=args.n_boot,
            alpha=args.alpha, test=args.test, alternative=args.alternative,
            min_workers=args.min_workers, max_workers=args.max_workers, max_items=args.max_items,
            workers_per_item=args.workers_per_item, rng=args.seed,
            contrast=contrast_of(args), sd=args.sd, progress=True, **extra,
        )
    for w in caught:
        if moot_with_sd(str(w.message), args.sd):   # --sd sets what the warning puts at 0
            continue
        print(f"warning: {speak_cli(str(w.message), args.flags)}", file=sys.stderr)
    print(speak_cli(design_text(fit), args.flags))
    print()
    print(cli_sd(result.summary(), args.flags))
    print()
    _plot(args, result.point)
    if args.json is not None:
        payload = {
            "ratings": str(args.ratings),
            "plans": result.to_frame().to_dict(orient="records"),
            "point_assurance": result.point_assurance.to_record(),
            "safeguard_assurance": (result.safeguard_assurance.to_record()
                                    if result.safeguard_assurance is not None else None),
            "note": result.note,
        }
        write_json(args, payload)
    return 0


def design_text(fit: Any) -> str:
    """The pilot's design report, saying how the ratings were used: an ordinal pilot's
    ratings are ordered categories, not rescaled to [0, 1]."""
    from ..ordinal.ratings import _AS_CATEGORIES, _RESCALED, OrdinalRatingsFit

    text = str(fit.report.summary())
    return text.replace(_RESCALED, _AS_CATEGORIES) if isinstance(fit, OrdinalRatingsFit) else text


def _plan_judgements(args: argparse.Namespace) -> int:
    """``--judgements FILE``: a head-to-head pilot (:func:`nlpower.pilot.fit_judgements`) planned."""
    from ..pilot import fit_judgements, plan_with_assurance
    from ..pilot.judgements import check_fittable, judgement_frame

    if args.ratings is not None or args.preset is not None or \
            getattr(args, "agreement", None) is not None:
        raise InputError("give one source of parameters: --judgements FILE (a head-to-head "
                         "pilot), --ratings FILE, --preset or --agreement, not several.")
    if args.outcome not in ("gaussian", "preference"):
        raise InputError(f"--judgements plans head-to-head judgements (--outcome preference); "
                         f"got --outcome {args.outcome}.")
    effect = args.effect
    if (effect is None) == (args.p_win is None):
        args.parser.error("give the effect to detect once: --effect (logit of the share "
                          "preferring B) or --p-win (that share, e.g. 0.6).")
    if effect is None:
        if not 0.0 < args.p_win < 1.0:
            raise InputError(f"--p-win is a share of judgements, strictly between 0 and 1; got "
                             f"{args.p_win}.")
        if args.p_win == 0.5:
            raise InputError("--p-win 0.5 is no preference at all (half the judgements each "
                             "way): give the smallest share preferring B worth detecting, e.g. "
                             "--p-win 0.6.")
        effect = math.log(args.p_win / (1.0 - args.p_win))
    pair = None if args.pair is None else tuple(s.strip() for s in args.pair.split(","))
    cols = dict(a=args.first, b=args.second, choice=args.choice, worker=args.worker,
                item=args.item, pair=pair)
    rows, (base, other) = judgement_frame(args.judgements, **cols)
    check_fittable(rows, (base, other), choice=args.choice, worker=args.worker, item=args.item)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_judgements(args.judgements, position=args.position, **cols)
        result = plan_with_assurance(
            fit, outcome="preference", effect=effect, target_power=args.target_power,
            cost_per_rating=args.cost_per_rating, cost_per_worker=args.cost_per_worker,
            confidence_level=args.confidence_level, method=args.method, n_boot=args.n_boot,
            alpha=args.alpha, alternative=args.alternative, min_workers=args.min_workers,
            max_workers=args.max_workers, max_items=args.max_items,
            workers_per_item=args.workers_per_item, rng=args.seed, sd=args.sd,
            n_sims=args.n_sims, progress=True)
    for w in caught:
        print(f"warning: {speak_cli(str(w.message), args.flags)}", file=sys.stderr)
    ties = int((rows["weight"] == 0).sum())
    print(f"Judgements: {args.judgements}\n  {len(rows)} judgements of {other} against {base} "
          f"({ties} ties) by {rows['worker'].nunique()} workers of {rows['item'].nunique()} "
          f"items\n  share preferring {other} (ties excluded): "
          f"{rows['win'][rows['weight'] > 0].mean():.3f}\n  effect planned: {effect:.4g} "
          f"(logit scale; share preferring {other} {1 / (1 + math.exp(-effect)):.3f})\n")
    print(cli_sd(result.summary(), args.flags))
    write_json(args, {"judgements": str(args.judgements), "pair": [base, other],
                      "effect": effect, "plans": result.to_frame().to_dict(orient="records"),
                      "point_assurance": result.point_assurance.to_record(), "note": result.note})
    return 0


def _plan_outcome(args: argparse.Namespace) -> int:
    """``--outcome likert|preference``: :func:`nlpower.plan` from parameters (no pilot)."""
    from ..powersim import plan
    from .power import _scenarios

    if args.ratings is not None or args.family != "gaussian":
        raise InputError(f"--outcome {args.outcome} plans from parameters (--preset, or the "
                         "preference flags); to plan from a Likert pilot file use --ratings FILE "
                         "--family ordinal (with assurance).")
    params = own_params(args)
    effect = args.effect
    if params is None:
        if args.preset is None:
            raise InputError(f"--outcome {args.outcome} needs --preset (a Table 16 scenario, "
                             "mapped to --levels K points).")
        params = next(iter(_scenarios(args.preset).values()))
        if args.coding != params.coding:    # --effect is read in --coding, as power and mde do
            params = params.to_coding(args.coding)
    elif args.preset is not None:
        raise InputError(f"--outcome {args.outcome} takes its parameters from its own flags "
                         "(--p-win, --sd-worker, ...); drop --preset.")
    elif effect is None:
        effect = params.effect                 # the logit of --p-win
    if effect is None:
        args.parser.error("--effect is required: the smallest effect worth detecting (latent "
                          "scale for --outcome likert).")
    kw = outcome_kwargs(args)
    if args.analysis is not None:
        kw["analysis"] = args.analysis
    if args.n_sims is not None:
        kw["n_sims"] = args.n_sims
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = plan(params, effect=effect, target_power=args.target_power,
                      cost_per_rating=args.cost_per_rating, cost_per_worker=args.cost_per_worker,
                      alpha=args.alpha, test=args.test, alternative=args.alternative,
                      min_workers=args.min_workers, max_workers=args.max_workers,
                      max_items=args.max_items, workers_per_item=args.workers_per_item,
                      rng=args.seed, sd=args.sd, **kw)
    for w in caught:
        print(f"warning: {speak_cli(str(w.message), args.flags)}", file=sys.stderr)
    print(f"{args.outcome}: {params!r}")
    print(cli_sd(result.summary(), args.flags))
    _plot(args, result)
    write_json(args, {"outcome": args.outcome, "effect": effect,
                      "plans": result.to_frame().to_dict(orient="records")})
    return 0


def _plan_preset(args: argparse.Namespace) -> int:
    """``--preset`` / ``--agreement``: the cheapest design at a Table 16 scenario's SDs or at
    those elicited from a target agreement (:func:`nlpower.plan`)."""
    from ..powersim import plan
    from .power import _scenarios

    if args.agreement is not None:
        params = agreement_params(args, args.effect)
    else:
        params = next(iter(_scenarios(args.preset).values()))
    result = plan(params, effect=args.effect, coding=args.coding, target_power=args.target_power,
                  cost_per_rating=args.cost_per_rating, cost_per_worker=args.cost_per_worker,
                  alpha=args.alpha, test=args.test or "satterthwaite", alternative=args.alternative,
                  min_workers=args.min_workers, max_workers=args.max_workers,
                  max_items=args.max_items, workers_per_item=args.workers_per_item, sd=args.sd)
    print(f"preset {args.preset}: {params!r}" if args.preset else f"parameters: {params!r}")
    print(cli_sd(result.summary(), args.flags))
    in_coding = params if params.coding == args.coding else params.to_coding(args.coding)
    judged = print_judge_plan(args, in_coding.with_effect(args.effect))

    _plot(args, result)
    record = result.to_frame().to_dict(orient="records")
    write_json(args, {"preset": args.preset, "plans": record, **agreement_record(args),
                      **judged})
    return 0


def _plot(args: argparse.Namespace, result: Any) -> None:
    """``--plot``: the plan's power curve (:meth:`nlpower.powersim.PlanResult.plot`)."""
    if args.plot is not None:
        save_figure(result.plot(), args.plot)
