"""Parameter values from Card et al. (2020), App. H.3, Tables 12-16.

* :func:`low_variance` and :func:`high_variance`: the two scenarios of
  Table 16 used for the paper's power curves (Figure 6), with beta0 = 0.5
  and the paper's sum (+-1) coding.
* :func:`dataset` / :data:`DATASETS`: the six fitted models of Tables 13-15
  with the numbers of workers and items of Table 12, as
  :class:`DatasetPreset` objects holding :class:`~nlpower.params.MultiSystemParams`.

All values are on the [0, 1] rating scale, as in the paper.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd

from ._validation import closest_name
from .design import CrossedDesign
from .errors import InputError
from .params import LMMParams, MultiSystemParams

BETA0_SIMULATION = 0.5
"""Intercept used in the paper's power simulations (App. H.3)."""


def low_variance(effect: float = 0.0) -> LMMParams:
    """Table 16 "low variance" scenario (Card et al. 2020), sum coding, beta0 = 0.5.

    SDs: worker intercept 0.01, worker slope 0.04, item intercept 0.01,
    item slope 0.13, residual 0.16.  ``effect`` is beta1 under +-1 coding
    (half the mean difference; the paper's grid is 0.05 ... 0.20).
    """
    return LMMParams(beta0=BETA0_SIMULATION, effect=effect, sd_worker=0.01, sd_worker_slope=0.04,
                     sd_item=0.01, sd_item_slope=0.13, sigma=0.16, coding="sum")


def high_variance(effect: float = 0.0) -> LMMParams:
    """Table 16 "high variance" scenario (Card et al. 2020), sum coding, beta0 = 0.5.

    SDs: worker intercept 0.01, worker slope 0.11, item intercept 0.04,
    item slope 0.14, residual 0.26.
    """
    return LMMParams(beta0=BETA0_SIMULATION, effect=effect, sd_worker=0.01, sd_worker_slope=0.11,
                     sd_item=0.04, sd_item_slope=0.14, sigma=0.26, coding="sum")


SCENARIOS = {"low_variance": low_variance, "high_variance": high_variance}


@dataclass(frozen=True)
class DatasetPreset:
    """A fitted model from Card et al. (2020), Tables 12-15.

    Attributes
    ----------
    name : str
        Short key (``"wmt19"``).
    source : str
        The evaluation the fit comes from.
    n_workers, n_items : int
        Table 12.  The original studies were not fully crossed: not every
        worker rated every item.
    params : MultiSystemParams
        Tables 13 (beta0, sum-contrast effects, sigma), 14 (worker SDs:
        intercept, then one per system) and 15 (item SDs).
    imputed : tuple of str
        Parameters not given in the paper and filled in here (see ``notes``).
    notes : str
        Caveats.
    """

    name: str
    source: str
    n_workers: int
    n_items: int
    params: MultiSystemParams
    imputed: tuple[str, ...] = ()
    notes: str = ""

    @property
    def n_systems(self) -> int:
        return self.params.n_systems

    def design(self, *, workers_per_item: int | None = None) -> CrossedDesign:
        """A :class:`CrossedDesign` of Table 12's size (fully crossed by default).

        Fully crossed designs of these sizes can be large (WMT19: 176 x 1997 x
        2 = 702,944 ratings); pass ``workers_per_item`` for a realistic one.
        """
        return CrossedDesign(self.n_workers, self.n_items, self.n_systems,
                             workers_per_item=workers_per_item)

    def to_lmm_params(self, *, exact: bool = False) -> LMMParams:
        """Two-system datasets only: the +-1 coded :class:`LMMParams`.

        Exact when the two per-system SDs of each factor are equal; otherwise
        (``exact=False``, the default here) the intercept-slope covariance
        ``(s_B^2 - s_A^2)/4`` is dropped.  See
        :meth:`MultiSystemParams.to_lmm_params`.
        """
        return self.params.to_lmm_params("sum", exact=exact)

    def summary(self) -> str:
        head = (f"{self.name}: {self.source}; {self.n_workers} workers, {self.n_items} items, "
                f"{self.n_systems} systems (Card et al. 2020, Tables 12-15)")
        tail = f"\n  note: {self.notes}" if self.notes else ""
        return head + "\n" + self.params.summary() + tail

    def to_frame(self) -> pd.DataFrame:
        df = self.params.to_frame()
        df.insert(0, "dataset", self.name)
        df["imputed"] = df["parameter"].isin(self.imputed)
        return df

    def __repr__(self) -> str:
        return (f"DatasetPreset({self.name!r}, n_workers={self.n_workers}, n_items={self.n_items}, "
                f"n_systems={self.n_systems})")


def _preset(name: str, source: str, n_workers: int, n_items: int, beta0: float,
            effects: tuple[float, ...], sigma: float, worker: tuple[float, ...],
            item: tuple[float, ...]) -> DatasetPreset:
    k = len(effects) + 1
    imputed: list[str] = []
    notes = ""
    w_sys, i_sys = list(worker[1:]), list(item[1:])
    if len(w_sys) == k - 1 and len(i_sys) == k - 1:
        # Table 14/15 stop at sigma_6 although this model has 7 systems: one
        # per-system SD is missing.  Fill it with the median of the reported ones.
        w_sys.append(statistics.median(w_sys))
        i_sys.append(statistics.median(i_sys))
        imputed = [f"sd_worker_systems[{k - 1}]", f"sd_item_systems[{k - 1}]"]
        notes = (f"Tables 14-15 list only {k - 1} per-system SDs for this {k}-system model (the "
                 "tables have 7 columns); the last system's worker and item SDs are imputed as "
                 "the median of the reported ones.")
    return DatasetPreset(
        name=name, source=source, n_workers=n_workers, n_items=n_items,
        params=MultiSystemParams(beta0=beta0, effects=effects, sd_worker=worker[0],
                                 sd_worker_systems=tuple(w_sys), sd_item=item[0],
                                 sd_item_systems=tuple(i_sys), sigma=sigma),
        imputed=tuple(imputed), notes=notes,
    )


# Card et al. (2020), Table 12 (n_workers, n_items), Table 13 (beta0, effects, sigma),
# Table 14 (worker SDs: intercept, per system), Table 15 (item SDs: intercept, per system).
DATASETS: dict[str, DatasetPreset] = {p.name: p for p in (
    _preset("hashimoto-lm", "Hashimoto et al. (2019), language modelling", 124, 50,
            0.55, (-0.03,), 0.25, (0.0, 0.11, 0.11), (0.04, 0.14, 0.10)),
    _preset("hashimoto-summarization", "Hashimoto et al. (2019), summarization", 96, 99,
            0.58, (0.06,), 0.26, (0.0, 0.13, 0.11), (0.07, 0.0, 0.18)),
    _preset("hashimoto-reddit", "Hashimoto et al. (2019), Reddit", 123, 99,
            0.55, (0.05, 0.03, 0.01), 0.23, (0.11, 0.04, 0.08, 0.06, 0.17),
            (0.0, 0.13, 0.11, 0.14, 0.14)),
    _preset("wmt19", "WMT19 human evaluation", 176, 1997,
            0.86, (0.04,), 0.12, (0.07, 0.04, 0.13), (0.05, 0.03, 0.15)),
    _preset("dathathri-pplm", "Dathathri et al. (2020), PPLM", 15, 1358,
            0.62, (0.04, -0.05, -0.03), 0.16, (0.0, 0.04, 0.05, 0.05, 0.05),
            (0.0, 0.16, 0.19, 0.16, 0.16)),
    _preset("holtzman", "Holtzman et al. (2020), nucleus sampling", 140, 1399,
            0.59, (0.02, 0.04, 0.02, 0.01, 0.0, -0.04), 0.16,
            (0.09, 0.05, 0.03, 0.04, 0.04, 0.02, 0.04), (0.0, 0.13, 0.1, 0.12, 0.11, 0.13, 0.13)),
)}


def dataset(name: str) -> DatasetPreset:
    """One of the six fitted models of Card et al. (2020), Tables 12-15.

    Parameters
    ----------
    name : str
        One of ``"hashimoto-lm"``, ``"hashimoto-summarization"``,
        ``"hashimoto-reddit"``, ``"wmt19"``, ``"dathathri-pplm"``,
        ``"holtzman"`` (case-insensitive; ``_`` and spaces count as ``-``).

    Raises
    ------
    InputError
        Unknown name (the message lists the valid ones and the closest).
    """
    if not isinstance(name, str):
        raise InputError(f"name must be a string, one of {', '.join(map(repr, DATASETS))}; "
                         f"got {name!r}.")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key in DATASETS:
        return DATASETS[key]
    close = closest_name(key, list(DATASETS))
    hint = f" Did you mean {close!r}?" if close else ""
    raise InputError(
        f"unknown dataset {name!r}; valid names: {', '.join(map(repr, DATASETS))}.{hint}"
    )


__all__ = ["BETA0_SIMULATION", "DATASETS", "SCENARIOS", "DatasetPreset", "dataset",
           "high_variance", "low_variance"]
