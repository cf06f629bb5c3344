"""Reference values from ``ppi-python`` for nlpower.judge.ppi_mean (tests/judge/test_iid.py).

Run (needs ``pip install ppi-python``; checked with 0.2.3):

    python tests/reference/ppi_reference.py > tests/reference/ppi_reference.json

The data are drawn here and written into the JSON with the results, so the
test needs neither ppi-python nor this generator's random stream.  Cases: a
mean with PPI++ (tuned lambda), with PPI (lambda = 1) and with the labels only
(lambda = 0); a difference between two systems rated on the same items (the
mean of per-item differences); a judge with a bias.  Differences of means of
two independent groups (``difference_cases``, for
``nlpower.judge.ppi_mean_difference``) go through ppi-python's OLS route:
the slope of the regression on ``x = (1, [group a])``, ``ppi_ols_ci`` with
``coord=1`` (its point estimate is the interval's centre) and
``ppi_ols_pointestimate`` (one tuning step fewer, pinned for the record).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import ppi_py
from ppi_py import (
    ppi_mean_ci,
    ppi_mean_pointestimate,
    ppi_mean_pval,
    ppi_ols_ci,
    ppi_ols_pointestimate,
)


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


def two_groups(seed: int, sizes: tuple[int, int, int, int], bias_a: float) -> dict:
    """Groups a and b with their own means; the judge may favour group a by ``bias_a``."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {}
    for name, n, big_n, mean, bias in (("a", sizes[0], sizes[1], 0.5, bias_a),
                                       ("b", sizes[2], sizes[3], 0.2, 0.0)):
        truth = rng.normal(mean, 1.0, n + big_n)
        judge = 0.8 * truth + bias + rng.normal(0, 0.6, n + big_n)
        out[f"y_{name}"] = [round(v, 6) for v in truth[:n]]
        out[f"f_{name}"] = [round(v, 6) for v in judge[:n]]
        out[f"f_unlabelled_{name}"] = [round(v, 6) for v in judge[n:]]
    return out


def difference_case(name: str, data: dict[str, list[float]], lam: float | None) -> dict:
    d = {k: np.asarray(v) for k, v in data.items()}

    def x(na: int, nb: int) -> np.ndarray:
        return np.column_stack([np.ones(na + nb), np.r_[np.ones(na), np.zeros(nb)]])

    args = (x(d["y_a"].size, d["y_b"].size), np.r_[d["y_a"], d["y_b"]], np.r_[d["f_a"], d["f_b"]],
            x(d["f_unlabelled_a"].size, d["f_unlabelled_b"].size),
            np.r_[d["f_unlabelled_a"], d["f_unlabelled_b"]])
    ci = ppi_ols_ci(*args, alpha=0.05, lam=lam, coord=1)
    return {"name": name, "lam": lam, "data": data,
            "ci": [float(ci[0][1]), float(ci[1][1])],
            "pointestimate": float(ppi_ols_pointestimate(*args, lam=lam, coord=1)[1])}


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
    groups = two_groups(4, (60, 500, 80, 700), 0.3)
    difference = [
        difference_case("two groups, biased judge, ppi++", groups, None),
        difference_case("two groups, biased judge, ppi", groups, 1.0),
        difference_case("two groups, labels only", groups, 0.0),
        difference_case("two groups, small, ppi++", two_groups(5, (25, 300, 40, 200), 0.0), None),
    ]
    version = getattr(ppi_py, "__version__", "0.2.3")
    json.dump({"ppi_python": version, "cases": cases, "difference_cases": difference},
              sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
