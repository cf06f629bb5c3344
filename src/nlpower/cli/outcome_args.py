"""``--outcome``, ``--levels``, ``--analysis`` and the preference flags (a thin edge, no statistics).

Shared by ``nlpower power``, ``nlpower grid``, ``nlpower mde`` and ``nlpower
plan``: the flags name the library's arguments (``outcome=``, ``levels=``,
``analysis=`` of :func:`nlpower.power`, :func:`nlpower.power_grid`,
:func:`nlpower.mde`, :func:`nlpower.plan`).

- ``--outcome likert --levels K`` maps the chosen Table 16 scenario to
  ``K``-point ratings (:mod:`nlpower.outcomes`) and passes ``--analysis`` on
  (``lmm`` or ``clmm``; a grid also takes ``lmm,clmm``: both on the same
  replicates).
- ``--outcome preference`` with ``--workers``/``--items`` is repeated
  head-to-head judgements (:class:`~nlpower.outcomes.HeadToHeadParams` from
  ``--p-win``, ``--p-draw``, ``--sd-worker``, ``--sd-item``), analysed by
  glmer; with ``--judges`` (``nlpower power`` only) it is one judgement per
  person, the exact power of :func:`nlpower.preference.power`.

Each kind of run reads only some of these flags (:data:`READS`); a flag it
does not read, given anyway, is a usage error naming it
(:func:`check_outcome_flags`) rather than silently ignored.
"""

from __future__ import annotations

import argparse
from typing import Any

from .output import write_json

#: ``--outcome`` choices: the keys of ``nlpower.powersim.outcome.OUTCOMES`` (a test checks).
OUTCOMES = ("gaussian", "likert", "preference")
#: ``--analysis`` choices: every analysis of every outcome (the library says which fits which).
ANALYSES = ("lmm", "clmm", "glmer")


#: Where each outcome-specific flag is read (``dest``: the runs that read it, for messages).
FOR = {
    "levels": "--outcome likert",
    "p_win": "--outcome preference",
    "p_draw": "--outcome preference",
    "sd_worker": "--outcome preference with --workers x --items",
    "sd_item": "--outcome preference with --workers x --items",
    "judges": "--outcome preference, one judgement per person",
    "ties": "--outcome preference --judges N",
}
#: The outcome-specific flags (keys of :data:`FOR`) each kind of run reads; the others are refused.
READS: dict[str, tuple[str, ...]] = {
    "gaussian": (),
    "likert": ("levels",),
    "preference": ("p_win", "p_draw", "sd_worker", "sd_item"),
    "preference --judges": ("judges", "p_win", "p_draw", "ties"),
}
#: Passed on to the library, which refuses them where they do not fit (in its own words).
LIBRARY_CHECKS = ("levels",)
#: Other flags a kind of run has no use for: preference takes its parameters (and a grid's
#: effect axis) from --p-win; one judgement per person has no worker x item design to simulate.
UNUSED: dict[str, tuple[str, ...]] = {
    "preference": ("preset", "ratings", "effect", "effects", "coding"),
    "preference --judges": ("preset", "ratings", "workers", "items", "effect", "workers_per_item",
                            "coding", "analysis", "n_sims", "test", "n_resamples", "method",
                            "engine"),
}


def _given(args: argparse.Namespace, dest: str) -> bool:
    """``dest`` is a flag of this command, set away from its default (the default: not given)."""
    if dest not in vars(args):
        return False
    return bool(getattr(args, dest) != args.parser.get_default(dest))


def _flag(args: argparse.Namespace, dest: str) -> str:
    flags = getattr(args, "flags", {})
    return str(flags[dest][0]) if dest in flags else "--" + dest.replace("_", "-")


def check_outcome_flags(args: argparse.Namespace, *, own: tuple[str, ...] = ()) -> None:
    """A usage error naming the flags this run would silently ignore (:data:`READS`,
    :data:`UNUSED`); ``own``: flags the command reads or refuses itself (``plan``: --effect)."""
    judged = args.outcome == "preference" and _given(args, "judges")
    kind = "preference --judges" if judged else args.outcome
    stray = [d for d in FOR if d not in READS[kind] and d not in LIBRARY_CHECKS
             and _given(args, d)]
    if stray:
        groups: dict[str, list[str]] = {}
        for d in stray:
            groups.setdefault(FOR[d], []).append(_flag(args, d))
        where = ", ".join(f"{', '.join(f)} (for {use})" for use, f in groups.items())
        args.parser.error(f"--outcome {args.outcome}{' --judges N' if judged else ''} does not "
                          f"read {where}: drop {'it' if len(stray) == 1 else 'them'}, or "
                          f"{'drop --judges' if judged else 'choose that outcome'}")
    unused = [_flag(args, d) for d in UNUSED.get(kind, ()) if d not in own and _given(args, d)]
    if not unused:
        return
    if judged:
        args.parser.error(
            "--outcome preference --judges N is one judgement per person (exact power: no "
            f"workers x items design, nothing simulated): drop {', '.join(unused)}, or drop "
            "--judges to simulate repeated judgements by --workers x --items")
    args.parser.error(
        "--outcome preference takes its parameters and effect from --p-win (with --p-draw, "
        f"--sd-worker, --sd-item): drop {', '.join(unused)}")


def _analyses(text: str) -> str | list[str]:
    names = [t.strip() for t in text.split(",")]
    bad = [n for n in names if n not in ANALYSES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(ANALYSES)} (a grid also takes a comma-separated list, "
            f"e.g. lmm,clmm); got {text!r}")
    return names[0] if len(names) == 1 else names


def add_outcome_arguments(p: argparse.ArgumentParser, *, judges: bool = False,
                          grid: bool = False, analysis: bool = True) -> None:
    """The outcome flags (``judges``: also the one-judgement flags of ``nlpower power``;
    ``analysis=False``: the command defines its own ``--analysis``)."""
    p.add_argument("--outcome", choices=OUTCOMES, default="gaussian",
                   help="what is rated: gaussian (default, the paper's ratings), likert (--levels "
                        "points from a latent threshold model) or preference (repeated head-to-"
                        "head judgements: --p-win, --sd-worker, --sd-item"
                        + ("; one judgement per person: --judges" if judges else "") + ")")
    p.add_argument("--levels", type=int, default=None, metavar="K",
                   help="Likert points for --outcome likert (e.g. 5)")
    if analysis:
        p.add_argument("--analysis", type=_analyses, default=None, metavar="NAME",
                       help="analysis: lmm (gaussian, likert: the paper's LMM on [0, 1]), clmm "
                            "(likert: cumulative link mixed model) or glmer (preference); "
                            "default: the outcome's first"
                            + ("; a comma-separated list (likert) analyses the same replicates "
                               "with each" if grid else ""))
    p.add_argument("--p-win", type=(_floats if grid else float), default=None, metavar="P",
                   help="--outcome preference: share of decisive judgements preferring system B "
                        "for a typical worker and item" + (" (a comma-separated list makes the "
                                                           "effect axis)" if grid else ""))
    p.add_argument("--p-draw", type=float, default=0.0,
                   help="--outcome preference: probability of a draw (default: 0)")
    p.add_argument("--sd-worker", type=float, default=0.0,
                   help="--outcome preference: SD of worker intercepts, logit scale (default: 0)")
    p.add_argument("--sd-item", type=float, default=0.0,
                   help="--outcome preference: SD of item intercepts, logit scale (default: 0)")
    if judges:
        p.add_argument("--judges", type=int, default=None, metavar="N",
                       help="--outcome preference: one judgement from each of N people (exact "
                            "power, no workers x items design)")
        p.add_argument("--ties", choices=("exclude", "split"), default="exclude",
                       help="--outcome preference --judges: draws dropped (default) or split")


def _floats(text: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of numbers, e.g. 0.6,0.65; got {text!r}") from None


def outcome_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """``outcome=``, ``levels=``, ``analysis=`` as given (the library checks what fits)."""
    out: dict[str, Any] = {"outcome": args.outcome}
    if args.levels is not None:
        out["levels"] = args.levels
    if args.analysis is not None:
        out["analysis"] = args.analysis
    return out


def preference_params(args: argparse.Namespace, p_win: float | None = None) -> Any:
    """:class:`~nlpower.outcomes.HeadToHeadParams` of the preference flags."""
    from ..outcomes import HeadToHeadParams

    share = args.p_win if p_win is None else p_win
    if share is None:
        args.parser.error("--outcome preference needs --p-win P (the share preferring B)")
    return HeadToHeadParams.from_share(share, sd_worker=args.sd_worker, sd_item=args.sd_item,
                                       p_draw=args.p_draw)


def _preference_effects(args: argparse.Namespace) -> list[float]:
    shares = args.p_win if isinstance(args.p_win, list) else [args.p_win]
    return [preference_params(args, p).effect for p in shares]


#: Outcomes whose parameters come from their own flags (the others: --preset or --ratings),
#: and the effect axis a grid builds from them.
_OWN_PARAMS = {"preference": (preference_params, _preference_effects)}


def own_params(args: argparse.Namespace) -> Any:
    """The outcome's parameters from its own flags, or ``None`` (then --preset / --ratings)."""
    entry = _OWN_PARAMS.get(args.outcome)
    if entry is None:
        return None
    first = args.p_win[0] if isinstance(args.p_win, list) else None
    return entry[0](args, first)


def own_effects(args: argparse.Namespace) -> list[float] | None:
    """A grid's effect axis from the outcome's own flags (``--p-win`` list), or ``None``."""
    entry = _OWN_PARAMS.get(args.outcome)
    return None if entry is None else entry[1](args)


def run_preference(args: argparse.Namespace) -> int:
    """``nlpower power --outcome preference --judges N``: exact one-judgement power."""
    if args.p_win is None:
        args.parser.error("--outcome preference --judges N needs --p-win P")
    from ..preference import power as preference_power

    res = preference_power(args.judges, args.p_win, p_draw=args.p_draw, ties=args.ties,
                           alpha=args.alpha, alternative=args.alternative)
    print(res.summary())
    write_json(args, res.to_record())
    return 0
