"""The glmer validation cases (tests/reference/glmer_reference.R fits them with lme4 1.1-31).

Shared by tests/glmm/test_reference.py and benchmarks/validation_corpus.py:
each case names its data set (CSV under tests/reference/data/), the formula and
the glmer arguments, exactly as the R script.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "reference" / "data"
REFERENCE = ROOT / "tests" / "reference" / "glmer_reference.json"

_DTYPES = {
    "cbpp": {"herd": str, "period": str},
    "grouseticks": {"BROOD": str, "INDEX": str, "LOCATION": str, "YEAR": str},
    "VerbAgg": {"id": str, "item": str},
    "glmm_crossed": {"worker": str, "item": str},
}

VERBAGG = "r2 ~ Anger + Gender + btype + situ + (1 | id) + (1 | item)"
VERBAGG_SLOPE = "r2 ~ Anger + Gender + btype + situ + (1 | id) + (1 + Gender | item)"

#: name -> (data set, formula, glmer keyword arguments)
CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "cbpp_weights": ("cbpp", "prop ~ period + (1 | herd)", {"weights": "size"}),
    "cbpp_probit": ("cbpp", "prop ~ period + (1 | herd)", {"weights": "size", "link": "probit"}),
    "cbpp_cloglog": ("cbpp", "prop ~ period + (1 | herd)", {"weights": "size", "link": "cloglog"}),
    "cbpp_agq9": ("cbpp", "prop ~ period + (1 | herd)", {"weights": "size", "nAGQ": 9}),
    "cbpp_agq25": ("cbpp", "prop ~ period + (1 | herd)", {"weights": "size", "nAGQ": 25}),
    "cbpp_nagq0": ("cbpp", "prop ~ period + (1 | herd)", {"weights": "size", "nAGQ": 0}),
    "cbpp_poisson_offset": ("cbpp", "incidence ~ period + (1 | herd)",
                            {"family": "poisson", "offset": "log_size"}),
    "grouseticks": ("grouseticks",
                    "TICKS ~ YEAR + cHEIGHT + (1 | BROOD) + (1 | INDEX) + (1 | LOCATION)",
                    {"family": "poisson"}),
    "verbagg_crossed": ("VerbAgg", VERBAGG, {}),
    "verbagg_slope": ("VerbAgg", VERBAGG_SLOPE, {}),
    "crossed_sim": ("glmm_crossed", "y ~ x + (1 + x || worker) + (1 + x || item)", {}),
}

#: cases where lme4's own fit did not converge cleanly (its gradient check failed):
#: only the log-likelihood is compared (native at or above lme4's)
LME4_UNCONVERGED = {"verbagg_slope"}


@cache
def dataset(name: str) -> pd.DataFrame:
    import numpy as np
    d = pd.read_csv(DATA / f"{name}.csv", dtype=_DTYPES.get(name))
    if name == "cbpp":
        d["log_size"] = np.log(d["size"])
    return d


@lru_cache(maxsize=1)
def reference() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text())["cases"]  # type: ignore[no-any-return]


def fit_case(name: str, engine: str = "native") -> Any:
    from nlpower.glmm import glmer
    data, formula, kw = CASES[name]
    kw = dict(kw)
    family = kw.pop("family", "binomial")
    return glmer(formula, dataset(data), family, engine=engine, checkconv="ignore", **kw)


def sds(ref: dict[str, Any]) -> list[float]:
    """lme4's SDs and correlations in VarCorr order."""
    return [float(v) for v in ref["vc_sdcor"]]
