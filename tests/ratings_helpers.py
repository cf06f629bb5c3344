"""Fixtures and helpers shared by the rating-file tests (tests/ratings)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from nlpower.params import LMMParams
from nlpower.ratings import RatingsFit, fit_ratings, read_ratings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
REFERENCE = ROOT / "tests" / "reference"




def _stratum_se(n_w: int, n_i: int, v_w: float, v_i: float, e: float) -> dict[str, float]:
    """SEs and ML biases of (v_w, v_i) in a two-way layout with residual variance e."""
    ms_w, ms_i = n_i * v_w + e, n_w * v_i + e
    df_e = (n_w - 1) * (n_i - 1)
    return {
        "se_w": math.sqrt(2 * ms_w**2 / (n_w - 1) + 2 * e**2 / df_e) / n_i,
        "se_i": math.sqrt(2 * ms_i**2 / (n_i - 1) + 2 * e**2 / df_e) / n_w,
        "bias_w": ms_w / (n_w * n_i),
        "bias_i": ms_i / (n_w * n_i),
    }


def _check_pair_params(est: LMMParams, true: LMMParams, n_w: int, n_i: int) -> list[str]:
    """Compare +-1 coded parameters of a fully crossed pair; return failures."""
    e = true.sigma**2 / 2
    slope = _stratum_se(n_w, n_i, true.sd_worker_slope**2, true.sd_item_slope**2, e)
    inter = _stratum_se(n_w, n_i, true.sd_worker**2, true.sd_item**2, e)
    df_sigma = 2 * (n_w - 1) * (n_i - 1)
    checks = [
        ("effect", est.effect, true.effect,
         math.sqrt(true.sd_worker_slope**2 / n_w + true.sd_item_slope**2 / n_i + e / (n_w * n_i)), 0.0),
        ("beta0", est.beta0, true.beta0,
         math.sqrt(true.sd_worker**2 / n_w + true.sd_item**2 / n_i + e / (n_w * n_i)), 0.0),
        ("var worker slope", est.sd_worker_slope**2, true.sd_worker_slope**2,
         slope["se_w"], slope["bias_w"]),
        ("var item slope", est.sd_item_slope**2, true.sd_item_slope**2, slope["se_i"], slope["bias_i"]),
        ("var worker", est.sd_worker**2, true.sd_worker**2, inter["se_w"], inter["bias_w"]),
        ("var item", est.sd_item**2, true.sd_item**2, inter["se_i"], inter["bias_i"]),
        ("sigma^2", est.sigma**2, true.sigma**2, true.sigma**2 * math.sqrt(2 / df_sigma), 0.0),
    ]
    return [f"{name}: est {x:.5g}, true {t:.5g}, tol {4 * se + b:.3g} (SE {se:.3g})"
            for name, x, t, se, b in checks if abs(x - t) > 4 * se + b]


def _read_sim(df: pd.DataFrame):
    return read_ratings(df.drop(columns=[c for c in ("x",) if c in df]), scale="identity")


def fit_pilot() -> RatingsFit:
    """The paired two-system pilot fixture, fitted (the ``pilot`` fixture of the test modules)."""
    return fit_ratings(read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5)))


def fit_nested() -> RatingsFit:
    """The four-system fixture with items nested in systems, fitted."""
    return fit_ratings(read_ratings(FIXTURES / "nested_4sys_ratings.csv", scale=(1, 5)))
