"""Replicability analysis: claims over many datasets (Dror et al. 2017, TACL 5).

Algorithm A is compared with algorithm B on N datasets, each giving a p-value
for "A is not better than B on this dataset".  Two questions:

* **counting** -- on how many datasets is A better?  The partial-conjunction
  null ``H^{u/N}``: "A is better on fewer than u datasets" is tested for
  u = 1..N by combining the N - u + 1 largest p-values (Benjamini & Heller
  2008); ``k_hat`` is the largest u whose null is rejected, so that
  ``P(k_hat > k) <= alpha`` where k is the true number of datasets with an
  effect;
* **identification** -- which datasets?  Holm's step-down procedure, valid
  under any dependence between datasets.

The module is called ``partial_conjunction`` (not ``replicability``) so that
``import nlpower.replicability`` can never shadow the function
:func:`nlpower.replicability`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import _dist as stats
from ._choices import ReplicabilityMethod, check_choice
from ._inputs import read_text
from ._validation import check_probability
from .errors import InputError, NlpowerWarning

__all__ = [
    "IndependenceAssumptionWarning",
    "ReplicabilityResult",
    "holm",
    "holm_adjust",
    "parse_pvalues",
    "partial_conjunction_pvalues",
    "read_pvalues",
    "replicability",
]

FISHER_NOTE = ("Fisher's combination assumes the datasets are independent; "
               "use method='bonferroni' when they may be dependent (shared "
               "annotators, overlapping domains, one model selected on all).")


class IndependenceAssumptionWarning(NlpowerWarning):
    """A result that is valid only if the datasets are independent (Fisher)."""


def _as_pvalues(pvalues: Any) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """(p-values as floats, labels or None) from a sequence, Series or mapping."""
    labels: tuple[str, ...] | None = None
    values: Any
    if isinstance(pvalues, pd.Series):
        if not isinstance(pvalues.index, pd.RangeIndex):
            labels = tuple(str(i) for i in pvalues.index)
        values = pvalues.to_numpy()
    elif isinstance(pvalues, Mapping):
        labels = tuple(str(k) for k in pvalues)
        values = list(pvalues.values())
    elif isinstance(pvalues, (str, bytes)) or not isinstance(pvalues, (Sequence, np.ndarray)):
        raise InputError(
            f"pvalues must be a sequence of p-values (one per dataset), a pandas Series or a "
            f"mapping from dataset name to p-value; got {type(pvalues).__name__} {pvalues!r}.")
    else:
        values = pvalues
    odd = [v for v in np.ravel(np.asarray(values, dtype=object))
           if v is None or isinstance(v, (bool, np.bool_))]
    if odd:
        raise InputError(f"pvalues must be numbers in [0, 1]; got {odd[0]!r} among them (a "
                         "boolean or None is not a p-value). Pass each dataset's p-value.")
    try:
        p = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"pvalues must be numbers in [0, 1]; got {list(values)!r}.") from None
    if p.ndim != 1 or p.size == 0:
        raise InputError(f"pvalues must be a non-empty 1-d list of p-values, one per dataset; "
                         f"got shape {p.shape}.")
    bad = ~np.isfinite(p) | (p < 0) | (p > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        name = labels[i] if labels else f"position {i + 1}"
        raise InputError(f"pvalues must lie in [0, 1]; got {float(p[i])} for dataset {name}. "
                         "Pass the one-sided p-value of each dataset's test.")
    return p, labels


def partial_conjunction_pvalues(pvalues: Any, method: ReplicabilityMethod = "bonferroni"
                                ) -> np.ndarray:
    """Partial-conjunction p-values ``p^{u/N}`` for u = 1..N (monotone in u).

    With ``p_(1) <= ... <= p_(N)`` the sorted p-values,

    * Bonferroni: ``p^{u/N} = min(1, (N - u + 1) p_(u))`` (valid under any dependence);
    * Fisher: ``p^{u/N} = P(chi2 with 2(N - u + 1) df >= -2 sum_{i >= u} log p_(i))``
      (valid for independent datasets);

    then a running maximum over u, so that rejecting ``H^{u/N}`` implies
    rejecting every ``H^{v/N}`` with v < u (the nulls are nested).  With
    Bonferroni the result equals Holm's adjusted p-values of the sorted
    p-values, which is why ``k_hat`` (Bonferroni) is exactly the number of
    datasets Holm identifies.

    Provenance: Benjamini & Heller (2008), Dror et al. (2017) sec. 4.1.

    Examples
    --------
    >>> partial_conjunction_pvalues([0.01, 0.04, 0.03, 0.5]).round(3).tolist()
    [0.04, 0.09, 0.09, 0.5]
    """
    check_choice("method", method, ReplicabilityMethod)
    p, _ = _as_pvalues(pvalues)
    n = p.size
    ordered = np.sort(p)
    u = np.arange(1, n + 1)
    if method == "bonferroni":
        raw = np.minimum(1.0, (n - u + 1) * ordered)
    else:
        with np.errstate(divide="ignore"):
            logs = np.log(ordered)
        tail = -2.0 * np.cumsum(logs[::-1])[::-1]          # -2 sum_{i >= u} log p_(i)
        raw = stats.chi2.sf(tail, df=2 * (n - u + 1))
    return np.maximum.accumulate(raw)


def holm_adjust(pvalues: Any) -> np.ndarray:
    """Holm-adjusted p-values in input order (reject where adjusted p <= alpha).

    The Bonferroni partial-conjunction p-values of the sorted p-values
    (running maximum of ``(N - u + 1) p_(u)``), put back with the inverse of
    the sorting permutation: ``adjusted[order] = sorted_adjusted``.  Equals
    statsmodels' ``multipletests(method="holm")[1]``.

    Examples
    --------
    >>> holm_adjust([0.04, 0.01, 0.03]).round(3).tolist()
    [0.06, 0.03, 0.06]
    """
    p, _ = _as_pvalues(pvalues)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    adjusted[order] = partial_conjunction_pvalues(p, "bonferroni")
    return adjusted


def holm(pvalues: Any, alpha: float = 0.05) -> np.ndarray:
    """Boolean mask of the hypotheses Holm's step-down procedure rejects (input order).

    Sort ``p_(1) <= ... <= p_(N)``; reject ``H_(1)..H_(j)`` where j is the
    largest index with ``p_(i) <= alpha / (N - i + 1)`` for every i <= j.
    Controls the family-wise error rate under any dependence (Holm 1979;
    Dror et al. 2017 sec. 4.2).

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, 0.5]).tolist()
    [True, False, False, False]
    """
    alpha = check_probability("alpha", alpha)
    p, _ = _as_pvalues(pvalues)
    n = p.size
    order = np.argsort(p, kind="stable")
    passes = p[order] <= alpha / (n - np.arange(n))
    n_rejected = n if passes.all() else int(np.argmin(passes))
    mask = np.zeros(n, dtype=bool)
    mask[order[:n_rejected]] = True
    return mask


@dataclass(frozen=True)
class ReplicabilityResult:
    """Counting and identification over N datasets (Dror et al. 2017).

    Attributes
    ----------
    k_hat : int
        Largest u whose partial-conjunction null is rejected at ``alpha``
        (0 if none): "A is better than B on at least ``k_hat`` of N datasets",
        with ``P(k_hat > k) <= alpha``.
    partial_conjunction : pandas.Series
        ``p^{u/N}`` indexed by u = 1..N (monotone, see
        :func:`partial_conjunction_pvalues`).
    identified : tuple
        The datasets Holm rejects at ``alpha``, in input order: 1-based
        positions, or names when the input was labelled.
    pvalues : tuple of float
        The input p-values, in input order.
    labels : tuple of str or None
        Dataset names of a labelled input.
    method, alpha, n_datasets
        Settings; ``note`` carries the independence caveat for Fisher.
    """

    k_hat: int
    partial_conjunction: pd.Series
    identified: tuple[Any, ...]
    pvalues: tuple[float, ...]
    labels: tuple[str, ...] | None
    method: ReplicabilityMethod
    alpha: float
    note: str

    @property
    def n_datasets(self) -> int:
        return len(self.pvalues)

    def __repr__(self) -> str:
        return (f"ReplicabilityResult(method={self.method!r}, alpha={self.alpha:g}, "
                f"k_hat={self.k_hat}/{self.n_datasets}, identified={list(self.identified)!r})")

    def to_frame(self) -> pd.DataFrame:
        """One row per dataset, sorted by p-value: rank u, p-value, ``p^{u/N}``, Holm."""
        names = list(self.labels) if self.labels else list(range(1, self.n_datasets + 1))
        p = np.asarray(self.pvalues)
        order = np.argsort(p, kind="stable")
        n = p.size
        identified = set(self.identified)
        return pd.DataFrame({
            "u": np.arange(1, n + 1),
            "dataset": [names[i] for i in order],
            "pvalue": p[order],
            "partial_conjunction": self.partial_conjunction.to_numpy(),
            "counted": np.arange(1, n + 1) <= self.k_hat,
            "holm_threshold": self.alpha / (n - np.arange(n)),
            "identified": [names[i] in identified for i in order],
        })

    def _name(self, dataset: Any) -> str:
        """A dataset as the user gave it: its label, or ``#3 (p = 0.03)`` by position."""
        if self.labels is not None:
            return str(dataset)
        return f"#{dataset} (p = {self.pvalues[int(dataset) - 1]:.4g})"

    def summary(self) -> str:
        """Text report: the counting claim, the identified datasets, the table."""
        n = self.n_datasets
        lines = [
            f"Replicability analysis (Dror et al. 2017), {n} datasets, "
            f"partial conjunction by {self.method.capitalize()}, alpha = {self.alpha:g}",
            f"  counting: A is better than B on at least k_hat = {self.k_hat} of {n} datasets, "
            f"where k is the true number of datasets on which A is better and the claim errs "
            f"(k_hat > k) with probability at most {self.alpha:g}",
            "  identification (Holm, any dependence): A is better on "
            + (f"dataset{'s' if len(self.identified) > 1 else ''} "
               + ", ".join(self._name(d) for d in self.identified) if self.identified
               else "no dataset singled out"),
        ]
        if self.note:
            lines.append(f"  note: {self.note}")
        lines.append("")
        lines.append(self.to_frame().to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        return "\n".join(lines)


def replicability(pvalues: Any, *, alpha: float = 0.05,
                  method: ReplicabilityMethod = "bonferroni") -> ReplicabilityResult:
    """Replicability analysis of one comparison over N datasets (Dror et al. 2017).

    Parameters
    ----------
    pvalues : sequence of float, pandas.Series or mapping
        One p-value per dataset, each from a test of "A is not better than B
        on this dataset" (one-sided).  A Series with a non-default index or a
        mapping labels the datasets.
    alpha : float
        Bound on ``P(k_hat > k)`` and on Holm's family-wise error.
    method : {"bonferroni", "fisher"}
        Partial-conjunction combination.  Bonferroni is valid under any
        dependence between datasets and then ``k_hat`` equals the number of
        datasets Holm identifies; Fisher is more powerful but assumes
        independent datasets (an :class:`IndependenceAssumptionWarning` says
        so).  Identification always uses Holm, which is valid under any
        dependence (the k_hat smallest p-values are *not* a valid
        identification with Fisher, Dror et al. sec. 4.1).

    Returns
    -------
    ReplicabilityResult

    Examples
    --------
    >>> res = replicability({"books": 0.001, "dvd": 0.02, "kitchen": 0.04, "music": 0.3})
    >>> res.k_hat, res.identified
    (1, ('books',))

    Provenance: k_hat from Benjamini & Heller (2008) as used by Dror et al.
    (2017) eq. for ``k_hat``; Holm (1979).  Checked against statsmodels'
    ``multipletests(method="holm")`` and scipy's ``combine_pvalues``.
    """
    alpha = check_probability("alpha", alpha)
    check_choice("method", method, ReplicabilityMethod)
    p, labels = _as_pvalues(pvalues)
    pc = partial_conjunction_pvalues(p, method)
    k_hat = int(np.sum(pc <= alpha))                 # pc is monotone: the largest rejected u
    mask = holm(p, alpha)
    names: list[Any] = list(labels) if labels else list(range(1, p.size + 1))
    identified = tuple(names[i] for i in np.flatnonzero(mask))
    note = ""
    if method == "fisher":
        note = FISHER_NOTE
        warnings.warn(FISHER_NOTE, IndependenceAssumptionWarning, stacklevel=2)
    series = pd.Series(pc, index=pd.Index(np.arange(1, p.size + 1), name="u"),
                       name="partial_conjunction")
    return ReplicabilityResult(
        k_hat=k_hat, partial_conjunction=series, identified=identified,
        pvalues=tuple(float(v) for v in p), labels=labels, method=method,
        alpha=alpha, note=note)



def parse_pvalues(items: Sequence[str]) -> list[float] | dict[str, float]:
    """p-values from strings ``"0.01"`` or ``"name=0.01"`` (all named or none).

    Examples
    --------
    >>> parse_pvalues(["books=0.01", "dvd=0.2"])
    {'books': 0.01, 'dvd': 0.2}
    """
    named = ["=" in item for item in items]
    if any(named) and not all(named):
        raise InputError(f"give every p-value a name (name=p) or none; got {list(items)!r}.")
    values: dict[str, float] = {}
    plain: list[float] = []
    for item in items:
        name, _, text = item.rpartition("=")
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"{item!r} is not a p-value; write a number like 0.03 "
                             "(or name=0.03).") from None
        if name:
            if name in values:
                raise InputError(f"dataset name {name!r} is given twice; names must be unique.")
            values[name] = value
        else:
            plain.append(value)
    return values if any(named) else plain


def read_pvalues(path: str | Path) -> list[float] | dict[str, float]:
    """p-values from a file: one per line, or ``name p`` / ``name,p`` per line ('#' comments)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"p-value file {str(file)!r} does not exist or is not a file.")
    items = []
    for lineno, raw in enumerate(read_text(file, "p-value file").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.replace(",", " ").replace("\t", " ").split()
        if len(fields) not in (1, 2):
            raise InputError(f"{file}: line {lineno} is {raw!r}; each line holds a p-value or "
                             "a dataset name and a p-value.")
        items.append((lineno, raw, fields[0] if len(fields) == 1 else f"{fields[0]}={fields[1]}"))
    if not items:
        raise InputError(f"{file}: no p-values found (the file is empty).")
    if not _is_float(items[0][2].rpartition("=")[2]):
        items = items[1:]                       # a header line: "pvalue" or "dataset,pvalue"
    named = any("=" in item for _, _, item in items)
    for lineno, raw, item in items:             # name the line, not the parsed list
        if not _is_float(item.rpartition("=")[2]) or named != ("=" in item):
            raise InputError(f"{file}: line {lineno} is {raw!r}, not " + (
                "a dataset name and a p-value (as the other lines have)" if named else
                "a p-value") + ". Give one p-value, or a name and a p-value, per line.")
    return parse_pvalues([item for _, _, item in items])


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
