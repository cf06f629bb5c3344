"""The notes a ratings fit prints about what it cannot tell apart, each naming its term.

:func:`identifiability_notes`: the ``(system || g)`` ridge, only for the grouping factors
whose term has both an intercept and a per-system part (Table 14 for workers, 15 for
items), then each grouping factor nested in systems in the terms of its fitted SDs.
:func:`singular_note`: a boundary fit; an intercept SD at 0 on the ridge is a boundary
only where the per-system covariance ``s0^2 J + Sigma`` it splits is singular.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .model import GROUPS

__all__ = ["identifiability_notes", "singular_note"]

TAGS = {"worker": ("w", "Table 14"), "item": ("i", "Table 15")}
RANK_TOL = 1e-8     # an eigenvalue of the per-system covariance below this times the largest


def _sds(t: str, k: int) -> str:
    """The per-system SDs of tag ``t``: ``sigma1w, sigma2w`` or ``sigma1w..sigma4w``."""
    return f"sigma1{t}, sigma2{t}" if k == 2 else f"sigma1{t}..sigma{k}{t}"


def both_parts(fit: Any) -> list[str]:
    """Grouping factors fitted with an intercept *and* a per-system term (the ridge)."""
    return [g for g in GROUPS if f"sigma0{TAGS[g][0]}" not in fit.not_modelled
            and f"sigma1{TAGS[g][0]}" not in fit.not_modelled]


def identifiability_notes(fit: Any) -> list[str]:
    """One note per fact, each naming its term (module docstring)."""
    k = fit.n_systems
    notes = []
    both = both_parts(fit)
    if both:
        terms = " and ".join(f"(system || {g})" for g in both)
        split = " and ".join(f"sigma0{TAGS[g][0]} vs {_sds(TAGS[g][0], k)} ({TAGS[g][1]})"
                             for g in both)
        notes.append(
            f"{terms} {'has' if len(both) == 1 else 'each have'} an intercept plus an "
            "unstructured per-system block, so only their sum s0^2 J + Sigma is identified: "
            f"the split {split} can differ between optimiser starts and engines at the same "
            "likelihood; compare fits with identifiable().")
    for g in GROUPS:
        pairs = fit.identified_pairs[g]
        if k > 1 and not pairs[~np.eye(k, dtype=bool)].any():
            notes.append(_nested_note(fit, g, g in both))
        elif not pairs.all():
            notes.append(f"some pairs of systems share no {g}: their {g} covariance is not "
                         "identified (NaN in identifiable()).")
    return notes


def _nested_note(fit: Any, g: str, ridge: bool) -> str:
    """A grouping factor nested in systems, in the terms of its fitted SDs."""
    t, k = TAGS[g][0], fit.n_systems
    head = f"{g}s are nested in systems (none rated under two systems): "
    if ridge:                 # the ridge note said the split; what nesting adds
        return (head + f"beyond that split, correlations between systems' {g} effects are not "
                f"identified, only each system's total {g} SD sqrt(sigma0{t}^2 + sigmak{t}^2).")
    if f"sigma0{t}" in fit.not_modelled and f"sigma1{t}" not in fit.not_modelled:
        return (head + f"the {g} term is one SD per system ({_sds(t, k)}), all that is "
                f"identified; correlations between systems' {g} effects are not.")
    return head + f"correlations between systems' {g} effects are not identified."


def _rank_deficient(fit: Any, g: str) -> bool:
    """Whether ``g``'s per-system covariance (its identified part) is singular."""
    c = fit.total_cov(g).to_numpy()
    if np.isnan(c).any():
        d = np.diag(c)
        return bool(np.nanmin(d) <= RANK_TOL * np.nanmax(d))
    ev = np.linalg.eigvalsh(c)
    return bool(ev[0] <= RANK_TOL * ev[-1])


def singular_note(fit: Any) -> str | None:
    """One line on what a singular (boundary) fit means for the estimates; None if not singular."""
    if not fit.singular:
        return None
    row = fit.table().iloc[0]
    zeros = [str(c) for c, v in row.items() if str(c).startswith("sigma") and c != "sigma"
             and c not in fit.not_modelled and abs(float(v)) < 5e-4]
    split = {f"sigma0{TAGS[g][0]}": g for g in both_parts(fit)}
    parts = []
    for z in zeros:
        g = split.get(z)
        if g is None:
            parts.append(f"{z} at 0")
        elif _rank_deficient(fit, g):
            parts.append(f"the per-system {g} covariance s0^2 J + Sigma singular, hence {z} at 0")
    if zeros and not parts:
        return (f"{' and '.join(zeros)} at 0 is a split of the ridge, not a boundary: the "
                "per-system covariance it splits is not singular, and the fit is regular in the "
                "identified quantities.")
    one = len(parts) <= 1
    what = "; ".join(parts) if parts else "a correlation at +-1"
    return (f"singular fit ({what}): the data cannot separate "
            f"{'that variance component' if one else 'those variance components'} from the "
            f"other components and the residual, so "
            f"{'its estimate is a lower bound' if one else 'their estimates are lower bounds'}"
            ", not evidence of no variation; the fixed effects remain valid, but power "
            f"computed from {'it' if one else 'them'} is optimistic.")
