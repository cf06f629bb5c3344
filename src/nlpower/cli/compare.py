"""``nlpower compare``: NLPStatTest's comparison of two (or more) systems' scores.

A thin edge over :func:`nlpower.paired.read_scores`, :func:`nlpower.paired.compare`,
:func:`nlpower.paired.pairwise` and the power functions; no statistics live here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._choices import Alternative, EUStat, PairedTest, PairwiseAdjust, RetroPowerMethod, allowed
from ..errors import InputError
from .messages import speak_cli
from .output import save_figure, write_json


def _columns(text: str) -> tuple[str, str]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"expected two column names like sysA,sysB; got {text!r}")
    return parts[0], parts[1]


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand."""
    p = subparsers.add_parser(
        "compare", help="compare systems' paired scores (NLPStatTest, Zhu et al. 2020)",
        description="Compare two systems' per-instance scores: evaluation units, data analysis "
                    "(skewness, Shapiro-Wilk, recommended tests), a paired test with p-value and "
                    "confidence interval, effect sizes and a report. Input: two files with one "
                    "score per line (NLPStatTest's input), or one file with two columns. With "
                    "three or more files, every pair is compared with a family-wise adjustment.")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE",
                   help="A.txt B.txt (one score per line), or one two-column file, or 3+ files")
    p.add_argument("--columns", type=_columns, default=None, metavar="A,B",
                   help="the two columns of a single headed CSV (default: the first two)")
    p.add_argument("--eu-size", type=int, default=1, metavar="M",
                   help="instances per evaluation unit (default: 1; NLPStatTest's WMT example: 15)")
    p.add_argument("--eu-stat", choices=allowed(EUStat), default="mean",
                   help="summary of an evaluation unit (default: mean)")
    p.add_argument("--shuffle", action="store_true",
                   help="shuffle the instance pairs before grouping (seeded by --seed)")
    p.add_argument("--test", choices=allowed(PairedTest), default=None,
                   help="test to run (default: the first recommended one)")
    p.add_argument("--alternative", choices=allowed(Alternative), default="two-sided",
                   help="greater: A scores higher than B (default: two-sided)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default: 0.05)")
    p.add_argument("--delta", type=float, default=0.0,
                   help="hypothesised difference A - B under H0 (default: 0)")
    p.add_argument("--n-resamples", type=int, default=10_000, metavar="B",
                   help="bootstrap / permutation resamples (default: 10000)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed for the shuffle and resampling (default: fresh entropy, recorded)")
    p.add_argument("--adjust", choices=allowed(PairwiseAdjust), default="holm",
                   help="with 3+ files: family-wise adjustment (default: holm)")
    p.add_argument("--power", choices=allowed(RetroPowerMethod), default=None,
                   help="also estimate retrospective power vs sample size by this method")
    p.add_argument("--planned-effect", dest="mean", type=float, default=None, metavar="D",
                   help="with --power normal: the difference A - B to simulate, chosen in advance "
                        "(default: the observed one, which makes the curve observed power)")
    p.add_argument("--n-sims", type=int, default=1000, metavar="N",
                   help="simulations per sample size for --power (default: 1000)")
    p.add_argument("--plot", type=Path, default=None, metavar="PNG",
                   help="histograms of A, B, A - B (2 systems) or the pairwise heatmap (3+)")
    p.add_argument("--power-plot", type=Path, default=None, metavar="PNG",
                   help="power vs sample size (needs --power)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the result table as JSON ('-' = stdout)")
    p.set_defaults(func=run_compare)


def _write_json(args: argparse.Namespace, records: list[dict[Any, Any]]) -> None:
    write_json(args, records[0] if len(records) == 1 else records)


def _save(fig: Any, path: Path, what: str = "--plot") -> None:
    save_figure(fig, path, dpi=120, what=what)


def run_compare(args: argparse.Namespace) -> int:
    from ..paired import compare, pairwise, read_scores, retrospective_power

    files = args.files
    if len(files) >= 3:
        if args.columns is not None:
            raise InputError("--columns applies to a single two-column file, not to 3+ files.")
        systems = {f.stem: read_scores(f, f).a for f in files}
        res = pairwise(systems, test=args.test, adjust=args.adjust, alternative=args.alternative,
                       alpha=args.alpha, eu_size=args.eu_size, eu_stat=args.eu_stat,
                       shuffle=args.shuffle, n_resamples=args.n_resamples, rng=args.seed)
        print(speak_cli(res.summary(), args.flags))
        if args.plot is not None:
            _save(res.plot(), args.plot)
        if args.json is not None:
            _write_json(args, res.to_frame().to_dict(orient="records"))
        return 0
    scores = read_scores(files[0], files[1] if len(files) == 2 else None, columns=args.columns)
    result = compare(scores.a, scores.b, test=args.test, alternative=args.alternative,
                     alpha=args.alpha, eu_size=args.eu_size, eu_stat=args.eu_stat,
                     shuffle=args.shuffle, n_resamples=args.n_resamples, rng=args.seed,
                     delta=args.delta, names=scores.names)
    print(speak_cli(result.summary(), args.flags))
    curve = None
    if args.power is not None:
        curve = retrospective_power(result, method=args.power, n_sims=args.n_sims, rng=args.seed,
                                    mean=args.mean)
        print()
        print(speak_cli(curve.summary(), args.flags))
    elif args.power_plot is not None or args.mean is not None:
        raise InputError(f"{'--power-plot' if args.mean is None else '--planned-effect'} needs "
                         "--power normal or --power bootstrap.")
    print()
    print("Report (what NLPStatTest says to report):")
    print(speak_cli(result.report(curve), args.flags))
    if args.plot is not None:
        _save(result.plot(), args.plot)
    if curve is not None and args.power_plot is not None:
        _save(curve.plot(), args.power_plot, "--power-plot")
    if args.json is not None:
        _write_json(args, result.to_frame().to_dict(orient="records"))
    return 0
