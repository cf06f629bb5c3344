"""The result of :func:`~nlpower.ratings.fit_ratings`: Tables 13-15, identified quantities, parameters.

:class:`RatingsFit` holds the fit and its views (the paper's tables, a tidy
frame, a text summary, JSON); :class:`IdentifiableEstimates` what the data
determine whatever the optimiser's split of variances; :meth:`RatingsFit.to_params`
and :meth:`RatingsFit.to_multi_params` turn a pilot fit into simulation
parameters.

Identifiability
---------------
With an unstructured per-system block the likelihood depends on the random
effects of a grouping factor only through the *total* covariance of its
per-system effects, ``C = s_0^2 J + Sigma`` (J the all-ones matrix): adding t to
``s_0^2`` and subtracting t from every entry of ``Sigma`` changes nothing.
So the split between the intercept SD and the per-system SDs reported in
Tables 14-15 is not identified (different optimiser starts or engines can
return different splits with the same likelihood), whatever the design.  When
items are *nested* in systems (each item rated under one system) the
off-diagonal entries of C are not identified either: only each system's total
item variance ``C_kk = s_0^2 + s_k^2``.  :meth:`RatingsFit.identifiable`
returns what the data do determine: system means and deviations from the grand
mean, total per-system SDs, the identified covariances, and sigma.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._choices import Coding
from .._validation import closest_name
from ..coding import check_coding
from ..errors import RatingsError
from ..params import ConversionWarning, LMMParams, MultiSystemParams, pm1_random_effects
from . import fitnotes
from .identifiable import IdentifiableEstimates
from .model import FORMULA, GROUPS, contrast_rows
from .report import DesignReport
from .table import RatingsTable

__all__ = ["IdentifiableEstimates", "RatingsFit", "RatingsFitWarning"]

#: The warning of :meth:`RatingsFit.to_params` (the conversion's
#: :class:`nlpower.params.ConversionWarning`, under the name ratings code has used).
RatingsFitWarning = ConversionWarning


@dataclass(frozen=True, eq=False)
class RatingsFit:
    """The paper's mixed model fitted to a rating data set.

    Attributes
    ----------
    fit : LmmFit
        The underlying fit (``fit.summary()`` is lme4's layout).
    report : DesignReport
        The data's design report.
    systems : tuple of str
        Factor levels in fitted order (see the module docstring).
    baseline : str
    coding : {"sum", "half", "treatment"}
    scale : (lo, hi)
        Likert range the ratings were rescaled from.
    fixef : Series
        Fixed effects (``(Intercept)``, ``system[B]``, ...: sum-coded
        columns named by level, :mod:`nlpower.lmm.names`).
    sigma : float
    intercept_sd : dict
        ``{"worker": s_0w, "item": s_0i}`` (not identified separately; see
        :meth:`identifiable`).
    system_cov : dict
        ``{"worker": Sigma_w, "item": Sigma_i}``: K x K covariance of the
        per-system indicator effects (DataFrames, fitted level order).
    identified_pairs : dict
        ``{"worker": M, "item": M}``: K x K bool, whether some worker / item
        was rated under both systems (the covariance is identified).
    formula : str
        The formula actually fitted (see ``model=`` in :func:`fit_ratings`).
    reduced : tuple of str
        Grouping factors nested in systems that got independent per-system
        variances instead of ``(system || g)``.
    model : str
        ``"auto"``, ``"paper"`` or ``"formula"`` (a formula given as ``model=``).
    not_modelled : tuple of str
        Table columns (``sigma0w``, ``sigma1i``, ...) that are not parameters
        of the fitted model: 0 in the values, ``-`` in the printed tables.
    interaction_sd : dict
        ``{"item": tau_i}`` (``"worker"``) for a ``(1 | item:system)``
        (``worker:system``) term: the SD of each system's own effect of an item,
        the same for every system (table column ``sigma_item:system``).  Its
        per-system covariance ``tau^2 I`` is part of :meth:`total_cov`, not of
        ``system_cov``.
    """

    fit: Any
    report: DesignReport
    systems: tuple[str, ...]
    baseline: str
    coding: Coding
    scale: tuple[float, float] | None
    fixef: pd.Series
    sigma: float
    intercept_sd: dict[str, float]
    system_cov: dict[str, pd.DataFrame]
    identified_pairs: dict[str, np.ndarray] = field(repr=False)
    formula: str = FORMULA
    reduced: tuple[str, ...] = ()
    model: str = "auto"
    not_modelled: tuple[str, ...] = ()
    #: the rows fitted (``worker, item, system, rating``, system in fitted order): what a
    #: parametric bootstrap of the pilot refits (:mod:`nlpower.pilot.general`)
    data: pd.DataFrame | None = field(default=None, repr=False)
    interaction_sd: dict[str, float] = field(default_factory=dict)

    # ----------------------------------------------------------- basic views
    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def singular(self) -> bool:
        return bool(self.fit.singular)

    @property
    def converged(self) -> bool:
        return bool(self.fit.converged)

    def __repr__(self) -> str:
        return (f"RatingsFit(systems={list(self.systems)}, baseline={self.baseline!r}, "
                f"coding={self.coding!r}, beta0={self.fixef.iloc[0]:.4g}, sigma={self.sigma:.4g}, "
                f"n={self.report.n_ratings})")

    def _other_systems(self) -> list[str]:
        return [s for s in self.systems if s != self.baseline]

    def legend(self) -> str:
        """How the table's columns map to systems."""
        k = self.n_systems
        lines = [f"coding={self.coding!r}, baseline {self.baseline!r}; levels in fitted order: "
                 + ", ".join(f"{j + 1}={s!r}" for j, s in enumerate(self.systems))]
        coef = [str(n) for n in self.fixef.index]      # beta_j is the fit's coefficient j
        if self.coding in ("sum", "half"):
            lines.append("  beta0 = grand mean (unweighted mean of the system means)")
            for j, s in enumerate(self.systems[:-1]):
                head = f"  beta{j + 1} ({coef[j + 1]})"
                if k == 2 and self.coding == "sum":
                    lines.append(f"{head} = mean({s}) - grand mean = (mean({s}) - "
                                 f"mean({self.baseline})) / 2")
                elif k == 2:
                    lines.append(f"{head} = mean({s}) - mean({self.baseline})")
                else:
                    lines.append(f"{head} = mean({s}) - grand mean")
            if k > 2:
                lines.append(f"  baseline {self.baseline!r}: mean - grand mean = "
                             f"-(beta1 + ... + beta{k - 1})")
        else:
            lines.append(f"  beta0 = mean({self.baseline})")
            for j, s in enumerate(self.systems[1:]):
                lines.append(f"  beta{j + 1} ({coef[j + 1]}) = mean({s}) - mean({self.baseline})")
        lines.append("  sigma0w, sigma0i: worker / item intercept SD; sigma{k}w, sigma{k}i: SD of "
                     "the per-system indicator effect of level k")
        for g in self.interaction_sd:
            lines.append(f"  sigma_{g}:system: SD of the (1 | {g}:system) term, the {g}'s own "
                         f"effect under each system (one SD for all systems)")
        return "\n".join(lines)

    # ------------------------------------------------------------- tables
    def table(self, name: str | None = None) -> RatingsTable:
        """Tables 13, 14 and 15 side by side: one row (named ``name``, default the file name).

        Columns ``beta0, beta1..beta{K-1}, sigma, sigma0w, sigma1w..sigma{K}w,
        sigma0i, sigma1i..sigma{K}i`` (fixed effects in the fit's coding, SDs on
        the [0, 1] scale); see :meth:`legend` for which system is which.  A
        :class:`~nlpower.ratings.table.RatingsTable`: the values keep full
        precision, ``print`` shows every column rounded to 3 decimals and
        ``-`` for parts not in the fitted model (:attr:`not_modelled`).

        Examples
        --------
        >>> from nlpower.ratings import fit_ratings, read_ratings
        >>> fit = fit_ratings(read_ratings("fixtures/pilot_ratings.csv", scale=(1, 5)))
        >>> print(fit.table())
                           beta0  beta1  sigma sigma0w sigma1w sigma2w sigma0i sigma1i sigma2i
        pilot_ratings.csv  0.494  0.122  0.239   0.009   0.091   0.094   0.011   0.142   0.125
        """
        row: dict[str, float] = {}
        for j, v in enumerate(self.fixef.to_numpy()):
            row[f"beta{j}"] = float(v)
        row["sigma"] = self.sigma
        for g, tag in (("worker", "w"), ("item", "i")):
            row[f"sigma0{tag}"] = self.intercept_sd[g]
            if g in self.interaction_sd:      # one SD for all systems, in place of K SDs
                row[f"sigma_{g}:system"] = self.interaction_sd[g]
                continue
            sds = np.sqrt(np.clip(np.diag(self.system_cov[g].to_numpy()), 0.0, None))
            for j, v in enumerate(sds):
                row[f"sigma{j + 1}{tag}"] = float(v)
        table = RatingsTable([row], index=[name or Path(self.report.source).name])
        table.not_modelled = self.not_modelled
        return table

    def tables(self, name: str | None = None) -> dict[str, RatingsTable]:
        """The three tables separately, laid out as Tables 13, 14 and 15."""
        t = self.table(name)
        cols13 = [c for c in t.columns if c.startswith("beta")] + ["sigma"]
        cols14 = [c for c in t.columns if c.endswith("w") or c.startswith("sigma_worker")]
        cols15 = [c for c in t.columns if c.endswith("i") or c.startswith("sigma_item")]
        return {title: t.select(cols) for title, cols in
                (("Table 13", cols13), ("Table 14", cols14), ("Table 15", cols15))}

    def to_frame(self) -> pd.DataFrame:
        """Tidy: one row per table entry (``parameter``, ``group``, ``system``, ``estimate``)."""
        t = self.table().iloc[0]
        rows = []
        k = self.n_systems
        for j in range(k):
            if f"beta{j}" not in t:
                break
            sys_ = "" if j == 0 else (self.systems[j - 1] if self.coding != "treatment"
                                      else self.systems[j])
            rows.append((f"beta{j}", "fixed", sys_, float(t[f"beta{j}"])))
        rows.append(("sigma", "residual", "", self.sigma))
        for g, tag in (("worker", "w"), ("item", "i")):
            rows.append((f"sigma0{tag}", g, "(Intercept)", float(t[f"sigma0{tag}"])))
            if g in self.interaction_sd:
                rows.append((f"sigma_{g}:system", f"{g}:system", "", self.interaction_sd[g]))
                continue
            for j, s in enumerate(self.systems):
                rows.append((f"sigma{j + 1}{tag}", g, s, float(t[f"sigma{j + 1}{tag}"])))
        df = pd.DataFrame(rows, columns=["parameter", "group", "system", "estimate"])
        df["coding"] = self.coding
        df["baseline"] = self.baseline
        return df

    # ------------------------------------------------------ identified quantities
    def _level_matrix(self) -> np.ndarray:
        """(K, p) matrix L with L @ beta = the K system means."""
        k = self.n_systems
        return np.hstack([np.ones((k, 1)), contrast_rows(self.coding, k)])

    def total_cov(self, group: str) -> pd.DataFrame:
        """Total covariance ``s_0^2 J + Sigma + tau^2 I`` of the per-system effects of ``group``.

        ``tau`` is the SD of a ``(1 | group:system)`` term (:attr:`interaction_sd`,
        0 without one).  Entries not identified by the design are NaN.
        """
        if group not in GROUPS:
            raise RatingsError(f"group must be 'worker' or 'item'; got {group!r}.")
        sig = self.system_cov[group].to_numpy()
        tau = self.interaction_sd.get(group, 0.0)
        c = sig + self.intercept_sd[group] ** 2 + tau**2 * np.eye(self.n_systems)
        c = np.where(self.identified_pairs[group], c, np.nan)
        return pd.DataFrame(c, index=list(self.systems), columns=list(self.systems))

    def identifiable(self) -> IdentifiableEstimates:
        """System means, deviations from the grand mean, total SDs, identified covariances, sigma.

        These do not depend on how the optimiser splits variance between the
        intercept and the per-system terms (module docstring), so they agree
        across optimiser starts and engines.
        """
        L = self._level_matrix()
        beta = self.fixef.to_numpy()
        V = self.fit.vcov.to_numpy()
        means = L @ beta
        k = self.n_systems
        D = np.eye(k) - np.full((k, k), 1.0 / k)  # deviations from the grand mean
        eff_L = D @ L
        gm_L = np.full((1, k), 1.0 / k) @ L
        wc = self.total_cov("worker")
        ic = self.total_cov("item")
        systems = pd.DataFrame({
            "system": list(self.systems),
            "mean": means,
            "se_mean": np.sqrt(np.einsum("ij,jk,ik->i", L, V, L)),
            "effect": eff_L @ beta,
            "se_effect": np.sqrt(np.clip(np.einsum("ij,jk,ik->i", eff_L, V, eff_L), 0.0, None)),
            "sd_worker_total": np.sqrt(np.clip(np.diag(wc.to_numpy()), 0.0, None)),
            "sd_item_total": np.sqrt(np.clip(np.diag(ic.to_numpy()), 0.0, None)),
        })
        return IdentifiableEstimates(
            systems=systems, grand_mean=float((gm_L @ beta)[0]), sigma=self.sigma,
            worker_cov=wc, item_cov=ic, baseline=self.baseline,
        )

    # ------------------------------------------------------ simulation parameters
    def _resolve_contrast(self, contrast: Any) -> tuple[str, str]:
        def check(name: Any) -> str:
            name = str(name)
            if name not in self.systems:
                close = closest_name(name, list(self.systems))
                hint = f" Did you mean {close!r}?" if close else ""
                raise RatingsError(
                    f"contrast: unknown system {name!r}; the systems are "
                    f"{', '.join(map(repr, self.systems))}.{hint}"
                )
            return name

        if contrast is None:
            if self.n_systems != 2:
                raise RatingsError(
                    f"contrast is required with {self.n_systems} systems: pass a system name (it is "
                    f"compared with the baseline {self.baseline!r}) or a pair (system_a, system_b); "
                    f"systems: {', '.join(map(repr, self.systems))}."
                )
            return self._other_systems()[0], self.baseline
        if isinstance(contrast, str):
            a, b = check(contrast), self.baseline
        elif isinstance(contrast, (tuple, list)) and len(contrast) == 2:
            a, b = check(contrast[0]), check(contrast[1])
        else:
            raise RatingsError(
                f"contrast must be a system name or a pair (system_a, system_b); got {contrast!r}."
            )
        if a == b:
            raise RatingsError(
                f"contrast compares {a!r} with itself; pick two different systems "
                f"({', '.join(map(repr, self.systems))})."
            )
        return a, b

    def to_params(self, contrast: Any = None, *, coding: Coding = "sum") -> LMMParams:
        """Two-system simulation parameters for the comparison ``contrast``.

        Parameters
        ----------
        contrast : str or (str, str), optional
            ``(a, b)``: system ``a`` is the "+1" system and ``b`` the baseline
            (x = -1) of the returned :class:`~nlpower.params.LMMParams`; a
            single name ``a`` means ``(a, baseline)``; ``None`` (two systems
            only) means (the other system, the baseline).
        coding : {"sum", "half", "treatment"}, default "sum"
            Coding of the returned parameters (converted with
            :meth:`LMMParams.to_coding`, which refuses inexact conversions).

        Returns
        -------
        LMMParams
            In sum coding: ``beta0 = (m_a + m_b) / 2``, ``effect = (m_a - m_b) / 2``;
            for workers and items, with the total covariance of the per-system
            effects ``v_a = s_0^2 + s_a^2``, ``v_b = s_0^2 + s_b^2``,
            ``c = s_0^2 + r s_a s_b`` (:meth:`total_cov`)::

                sd_slope^2     = var((u_a - u_b) / 2) = (v_a + v_b - 2 c) / 4
                               = (s_a^2 + s_b^2 - 2 r s_a s_b) / 4
                sd_intercept^2 = var((u_a + u_b) / 2) = (v_a + v_b + 2 c) / 4
                               = s_0^2 + (s_a^2 + s_b^2 + 2 r s_a s_b) / 4

            and ``sigma`` unchanged -- :func:`nlpower.params.pm1_random_effects`
            with ``unequal="warn"``.  The implied intercept-slope covariance
            ``(v_a - v_b) / 4`` (nonzero when the two systems' SDs differ) is
            dropped, because the paper's model has uncorrelated intercepts and
            slopes: each system's simulated variance becomes ``(v_a + v_b) / 2``.
            A :class:`RatingsFitWarning` says so when that changes a system's
            variance by at least 25% (``|v_a - v_b| / (v_a + v_b) >= 0.25``,
            SDs differing by a factor of about 1.3) and by at least 0.01^2.

            When ``a`` and ``b`` never share a worker (or an item) -- e.g. items
            nested in systems -- ``c`` is not identified; the whole variance
            ``(v_a + v_b) / 2`` is put in the intercept and the slope SD is 0
            (exact for simulating a nested design; for a paired design supply
            the slope SD yourself), with a warning.

        Raises
        ------
        RatingsError
            Unknown system names, a system compared with itself, no contrast
            with more than two systems, unknown coding.
        """
        check_coding(coding, error=RatingsError)
        a, b = self._resolve_contrast(contrast)
        ident = self.identifiable()
        means = dict(zip(ident.systems["system"], ident.systems["mean"], strict=True))
        ia, ib = self.systems.index(a), self.systems.index(b)
        sds: dict[str, tuple[float, float]] = {}
        for g in GROUPS:
            cov = self.total_cov(g).to_numpy()
            # b is coded x = -1 and a x = +1; the covariance is NaN when not identified
            sds[g] = pm1_random_effects(0.0, math.sqrt(max(cov[ib, ib], 0.0)),
                                        math.sqrt(max(cov[ia, ia], 0.0)), cov[ia, ib], group=g,
                                        unequal="warn", systems=(b, a), where="to_params")
        params = LMMParams(
            beta0=(means[a] + means[b]) / 2,
            effect=(means[a] - means[b]) / 2,
            sd_worker=sds["worker"][0],
            sd_worker_slope=sds["worker"][1],
            sd_item=sds["item"][0],
            sd_item_slope=sds["item"][1],
            sigma=self.sigma,
            coding="sum",
        )
        return params if coding == "sum" else params.to_coding(coding)

    def to_multi_params(self) -> MultiSystemParams:
        """All K systems as :class:`~nlpower.params.MultiSystemParams` (baseline first).

        MultiSystemParams has independent per-system effects plus a shared
        intercept, i.e. a total covariance ``s_0^2 J + diag(s_k^2)``.  From the
        identified total covariance C: ``s_0^2`` = the mean of the identified
        off-diagonal entries, clipped to ``[0, min_k C_kk]`` (0 when none is
        identified), and ``s_k^2 = C_kk - s_0^2``.  Per-system total variances
        are kept exactly; differences between the pairwise covariances are not.
        """
        ident = self.identifiable()
        order = [self.baseline, *self._other_systems()]
        idx = [self.systems.index(s) for s in order]
        means = ident.systems.set_index("system")["mean"]
        gm = float(np.mean(means.to_numpy()))
        out: dict[str, tuple[float, tuple[float, ...]]] = {}
        for g in GROUPS:
            c = self.total_cov(g).to_numpy()[np.ix_(idx, idx)]
            diag = np.clip(np.diag(c), 0.0, None)
            off = c[~np.eye(len(idx), dtype=bool)]
            off = off[np.isfinite(off)]
            s0sq = float(np.clip(off.mean(), 0.0, diag.min())) if off.size else 0.0
            out[g] = (math.sqrt(s0sq), tuple(float(math.sqrt(max(d - s0sq, 0.0))) for d in diag))
        return MultiSystemParams(
            beta0=gm,
            effects=tuple(float(means[s]) - gm for s in order[1:]),
            sd_worker=out["worker"][0], sd_worker_systems=out["worker"][1],
            sd_item=out["item"][0], sd_item_systems=out["item"][1],
            sigma=self.sigma, system_names=tuple(order),
        )

    # ------------------------------------------------------------- text
    def identifiability_notes(self) -> list[str]:
        """What the fit cannot tell apart, each note naming its term (:mod:`.fitnotes`)."""
        return fitnotes.identifiability_notes(self)

    def model_notes(self) -> list[str]:
        """What a formula given as ``model=`` leaves out, and how its terms are tabled."""
        if self.model != "formula":
            return []
        notes = []
        for g, tag in zip(GROUPS, ("w", "i"), strict=True):
            cols = [c for c in self.not_modelled if c.endswith(tag) and c != "sigma"]
            if g in self.interaction_sd:
                no0 = f"; no (1 | {g}) term: sigma0{tag} is shown as - (0)" \
                    if f"sigma0{tag}" in cols else ""
                notes.append(f"per-system {g} effects from (1 | {g}:system): one SD for every "
                             f"system, sigma_{g}:system, in place of sigma1{tag}.."
                             f"sigma{self.n_systems}{tag}{no0}.")
            elif len(cols) == self.n_systems + 1:
                notes.append(f"no {g} term in the model: every {g} SD is shown as - (0).")
            elif f"sigma0{tag}" in cols:
                notes.append(f"no (1 | {g}) term: sigma0{tag} is shown as - (0); the per-system "
                             f"{g} SDs are those of the {g} terms' total per-system covariance.")
            elif cols:
                notes.append(f"no per-system {g} term: sigma1{tag}..sigma{self.n_systems}{tag} are "
                             f"shown as - (0); {g}s shift all systems alike.")
        return notes

    def singular_note(self) -> str | None:
        """What a singular (boundary) fit means for the estimates; None if not singular."""
        return fitnotes.singular_note(self)

    def summary(self) -> str:
        """Design report, the three tables, identifiability notes and lme4's summary."""
        k = self.n_systems
        lines = [self.report.summary(), ""]
        lines.append(f"Model: {self.formula}  ({'REML' if self.fit.REML else 'ML'}, engine "
                     f"{self.fit.engine!r}; lme4 expands (system || g) into (1|g) + (0 + system|g))")
        for g in self.reduced:
            lines.append(f"  {g}s are nested in systems: fitted the identified per-system variances "
                         f"(0 + is_sys1 + ... || {g}) instead of (system || {g}); is_sysk indicates "
                         "level k. Tables show intercept SD 0 and the per-system SDs.")
        for n in self.model_notes():
            lines.append(f"  {n}")
        lines.append(self.legend())
        lines.append("")
        for title, t in self.tables().items():
            caption = {"Table 13": "fixed effects and residual SD",
                       "Table 14": "worker SDs (intercept, then per system)",
                       "Table 15": "item SDs (intercept, then per system)"}[title]
            lines.append(f"{title} layout -- {caption}:")
            lines.append(str(t))
            lines.append("")
        lines.append(self.identifiable().summary())
        lines.append("")
        for n in self.identifiability_notes():
            lines.append(f"note: {n}")
        singular = self.singular_note()
        if singular:
            lines.append(f"note: {singular}")
        if not self.converged:
            lines.append("WARNING: the optimiser did not converge; estimates may be inaccurate.")
        if k == 2:
            lines.append("")
            lines.append("Simulation parameters (to_params(), sum coding):")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RatingsFitWarning)
                lines.append(self.to_params().summary())
        lines.append("")
        lmm = self.fit.summary()
        if self.identifiability_notes():
            # said above in the tables' terms: not the fit's own note on the same ridge again
            said = set(self.fit.optsum.notes)
            lmm = "\n".join(ln for ln in lmm.split("\n") if ln not in said)
        lines.append(lmm)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """:meth:`to_record` (the name the CLI of this release calls)."""
        return self.to_record()

    def to_record(self) -> dict[str, Any]:
        """JSON-serialisable record: report, tables, legend, identified quantities."""
        ident = self.identifiable()
        tabs = {name: {c: float(v) for c, v in t.iloc[0].items()} for name, t in self.tables().items()}

        def nanless(df: pd.DataFrame) -> list[list[float | None]]:
            return [[None if not math.isfinite(v) else float(v) for v in row]
                    for row in df.to_numpy()]

        return {
            "report": self.report.to_dict(),
            "formula": self.formula,
            "reduced": list(self.reduced),
            "model": self.model,
            "not_modelled": list(self.not_modelled),
            "interaction_sd": dict(self.interaction_sd),
            "REML": bool(self.fit.REML),
            "engine": self.fit.engine,
            "coding": self.coding,
            "baseline": self.baseline,
            "systems": list(self.systems),
            "legend": self.legend(),
            "tables": tabs,
            "identifiable": {
                "systems": ident.systems.to_dict(orient="records"),
                "grand_mean": ident.grand_mean,
                "sigma": ident.sigma,
                "worker_cov": nanless(ident.worker_cov),
                "item_cov": nanless(ident.item_cov),
            },
            "converged": self.converged,
            "singular": self.singular,
            "deviance": float(self.fit.deviance),
            "loglik": float(self.fit.loglik),
            "notes": self.model_notes() + self.identifiability_notes()
            + ([n] if (n := self.singular_note()) else []),
        }
