"""Tables for papers and notebooks: Markdown, LaTeX (booktabs) and HTML from a DataFrame.

Plain code rather than a table library: pandas' own ``to_markdown`` needs
``tabulate`` and its ``to_latex`` goes through the Styler (jinja2), and
``great-tables`` brings a large import and dependency tree for what is here
a dozen lines per format.  Owning the formatting keeps one number format in
every output (significant digits, p-values as ``<0.0001``), LaTeX escaping
that is tested, and no import cost on a first fit.

Every renderer takes a DataFrame (its index becomes the first column unless
``index=False``) and returns a string.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["fit_html", "fit_latex", "fit_markdown", "format_cell", "latex_escape", "to_html",
           "to_latex", "to_markdown"]

_P_NAMES = ("p", "pvalue", "p_value", "p_adj", "Pr(>Chisq)", "Pr(>F)", "Pr(>|t|)", "Pr(>|z|)")
_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}"}


def _is_p(column: Any) -> bool:
    return str(column) in _P_NAMES


def format_cell(value: Any, *, digits: int = 4, pvalue: bool = False) -> str:
    """One cell as text: ``digits`` significant digits; p-values to 4 decimals.

    Missing values are empty; infinities ``Inf``; p-values below 1e-4 ``<0.0001``.

    Examples
    --------
    >>> format_cell(0.000012, pvalue=True), format_cell(3.14159), format_cell(float("nan"))
    ('<0.0001', '3.142', '')
    """
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "Inf" if v > 0 else "-Inf"
        if pvalue:
            return "<0.0001" if v < 1e-4 else f"{v:.4f}"
        if v != 0.0 and (abs(v) >= 10 ** (digits + 2) or abs(v) < 10 ** -(digits - 1)):
            return f"{v:.{digits - 1}e}"
        text = f"{v:.{digits}g}"
        return text if "e" not in text else f"{v:.0f}"   # 12345.6 -> 12346, not 1.235e+04
    return str(value)


def _cells(df: pd.DataFrame, digits: int, index: bool) -> tuple[list[str], list[list[str]]]:
    cols = list(df.columns)
    header = ([str(df.index.name or "")] if index else []) + [str(c) for c in cols]
    rows = []
    for label, (_, row) in zip(df.index, df.iterrows(), strict=True):
        cells = [format_cell(row[c], digits=digits, pvalue=_is_p(c)) for c in cols]
        rows.append(([str(label)] if index else []) + cells)
    return header, rows


def _numeric(df: pd.DataFrame, index: bool) -> list[bool]:
    flags = [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]
    return ([False] if index else []) + flags


def to_markdown(df: pd.DataFrame, *, digits: int = 4, index: bool = True,
                caption: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (numbers right-aligned).

    Examples
    --------
    >>> import pandas as pd
    >>> print(to_markdown(pd.DataFrame({"est": [1.23456]}, index=["x"])))
    |   | est |
    |---|---:|
    | x | 1.235 |
    """
    header, rows = _cells(df, digits, index)
    align = ["---:" if num else "---" for num in _numeric(df, index)]
    lines = ([f"**{caption}**", ""] if caption else [])
    lines.append("| " + " | ".join(h.replace("|", "\\|") or " " for h in header) + " |")
    lines.append("|" + "|".join(align) + "|")
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def latex_escape(text: str) -> str:
    r"""Escape LaTeX's special characters (``_`` -> ``\_``, ``<`` -> ``$<$``, ...)."""
    out = "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)
    return out.replace("<", r"$<$").replace(">", r"$>$")


def to_latex(df: pd.DataFrame, *, digits: int = 4, index: bool = True,
             caption: str | None = None, label: str | None = None,
             notes: Sequence[str] = ()) -> str:
    r"""A ``table`` with a booktabs ``tabular`` (``\usepackage{booktabs}``).

    Examples
    --------
    >>> import pandas as pd
    >>> print(to_latex(pd.DataFrame({"p": [1e-6]}, index=["sys_B"])))
    \begin{table}[ht]
    \centering
    \begin{tabular}{lr}
    \toprule
     & p \\
    \midrule
    sys\_B & $<$0.0001 \\
    \bottomrule
    \end{tabular}
    \end{table}
    """
    header, rows = _cells(df, digits, index)
    spec = "".join("r" if num else "l" for num in _numeric(df, index))
    lines = [r"\begin{table}[ht]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
              " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_escape(c) for c in r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [rf"\par\smallskip{{\footnotesize {latex_escape(n)}}}" for n in notes]
    lines.append(r"\end{table}")
    return "\n".join(lines)


def to_html(df: pd.DataFrame, *, digits: int = 4, index: bool = True,
            caption: str | None = None, notes: Sequence[str] = ()) -> str:
    """An HTML ``<table>`` for notebooks (escaped; numbers right-aligned).

    Examples
    --------
    >>> import pandas as pd
    >>> to_html(pd.DataFrame({"a": [1.0]}, index=["<x>"])).count("&lt;x&gt;")
    1
    """
    header, rows = _cells(df, digits, index)
    num = _numeric(df, index)
    esc = html.escape
    out = ['<table class="nlpower-table" style="border-collapse:collapse">']
    if caption:
        out.append(f'<caption style="text-align:left;font-weight:bold">{esc(caption)}</caption>')
    out.append("<thead><tr>" + "".join(
        f'<th style="text-align:{"right" if n else "left"};border-bottom:1px solid #888;'
        f'padding:2px 8px">{esc(h)}</th>' for h, n in zip(header, num, strict=True)) + "</tr></thead>")
    out.append("<tbody>")
    for r in rows:
        out.append("<tr>" + "".join(
            f'<td style="text-align:{"right" if n else "left"};padding:2px 8px">{esc(c)}</td>'
            for c, n in zip(r, num, strict=True)) + "</tr>")
    out.append("</tbody></table>")
    out += [f'<p style="font-size:smaller;margin:2px 0">{esc(n)}</p>' for n in notes]
    return "\n".join(out)


def _fit_parts(fit: Any) -> tuple[str, list[tuple[str, pd.DataFrame]]]:
    """A fit's heading and its tables: fixed effects, then variance components."""
    kind = type(fit).__name__
    crit = ("REML" if getattr(fit, "REML", False) else "ML")
    head = (f"{kind}: {fit.formula} ({crit}, engine {getattr(fit, 'engine', '?')}; "
            f"n = {fit.nobs}, logLik = {format_cell(float(fit.loglik), digits=6)}"
            f"{'' if fit.converged else '; NOT converged'}{'; singular' if fit.singular else ''})")
    coef = fit.coef_table()
    vc = fit.varcorr()
    vc = vc.assign(var2=vc["var2"].where(vc["var2"].notna(), "")).set_index("grp")
    vc.index.name = "group"
    return head, [("Fixed effects", coef), ("Random effects", vc)]


def fit_html(fit: Any) -> str:
    """A fit for a notebook: heading, fixed-effects table, variance components."""
    head, parts = _fit_parts(fit)
    body = [f'<div class="nlpower-fit"><p style="font-family:monospace">{html.escape(head)}</p>']
    body += [to_html(df, caption=title) for title, df in parts]
    return "\n".join(body + ["</div>"])


def fit_markdown(fit: Any, digits: int = 4) -> str:
    """A fit as Markdown: heading, then each table."""
    head, parts = _fit_parts(fit)
    return "\n\n".join([head] + [to_markdown(df, digits=digits, caption=t) for t, df in parts])


def fit_latex(fit: Any, digits: int = 4) -> str:
    """A fit's tables as booktabs LaTeX (one ``table`` each; the heading as a comment)."""
    head, parts = _fit_parts(fit)
    return "\n".join([f"% {head}"] + [to_latex(df, digits=digits, caption=t) for t, df in parts])
