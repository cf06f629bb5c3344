"""The rating-file options shared by ``nlpower plan`` and ``nlpower power --ratings``.

A thin edge: parse the options, then :func:`nlpower.ratings.read_ratings` and
:func:`nlpower.ratings.fit_ratings`; warnings are printed on stderr.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import TYPE_CHECKING, Any

from .._choices import Duplicates, allowed
from ..errors import InputError
from .messages import speak_cli

if TYPE_CHECKING:
    from ..ratings import Ratings


def separator(text: str) -> str:
    """``--sep``: a typed backslash-t (or 'tab') means a tab."""
    return "\t" if text in ("\\t", "tab") else text


def parse_scale(text: str) -> tuple[float, float]:
    """``LO,HI`` (as in ``--scale 1,5``) as a pair of floats."""
    parts = [p.strip() for p in text.split(",")]
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected the Likert range as LO,HI, e.g. --scale 1,5; got {text!r}") from None
    return lo, hi


class ScaleAction(argparse.Action):
    """``--scale 1,5`` or ``--scale 1 5``: the Likert range as (lo, hi)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        text = ",".join(values) if isinstance(values, list) else str(values)
        try:
            setattr(namespace, self.dest, parse_scale(text))
        except argparse.ArgumentTypeError as exc:
            parser.error(f"argument --scale: {exc}")


def add_scale_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", nargs="+", action=ScaleAction, default=None, metavar="LO,HI",
                   help="Likert range, e.g. --scale 1,5 or --scale 1 5 (default: inferred from "
                        "the data, with a warning if it looks odd)")


def add_ratings_arguments(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--ratings FILE`` and the column / scale / reading options."""
    p.add_argument("--ratings", required=required, default=None, metavar="FILE",
                   help="pilot rating file (one row per rating): CSV, TSV, JSON, JSON Lines or Parquet")
    p.add_argument("--worker", default="worker", metavar="COL", help="worker id column (default: worker)")
    p.add_argument("--item", default="item", metavar="COL", help="item id column (default: item)")
    p.add_argument("--system", default="system", metavar="COL", help="system column (default: system)")
    p.add_argument("--rating", default="rating", metavar="COL", help="rating column (default: rating)")
    add_scale_argument(p)
    p.add_argument("--duplicates", choices=allowed(Duplicates), default="error",
                   help="repeated (worker, item, system) ratings: error (default), keep or mean")
    p.add_argument("--sep", default=None, type=separator,
                   help="delimiter of a text file, e.g. ';' or '\\t' for tab (default: by "
                        "extension)")
    p.add_argument("--encoding", default=None, metavar="NAME",
                   help="text encoding of the file, e.g. latin-1 or utf-16 (default: utf-8)")
    p.add_argument("--baseline", default=None, metavar="NAME",
                   help="baseline system (default: the first label in sorted order)")
    p.add_argument("--model", default="auto", metavar="auto|paper|FORMULA",
                   help="model fitted to the pilot (as in nlpower fit; default: auto); a "
                        "model with (1|item:system) and no per-system slope is fitted to every "
                        "system, even with --contrast")


class SdAction(argparse.Action):
    """``--sd item_slope=0.1`` (repeatable): SDs the pilot does not estimate, as a dict."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        name, eq, value = str(values).partition("=")
        try:
            sd = float(value)
        except ValueError:
            sd = float("nan")
        if not eq or not name.strip() or not sd == sd:
            parser.error(f"argument --sd: expected NAME=SD, e.g. --sd item_slope=0.1; got "
                         f"{values!r}")
        got = dict(getattr(namespace, self.dest, None) or {})
        got[name.strip()] = sd
        setattr(namespace, self.dest, got)


def add_pilot_arguments(p: argparse.ArgumentParser) -> None:
    """``--contrast A[,B]`` and ``--sd NAME=SD``: the comparison planned from a pilot file."""
    p.add_argument("--contrast", default=None, metavar="A[,B]",
                   help="with more than two systems: system A (+1) against B (-1; default the "
                        "baseline); only the ratings of A and B are fitted")
    p.add_argument("--sd", action=SdAction, default=None, metavar="NAME=SD",
                   help="set a variance component the pilot does not estimate (a model without "
                        "slopes, the item slope of items nested in systems), e.g. --sd "
                        "item_slope=0.1 (+-1 scale, sum coding); repeatable")


def contrast_of(args: argparse.Namespace) -> Any:
    """``--contrast`` as the library takes it: None, one name, or a pair."""
    text = getattr(args, "contrast", None)
    if text is None:
        return None
    parts = [t.strip() for t in str(text).split(",")]
    return parts[0] if len(parts) == 1 else tuple(parts)


def read_from_args(args: argparse.Namespace, *, one_comparison: bool = False) -> Ratings:
    """Read ``--ratings FILE``; with ``--contrast``, keep the two compared systems' ratings
    (all of them when ``--model`` pools the systems: :func:`nlpower.ratings.model.pools_systems`).

    With ``one_comparison`` (``power``, ``grid``, ``mde``, ``plan``), a pilot of more than
    two systems without ``--contrast`` is refused here, before anything is fitted (the
    model of all K systems can take gigabytes and is not what one comparison needs).
    """
    from ..pilot.subset import contrast_pair, read_contrast
    from ..ratings import read_ratings
    from ..ratings.model import pools_systems

    contrast = contrast_of(args)
    fit_two = contrast is not None and not pools_systems(getattr(args, "model", "auto"))
    read_kw = dict(worker=args.worker, item=args.item, system=args.system, rating=args.rating,
                   scale=args.scale, duplicates=args.duplicates, sep=args.sep,
                   encoding=args.encoding)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if fit_two:  # repeated ratings are judged on the fitted rows only
            ratings, (a, b), (n_all, k_all) = read_contrast(args.ratings, contrast, args.baseline,
                                                            **read_kw)
        else:
            ratings = read_ratings(args.ratings, **read_kw)
    for w in caught:
        print(f"warning: {speak_cli(str(w.message), getattr(args, 'flags', {}))}", file=sys.stderr)
    if contrast is None and one_comparison and len(ratings.systems) > 2:
        raise InputError(missing_contrast(ratings.systems, args.baseline))
    if contrast is not None and len(ratings.systems) > 2 and not fit_two:
        a, b = contrast_pair(tuple(map(str, ratings.systems)), contrast, args.baseline)
        print(f"contrast {a} vs {b}: fitting all {ratings.report.n_ratings} ratings of the "
              f"{len(ratings.systems)} systems, as --model has one SD per term whatever the "
              "number of systems (exchangeable systems): every system's ratings inform them")
    elif fit_two and k_all > 2:
        print(f"contrast {a} vs {b}: fitting only the {ratings.report.n_ratings} ratings of these "
              f"two systems (of {n_all} ratings of {k_all} systems); a plan of one comparison "
              "needs no more (the other systems' rows are not checked for repeated ratings)")
        if args.baseline not in (None, a, b):
            args.baseline = None
    return ratings


def missing_contrast(systems: Any, baseline: Any = None) -> str:
    """The message for a K-system pilot given to a verb that plans one comparison."""
    labels = [str(s) for s in systems]
    base = str(baseline) if baseline in labels else labels[0]
    other = next(s for s in labels if s != base)
    shown = ", ".join(repr(s) for s in labels[:8]) + (", ..." if len(labels) > 8 else "")
    example = f"{other},{base}"
    if any(c.isspace() for c in example):
        example = f"'{example}'"
    return (f"this pilot has {len(labels)} systems ({shown}) and a power analysis plans one "
            f"comparison: name it with --contrast A,B (e.g. --contrast {example}); only those "
            "two systems' ratings are then fitted.")


def fit_from_args(args: argparse.Namespace, family: str = "gaussian") -> Any:
    """Read and fit the rating file named by ``--ratings`` (warnings to stderr); a pilot of
    more than two systems needs ``--contrast`` (refused before fitting)."""
    from ..ratings import fit_ratings

    ratings = read_from_args(args, one_comparison=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_ratings(ratings, baseline=args.baseline, model=args.model, family=family)
    for w in caught:
        print(f"warning: {speak_cli(str(w.message), getattr(args, 'flags', {}))}", file=sys.stderr)
    return fit


def add_judgement_columns(group: Any) -> None:
    """``--first``, ``--second``, ``--choice`` and ``--pair``: the columns of a file of
    head-to-head judgements (:func:`nlpower.pilot.judgements.judgement_frame`)."""
    group.add_argument("--first", default="a", metavar="COL",
                       help="column of the system shown first (default: a)")
    group.add_argument("--second", default="b", metavar="COL",
                       help="column of the system shown second (default: b)")
    group.add_argument("--choice", default="choice", metavar="COL",
                       help="column of the preference: a/b/tie, the preferred system's name, "
                            "or 1/0/0.5 (default: choice)")
    group.add_argument("--pair", default=None, metavar="A,B",
                       help="the two systems compared, baseline first; B preferred is the "
                            "effect (default: the file's two systems in sorted order)")


__all__ = ["ScaleAction", "SdAction", "add_judgement_columns", "add_pilot_arguments",
           "add_ratings_arguments",
           "add_scale_argument", "contrast_of", "fit_from_args", "missing_contrast", "parse_scale",
           "read_from_args", "separator"]
