"""``nlpower bleu power | mde | grid | estimate``: a thin edge over :mod:`nlpower.bleu`.

Argument parsing, one library call, printing and writing what it returns.
No statistics live here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._choices import BleuMethod, BleuPreset, allowed
from .output import save_figure, write_csv, write_json


def _params(p: argparse.ArgumentParser, *, lists: bool = False) -> None:
    kind: Any = _floats(float) if lists else float
    more = "; a comma-separated list makes an axis" if lists else ""
    p.add_argument("--preset", choices=allowed(BleuPreset), default="average",
                   help="Table 3 row or their average, for P0 and b0 (default: average)")
    p.add_argument("--p0", type=kind, default=None,
                   help=f"share of zero swap effects (overrides --preset{more})")
    p.add_argument("--b0", type=kind, default=None,
                   help=f"Laplace scale times n (overrides --preset{more})")
    p.add_argument("--n-sims", type=int, default=1000, metavar="N", help="replicates (default: 1000)")
    p.add_argument("--n-resamples", type=int, default=1000, metavar="R",
                   help="swap sets per randomization test (default: 1000)")
    p.add_argument("--alpha", type=float, default=0.05, help="two-sided level (default: 0.05)")
    p.add_argument("--method", choices=allowed(BleuMethod), default="randomization",
                   help="randomization (Monte Carlo, the paper's) or normal (its normal limit)")
    p.add_argument("--seed", type=int, default=None, help="root seed (default: fresh entropy)")
    if not lists:
        p.add_argument("--json", type=Path, default=None, metavar="OUT",
                       help="also write the result as JSON ('-' = stdout)")


def register(subparsers: Any) -> None:
    """Add ``bleu`` with its ``power``, ``mde``, ``grid`` and ``estimate`` subcommands."""
    top = subparsers.add_parser(
        "bleu", help="BLEU: randomization-test power and P0/b0 from system outputs (Card et al. 2020, §4)",
        description="Power of the paired randomization test for BLEU under the Delta-Laplace "
                    "process of per-sentence swap effects, and its parameters from real outputs.")
    sub = top.add_subparsers(dest="bleu_command", required=True, metavar="{power,mde,grid,estimate}")

    p = sub.add_parser("power", help="power to detect a BLEU difference on n sentences")
    p.add_argument("--n", type=int, required=True, help="test-set size (sentences)")
    p.add_argument("--delta", type=float, required=True, help="true BLEU difference (BLEU points)")
    _params(p)
    p.set_defaults(func=run_power)

    m = sub.add_parser("mde", help="smallest BLEU difference detected with the target power")
    m.add_argument("--n", type=int, required=True, help="test-set size (sentences)")
    m.add_argument("--target-power", type=float, default=0.8, help="target power (default: 0.8)")
    _params(m)
    m.set_defaults(func=run_mde)

    g = sub.add_parser("grid", help="power over n x dB (x P0 x b0), like Figures 4 and 17")
    g.add_argument("--n", type=_floats(int), default=[500, 1000, 2000, 3000, 5000],
                   help="test-set sizes (default: 500,1000,2000,3000,5000)")
    g.add_argument("--delta", type=_floats(float), default=[0.25, 0.5, 1.0, 1.5, 2.0, 3.0],
                   help="BLEU differences (default: 0.25,0.5,1,1.5,2,3)")
    _params(g, lists=True)
    g.add_argument("--n-jobs", type=int, default=1, metavar="N", help="parallel jobs (-1: all cores)")
    g.add_argument("--checkpoint", type=Path, default=None, metavar="FILE",
                   help="resume from / append finished cells to this file")
    g.add_argument("--out", type=Path, default=None, metavar="CSV", help="write the grid as CSV")
    g.add_argument("--plot", type=Path, default=None, metavar="PNG",
                   help="draw Figure 4 (one panel) or Figure 17 (a panel per P0 or b0)")
    g.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the grid as JSON records ('-' = stdout)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.set_defaults(func=run_grid)

    e = sub.add_parser("estimate", help="P0, b0 and the paired randomization test from two systems' outputs")
    e.add_argument("hyps_a", type=Path, help="system A outputs, one sentence per line")
    e.add_argument("hyps_b", type=Path, help="system B outputs, aligned with A")
    e.add_argument("--refs", type=Path, nargs="+", required=True, metavar="REF",
                   help="reference file(s), aligned with the outputs")
    e.add_argument("--tokenize", default="13a", help="sacrebleu tokenizer (default: 13a)")
    e.add_argument("--lowercase", action="store_true", help="lowercase before scoring")
    e.add_argument("--n-resamples", type=int, default=10000, metavar="R",
                   help="swap sets for the randomization test (default: 10000, as sacrebleu)")
    e.add_argument("--seed", type=int, default=12345, help="seed of the swap sets (default: sacrebleu's 12345)")
    e.add_argument("--effects", type=Path, default=None, metavar="CSV",
                   help="write the per-sentence swap effects as CSV")
    e.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the result as JSON ('-' = stdout)")
    e.set_defaults(func=run_estimate)


def _floats(kind: Any) -> Any:
    def parse(text: str) -> list[Any]:
        try:
            return [kind(p) for p in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of numbers, e.g. 500,2000; got {text!r}") from None

    return parse


def _p0_b0(args: argparse.Namespace) -> tuple[float, float]:
    from ..bleu import preset

    base = preset(args.preset)
    return (base.p0 if args.p0 is None else args.p0, base.b0 if args.b0 is None else args.b0)


def run_power(args: argparse.Namespace) -> int:
    from ..bleu import power

    p0, b0 = _p0_b0(args)
    result = power(args.n, args.delta, p0, b0, n_sims=args.n_sims, n_resamples=args.n_resamples,
                   alpha=args.alpha, method=args.method, rng=args.seed)
    print(result.summary())
    write_json(args, result.to_record())
    return 0


def run_mde(args: argparse.Namespace) -> int:
    from ..bleu import mde

    p0, b0 = _p0_b0(args)
    result = mde(args.n, p0, b0, target_power=args.target_power, alpha=args.alpha, n_sims=args.n_sims,
                 n_resamples=args.n_resamples, method=args.method, rng=args.seed)
    print(result.summary())
    write_json(args, result.to_record())
    return 0


def run_grid(args: argparse.Namespace) -> int:
    from ..bleu import figure4, figure17, power_grid, preset

    base = preset(args.preset)
    p0 = [base.p0] if args.p0 is None else args.p0
    b0 = [base.b0] if args.b0 is None else args.b0
    grid = power_grid(args.n, args.delta, p0 if len(p0) > 1 else p0[0], b0 if len(b0) > 1 else b0[0],
                      n_sims=args.n_sims, n_resamples=args.n_resamples, alpha=args.alpha,
                      method=args.method, rng=args.seed, n_jobs=args.n_jobs,
                      checkpoint=args.checkpoint, progress=not args.quiet)
    print(grid.summary())
    if args.out is not None:
        write_csv(args, grid.to_frame())
    if args.plot is not None:
        by = "p0" if len(p0) > 1 else "b0" if len(b0) > 1 else None
        fig = figure4(grid) if by is None else figure17(grid, by=by)
        save_figure(fig, args.plot, dpi=120)
    write_json(args, grid.to_frame().to_dict(orient="records"))
    return 0


def run_estimate(args: argparse.Namespace) -> int:
    from ..bleu import estimate

    refs: Any = args.refs[0] if len(args.refs) == 1 else list(args.refs)
    result = estimate(args.hyps_a, args.hyps_b, refs, tokenize=args.tokenize,
                      lowercase=args.lowercase, n_resamples=args.n_resamples, rng=args.seed)
    print(result.summary())
    if args.effects is not None:
        write_csv(args, result.to_frame(), "effects")
    write_json(args, result.to_record())
    return 0
