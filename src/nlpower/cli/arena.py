"""``nlpower arena fit | power``: Bradley-Terry leaderboards from paired votes.

A thin edge over :func:`nlpower.arena.bradley_terry`, :func:`nlpower.arena.arena_power`,
:func:`nlpower.arena.votes_needed` and :func:`nlpower.arena.plot_ranking`;
no statistics live here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InputError
from .output import save_figure, write_json


def _names(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _ints(text: str) -> list[int]:
    try:
        return [int(float(p)) for p in _names(text)]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated vote totals like 1000,4000; got {text!r}") from exc


def _floats(text: str) -> list[float]:
    try:
        return [float(p) for p in _names(text)]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers like 0,0.1,0.2; got {text!r}") from exc


def register(subparsers: Any) -> None:
    """Add the ``arena`` subcommand and its ``fit`` and ``power`` actions."""
    p = subparsers.add_parser(
        "arena", help="Bradley-Terry leaderboards of K systems from paired votes, with ties",
        description="Fit Bradley-Terry scores of K systems from a file of votes (ties by Davidson "
                    "or Rao-Kupper), or simulate how many votes a leaderboard needs.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    f = sub.add_parser("fit", help="scores, intervals and ranks from a file of votes",
                       description="Scores of K systems from a CSV/TSV/JSON-lines/Parquet file, one "
                                   "row per vote: system A, system B, outcome (a/b/tie, model_a/"
                                   "model_b/tie, the winner's name, or 1/0/0.5).")
    f.add_argument("votes", type=Path, help="the votes file")
    f.add_argument("--a", default="model_a", help="column of system A (default: model_a)")
    f.add_argument("--b", default="model_b", help="column of system B (default: model_b)")
    f.add_argument("--outcome", default="winner", help="column of the outcome (default: winner)")
    f.add_argument("--count", default=None, help="column with a number of identical votes per row")
    f.add_argument("--worker", default=None, help="column naming the voter")
    f.add_argument("--prompt", default=None, help="column naming the prompt")
    f.add_argument("--ties", choices=("davidson", "rao-kupper", "half", "drop"), default="davidson",
                   help="tie model (default: davidson)")
    f.add_argument("--position", action="store_true", help="fit an advantage of the first-listed system")
    f.add_argument("--reference", default=None, help="system fixed at 0 (default: scores sum to 0)")
    f.add_argument("--cluster", choices=("worker", "prompt"), default=None,
                   help="cluster the sandwich covariance by worker or prompt")
    f.add_argument("--random", choices=("worker", "prompt", "both"), default=None,
                   help="random intercepts of workers/prompts (binomial GLMM; ties drop or half)")
    f.add_argument("--interval", choices=("sandwich", "model", "bootstrap"), default="sandwich",
                   help="interval shown (default: sandwich)")
    f.add_argument("--n-boot", type=int, default=0, help="bootstrap resamples (default: 0)")
    f.add_argument("--scale", choices=("logit", "elo"), default="logit", help="score units")
    f.add_argument("--seed", type=int, default=None, help="seed of the bootstrap")
    f.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the score table as JSON ('-' = stdout)")
    f.set_defaults(func=run_fit)

    w = sub.add_parser("power", help="P(correct leaderboard) and pair power against votes",
                       description="Simulate leaderboards of K systems with given true scores: the "
                                   "probability that the fitted best is the true best (top-1), of "
                                   "the right top-k order and of the whole ranking, and the power "
                                   "to detect one pair's difference, for each vote total and "
                                   "allocation.")
    w.add_argument("--scores", type=_floats, required=True, metavar="S1,S2,...",
                   help="true scores of the systems (named s1, s2, ...)")
    w.add_argument("--scale", choices=("logit", "elo"), default="logit", help="units of --scores")
    w.add_argument("--votes", type=_ints, required=True, metavar="N1,N2,...", help="vote totals")
    w.add_argument("--allocation", type=_names, default=["uniform"], metavar="A[,B]",
                   help="uniform and/or adaptive (default: uniform)")
    w.add_argument("--tie-rate", type=float, default=0.0,
                   help="share of ties between equal systems (default: 0, no ties)")
    w.add_argument("--top-k", type=int, default=None,
                   help="k of the top-k order (default: 3, or the number of systems if fewer)")
    w.add_argument("--compare", type=_names, default=None, metavar="SA,SB",
                   help="two systems whose difference is tested, e.g. s10,s9")
    w.add_argument("--alpha", type=float, default=0.05, help="level of the pair test")
    w.add_argument("--target", type=float, default=0.8,
                   help="report the votes needed for this probability (default: 0.8)")
    w.add_argument("--n-sims", type=int, default=500, help="replicates per cell (default: 500)")
    w.add_argument("--n-jobs", type=int, default=1, help="parallel cells (default: 1)")
    w.add_argument("--seed", type=int, default=None, help="seed (default: fresh entropy, recorded)")
    w.add_argument("--plot", type=Path, default=None, metavar="FIG",
                   help="save P(correct top-1) against votes to this image")
    w.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the grid as JSON ('-' = stdout)")
    w.set_defaults(func=run_power)


def run_fit(args: argparse.Namespace) -> int:
    from ..arena import bradley_terry

    random = ["worker", "prompt"] if args.random == "both" else args.random
    fit = bradley_terry(args.votes, a=args.a, b=args.b, outcome=args.outcome, count=args.count,
                        worker=args.worker, prompt=args.prompt, ties=args.ties, position=args.position,
                        reference=args.reference, cluster=args.cluster, random=random,
                        n_boot=args.n_boot, rng=args.seed)
    print(fit.summary(args.interval, scale=args.scale))
    if not args.n_boot and not args.seed_given:
        args.seed = None  # nothing was drawn: no seed line to repeat
    if args.json is not None:
        frame = fit.to_frame(args.interval, scale=args.scale)
        write_json(args, {"scores": frame.to_dict(orient="records"), "model": fit.model,
                          "ties": fit.ties, "tie": fit.tie, "position": fit.position,
                          "loglik": fit.loglik, "n_votes": fit.n_votes})
    return 0


def run_power(args: argparse.Namespace) -> int:
    from ..arena import arena_power, plot_ranking, votes_needed

    compare = args.compare
    if compare is not None and len(compare) != 2:
        raise InputError(f"compare must name two systems like s10,s9; got {','.join(compare)!r}.")
    grid = arena_power(args.scores, args.votes, allocation=args.allocation, tie_rate=args.tie_rate,
                       top_k=args.top_k, compare=tuple(compare) if compare else None,
                       scale=args.scale, alpha=args.alpha, n_sims=args.n_sims, rng=args.seed,
                       n_jobs=args.n_jobs, progress=False)
    frame = grid.to_frame()
    cols = ["votes", "allocation", "p_top1", "p_top1_low", "p_top1_high", "p_topk", "p_ranking",
            "max_halfwidth"] + (["pair_power"] if compare else [])
    print(frame[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    need = votes_needed(grid, target=args.target)
    print("votes for P(correct top-1) >= " f"{args.target}: "
          + ", ".join(f"{k} {v:.0f}" if v == v else f"{k} not reached (add larger --votes)"
                      for k, v in need.items()))
    if args.plot is not None:
        save_figure(plot_ranking(grid, target=args.target), args.plot)
    if args.json is not None:
        write_json(args, {"grid": frame.to_dict(orient="records"), "votes_needed": need})
    return 0
