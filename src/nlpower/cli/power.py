"""``nlpower power`` and ``nlpower grid``: a thin edge over the library.

Argument parsing, one call to :func:`nlpower.power` or
:func:`nlpower.power_grid`, then printing and writing what they return.
No statistics live here.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._choices import Alternative, Coding, EngineName, PowerMethod, RatingsTest, allowed
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
    own_effects,
    own_params,
    run_preference,
)
from .output import save_figure, write_csv, write_json
from .ratings_args import add_pilot_arguments, add_ratings_arguments, contrast_of, fit_from_args
from .shards import add_shard_argument, check_shard, print_shard_note, register_merge

PRESETS = ("high-variance", "low-variance")


def _list_of(kind: Callable[[str], Any], what: str) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or any(p == "" for p in parts):
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {what}, e.g. 3,10; got {text!r}")
        try:
            return [kind(p) for p in parts]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {what}, e.g. 3,10; got {text!r}") from None

    return parse


def _scenarios(preset: str) -> dict[str, Any]:
    from .. import presets

    table = {"high-variance": ("high variance", presets.high_variance),
             "low-variance": ("low variance", presets.low_variance)}
    names = list(table) if preset == "both" else [preset]  # Figure 6: high variance on top
    return {table[n][0]: table[n][1]() for n in names}


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n-sims", type=int, default=200, metavar="N",
                   help="simulated experiments per design (default: 200, as in the paper)")
    p.add_argument("--test", choices=allowed(RatingsTest), default=None,
                   help="test of the effect (default: the analysis's first -- satterthwaite, "
                        "REML, for lmm; z for clmm and glmer; the paper: z, ML fits; "
                        "kenward-roger: REML, KR df; pblrt: parametric-bootstrap LRT, ML)")
    p.add_argument("--n-resamples", type=int, default=None, metavar="B",
                   help="bootstrap samples per replicate for --test pblrt (default: 99)")
    p.add_argument("--alternative", choices=allowed(Alternative), default="two-sided",
                   help="alternative hypothesis (default: two-sided). Power counts only sign-correct "
                        "rejections, so --test z --alternative two-sided is the paper's t > 1.96 rule "
                        "(greater: t > 1.645 at alpha 0.05)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default: 0.05)")
    p.add_argument("--precision", type=float, default=None, metavar="H",
                   help="adaptive Monte Carlo precision: stop the replicates (in batches of 50) "
                        "once the power's 95%% interval is +-H wide, e.g. 0.01; --n-sims is then "
                        "the maximum (default: run all --n-sims)")
    p.add_argument("--method", choices=allowed(PowerMethod), default="auto",
                   help="how power is computed: auto (the exact balanced fast path when it applies, "
                        "else simulate), balanced, simulate (refit every replicate), analytic")
    p.add_argument("--engine", choices=allowed(EngineName), default="native",
                   help="mixed-model fitter for --method simulate: native (default) or lme4 (needs R)")
    p.add_argument("--workers-per-item", type=int, default=None, metavar="K",
                   help="each item is rated by K of the workers (default: all, fully crossed)")
    p.add_argument("--seed", type=int, default=None, help="root seed (default: fresh entropy, printed)")


def register(subparsers: Any) -> None:
    """Add the ``power`` and ``grid`` subcommands."""
    p = subparsers.add_parser(
        "power", help="power of one design (Card et al. 2020, App. H.3)",
        description="Simulated power of one crossed worker x item design under a Table 16 "
                    "scenario. Effects are beta1 in sum coding (x = +-1).")
    p.add_argument("--preset", choices=PRESETS, default=None,
                   help="Table 16 variance scenario (or give a pilot with --ratings)")
    p.add_argument("--workers", type=int, default=None, help="number of workers (required)")
    p.add_argument("--items", type=int, default=None, help="number of items (required)")
    p.add_argument("--effect", type=float, default=None,
                   help="beta1 in --coding (default sum: half the mean difference on [0, 1]; "
                        "required)")
    add_outcome_arguments(p, judges=True)
    p.add_argument("--coding", choices=allowed(Coding), default="sum",
                   help="coding of --effect (default: sum, the paper's x = +-1)")
    _common(p)
    p.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the result as JSON ('-' = stdout)")
    add_ratings_arguments(p, required=False)
    add_pilot_arguments(p)
    add_agreement_arguments(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (shown per replicate with --method simulate)")
    p.set_defaults(func=run_power, parser=p)

    g = subparsers.add_parser(
        "grid", help="power over workers x items x effects (Card et al. 2020, Figure 6)",
        description="Power over a grid of designs and effects; writes a tidy CSV and a "
                    "Figure 6-style plot. Effects are beta1 in sum coding (x = +-1).")
    g.add_argument("--preset", choices=(*PRESETS, "both"), default=None,
                   help="Table 16 scenario(s) (default: both, unless --ratings gives a pilot)")
    g.add_argument("--workers", type=_list_of(int, "integers"), default=[3, 10],
                   help="numbers of workers (default: 3,10)")
    g.add_argument("--items", type=_list_of(int, "integers"), default=[50, 100, 500],
                   help="numbers of items (default: 50,100,500)")
    g.add_argument("--effects", type=_list_of(float, "numbers"), default=[0.05, 0.1, 0.15, 0.2],
                   help="effects beta1, sum coding (likert: the latent effect; preference: "
                        "give --p-win instead) (default: 0.05,0.1,0.15,0.2)")
    add_outcome_arguments(g, grid=True)
    _common(g)
    g.add_argument("--null", action="store_true",
                   help="also simulate every cell at effect 0 and report the Type I error")
    g.add_argument("--n-jobs", type=int, default=1, metavar="N", help="parallel jobs (-1: all cores)")
    g.add_argument("--backend", choices=("loky", "dask"), default="loky", help="parallel backend")
    g.add_argument("--checkpoint", type=Path, default=None, metavar="FILE",
                   help="resume from / append finished cells to this file")
    g.add_argument("--out", type=Path, default=None, metavar="CSV", help="write the grid as CSV")
    g.add_argument("--plot", type=Path, default=None, metavar="PNG", help="draw Figure 6's layout")
    g.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the grid as JSON records ('-' = stdout)")
    g.add_argument("--quiet", action="store_true", help="no progress bars")
    add_ratings_arguments(g, required=False)
    add_pilot_arguments(g)
    add_agreement_arguments(g)
    add_shard_argument(g)
    g.set_defaults(func=run_grid, parser=g)
    register_merge(g)


def _n_resamples(args: argparse.Namespace) -> dict[str, Any]:
    return {} if args.n_resamples is None else {"n_resamples": args.n_resamples}


def _design_kw(args: argparse.Namespace) -> dict[str, Any]:
    return {} if args.workers_per_item is None else {"workers_per_item": args.workers_per_item}


def pilot_params(args: argparse.Namespace, effect: float, coding: Any = "sum", *,
                 solved: bool = False) -> Any:
    """The parameters of ``--ratings FILE`` (fitted), printed with the file they came from.

    With more than two systems ``--contrast A[,B]`` names the comparison
    (only those two systems' ratings are fitted); ``--sd NAME=SD`` sets what
    the pilot does not estimate, and the variance components it sets to 0
    are printed as notes.  With ``solved`` (``mde``) the effect is what is
    solved for, and is printed so.
    """
    from ..convert import as_params, with_sds, zero_sd_notes
    from ..pilot.subset import contrast_pair
    from .messages import cli_sd, moot_with_sd, speak_cli

    fit = fit_from_args(args)
    contrast = contrast_of(args)
    a, b = contrast_pair(fit.systems, contrast, fit.baseline) if contrast is not None else \
        contrast_pair(fit.systems, [s for s in fit.systems if s != fit.baseline][0], fit.baseline)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        params = with_sds(as_params(fit, effect=effect, coding=coding, contrast=contrast), args.sd)
    for w in caught:  # "... sd_item_slope = 0" is moot when --sd sets sd_item_slope
        if not moot_with_sd(str(w.message), args.sd):
            print(f"warning: {speak_cli(str(w.message), getattr(args, 'flags', {}))}",
                  file=sys.stderr)
    print(f"pilot {args.ratings}: {fit.report.n_ratings} ratings, {fit.report.n_workers} workers, "
          f"{fit.report.n_items} items; model {fit.formula}")
    print(f"systems compared: {a} vs {b} ({a} coded +1, {b} -1)")
    shown = re.sub(r"\beffect=[^,)]+", "effect=(solved for)", repr(params)) if solved \
        else repr(params)
    print(f"parameters used: {shown}")
    for note in zero_sd_notes(fit, contrast, args.sd):
        print(f"note: {cli_sd(note, getattr(args, 'flags', None))}")
    print()
    return params


def run_power(args: argparse.Namespace) -> int:
    from ..design import CrossedDesign
    from ..powersim import power

    check_outcome_flags(args)
    check_agreement_flags(args)
    if args.judges is not None:
        return run_preference(args)
    params = own_params(args)
    needed = ("workers", "items") if params is not None else ("workers", "items", "effect")
    missing = [f"--{k}" for k in needed if getattr(args, k) is None]
    if missing:
        args.parser.error(f"the following arguments are required: {', '.join(missing)}")
    design = CrossedDesign(args.workers, args.items, **_design_kw(args))
    if params is None and args.agreement is not None:
        params = agreement_params(args, args.effect, args.coding)
    elif params is None:
        if (args.preset is None) == (args.ratings is None):
            raise InputError("give either --preset (a Table 16 scenario), --ratings FILE (a "
                             "pilot whose variance components are used) or --agreement A (a "
                             "target agreement), not both or neither.")
        if args.ratings is not None:
            params = pilot_params(args, args.effect, args.coding)
        else:
            params = next(iter(_scenarios(args.preset).values())).with_effect(args.effect)
            if args.coding != params.coding:
                params = params.to_coding(args.coding).with_effect(args.effect)
    result = power(design, params, n_sims=args.n_sims, alpha=args.alpha, test=args.test,
                   alternative=args.alternative, method=args.method, engine=args.engine,
                   rng=args.seed, progress=not args.quiet, precision=args.precision,
                   **_n_resamples(args), **outcome_kwargs(args))
    print(result.summary())
    frame = result.to_frame()
    record: dict[Any, Any] = (frame.iloc[0].to_dict() if len(frame) == 1
                              else {"results": frame.to_dict(orient="records")})
    record["design"] = {"n_workers": args.workers, "n_items": args.items,
                        "workers_per_item": args.workers_per_item}
    record["params"] = {k: getattr(params, k) for k in getattr(params, "__dataclass_fields__", {})}
    record["preset"] = args.preset
    record.update(agreement_record(args))
    write_json(args, record)
    return 0


def run_grid(args: argparse.Namespace) -> int:
    check_shard(args)
    check_outcome_flags(args)
    check_agreement_flags(args)
    from ..powersim.grid import power_grid

    if args.preset is not None and args.ratings is not None:
        raise InputError("give either --preset (Table 16 scenarios) or --ratings FILE (a pilot "
                         "whose variance components are used), not both.")
    own = own_params(args)
    effects = own_effects(args) or args.effects
    if own is not None:
        scenarios: Any = own
    elif args.agreement is not None:
        scenarios = {f"{args.measure} {args.agreement:g}": agreement_params(args, effects[0])}
    elif args.ratings is not None:
        scenarios = {"pilot": pilot_params(args, args.effects[0])}
    else:
        scenarios = _scenarios(args.preset or "both")
    result = power_grid(
        scenarios, n_workers=args.workers, n_items=args.items, effect=effects,
        n_sims=args.n_sims, alpha=args.alpha, test=args.test, alternative=args.alternative,
        method=args.method, engine=args.engine, n_jobs=args.n_jobs, backend=args.backend,
        checkpoint=args.checkpoint, null=args.null, rng=args.seed, progress=not args.quiet,
        shard=args.shard, precision=args.precision, **_n_resamples(args),
        **outcome_kwargs(args), **_design_kw(args),
    )
    print(result.summary())
    extra = _type1_and_analyses(result)
    if extra:
        print(extra)
    print_shard_note(args, result)
    if args.out is not None:
        write_csv(args, result.to_frame())
    if args.plot is not None:
        save_figure(result.plot(), args.plot)
    write_json(args, result.to_frame().to_dict(orient="records"))
    sys.stdout.flush()
    return 0


def _ci(frame: Any, col: str, low: str, high: str) -> list[str]:
    values = frame[[col, low, high]].astype(float).to_numpy()
    return [f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if v == v else "-" for v, lo, hi in values]


def _type1_and_analyses(result: Any) -> str:
    """The columns the grid's summary leaves out: each analysis's power (several analyses of
    the same replicates) and the Type I error of ``--null``, per cell."""
    frame = result.to_frame()
    analyses = [c.removeprefix("power_") for c in frame.columns if c.startswith("power_")]
    varying = [c for c in result.columns if len(result.axes[c]) > 1] or list(result.columns)
    table = frame[varying].copy()
    for a in analyses:
        table[f"power {a}"] = _ci(frame, f"power_{a}", f"ci_low_{a}", f"ci_high_{a}")
        if f"type1_{a}" in frame:
            table[f"Type I {a}"] = _ci(frame, f"type1_{a}", f"type1_ci_low_{a}",
                                       f"type1_ci_high_{a}")
    if not analyses and "type1" in frame:
        table["Type I error"] = _ci(frame, "type1", "type1_ci_low", "type1_ci_high")
    if len(table.columns) == len(varying) or (table.iloc[:, len(varying):] == "-").all().all():
        return ""
    head = ("by analysis, on the same simulated experiments (the power column above is the "
            f"first, {analyses[0]})" if analyses else "Type I error (the cells simulated again "
            "at effect 0)")
    return f"\n{head} [95% CI]:\n{table.to_string(index=False)}"
