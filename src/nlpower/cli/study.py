"""``nlpower study``: power for a term of your own model, fitted to your own pilot file.

A thin edge over :mod:`nlpower.study`: fit the formula to the file
(``lmer``, ``glmer`` or ``clmm``), set the parameters to plan for
(``--set``, ``--sd``, ``--sigma``), optionally extend the design
(``--extend worker=40``), then one of: power for ``--term`` / ``--compare`` /
``--pairwise``, a power curve (``--curve worker=5,10,20``) or a plan
(``--plan worker``).
"""

from __future__ import annotations

import argparse
from typing import Any

from .._choices import GlmerFamily, allowed
from ..errors import InputError
from .messages import flag_names
from .output import save_figure, write_json

FAMILIES = ("gaussian", *allowed(GlmerFamily), "ordinal")


def _pair(text: str, what: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise InputError(f"{what} takes NAME=VALUE; got {text!r}.")
    return name.strip(), value.strip()


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{what}: {text!r} is not a number.") from None


def _count(text: str, what: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise InputError(f"{what}: {text!r} is not a whole number.") from None
    if n < 1:
        raise InputError(f"{what}: {n} must be at least 1.")
    return n


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "study",
        help="power for any term of your own mixed model, fitted to a pilot file (simr's powerSim)",
        description=(
            "Fit FORMULA to FILE (lmer, glmer or clmm), set the truth to plan for, and simulate: "
            "power for a term, a contrast or a comparison of models; all pairwise comparisons of "
            "a factor's levels; a power curve over the number of levels of a factor; or the "
            "smallest number of levels that reaches the target power. Example: nlpower study "
            "pilot.csv --formula 'y ~ x + (1|g)' --family poisson --set x=-0.05 --term x"),
    )
    p.add_argument("file", help="the pilot data (CSV, TSV, Parquet, JSON lines; .gz allowed)")
    p.add_argument("--formula", required=True, help="lme4 formula, e.g. 'y ~ x + (1 | g)'")
    p.add_argument("--family", choices=FAMILIES, default="gaussian")
    p.add_argument("--reml", action="store_true", help="fit a Gaussian model by REML (default ML)")
    p.add_argument("--set", action="append", default=[], metavar="COEF=VALUE",
                   help="a fixed effect of the truth (repeatable), e.g. --set x=-0.05")
    p.add_argument("--sd", action="append", default=[], metavar="GROUP=SD",
                   help="a one-column random-effect SD of the truth (repeatable), by the group "
                        "name fit.varcorr() shows, e.g. --sd worker=0.3")
    p.add_argument("--sigma", type=float, default=None, help="residual SD (Gaussian)")
    p.add_argument("--dispersion", type=float, default=None,
                   help="the family's dispersion of the truth (negative_binomial: theta, "
                        "Var = mu + mu^2/theta)")
    p.add_argument("--extend", default=None, metavar="FACTOR=N",
                   help="extend the design to N levels of FACTOR (simr's extend)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--term", help="a coefficient, a contrast 'b - c', or a formula term")
    what.add_argument("--compare", help="the reduced model, e.g. '~ . - x'")
    what.add_argument("--pairwise", metavar="FACTOR",
                      help="compare every pair of the factor's levels (or each with --baseline)")
    p.add_argument("--baseline", default=None, help="with --pairwise: compare each level with it")
    p.add_argument("--adjust", default="holm", choices=("holm", "bonferroni", "fdr", "none"))
    p.add_argument("--test", default=None,
                   choices=("z", "satterthwaite", "t", "kenward-roger", "kr", "lrt", "lr", "pblrt"))
    p.add_argument("--curve", default=None, metavar="FACTOR=B1,B2,...",
                   help="power at these numbers of levels of FACTOR (simr's powerCurve)")
    p.add_argument("--plan", default=None, metavar="FACTOR",
                   help="the smallest number of levels of FACTOR that reaches --power")
    p.add_argument("--power", type=float, default=0.8, dest="target", help="target (with --plan)")
    p.add_argument("--n-max", type=int, default=1000, help="largest size searched by --plan")
    p.add_argument("--n-sims", type=int, default=1000)
    p.add_argument("--precision", type=float, default=None, metavar="H",
                   help="stop the replicates once the power's 95%% interval is +-H wide (e.g. "
                        "0.01; --n-sims the maximum); not with --curve or --plan")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--progress", action="store_true", help="a progress bar on stderr")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the result as JSON")
    p.add_argument("--plot", default=None, metavar="FIG", help="with --curve: the figure")
    p.set_defaults(func=run, flags=flag_names(p), parser=p)


def _fit(args: argparse.Namespace) -> Any:
    from pathlib import Path

    import nlpower

    from ..ratings.files import load_table

    data, _ = load_table(Path(args.file), None)
    if args.family == "gaussian":
        return nlpower.lmer(args.formula, data, REML=args.reml)
    if args.family == "ordinal":
        return nlpower.clmm(args.formula, data)
    return nlpower.glmer(args.formula, data, args.family)


def run(args: argparse.Namespace) -> int:
    import nlpower

    from ..study import plan_model

    fit = _fit(args)
    fixef = {k: _number(v, "--set") for k, v in (_pair(t, "--set") for t in args.set)}
    sd = {k: _number(v, "--sd") for k, v in (_pair(t, "--sd") for t in args.sd)}
    extra: dict[str, Any] = {}
    if args.dispersion is not None:
        if not hasattr(fit, "dispersion"):
            raise InputError(f"--dispersion: a {args.family} model has no dispersion parameter; "
                             "drop --dispersion (it is for --family negative_binomial).")
        extra["dispersion"] = args.dispersion
    model: Any = fit.with_params(fixef=fixef or None, sd=sd or None, sigma=args.sigma, **extra)
    if args.extend:
        along, n = _pair(args.extend, "--extend")
        model = nlpower.extend(model, along=along, n=_count(n, "--extend"))
    ask: dict[str, Any] = {"term": args.term, "compare": args.compare, "test": args.test,
                           "n_sims": args.n_sims, "alpha": args.alpha, "rng": args.seed,
                           "n_jobs": args.n_jobs}
    print(f"model: {args.formula} ({args.family}), {fit.nobs} rows; truth: "
          + ", ".join(f"{k}={v:.4g}" for k, v in model.fixef.items()))
    if args.precision is not None and (args.curve or args.plan):
        raise InputError(f"--precision={args.precision} stops one power's replicates; --curve and "
                         "--plan run fixed --n-sims per size. Drop --precision there.")
    if args.curve:
        along, breaks = _pair(args.curve, "--curve")
        bs = [_count(b, "--curve") for b in breaks.split(",")]
        res: Any = nlpower.power_curve(model, along=along, breaks=bs, progress=args.progress,
                                       **ask)
        print(res.summary())
        if args.plot:
            save_figure(res.plot(), args.plot)
        write_json(args, res.to_frame().to_dict(orient="records"))
        return 0
    if args.plan:
        res = plan_model(model, along=args.plan, target=args.target, n_max=args.n_max, **ask)
        print(res.summary())
        write_json(args, {"n": res.n, "reached": res.reached,
                          "evaluated": res.to_frame().to_dict(orient="records")})
        return 0
    if args.pairwise:
        ask.pop("term"), ask.pop("compare")
        res = nlpower.power(model, pairwise=args.pairwise, baseline=args.baseline,
                            adjust=args.adjust, progress=args.progress,
                            precision=args.precision, **ask)
        print(res.summary())
        write_json(args, res.to_frame().to_dict(orient="records"))
        return 0
    res = nlpower.power(model, progress=args.progress, precision=args.precision, **ask)
    print(res.summary())
    write_json(args, res.to_record())
    return 0
