"""``nlpower fit``: read a rating file, print the design report and Tables 13-15.

A thin edge over :func:`nlpower.ratings.read_ratings` and
:func:`nlpower.ratings.fit_ratings`; no statistics live here.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

from .._choices import Coding, Duplicates, EngineName, GlmerFamily, allowed
from ..errors import InputError
from . import judge_args
from .messages import flag_names, speak_cli
from .output import write_json
from .ratings_args import add_scale_argument, separator


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "fit",
        help="fit Card et al.'s mixed model to a rating file and print Tables 13-15",
        description=(
            "Read a rating file (one row per rating: worker, item, system, rating), print the "
            "design report and fit rating ~ system + (system || worker) + (system || item) by "
            "maximum likelihood (Card et al. 2020, App. H.3; sum contrasts, the baseline gets "
            "-1), or a simpler formula given with --model: to the ratings rescaled to [0, 1] "
            "(--family gaussian, the paper's) or to the integer scores as ordered categories "
            "(--family ordinal, with --link)."
        ),
    )
    p.add_argument("file", help="CSV, TSV, JSON, JSON Lines or Parquet file (.gz ok for text)")
    p.add_argument("--worker", default="worker", metavar="COL", help="worker id column (default: worker)")
    p.add_argument("--item", default="item", metavar="COL", help="item id column (default: item)")
    p.add_argument("--system", default="system", metavar="COL", help="system column (default: system)")
    p.add_argument("--rating", default="rating", metavar="COL", help="rating column (default: rating)")
    add_scale_argument(p)
    p.add_argument("--baseline", default=None, metavar="NAME",
                   help="baseline system (default: the first label in sorted order)")
    p.add_argument("--coding", choices=allowed(Coding), default="sum",
                   help="contrast for system (default: sum, the paper's)")
    p.add_argument("--duplicates", choices=allowed(Duplicates), default="error",
                   help="repeated (worker, item, system) ratings: error (default), keep or mean")
    p.add_argument("--engine", choices=allowed(EngineName), default="native",
                   help="mixed-model engine: native (default) or lme4 (R through rpy2, optional)")
    p.add_argument("--model", default="auto", metavar="auto|paper|FORMULA",
                   help="auto (default: the paper's model, identified per-system variances for "
                        "nested factors), paper (always the paper's formula), or an lme4 formula "
                        "over rating, system, worker, item for a simpler model, e.g. "
                        "'rating ~ system + (1|worker) + (1|item)', or for many systems "
                        "'rating ~ system + (1|worker) + (1|item) + (1|item:system)'")
    p.add_argument("--family", choices=("gaussian", "ordinal", *allowed(GlmerFamily)),
                   default="gaussian",
                   help="gaussian (default: ratings rescaled to [0, 1], the paper's model), "
                        "ordinal (cumulative link mixed model of the integer ratings, --link: thresholds "
                        "and latent-scale SDs), binomial (0/1 outcomes, e.g. wins; logistic "
                        "GLMM by glmer, Card et al. App. H.4), poisson (counts; log link) or "
                        "negative_binomial (overdispersed counts, e.g. MQM error counts; log "
                        "link, lme4's glmer.nb). For these three the model is --model's formula, or "
                        "'rating ~ system + (1|worker) + (1|item)' with your column names, "
                        "and --scale is not used")
    p.add_argument("--link", choices=("logit", "probit", "cloglog"), default=None,
                   help="link of --family ordinal (default logit) or binomial (default logit; "
                        "also probit, cloglog)")
    p.add_argument("--sep", default=None, type=separator,
                   help="delimiter of a text file, e.g. ';' or '\\t' for tab (default: by extension)")
    p.add_argument("--encoding", default=None, metavar="NAME",
                   help="text encoding of the file, e.g. latin-1 or utf-16 (default: utf-8)")
    p.add_argument("--json", default=None, metavar="OUT", dest="json_out",
                   help="also write the report, tables and identified quantities as JSON ('-' = stdout)")
    p.add_argument("--full", action="store_true",
                   help="print the full summary (identified quantities and lme4-style output)")
    judge_args.add_fit_arguments(p)
    p.set_defaults(func=run_fit, flags=flag_names(p), parser=p)


def run_fit(args: argparse.Namespace) -> int:
    if args.link is not None and args.family not in ("ordinal", "binomial"):
        args.parser.error(f"--link is for --family ordinal or binomial; --family {args.family} "
                          "has none to choose: drop --link")
    if args.judge:
        return judge_args.run_judge(args)
    if args.family in allowed(GlmerFamily):
        return _run_glmer(args)
    from ..ratings import fit_ratings, read_ratings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ratings = read_ratings(
            args.file, worker=args.worker, item=args.item, system=args.system,
            rating=args.rating, scale=tuple(args.scale) if args.scale else None,
            duplicates=args.duplicates, sep=args.sep, encoding=args.encoding,
        )
        _check_size(ratings, args)
        fit = fit_ratings(ratings, baseline=args.baseline, coding=args.coding, engine=args.engine,
                          model=args.model, family=args.family,
                          **({"link": args.link} if args.link else {}))
        text = fit.summary() if (args.full or args.family == "ordinal") else _brief(fit)
    for w in caught:  # library warnings name arguments (scale=); the user typed flags
        print(f"warning: {speak_cli(str(w.message), args.flags)}", file=sys.stderr)
    print(speak_cli(text, args.flags))
    if args.agreement:
        print("\n" + judge_args.agreement_text(fit))
    if args.json_out:
        record = fit.to_record() if hasattr(fit, "to_record") else fit.to_dict()
        write_json(args, record, path=args.json_out)
    return 0


#: Above this many systems the default model's K x K block per worker and per item is refused.
MAX_BLOCK_SYSTEMS = 8


def _check_size(ratings: Any, args: argparse.Namespace) -> None:
    """Refuse the default model when its per-system blocks make the fit run for hours.

    The paper's ``(system || g)`` has ``1 + K (K + 1) / 2`` variance parameters per
    grouping factor; with 20 systems that is 211 each.  ``--model paper`` fits it anyway.
    """
    from ..ratings.model import choose_model

    k = len(ratings.systems)
    if args.model != "auto" or args.family != "gaussian" or k <= MAX_BLOCK_SYSTEMS:
        return
    choice = choose_model(ratings, baseline=args.baseline, coding=args.coding, model="auto")
    blocks = [g for g in ("worker", "item") if g not in choice.reduced]
    if not blocks:
        return
    n_par = len(blocks) * (1 + k * (k + 1) // 2)
    raise InputError(
        f"the paper's model for {k} systems has a {k} x {k} covariance block per "
        f"{' and per '.join(blocks)} ({n_par} variance parameters): fitting it to "
        f"{ratings.report.n_ratings} ratings takes hours and gigabytes. To plan one comparison, "
        "run nlpower plan (or power, mde, grid) with --ratings FILE --contrast A,B, which fits "
        f"only those two systems; to fit all {k} systems, pass a model with one SD per term, "
        "e.g. --model 'rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)' (each "
        "system's output of an item its own level); --model paper fits the full model anyway.")


def _brief(fit: Any) -> str:
    lines = [fit.report.summary(), "", f"Model: {fit.formula} (ML)"]
    lines += [f"  {note}" for note in fit.model_notes()]
    lines += [fit.legend(), ""]
    for title, table in fit.tables().items():
        lines.append(f"{title}:")
        lines.append(str(table))
        lines.append("")
    notes = fit.identifiability_notes() + [n for n in [fit.singular_note()] if n]
    lines += [f"note: {note}" for note in notes]
    return "\n".join(lines)


def _run_glmer(args: argparse.Namespace) -> int:
    """``--family binomial|poisson|negative_binomial``: the file as read, ``nlpower.glmer``,
    its summary."""
    from ..glmm import glmer
    from ..ratings.io import check_encoding, load_source

    data, _ = load_source(args.file, args.sep, check_encoding(args.encoding))
    formula = args.model if "~" in args.model else (
        f"{args.rating} ~ {args.system} + (1 | {args.worker}) + (1 | {args.item})")
    data = data.copy()
    for col in (args.worker, args.item):
        if col in data.columns:
            data[col] = data[col].astype(str)
    contrasts = None
    legend: list[str] = []
    if args.system in data.columns:
        data[args.system] = _system_factor(data[args.system], args.baseline, args.coding)
        contrasts = {args.system: args.coding}
        legend = _level_legend(list(data[args.system].cat.categories), args.system, args.coding)
    report = _design_text(data, args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = glmer(formula, data, args.family, link=args.link, engine=args.engine,
                    contrasts=contrasts)
    for w in caught:
        print(f"warning: {speak_cli(str(w.message), args.flags)}", file=sys.stderr)
    if report:
        print(report)
        print()
    if legend:
        print("\n".join(legend))
        print()
    print(fit.summary())
    if args.json_out:
        record = {"formula": fit.formula, "family": fit.family, "link": fit.link,
                  "engine": fit.engine, "nobs": fit.nobs, "loglik": fit.loglik, "aic": fit.aic,
                  "bic": fit.bic, "converged": fit.converged, "singular": fit.singular,
                  "dispersion": fit.dispersion,
                  "coefficients": fit.to_frame().to_dict(orient="records"),
                  "systems": (list(data[args.system].cat.categories) if legend else None),
                  "coding": args.coding if legend else None}
        write_json(args, record, path=args.json_out)
    return 0


def _system_factor(col: Any, baseline: str | None, coding: str) -> Any:
    """The system column as a factor in R's level order (labels sorted, numbers numerically),
    as ``glmer`` and R's ``factor()`` order them: under sum/half coding the last level gets
    -1 (``contr.sum``), under treatment coding the first is the reference.  ``baseline``
    moves one system to that place."""
    import pandas as pd

    from ..errors import InputError
    from ..ratings.io import _sort_labels
    labels = [str(v) for v in _sort_labels(col.astype(str))]
    if baseline is None:
        return pd.Categorical(col.astype(str), categories=labels)
    if baseline not in labels:
        raise InputError(f"baseline={baseline!r} is not a system in the file; the systems are "
                         f"{', '.join(map(repr, labels))}.")
    others = [v for v in labels if v != baseline]
    order = [baseline, *others] if coding == "treatment" else [*others, baseline]
    return pd.Categorical(col.astype(str), categories=order)


def _level_legend(levels: list[str], system: str, coding: str) -> list[str]:
    """How the fixed-effect columns map to systems (the Gaussian fit's legend, GLMM wording);
    the columns are named as the fit names them (``system[A]`` under sum coding)."""
    from ..lmm.names import level_name
    line = (f"--coding {coding!r}; levels in fitted order: "
            + ", ".join(f"{j + 1}={s!r}" for j, s in enumerate(levels)))
    if coding == "treatment":
        rest = [f"  {system}{s} = {s} - {levels[0]!r} on the link scale" for s in levels[1:]]
        return [line + f" (reference {levels[0]!r})", *rest]
    times = "2 x " if coding == "half" else ""
    names = [level_name(system, s) for s in levels[:-1]]
    rest = [f"  {n} = {times}(level {s!r} - mean of the levels), on the link scale "
            f"(lme4: {system}{j + 1})" for j, (n, s) in enumerate(zip(names, levels, strict=False))]
    last = f"-({' + '.join(names)})" if len(names) <= 3 else f"-({names[0]} + ... + {names[-1]})"
    return [line + f" ({levels[-1]!r} gets -1: {times}{last})", *rest]


def _design_text(data: Any, args: argparse.Namespace) -> str:
    """The design report of the rating file (workers x items x systems), when it has those."""
    from ..ratings.report import design_report
    cols = {args.worker: "worker", args.item: "item", args.system: "system"}
    if not all(c in data.columns for c in cols):
        return ""
    frame = data[list(cols)].rename(columns=cols)
    return str(design_report(frame, source=str(args.file)).summary())
