"""``nlpower sequential boundaries | monitor | search``: group-sequential rating studies.

A thin edge over :func:`nlpower.sequential.group_sequential`,
:class:`nlpower.sequential.Monitor` and :func:`nlpower.sequential.cheapest_design`;
no statistics live here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .output import write_json
from .ratings_args import add_judgement_columns


def _floats(text: str) -> list[float]:
    try:
        return [float(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers like 0.3,0.6,1; got {text!r}") from exc


def _futility(text: str) -> Any:
    if text in ("obf", "pocock", "hsd"):
        return text
    return _floats(text)


def _design_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--looks", type=int, default=None, help="number of equally spaced looks (default: 3)")
    p.add_argument("--information", type=_floats, default=None, metavar="T1,T2,...,1",
                   help="information fractions of the looks instead of --looks")
    p.add_argument("--alpha", type=float, default=0.025, help="Type I error (default: 0.025 one-sided)")
    p.add_argument("--beta", type=float, default=0.2, help="Type II error powered for (default: 0.2)")
    p.add_argument("--sided", type=int, choices=(1, 2), default=1, help="1 or 2 (default: 1)")
    p.add_argument("--spending", choices=("obf", "pocock", "hsd"), default="obf",
                   help="alpha spending: O'Brien-Fleming type, Pocock type, Hwang-Shih-DeCani")
    p.add_argument("--gamma", type=float, default=-4.0, help="gamma of hsd spending (default: -4)")
    p.add_argument("--futility", type=_futility, default=None, metavar="Z1,...|obf|pocock|hsd",
                   help="non-binding futility: z values for the looks before the last, or beta spending")
    p.add_argument("--futility-gamma", type=float, default=-4.0, help="gamma of hsd beta spending")


def register(subparsers: Any) -> None:
    """Add the ``sequential`` subcommand and its ``boundaries`` and ``monitor`` actions."""
    p = subparsers.add_parser(
        "sequential", help="group-sequential rating studies: boundaries and interim looks",
        description="Boundaries of a study that looks at its ratings after each batch "
                    "(Lan-DeMets alpha spending, non-binding futility), and the interim "
                    "decisions on a ratings file with a batch column.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = sub.add_parser("boundaries", help="efficacy and futility boundaries of a design")
    _design_args(b)
    b.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the boundaries as JSON ('-' = stdout)")
    b.set_defaults(func=run_boundaries)

    m = sub.add_parser("monitor", help="interim decisions on accumulating ratings",
                       description="Replay the looks of a study on a ratings file: look k analyses "
                                   "every rating of batches 1..k (in the order of --batch's values) "
                                   "and says continue or stop. --outcome says what the file holds: "
                                   "Gaussian ratings (lmer), Likert ratings (LMM of the rescaled "
                                   "ratings, or clmm) or head-to-head judgements (binomial glmer "
                                   "of one pair's judgements, ties weight 0).")
    m.add_argument("ratings", type=Path,
                   help="ratings or judgements file (CSV/TSV/Parquet), one row per rating")
    m.add_argument("--batch", required=True, help="column numbering the batches")
    m.add_argument("--outcome", choices=("gaussian", "likert", "preference"), default="gaussian",
                   help="what the file holds (default: gaussian ratings)")
    m.add_argument("--formula", default=None,
                   help="the crossed model, e.g. 'rating ~ system + (1 | worker) + (1 | item)' "
                        "(required except for --outcome preference, whose default is "
                        "'win ~ 1 + (1 | worker) + (1 | item)')")
    m.add_argument("--term", default=None,
                   help="fixed effect tested (default: the only one; preference: the intercept)")
    m.add_argument("--analysis", choices=("lmm", "clmm"), default=None,
                   help="Likert ratings: LMM of the rescaled ratings (default) or clmm")
    m.add_argument("--levels", type=int, default=None, metavar="K",
                   help="Likert scale points (the LMM rescales by (r - 1)/(K - 1))")
    m.add_argument("--link", choices=("logit", "probit", "cloglog"), default="logit",
                   help="link of --analysis clmm (default: logit)")
    j = m.add_argument_group("head-to-head judgements (--outcome preference)")
    add_judgement_columns(j)
    j.add_argument("--worker", default="worker", metavar="COL",
                   help="column of the worker (default: worker)")
    m.add_argument("--max-items", type=int, default=None, help="planned items at the last look")
    m.add_argument("--max-information", type=float, default=None,
                   help="planned 1/SE^2 at the last look (instead of --max-items)")
    m.add_argument("--item", default="item", help="column naming the items (default: item)")
    m.add_argument("--alternative", choices=("greater", "less"), default="greater",
                   help="sign of the tested coefficient under the alternative (default: greater)")
    m.add_argument("--sum-coding", default=None, metavar="FACTOR",
                   help="code this factor with +1/-1 (e.g. system) instead of treatment coding")
    _design_args(m)
    m.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the looks as JSON ('-' = stdout)")
    m.set_defaults(func=run_monitor)
    _search_parser(sub)


def _ints(text: str) -> list[int]:
    try:
        return [int(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 30,45,60; got {text!r}") from exc


def _spendings(text: str) -> list[Any]:
    out: list[Any] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part.startswith("hsd"):
            try:
                out.append(("hsd", float(part[3:].strip("():") or -4.0)))
            except ValueError as exc:
                raise argparse.ArgumentTypeError(f"write HSD spending as hsd(-2); got {part!r}") from exc
        elif part in ("obf", "pocock"):
            out.append(part)
        else:
            raise argparse.ArgumentTypeError(f"spending functions are obf, pocock and hsd(GAMMA); got {part!r}")
    return out


def _search_parser(sub: Any) -> None:
    s = sub.add_parser("search", help="the crossed design with the smallest simulated expected cost",
                       description="Simulate every maximum design (workers x items) and evaluate "
                                   "the fixed design and every (looks, spending) candidate on the "
                                   "same replicates; the cheapest one reaching --power is simulated "
                                   "again on fresh replicates for its Type I error, power and cost.")
    s.add_argument("--outcome", choices=("gaussian", "likert", "preference"), default="gaussian",
                   help="ratings (Gaussian, Likert) or head-to-head judgements")
    s.add_argument("--preset", choices=("high-variance", "low-variance"), default="low-variance",
                   help="variance components of Gaussian and Likert ratings (Card et al. Table 16)")
    s.add_argument("--levels", type=int, default=5, help="Likert scale points (default: 5)")
    s.add_argument("--analysis", choices=("lmm", "clmm"), default=None,
                   help="Likert ratings: LMM of the rescaled ratings (default) or clmm")
    s.add_argument("--sd-worker", type=float, default=0.5, help="preference: worker SD (logit)")
    s.add_argument("--sd-item", type=float, default=0.5, help="preference: item SD (logit)")
    s.add_argument("--p-draw", type=float, default=0.0, help="preference: share of ties")
    s.add_argument("--effect", type=float, required=True,
                   help="effect powered for (rating scale; latent for Likert; logit for preference)")
    s.add_argument("--workers", type=_ints, required=True, metavar="W1,W2,...")
    s.add_argument("--items", type=_ints, required=True, metavar="N1,N2,...")
    s.add_argument("--power", type=float, default=0.8, help="target power (default: 0.8)")
    s.add_argument("--alpha", type=float, default=0.025, help="one-sided Type I error (default: 0.025)")
    s.add_argument("--looks", type=_ints, default=[2, 3, 4], metavar="K1,K2,...")
    s.add_argument("--spending", type=_spendings, default=["obf", "pocock", ("hsd", -2.0)],
                   metavar="obf,pocock,hsd(-2)")
    s.add_argument("--futility", choices=("obf", "pocock", "hsd"), default=None,
                   help="non-binding futility by beta spending")
    s.add_argument("--weight-null", type=float, default=0.0, help="weight of the null's expected cost")
    s.add_argument("--shortlist", type=int, default=None,
                   help="keep the N sequential candidates cheapest on the i.i.d. scale")
    s.add_argument("--calibrate", type=int, default=None, metavar="N",
                   help="calibrate every candidate's boundaries on N null replicates per maximum "
                        "design (holds alpha when the statistic is not exactly normal, e.g. "
                        "head-to-head glmer with few workers)")
    s.add_argument("--n-sims", type=int, default=500, help="replicates per maximum design")
    s.add_argument("--confirm-sims", type=int, default=None, help="fresh replicates for the choice")
    s.add_argument("--seed", type=int, default=None)
    s.add_argument("--n-jobs", type=int, default=1)
    s.add_argument("--methods", action="store_true", help="also print the methods paragraph")
    s.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the ranking and the confirmed numbers as JSON ('-' = stdout)")
    s.set_defaults(func=run_search)


def _search_params(args: argparse.Namespace) -> Any:
    from .. import presets

    base = (presets.high_variance if args.preset == "high-variance" else presets.low_variance)(0.0)
    if args.outcome == "gaussian":
        return base
    if args.outcome == "likert":
        from ..outcomes import LikertParams
        return LikertParams.from_preset(base, levels=args.levels)
    from ..outcomes import HeadToHeadParams
    return HeadToHeadParams.from_share(0.5, sd_worker=args.sd_worker, sd_item=args.sd_item,
                                       p_draw=args.p_draw)


def run_search(args: argparse.Namespace) -> int:
    from ..sequential import cheapest_design

    result = cheapest_design(
        _search_params(args), effect=args.effect, workers=args.workers, items=args.items,
        power=args.power, alpha=args.alpha, looks=args.looks, spending=args.spending,
        futility=args.futility, weight_null=args.weight_null, shortlist=args.shortlist,
        analysis=args.analysis, calibrate=args.calibrate, n_sims=args.n_sims,
        confirm_sims=args.confirm_sims,
        rng=args.seed, n_jobs=args.n_jobs, progress=False)
    print(result.summary())
    if args.methods:
        print("\n" + result.methods())
    if args.json is not None:
        write_json(args, {"ranking": result.to_frame().to_dict(orient="records"),
                          "confirmed": result.confirmed().to_dict(orient="records")})
    return 0


def _design(args: argparse.Namespace) -> Any:
    from ..sequential import group_sequential

    return group_sequential(args.looks, information=args.information, alpha=args.alpha,
                            beta=args.beta, sided=args.sided, spending=args.spending,
                            gamma=args.gamma, futility=args.futility,
                            futility_gamma=args.futility_gamma)


def run_boundaries(args: argparse.Namespace) -> int:
    design = _design(args)
    print(design.summary())
    if args.json is not None:
        write_json(args, {"looks": design.to_frame().to_dict(orient="records"),
                          "drift": design.drift, "inflation_factor": design.inflation_factor,
                          "expected_cost_h0": design.expected_cost(0.0),
                          "expected_cost_h1": design.expected_cost(1.0)})
    return 0


def _judgements(args: argparse.Namespace, frame: Any) -> Any:
    """Judgements so far -> one pair's ``worker, item, win, pos, weight`` rows (pair fixed by the file)."""
    from ..pilot.judgements import judgement_frame

    cols = dict(a=args.first, b=args.second, choice=args.choice, worker=args.worker,
                item=args.item)
    pair = None if args.pair is None else tuple(s.strip() for s in args.pair.split(","))
    _, pair = judgement_frame(frame, pair=pair, **cols)
    print(f"judgements of {pair[1]} against {pair[0]}: the estimate is the log-odds that "
          f"{pair[1]} is preferred (ties weigh 0); choose the pair with --pair A,B")
    return lambda part: judgement_frame(part, pair=pair, **cols)[0]


def _batch_order(frame: Any, column: str, name: str) -> Any:
    """The batch of every row as a number that sorts in collection order, or an InputError.

    Numbers sort as numbers and ISO dates as dates; other labels are refused
    rather than sorted as text ('batch 10' would come before 'batch 2').
    """
    import numpy as np
    import pandas as pd

    from ..errors import InputError
    from ..ratings.files import rows_at

    if column not in frame.columns:
        raise InputError(f"batch={column!r} is not a column of {name}; columns are "
                         f"{list(map(str, frame.columns))}.")
    values = frame[column]
    missing = np.flatnonzero(values.isna().to_numpy())
    if missing.size:
        raise InputError(f"batch={column!r} is empty at {rows_at(frame, missing)}: every rating "
                         "needs the batch it was collected in. Fill in or remove those rows.")
    number = pd.to_numeric(values, errors="coerce")
    if number.notna().all():
        return number.to_numpy(dtype=float)
    when = pd.to_datetime(values.astype(str), format="ISO8601", errors="coerce")
    if when.notna().all():
        return when.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    labels = sorted(map(str, values.unique()))
    shown = ", ".join(map(repr, labels[:4])) + (", ..." if len(labels) > 4 else "")
    raise InputError(f"batch={column!r} holds labels ({shown}) whose "
                     "order cannot be read from them (as text 'batch 10' sorts before "
                     "'batch 2'): number the batches 1, 2, 3, ... in the order they were "
                     "collected (or give ISO dates, 2024-05-31).")


def run_monitor(args: argparse.Namespace) -> int:
    import numpy as np

    from ..ratings.files import read_table  # any CSV/TSV/JSON-lines/Parquet table
    from ..sequential import Monitor
    from ..sequential.monitor import replay_note

    frame = read_table(args.ratings, "ratings", options=False)
    order = _batch_order(frame, args.batch, args.ratings)
    rows = _judgements(args, frame) if args.outcome == "preference" else (lambda part: part)
    monitor = Monitor(_design(args), formula=args.formula, term=args.term, outcome=args.outcome,
                      analysis=args.analysis, levels=args.levels, link=args.link,
                      max_items=args.max_items, max_information=args.max_information,
                      item="item" if args.outcome == "preference" else args.item,
                      contrasts={args.sum_coding: "sum"} if args.sum_coding else None,
                      alternative=args.alternative)
    for batch in np.unique(order):
        look = monitor.update(rows(frame[order <= batch]))
        print(look.summary())
        if look.stop:
            break
    note = replay_note(monitor, frame, order, args.item)
    if note:
        print(f"note: {note}")
    if args.json is not None:
        write_json(args, monitor.to_frame().to_dict(orient="records"))
    return 0
