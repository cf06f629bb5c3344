"""The fit's notes on what it cannot tell apart (nlpower.ratings.fitnotes): one note per
fact, each naming its term, none repeating another.

Shapes: the ``(system || worker)`` ridge alone (items nested, fitted one SD per
system), the ridge of both terms (crossed pilot), the ridge plus nested items under
the paper's model, and the singular note for an intercept SD at 0 on the ridge (a
boundary only where the per-system covariance it splits is singular) and for an
ordinary SD at 0.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields, replace

import numpy as np
import pandas as pd
import pytest

from nlpower.ratings import RatingsFit, fit_ratings, read_ratings
from ratings_helpers import fit_nested, fit_pilot


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


def test_worker_ridge_and_nested_items_each_name_their_term():
    notes = _quiet(fit_nested).identifiability_notes()
    assert len(notes) == 2
    ridge, nested = notes
    assert ridge.startswith("(system || worker) has ") and "Table 14" in ridge
    assert "item" not in ridge and "Table 15" not in ridge and "sigma0i" not in ridge
    assert nested.startswith("items are nested in systems")
    assert "one SD per system (sigma1i..sigma4i)" in nested
    assert "sigma0i" not in nested and "s0^2 J + Sigma" not in nested   # not the ridge again


def test_crossed_pilot_one_ridge_note_for_both_terms():
    notes = _quiet(fit_pilot).identifiability_notes()
    assert len(notes) == 1
    note = notes[0]
    assert note.startswith("(system || worker) and (system || item) each have ")
    assert "sigma0w vs sigma1w, sigma2w (Table 14)" in note
    assert "sigma0i vs sigma1i, sigma2i (Table 15)" in note


def test_nested_items_under_the_paper_model_add_only_what_nesting_adds(tmp_path):
    rng = np.random.default_rng(4)
    w, i = (a.ravel() for a in np.meshgrid(np.arange(6), np.arange(40), indexing="ij"))
    s = i % 2                                      # item i is system i % 2's output
    y = (3 + 0.3 * s + rng.normal(0, 0.5, 6)[w] + rng.normal(0, 0.4, (6, 2))[w, s]
         + rng.normal(0, 0.8, 40)[i] + rng.normal(0, 0.7, w.size))
    path = tmp_path / "nested2.csv"
    pd.DataFrame({"worker": w, "item": i, "system": np.array(["A", "B"])[s],
                  "rating": np.clip(np.round(y), 1, 5)}).to_csv(path, index=False)
    fit = _quiet(fit_ratings, _quiet(read_ratings, path, scale=(1, 5)),
                 model="rating ~ system + (system || worker) + (system || item)")
    notes = fit.identifiability_notes()
    assert len(notes) == 2
    assert notes[0].startswith("(system || worker) and (system || item) each have ")
    assert notes[1].startswith("items are nested in systems")
    assert "beyond that split" in notes[1] and "sqrt(sigma0i^2 + sigmaki^2)" in notes[1]


@dataclass(frozen=True)
class _Singular(RatingsFit):
    """A fit reported singular, with the variances given (the notes read nothing else)."""

    @property
    def singular(self) -> bool:
        return True


def _as_singular(rf: RatingsFit, **changes) -> _Singular:
    return _Singular(**{f.name: getattr(replace(rf, **changes), f.name) for f in fields(rf)})


def _worker_split(rf: RatingsFit, total: np.ndarray) -> _Singular:
    """The worker intercept SD at 0, the per-system worker covariance ``total``."""
    cov = dict(rf.system_cov)
    cov["worker"] = pd.DataFrame(total, index=cov["worker"].index, columns=cov["worker"].columns)
    return _as_singular(rf, intercept_sd={**rf.intercept_sd, "worker": 0.0}, system_cov=cov)


def test_ridge_intercept_at_zero_is_singular_only_with_a_singular_covariance():
    rf = _quiet(fit_pilot)
    total = rf.total_cov("worker").to_numpy()
    rank1 = np.full((2, 2), float(np.sqrt(total[0, 0] * total[1, 1])))   # correlation 1
    note = _worker_split(rf, rank1).singular_note()
    assert note.startswith("singular fit (the per-system worker covariance s0^2 J + Sigma "
                           "singular, hence sigma0w at 0)")
    regular = _worker_split(rf, total).singular_note()
    assert regular.startswith("sigma0w at 0 is a split of the ridge, not a boundary")
    assert "singular fit" not in regular


def test_an_ordinary_sd_at_zero():
    rf = _quiet(fit_nested)
    cov = dict(rf.system_cov)
    c = cov["item"].to_numpy().copy()
    c[1, :] = c[:, 1] = 0.0
    cov["item"] = pd.DataFrame(c, index=cov["item"].index, columns=cov["item"].columns)
    note = _as_singular(rf, system_cov=cov, intercept_sd={**rf.intercept_sd, "worker": 0.05}
                        ).singular_note()
    assert note.startswith("singular fit (sigma2i at 0): ")


@pytest.mark.parametrize("k", [2, 4])
def test_per_system_sd_ranges(k):
    from nlpower.ratings.fitnotes import _sds
    assert _sds("w", k) == ("sigma1w, sigma2w" if k == 2 else "sigma1w..sigma4w")
