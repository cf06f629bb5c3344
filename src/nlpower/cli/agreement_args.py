"""``--agreement A`` (with ``--measure``, ``--k``, ``--total-sd``, ``--split``) for the planning verbs.

A target agreement in place of ``--preset`` or a pilot (``--ratings``):
:func:`nlpower.agreement.elicitation` turns it into the variance components,
whose assumed split is printed before the result.  No statistics live here.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InputError

MEASURES = ("alpha", "ICC(A,1)", "ICC(C,1)", "ICC(A,k)", "ICC(C,k)")

#: The flags that only mean something with --agreement (dest -> flag).
_SCALE = {"measure": "--measure", "k": "--k", "total_sd": "--total-sd", "split": "--split"}


def add_split_arguments(p: argparse.ArgumentParser) -> None:
    """``--measure``, ``--k``, ``--total-sd``, ``--split``: what the agreement is and the rest of
    the variance split (shared with ``nlpower elicit``)."""
    p.add_argument("--measure", choices=MEASURES, default="alpha",
                   help="Krippendorff's interval alpha (= ICC(A,1) in the model) or an ICC form")
    p.add_argument("--k", type=float, default=None, help="raters averaged, for the k forms")
    p.add_argument("--total-sd", type=float, default=None, metavar="SD",
                   help="SD of one rating's random part (default: the high-variance "
                        "scenario's, 0.318 on the [0, 1] scale)")
    p.add_argument("--split", type=float, nargs=3, default=None,
                   metavar=("ITEM_SLOPE", "WORKER", "WORKER_SLOPE"),
                   help="shares: item x system of the item variance, workers of the non-item "
                        "variance, worker x system of the worker variance (default: the "
                        "high-variance scenario's)")


def add_agreement_arguments(p: argparse.ArgumentParser) -> None:
    """``--agreement A`` and the split flags."""
    p.add_argument("--agreement", type=float, default=None, metavar="A",
                   help="plan from a target agreement between raters (e.g. 0.6; no pilot "
                        "needed) instead of --preset or --ratings: the variance components "
                        "come from nlpower.agreement.elicit and the split assumed is printed")
    add_split_arguments(p)


def check_agreement_flags(args: argparse.Namespace, effect: Any = None) -> None:
    """Refuse what cannot go with ``--agreement`` (or the split flags without it)."""
    if args.agreement is None:
        given = [flag for dest, flag in _SCALE.items()
                 if getattr(args, dest) != args.parser.get_default(dest)]
        if given:
            verb, it = ("describe", "them") if len(given) > 1 else ("describes", "it")
            raise InputError(f"{', '.join(given)} {verb} a target agreement: give --agreement A "
                             f"too (e.g. --agreement 0.6), or drop {it}.")
        return
    clash = [flag for dest, flag in (("preset", "--preset"), ("ratings", "--ratings"),
                                     ("sd", "--sd"), ("contrast", "--contrast"))
             if getattr(args, dest, None) is not None]
    if clash:
        raise InputError(f"--agreement {args.agreement:g} sets all the variance components; "
                         f"{', '.join(clash)} set{'s' if len(clash) == 1 else ''} them too. Give "
                         "one source: --agreement (with --split / --total-sd to change its "
                         "assumptions), --preset, or --ratings FILE.")
    other = [f"--{flag} {getattr(args, flag)}" for flag in ("outcome", "family")
             if getattr(args, flag, "gaussian") != "gaussian"]
    if other:
        raise InputError(f"--agreement gives the variance components of Gaussian ratings, not "
                         f"of {' '.join(other)}: drop --agreement, or drop {' '.join(other)}.")


def agreement_params(args: argparse.Namespace, effect: float, coding: Any = "sum") -> Any:
    """The elicited parameters at ``effect`` (in ``coding``), after printing the assumed split."""
    from ..agreement import AgreementSplit, elicitation

    split = AgreementSplit(*args.split) if args.split else None
    found = elicitation(args.agreement, measure=args.measure, k=args.k, total_sd=args.total_sd,
                        split=split, effect=effect)
    print(found.summary())
    print()
    args.elicited = found
    params = found.params
    if coding != params.coding:
        params = params.to_coding(coding).with_effect(effect)
    return params


def agreement_record(args: argparse.Namespace) -> dict[str, Any]:
    """What ``--json`` records about the elicitation (empty without ``--agreement``)."""
    found = getattr(args, "elicited", None)
    return {} if found is None else {"agreement": found.to_frame().iloc[0].to_dict()}
