"""predict(newdata) conditional on the random effects, slopes included, against a manual sum."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special
from test_clmm import crowd

from nlpower.errors import InputError
from nlpower.ordinal import clmm


@pytest.fixture(scope="module")
def slope_fit():  # type: ignore[no-untyped-def]
    d = crowd(30, 25, 8, worker_sd=1.0, item_sd=0.5, slope_sd=0.8, effect=0.6, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clmm("rating ~ x + (1 + x | worker) + (1 | item)", d), d


def _manual_eta(fit, rows: pd.DataFrame, drop: str | None = None) -> np.ndarray:  # type: ignore[no-untyped-def]
    """x beta + b0[worker] + b1[worker] x + c[item] from fixef and ranef (``drop``: a group at 0)."""
    re = fit.ranef()
    w, it = re["worker"], re["item"]
    eta = fit.fixef["x"] * rows["x"].to_numpy()
    if drop != "worker":
        eta = eta + w.loc[rows["worker"], "(Intercept)"].to_numpy() \
            + w.loc[rows["worker"], "x"].to_numpy() * rows["x"].to_numpy()
    if drop != "item":
        eta = eta + it.loc[rows["item"], "(Intercept)"].to_numpy()
    return np.asarray(eta)


def test_latent_and_probabilities_match_fixef_ranef_thresholds(slope_fit) -> None:  # type: ignore[no-untyped-def]
    fit, d = slope_fit
    rows = d.sample(40, random_state=1).reset_index(drop=True)
    eta = fit.predict(rows, type="latent").to_numpy()
    man = _manual_eta(fit, rows)
    np.testing.assert_allclose(eta, man, atol=1e-10)
    # the slopes matter here: dropping them moves the prediction
    assert np.max(np.abs(man - fit.fixef["x"] * rows["x"].to_numpy()
                         - fit.ranef()["worker"].loc[rows["worker"], "(Intercept)"].to_numpy()
                         - fit.ranef()["item"].loc[rows["item"], "(Intercept)"].to_numpy())) > 0.05
    cuts = np.concatenate([[-np.inf], fit.thresholds.to_numpy(), [np.inf]])
    P_man = np.diff(special.expit(cuts[None, :] - man[:, None]), axis=1)
    np.testing.assert_allclose(fit.predict(rows).to_numpy(), P_man, atol=1e-12)
    cls = fit.predict(rows, type="class")
    assert list(cls) == list(np.asarray(fit.categories)[P_man.argmax(axis=1)])


def test_newdata_agrees_with_the_fitted_rows(slope_fit) -> None:  # type: ignore[no-untyped-def]
    fit, d = slope_fit
    np.testing.assert_allclose(fit.predict(d.iloc[:60], type="latent").to_numpy(),
                               fit.predict(type="latent").to_numpy()[:60], atol=1e-10)


def test_new_levels_need_permission(slope_fit) -> None:  # type: ignore[no-untyped-def]
    fit, d = slope_fit
    rows = d.iloc[:5].copy()
    rows.loc[rows.index[:2], "worker"] = "someone new"
    with pytest.raises(InputError, match="allow_new_levels"):
        fit.predict(rows)
    eta = fit.predict(rows, type="latent", allow_new_levels=True).to_numpy()
    np.testing.assert_allclose(eta[:2], _manual_eta(fit, rows.iloc[:2], drop="worker"), atol=1e-10)
    np.testing.assert_allclose(eta[2:], _manual_eta(fit, rows.iloc[2:]), atol=1e-10)


def test_missing_grouping_column_points_at_re_form_na(slope_fit) -> None:  # type: ignore[no-untyped-def]
    fit, d = slope_fit
    rows = d.iloc[:5].drop(columns=["item"])
    with pytest.raises(InputError, match="re_form=.NA."):
        fit.predict(rows)
    pop = fit.predict(rows, type="latent", re_form="NA").to_numpy()
    np.testing.assert_allclose(pop, fit.fixef["x"] * rows["x"].to_numpy(), atol=1e-12)
