"""PPI / PPI++ means and differences of means against pinned ppi-python output
(tests/reference/ppi_reference.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nlpower.errors import InputError
from nlpower.judge import ppi_mean, ppi_mean_difference

REF = json.loads((Path(__file__).parents[1] / "reference" / "ppi_reference.json").read_text())


@pytest.mark.parametrize("case", REF["cases"], ids=[c["name"] for c in REF["cases"]])
def test_equals_ppi_python(case: dict) -> None:
    d = case["data"]
    est = ppi_mean(d["y"], d["f"], d["f_unlabelled"], lam=case["lam"], null=case["null"])
    assert est.estimate == pytest.approx(case["estimate"], rel=1e-12, abs=1e-12)
    assert est.ci_low == pytest.approx(case["ci"][0], rel=1e-10, abs=1e-12)
    assert est.ci_high == pytest.approx(case["ci"][1], rel=1e-10, abs=1e-12)
    assert est.pvalue == pytest.approx(case["pvalue"], rel=1e-8, abs=1e-15)


def test_lambda_zero_is_the_labels_alone() -> None:
    d = REF["cases"][0]["data"]
    est = ppi_mean(d["y"], d["f"], d["f_unlabelled"], lam=0.0)
    y = np.asarray(d["y"])
    assert est.estimate == pytest.approx(y.mean())
    assert est.se == pytest.approx(y.std() / np.sqrt(y.size))


def test_tuned_lambda_beats_ppi_and_labels() -> None:
    d = REF["cases"][0]["data"]
    tuned = ppi_mean(d["y"], d["f"], d["f_unlabelled"])
    assert tuned.se <= ppi_mean(d["y"], d["f"], d["f_unlabelled"], lam=1.0).se
    assert tuned.se <= ppi_mean(d["y"], d["f"], d["f_unlabelled"], lam=0.0).se


def test_one_sided() -> None:
    d = REF["cases"][0]["data"]
    two = ppi_mean(d["y"], d["f"], d["f_unlabelled"], null=0.3)
    up = ppi_mean(d["y"], d["f"], d["f_unlabelled"], null=0.3, alternative="greater")
    assert up.ci_high == np.inf and up.ci_low > two.ci_low
    assert up.pvalue == pytest.approx(two.pvalue / 2)


def test_errors_name_the_argument() -> None:
    with pytest.raises(InputError, match="same length"):
        ppi_mean([1.0, 2.0, 3.0], [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(InputError, match="f_unlabelled"):
        ppi_mean([1.0, 2.0], [1.0, 2.0], [np.nan, 1.0])
    with pytest.raises(InputError, match="alternative"):
        ppi_mean([1.0, 2.0], [1.0, 2.0], [1.0, 2.0], alternative="bigger")  # type: ignore[arg-type]


DIFF = REF["difference_cases"]


def _groups(d: dict) -> tuple:
    return tuple(d[k] for k in ("y_a", "f_a", "f_unlabelled_a", "y_b", "f_b", "f_unlabelled_b"))


@pytest.mark.parametrize("case", DIFF, ids=[c["name"] for c in DIFF])
def test_difference_equals_ppi_python(case: dict) -> None:
    est = ppi_mean_difference(*_groups(case["data"]), lam=case["lam"])
    assert est.ci_low == pytest.approx(case["ci"][0], rel=1e-9, abs=1e-12)
    assert est.ci_high == pytest.approx(case["ci"][1], rel=1e-9, abs=1e-12)
    assert est.estimate == pytest.approx(sum(case["ci"]) / 2, rel=1e-9, abs=1e-12)
    if case["lam"] is not None:  # one tuning step fewer in ppi_ols_pointestimate (module doc)
        assert est.estimate == pytest.approx(case["pointestimate"], rel=1e-10, abs=1e-12)


def test_difference_fixed_lambda_is_two_group_means() -> None:
    d = DIFF[0]["data"]
    g = [np.asarray(v) for v in _groups(d)]
    est = ppi_mean_difference(*g, lam=0.5)
    want = (0.5 * g[2].mean() + np.mean(g[0] - 0.5 * g[1])
            - 0.5 * g[5].mean() - np.mean(g[3] - 0.5 * g[4]))
    assert est.estimate == pytest.approx(want, rel=1e-12)
    labels = ppi_mean_difference(*g, lam=0.0)
    assert labels.estimate == pytest.approx(g[0].mean() - g[3].mean(), rel=1e-12)


def test_difference_errors_name_the_argument() -> None:
    with pytest.raises(InputError, match="y_b and f_b"):
        ppi_mean_difference([1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 2.0],
                            [1.0, 2.0])
    with pytest.raises(InputError, match="f_unlabelled_a"):
        ppi_mean_difference([1.0, 2.0], [1.0, 2.0], [1.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0])
