"""Agreement of ``nlpower.clmm`` with ``ordinal::clmm``/``clm`` on the pinned reference cases.

Reference numbers: ``tests/reference/clmm_reference.json`` written by
``Rscript --vanilla tests/reference/clmm_reference.R`` (R 4.2.2, ordinal
2022.11-16).  Run::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/ordinal_agreement.py

Prints the markdown table of ``docs/ordinal.md``: differences of the
log-likelihood (ours minus ordinal's), and the largest absolute differences
of thresholds, fixed effects, random-effect SDs and standard errors.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from nlpower.ordinal import clmm

REF = Path(__file__).resolve().parents[1] / "tests" / "reference"


def main() -> None:
    ref = json.loads((REF / "clmm_reference.json").read_text())
    print(f"ordinal {ref['ordinal']}, {ref['R']}\n")
    print("| case | model | link / thresholds / nAGQ | loglik ordinal | loglik - ordinal | "
          "max abs diff thresholds | fixef | SDs | SEs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, c in ref["cases"].items():
        d = pd.read_csv(REF / "data" / f"{c['data']}.csv")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = clmm(c["formula"], d, link=c["link"], threshold=c["threshold"], nAGQ=c["nAGQ"])
        da = np.abs(f.alpha.to_numpy() - list(c["alpha"].values())).max()
        db = np.abs(f.fixef.to_numpy() - list(c["beta"].values())).max() if c["beta"] else 0.0
        dse = np.abs(f.coef_table()["se"].to_numpy() - list(c["se"].values())).max()
        vc = f.varcorr()
        mine = vc[vc.var2.isna() & ~vc.grp.str.startswith("Residual")].sdcor.to_numpy()
        sds = [v for g in c.get("sd", {}).values() for v in g.values()]
        dsd = f"{np.abs(mine - sds).max():.1e}" if sds else "--"
        link = c["link"] + (f" (R: {c['r_link']})" if "r_link" in c else "")
        se = f"{dse:.1e}" if "r_link" not in c else "n/a"
        formula = c["formula"].replace("|", "\\|")      # a pipe inside a markdown cell
        print(f"| {name} | `{formula}` | {link} / {c['threshold']} / {c['nAGQ']} | "
              f"{c['loglik']:.5f} | {f.loglik - c['loglik']:+.1e} | {da:.1e} | {db:.1e} | {dsd} | "
              f"{se} |")


if __name__ == "__main__":
    main()
