"""Text of ``ClmmFit.summary()``: the layout of ``ordinal``'s ``summary(clmm(...))``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["summary_text"]


def _stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "." if p < 0.1 else ""


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True)))]
    for r in rows:
        out.append("  ".join(c.rjust(w) if i else c.ljust(w)
                             for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return out


def summary_text(fit: Any) -> str:
    """``summary(clmm(...))``: header, random effects, coefficients, thresholds."""
    m = fit.model
    mixed = m.rs is not None
    approx = ("the Laplace approximation" if m.nAGQ == 1
              else f"adaptive Gauss-Hermite quadrature ({m.nAGQ} nodes)")
    lines = [f"Cumulative Link {'Mixed ' if mixed else ''}Model"
             + (f" fitted with {approx}" if mixed else ""), "",
             f"formula: {fit.formula}", ""]
    mg = fit.optsum.max_grad
    lines += _table([[m.link.name, m.thr.kind, str(fit.nobs), f"{fit.loglik:.2f}", f"{fit.aic:.2f}",
                      str(fit.core.n_evals), "NA" if not math.isfinite(mg) else f"{mg:.2e}",
                      f"{fit.cond_H:.1e}"]],
                    ["link", "threshold", "nobs", "logLik", "AIC", "nevals", "max.grad", "cond.H"])
    if not fit.converged:
        lines.append(f"(not converged: {fit.core.message})")
    if fit.unused_categories:
        lines.append(f"Unused response categories (dropped): {', '.join(fit.unused_categories)}")
    if mixed:
        lines += ["", "Random effects:"]
        vc = fit.varcorr()
        vc = vc[~vc["grp"].str.startswith("Residual")]
        rows = []
        for r in vc.itertuples():
            if pd.isna(r.var2):
                rows.append([str(r.grp), str(r.var1), f"{r.vcov:.4g}", f"{r.sdcor:.4g}"])
        lines += [" " + x for x in _table(rows, ["Groups", "Name", "Variance", "Std.Dev."])]
        cor = vc[vc["var2"].notna()]
        for r in cor.itertuples():
            lines.append(f" Corr({r.grp}: {r.var1}, {r.var2}) = {r.sdcor:.3f}")
        groups = [f" {b.group} {b.L}" for b in m.rs.blocks]
        lines.append("Number of groups: " + ", ".join(groups))
    ct = fit.coef_table()
    fx = ct[ct["kind"] == "fixed"]
    if len(fx):
        lines += ["", "Coefficients:"]
        rows = [[nm, f"{r.estimate:.4f}", f"{r.se:.4f}", f"{r.z:.3f}", f"{r.pvalue:.3g}",
                 _stars(r.pvalue)] for nm, r in fx.iterrows()]
        lines += _table(rows, ["", "Estimate", "Std. Error", "z value", "Pr(>|z|)", ""])
    th = ct[ct["kind"] == "threshold"]
    lines += ["", "Threshold coefficients:"]
    rows = [[nm, f"{r.estimate:.4f}", f"{r.se:.4f}", f"{r.z:.3f}"] for nm, r in th.iterrows()]
    lines += _table(rows, ["", "Estimate", "Std. Error", "z value"])
    if m.thr.kind != "flexible":
        cuts = ", ".join(f"{k}: {v:.4f}" for k, v in fit.thresholds.items())
        lines.append(f"Cut points: {cuts}")
    if not np.all(np.isfinite(fit.core.vcov[:m.n_alpha + m.p, :m.n_alpha + m.p])):
        lines.append("(standard errors unavailable: the Hessian is singular)")
    return "\n".join(lines)
