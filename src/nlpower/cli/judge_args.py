"""``nlpower fit`` flags for an LLM judge (``--judge``) and agreement (``--agreement``).

A thin edge: the statistics are :func:`nlpower.judge.fit`,
:func:`nlpower.agreement.krippendorff_alpha` and :func:`nlpower.agreement.icc`.
"""

from __future__ import annotations

import argparse
from typing import Any

from .output import write_json


def add_fit_arguments(p: argparse.ArgumentParser) -> None:
    """The judge and agreement flags of ``nlpower fit``."""
    g = p.add_argument_group("LLM judge and agreement")
    g.add_argument("--judge", default=None, metavar="FILE",
                   help="judge scores on all items (CSV: item, system, score; several rows per "
                        "item and system are averaged): estimate the system differences by "
                        "prediction-powered inference (PPI++) with a crossed worker x item "
                        "rectifier, beside the human-only and judge-only estimates; ratings and "
                        "judge scores are used as given (no --scale rescaling): put both on the "
                        "scale you want the differences on")
    g.add_argument("--judge-score", default="score", metavar="COL",
                   help="score column of the judge file (default: score)")
    g.add_argument("--judge-rectifier", choices=("crossed", "iid"), default="crossed",
                   help="crossed (default: mixed model with worker and item effects) or iid "
                        "(item means as independent labels, ppi-python's estimator)")
    g.add_argument("--judge-outcome", choices=("gaussian", "binary"), default="gaussian",
                   help="gaussian (default) or binary (0/1 human labels, e.g. preferences)")
    g.add_argument("--agreement", action="store_true",
                   help="also report Krippendorff's alpha (interval, bootstrap CI over outputs) "
                        "and the McGraw & Wong ICCs per system")


def run_judge(args: argparse.Namespace) -> int:
    """``nlpower fit FILE --judge JUDGE``: the prediction-powered table."""
    from ..judge import fit

    res = fit(args.file, args.judge, worker=args.worker, item=args.item, system=args.system,
              rating=args.rating, score=args.judge_score, baseline=args.baseline,
              outcome=args.judge_outcome, rectifier=args.judge_rectifier)
    print(res.summary())
    if args.json_out:
        write_json(args, {"lambda": res.lam, "rectifier": res.rectifier,
                          "estimates": res.to_frame().to_dict(orient="records")},
                   path=args.json_out)
    return 0


def agreement_text(fit: Any) -> str:
    """Krippendorff's alpha and the ICCs of a :class:`~nlpower.ratings.RatingsFit`."""
    from ..agreement import icc, krippendorff_alpha

    parts = []
    if getattr(fit, "data", None) is not None:
        parts.append(krippendorff_alpha(fit.data, level="interval", n_boot=1000,
                                        rng=0).summary())
    parts.append(icc(fit).summary())
    return "\n".join(parts)
