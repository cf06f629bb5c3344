"""Delta and agreement from two models' predictions, and the power analysis they imply.

Card et al. (2020), section 3.2 "Using validation results": paired predictions
on dev data estimate the accuracy difference and the agreement rate, which on
SQuAD 2.0 track the test-set values closely (r = 0.99).  :func:`estimate`
computes them with the 2x2 table and McNemar's test on the observed data;
:func:`plan_from_dev` turns them into the power of the test set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._choices import AccuracyMethod, McNemarTest, check_choice
from .._rng import RNGLike
from .._validation import check_columns, check_int
from ..errors import InputError
from .mcnemar import McNemarResult, mcnemar
from .power import AccuracyPowerResult, power

__all__ = ["AccuracyEstimateResult", "estimate", "plan_from_dev"]


@dataclass(frozen=True)
class AccuracyEstimateResult:
    """Observed comparison of a baseline (``a``) and a new model (``b``) on the same items."""

    n: int
    both_correct: int
    only_new: int
    only_old: int
    both_wrong: int
    mcnemar: McNemarResult

    @property
    def baseline(self) -> float:
        """Accuracy of model a (the old one)."""
        return (self.both_correct + self.only_old) / self.n

    @property
    def new_accuracy(self) -> float:
        return (self.both_correct + self.only_new) / self.n

    @property
    def delta(self) -> float:
        """Accuracy of b minus accuracy of a."""
        return (self.only_new - self.only_old) / self.n

    @property
    def agreement(self) -> float:
        """Share of items where both are right or both wrong (Pa)."""
        return (self.both_correct + self.both_wrong) / self.n

    def to_table(self) -> pd.DataFrame:
        """The 2x2 table of counts (rows: new model, columns: old model)."""
        return pd.DataFrame({"old correct": [self.both_correct, self.only_old],
                             "old incorrect": [self.only_new, self.both_wrong]},
                            index=pd.Index(["new correct", "new incorrect"]))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{
            "n": self.n, "baseline": self.baseline, "new_accuracy": self.new_accuracy,
            "delta": self.delta, "agreement": self.agreement, "both_correct": self.both_correct,
            "only_new": self.only_new, "only_old": self.only_old, "both_wrong": self.both_wrong,
            "test": self.mcnemar.test, "statistic": self.mcnemar.statistic,
            "pvalue": self.mcnemar.pvalue}])

    def summary(self) -> str:
        return "\n".join([
            f"Paired accuracy comparison on {self.n} items",
            f"  accuracy a (baseline) {self.baseline:.4f}, b (new) {self.new_accuracy:.4f}, "
            f"delta {self.delta:+.4f}",
            f"  agreement {self.agreement:.4f}; only b correct {self.only_new}, only a correct "
            f"{self.only_old}",
            f"  {self.mcnemar.summary()}",
        ])

    def power(self, n: int | None = None, **kwargs: Any) -> AccuracyPowerResult:
        """Power on ``n`` items (default: this many) at the estimated delta and agreement."""
        return plan_from_dev(self, self.n if n is None else n, **kwargs)

    def __repr__(self) -> str:
        return (f"AccuracyEstimateResult(n={self.n}, delta={self.delta:+.4f}, "
                f"agreement={self.agreement:.4f}, pvalue={self.mcnemar.pvalue:.4g})")


def _vector(name: str, x: Any) -> np.ndarray:
    arr = np.asarray(x, dtype=object) if not isinstance(x, np.ndarray) else x
    if arr.ndim != 1:
        raise InputError(f"{name} must be one-dimensional (one prediction per item); "
                         f"got shape {arr.shape}.")
    if len(arr) and pd.isna(pd.Series(arr)).any():
        raise InputError(f"{name} has missing values at positions "
                         f"{np.flatnonzero(pd.isna(pd.Series(arr)).to_numpy())[:5].tolist()}; "
                         "drop those items from all three inputs first.")
    return arr


def _kind(arr: np.ndarray) -> str:
    """'text' when every value is a string, 'number' when every one is a number, else 'mixed'."""
    if all(isinstance(v, str) for v in arr):
        return "text"
    if all(isinstance(v, (int, float, np.number, np.bool_)) for v in arr):
        return "number"
    return "mixed"


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _check_comparable(arrays: dict[str, np.ndarray]) -> None:
    """Text '1' never equals the number 1: a prediction and a label of different kinds would
    all count as wrong, silently."""
    kinds = {name: _kind(arr) for name, arr in arrays.items()}
    if {"text", "number"} <= set(kinds.values()):
        shown = ", ".join(f"{name} {kind} ({', '.join(repr(_plain(v)) for v in arrays[name][:2])}"
                          ", ...)" for name, kind in kinds.items())
        raise InputError(
            f"predictions and labels must be of one kind to be compared; got {shown}. Text "
            "never equals a number ('1' != 1), so every such item would count as wrong: "
            "convert them to one kind first (e.g. labels.astype(str)).")


def estimate(
    preds_a: Any,
    preds_b: Any,
    labels: Any,
    *,
    data: pd.DataFrame | None = None,
    test: McNemarTest = "exact",
) -> AccuracyEstimateResult:
    """Delta, agreement, the 2x2 table and McNemar's test from paired predictions.

    Parameters
    ----------
    preds_a, preds_b : array-like or column names
        Predictions of the baseline (a) and the new model (b), one per item.
    labels : array-like or column name
        Gold labels.
    data : DataFrame, optional
        When given, the three arguments above are column names in it.
    test : str
        McNemar variant for the observed test.

    Examples
    --------
    >>> est = estimate([1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 1, 1])
    >>> est.delta, est.agreement
    (0.0, 0.5)
    """
    test = check_choice("test", test, McNemarTest)
    names = ["preds_a", "preds_b", "labels"]
    if data is not None:
        names = [f"column {c!r} ({n})" for c, n in zip([preds_a, preds_b, labels], names,
                                                       strict=True)]
        if not isinstance(data, pd.DataFrame):
            raise InputError(f"data must be a pandas DataFrame; got {type(data).__name__}.")
        check_columns("estimate", [preds_a, preds_b, labels], list(map(str, data.columns)))
        preds_a, preds_b, labels = data[preds_a].to_numpy(), data[preds_b].to_numpy(), \
            data[labels].to_numpy()
    a, b, y = _vector("preds_a", preds_a), _vector("preds_b", preds_b), _vector("labels", labels)
    if not len(a) == len(b) == len(y):
        raise InputError(f"preds_a, preds_b and labels must have the same length; got "
                         f"{len(a)}, {len(b)} and {len(y)}.")
    if len(y) == 0:
        raise InputError("no items: preds_a, preds_b and labels are empty.")
    _check_comparable(dict(zip(names, (a, b, y), strict=True)))
    ca, cb = a == y, b == y
    both = int(np.sum(ca & cb))
    only_new = int(np.sum(cb & ~ca))
    only_old = int(np.sum(ca & ~cb))
    wrong = len(y) - both - only_new - only_old
    return AccuracyEstimateResult(len(y), both, only_new, only_old, wrong,
                                  mcnemar(only_new, only_old, test=test, n=len(y)))


def plan_from_dev(
    dev: AccuracyEstimateResult,
    n: int,
    *,
    alpha: float = 0.05,
    test: McNemarTest = "exact",
    method: AccuracyMethod = "exact",
    n_sims: int = 10_000,
    rng: RNGLike = None,
) -> AccuracyPowerResult:
    """Power on a test set of ``n`` items, taking delta and agreement from dev-set estimates.

    Assumes dev and test come from one distribution and the dev score is not
    inflated (Card et al. 2020, section 3.2); the estimates carry their own
    noise, so treat the result as a plan, not a post-hoc power (App. E.2.3).

    Examples
    --------
    >>> dev = estimate([0] * 90 + [1] * 10, [0] * 84 + [1] * 16, [0] * 100)
    >>> round(plan_from_dev(dev, 2000).power, 2)   # delta -0.06 at agreement 0.94
    1.0
    """
    if not isinstance(dev, AccuracyEstimateResult):
        raise InputError(f"dev must be the result of nlpower.accuracy.estimate(...); "
                         f"got {type(dev).__name__}.")
    n = check_int("n", n, min=1)
    if dev.delta == 0:
        raise InputError("the dev estimates show no accuracy difference (delta = 0): power is "
                         "undefined; plan with an expected delta via nlpower.accuracy.power.")
    return power(n, dev.delta, dev.agreement, baseline=dev.baseline, alpha=alpha, test=test,
                 method=method, n_sims=n_sims, rng=rng)
