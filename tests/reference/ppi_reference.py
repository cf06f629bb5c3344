"""Reference values from ``ppi-python`` for nlpower.judge.ppi_mean (tests/judge/test_iid.py).

Run (needs ``pip install ppi-python``; checked with 0.2.3):

    python tests/reference/ppi_reference.py > tests/reference/ppi_reference.json

The data are drawn here and written into the JSON with the results, so the
test needs neither ppi-python nor this generator's random stream.  Cases: a
mean with PPI++ (tuned lambda), with PPI (lambda = 1) and with the labels only
(lambda = 0); a difference between two systems rated on the same items (the
mean of per-item differences); a judge with a bias.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import ppi_py
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate, ppi_mean_pval


def draw(seed: int, n: int, big_n: int, noise: float, bias: float) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.4, 1.0, n + big_n)
    judge = 0.8 * truth + bias + rng.normal(0, noise, n + big_n)
    return {"y": [round(v, 6) for v in truth[:n]], "f": [round(v, 6) for v in judge[:n]],
            "f_unlabelled": [round(v, 6) for v in judge[n:]]}


def paired(seed: int, n: int, big_n: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    item = rng.normal(0, 1, n + big_n)
    ya = item + 0.3 + rng.normal(0, 0.7, n + big_n)
    yb = item + rng.normal(0, 0.7, n + big_n)
    fa = 0.9 * ya + 0.5 + rng.normal(0, 0.4, n + big_n)  # the judge favours system a
    fb = 0.9 * yb + rng.normal(0, 0.4, n + big_n)
    d, g = ya - yb, fa - fb
    return {"y": [round(v, 6) for v in d[:n]], "f": [round(v, 6) for v in g[:n]],
            "f_unlabelled": [round(v, 6) for v in g[n:]]}


def case(name: str, data: dict[str, list[float]], lam: float | None, null: float) -> dict:
    y, f, fu = (np.asarray(data[k]) for k in ("y", "f", "f_unlabelled"))
    ci = ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
    return {
        "name": name, "lam": lam, "null": null, "data": data,
        "estimate": float(np.ravel(ppi_mean_pointestimate(y, f, fu, lam=lam))[0]),
        "ci": [float(np.ravel(ci[0])[0]), float(np.ravel(ci[1])[0])],
        "pvalue": float(np.ravel(ppi_mean_pval(y, f, fu, null=null, lam=lam))[0]),
    }


def main() -> None:
    mean_data = draw(1, 80, 600, 0.6, 0.0)
    cases = [
        case("mean ppi++", mean_data, None, 0.3),
        case("mean ppi", mean_data, 1.0, 0.3),
        case("mean classical", mean_data, 0.0, 0.3),
        case("biased judge ppi++", draw(2, 50, 900, 0.9, 0.7), None, 0.0),
        case("paired difference ppi++", paired(3, 120, 1500), None, 0.0),
        case("paired difference ppi", paired(3, 120, 1500), 1.0, 0.0),
    ]
    version = getattr(ppi_py, "__version__", "0.2.3")
    json.dump({"ppi_python": version, "cases": cases}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
