"""``nlpower accuracy power | mde | estimate``: a thin edge over :mod:`nlpower.accuracy`.

Parse arguments, call the library once, print its summary (and write
``--json``).  No statistics live here.
"""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path
from typing import Any

from .._choices import (
    AccuracyMethod,
    AccuracyPlanTest,
    AgreementPrior,
    LachenbruchBound,
    McNemarTest,
    allowed,
)
from .._inputs import read_text
from ..errors import InputError
from .output import write_json


def _agreement(text: str) -> float | str:
    """A number in [0, 1] or a prior name ('glue', 'squad')."""
    if text in allowed(AgreementPrior):
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number in [0, 1] or one of {', '.join(allowed(AgreementPrior))}; "
            f"got {text!r}") from None


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default: 0.05)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="also write the result as JSON ('-' = stdout)")


def register(subparsers: Any) -> None:
    """Add ``accuracy`` with its ``power``, ``mde`` and ``estimate`` subcommands."""
    acc = subparsers.add_parser(
        "accuracy", help="power for comparing two classifiers on accuracy (Card et al. 2020, sec. 3)",
        description="McNemar power, minimum detectable effects and estimates for paired "
                    "accuracy comparisons (Card et al. 2020, section 3, App. C and E).")
    sub = acc.add_subparsers(dest="accuracy_command", required=True, metavar="{power,mde,estimate}")

    p = sub.add_parser("power", help="power, Type-M, Type-S of McNemar's test (App. C)")
    p.add_argument("--n", type=int, required=True, help="test-set size (paired items)")
    p.add_argument("--delta", type=float, required=True, help="expected accuracy gain, e.g. 0.02")
    p.add_argument("--agreement", type=_agreement, default=None,
                   help="agreement rate Pa, or a prior: glue, squad (needs --baseline)")
    p.add_argument("--baseline", type=float, default=None, help="accuracy of the old model")
    p.add_argument("--bounds", action="store_true",
                   help="no agreement: power at the minimal and maximal agreement the two "
                        "accuracies allow (needs --baseline)")
    p.add_argument("--test", choices=allowed(AccuracyPlanTest), default="exact",
                   help="McNemar variant (default: exact, statsmodels' default, the paper's), or a "
                        "closed form: mcnemar-normal, two-proportion, lachenbruch (with --bound)")
    p.add_argument("--bound", choices=allowed(LachenbruchBound), default=None,
                   help="Lachenbruch (1992) bound (--test lachenbruch)")
    p.add_argument("--method", choices=allowed(AccuracyMethod), default="exact",
                   help="exact enumeration (default) or the paper's simulation")
    p.add_argument("--n-sims", type=int, default=10_000, help="simulations (--method simulate)")
    p.add_argument("--seed", type=int, default=None, help="root seed (--method simulate)")
    _common(p)
    p.set_defaults(func=run_power)

    m = sub.add_parser("mde", help="minimum detectable accuracy gain (App. E, Table 9)")
    m.add_argument("--n", type=int, default=None, help="test-set size (per group for two-proportion)")
    m.add_argument("--baseline", type=float, default=None, help="accuracy of the current model")
    m.add_argument("--agreement", type=_agreement, default=None,
                   help="agreement rate, or a prior: glue (Table 5), squad (Table 6)")
    m.add_argument("--test", choices=allowed(AccuracyPlanTest), default="exact",
                   help="planning test (default: exact McNemar)")
    m.add_argument("--bound", choices=allowed(LachenbruchBound), default=None,
                   help="Lachenbruch (1992) bound (--test lachenbruch)")
    m.add_argument("--target-power", type=float, default=0.8, help="target power (default: 0.8)")
    m.add_argument("--table9", action="store_true",
                   help="recompute Card et al. (2020) Table 9 beside the printed values")
    _common(m)
    m.set_defaults(func=run_mde)

    e = sub.add_parser("estimate", help="delta, agreement and McNemar's test from predictions")
    e.add_argument("file", type=Path, help="CSV/TSV with one row per item")
    e.add_argument("--a", required=True, metavar="COL", help="column of the baseline's predictions")
    e.add_argument("--b", required=True, metavar="COL", help="column of the new model's predictions")
    e.add_argument("--labels", required=True, metavar="COL", help="column of gold labels")
    e.add_argument("--test", choices=allowed(McNemarTest), default="exact", help="McNemar variant")
    e.add_argument("--n-test", type=int, default=None, metavar="N",
                   help="also the power on a test set of N items at these estimates")
    _common(e)
    e.set_defaults(func=run_estimate)


def _write_json(args: argparse.Namespace, frame: Any) -> None:
    records = frame.to_dict(orient="records")
    write_json(args, records[0] if len(records) == 1 else records)


def run_power(args: argparse.Namespace) -> int:
    from .. import accuracy

    if args.test not in allowed(McNemarTest):
        result: Any = accuracy.closed_form_power(
            args.n, args.delta, baseline=args.baseline, agreement=args.agreement, test=args.test,
            bound=args.bound, alpha=args.alpha)
    elif args.bounds:
        if args.baseline is None or args.agreement is not None:
            raise InputError("--bounds needs --baseline and no --agreement.")
        result = accuracy.power_bounds(args.n, args.baseline, args.delta, alpha=args.alpha,
                                            test=args.test, method=args.method,
                                            n_sims=args.n_sims, rng=args.seed)
    else:
        if args.agreement is None:
            raise InputError("--agreement is required (a number, or glue / squad with "
                             "--baseline); or pass --bounds with --baseline.")
        result = accuracy.power(args.n, args.delta, args.agreement, baseline=args.baseline,
                                alpha=args.alpha, test=args.test, method=args.method,
                                n_sims=args.n_sims, rng=args.seed)
    print(result.summary())
    _write_json(args, result.to_frame())
    if args.method != "simulate" and not args.seed_given:
        args.seed = None  # nothing was drawn: no seed line to repeat
    return 0


def run_mde(args: argparse.Namespace) -> int:
    from .. import accuracy

    if args.table9:
        frame = accuracy.table9(target_power=args.target_power, alpha=args.alpha)
        print("Card et al. (2020) Table 9, recomputed (percentage points; *_printed: the paper)")
        print(frame.round(3).to_string(index=False))
        _write_json(args, frame)
        return 0
    if args.n is None:
        raise InputError("--n is required (or pass --table9).")
    result = accuracy.mde(args.n, args.baseline, agreement=args.agreement, test=args.test,
                          target_power=args.target_power, bound=args.bound, alpha=args.alpha)
    print(result.summary())
    _write_json(args, result.to_frame())
    return 0


def run_estimate(args: argparse.Namespace) -> int:
    import pandas as pd

    from .. import accuracy

    text = read_text(args.file, "file")
    try:
        data = pd.read_csv(io.StringIO(text), sep=None, engine="python", skip_blank_lines=False)
    except (ValueError, csv.Error, pd.errors.ParserError) as exc:
        raise InputError(f"file {str(args.file)!r} cannot be read as a CSV/TSV table ({exc}). "
                         "Give one row per item with a header line.") from None
    data = data.loc[~data.isna().all(axis=1)]    # blank lines; the index still counts lines
    for flag, col in (("--a", args.a), ("--b", args.b), ("--labels", args.labels)):
        missing = data.index[data[col].isna()] if col in data else []
        if len(missing):
            lines = ", ".join(str(i + 2) for i in missing[:5]) + (", ..." if len(missing) > 5
                                                                  else "")
            raise InputError(f"{args.file}: column {col!r} ({flag}) is empty on line(s) {lines} "
                             "(the header is line 1); drop those items, or fill in their "
                             "prediction, first.")
    est = accuracy.estimate(args.a, args.b, args.labels, data=data, test=args.test)
    print(est.summary())
    frame = est.to_frame()
    if args.n_test is not None:
        planned = accuracy.plan_from_dev(est, args.n_test, alpha=args.alpha)
        print(planned.summary())
        frame = frame.assign(n_test=args.n_test, power=planned.power, type_m=planned.type_m,
                             type_s=planned.type_s)
    _write_json(args, frame)
    return 0
